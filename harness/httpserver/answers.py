"""Writing one answer: a head, then a whole body or chunks flushed one by one (so a client sees every SSE event
when it is sent), or a connection dropped the way a dying server does; errors in the Messages API's shape; a
harness miss marked as one (`MISS_HEADER`); and `write_recorded`, which puts one recorded interaction back on the
wire, paced as it was recorded when asked. Every header is written here, for the simulator, the proxy and the
replay server alike, and made safe here (`header_text`): a recorded value holding CR/LF is one header line.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import struct
import time
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from harness.wire.bodies import FRAMING, HOP_BY_HOP, body_bytes, replay_headers
from harness.wire.sse import render_event

__all__ = [
    "MISS_HEADER",
    "TIMINGS",
    "ClientDisconnected",
    "Responder",
    "Timing",
    "api_error",
    "header_text",
    "send_miss",
    "write_recorded",
]

MISS_HEADER = "x-harness-miss"  # set on every answer that is a harness miss, never on a recorded answer
Timing = Literal["none", "recorded"]
TIMINGS: tuple[str, ...] = ("none", "recorded")


# A header name is a token (RFC 9110); a value or a reason phrase may hold no control character but a tab.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]+")


def header_text(value: str) -> str:
    """A header value or reason phrase fit for the wire, whoever wrote it (a recorded cassette, an upstream): a CR
    or LF would end the header there and start another (response splitting), so every control character
    becomes a space, and what Latin-1 cannot carry a `?`."""
    return _CONTROL.sub(" ", value).encode("latin-1", "replace").decode("latin-1")


class ClientDisconnected(Exception):
    """The client hung up while we were answering it."""


def api_error(kind: str, message: str) -> dict[str, Any]:
    """A body in the Messages API's error shape, which every SDK turns into its typed error."""
    return {"type": "error", "error": {"type": kind, "message": message}}


class Responder:
    """Writes one answer: a head, then a whole body or chunks; or drops the connection."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self._handler = handler
        self.status: int | None = None
        self._chunked = False

    @property
    def started(self) -> bool:
        return self.status is not None

    def send_head(
        self,
        status: int,
        headers: Iterable[tuple[str, str]],
        *,
        chunked: bool = False,
        length: int | None = None,
        reason: str | None = None,
    ) -> None:
        handler = self._handler
        try:
            handler.send_response(status, header_text(reason) if reason else None)
            for name, value in headers:
                if name.lower() not in HOP_BY_HOP and name.lower() not in FRAMING and _TOKEN.fullmatch(name):
                    handler.send_header(name, header_text(str(value)))
            if chunked:
                handler.send_header("transfer-encoding", "chunked")
            else:
                handler.send_header("content-length", str(length or 0))
            handler.end_headers()
            handler.wfile.flush()
        except OSError as err:
            raise ClientDisconnected(str(err)) from err
        self.status = status
        self._chunked = chunked

    def write_chunk(self, data: bytes) -> None:
        """One chunk of a chunked body, flushed so that the client sees it (an SSE event) at once."""
        if not data:
            return  # an empty chunk would end the body
        self.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def finish(self) -> None:
        """End a chunked body properly (a dropped connection instead is a truncated stream)."""
        if self._chunked:
            self.write(b"0\r\n\r\n")

    def send_body(
        self, status: int, headers: Iterable[tuple[str, str]], body: bytes, *, reason: str | None = None
    ) -> None:
        self.send_head(status, headers, length=len(body), reason=reason)
        self.write(body)

    def send_json(self, status: int, payload: Any, headers: Iterable[tuple[str, str]] = ()) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_body(status, [*headers, ("content-type", "application/json")], data)

    def drop(self) -> None:
        """Close abruptly (RST, no FIN handshake), the way a dying server does: the client sees a broken
        connection or stream."""
        handler = self._handler
        handler.close_connection = True
        with contextlib.suppress(OSError):
            handler.wfile.flush()
        with contextlib.suppress(OSError):
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.connection.shutdown(socket.SHUT_RDWR)

    def write(self, data: bytes) -> None:
        """Bytes of the body as they are (after `send_head`), flushed at once."""
        try:
            self._handler.wfile.write(data)
            self._handler.wfile.flush()
        except OSError as err:
            raise ClientDisconnected(str(err)) from err


# ---------------------------------------------------------------------------------------------------------
# A recorded interaction, back on the wire


def _sleep_until(moment: float) -> None:
    delay = moment - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def write_recorded(responder: Responder, interaction: Mapping[str, Any], *, timing: Timing = "none") -> None:
    """Answer with a recorded interaction: a body, SSE events one chunk each, or a dropped connection.

    With timing "recorded", the head waits for the time the recording took to start answering
    (elapsed_ms less the stream's last offset) and each event for its offset_ms, so time to first
    token and incremental rendering look as they did when recorded.
    """
    paced = timing == "recorded"
    start = time.monotonic()
    elapsed = float(interaction.get("elapsed_ms") or 0) / 1000
    if "error" in interaction:  # a recorded timeout / disconnect / connect failure
        if paced:
            _sleep_until(start + elapsed)
        responder.drop()
        return
    stored = interaction["response"]
    status = int(stored["status"])
    reason = stored.get("reason")
    headers = replay_headers(stored)
    events = stored.get("events")
    if events is None:
        if paced:
            _sleep_until(start + elapsed)
        body = body_bytes(stored)
        if stored.get("truncated"):
            responder.send_head(status, headers, chunked=True, reason=reason)
            responder.write_chunk(body)
            responder.drop()
            return
        responder.send_body(status, headers, body, reason=reason)
        return
    offsets = [float(event["offset_ms"]) / 1000 for event in events if event.get("offset_ms") is not None]
    if paced:
        _sleep_until(start + max(0.0, elapsed - (offsets[-1] if offsets else 0.0)))
    responder.send_head(status, headers, chunked=True, reason=reason)
    head_sent = time.monotonic()
    for event in events:
        if paced and event.get("offset_ms") is not None:
            _sleep_until(head_sent + float(event["offset_ms"]) / 1000)
        responder.write_chunk(render_event(event))  # renders `event` and `data`; offset_ms stays ours
    if stored.get("truncated"):
        responder.drop()
    else:
        responder.finish()


def send_miss(responder: Responder, message: str, *, status: int = 400) -> None:
    """A request no cassette answers: an API-shaped invalid_request_error marked as a harness miss."""
    responder.send_json(
        status, api_error("invalid_request_error", message), [(MISS_HEADER, "1"), ("x-should-retry", "false")]
    )
