"""HTTP plumbing shared by `harness proxy` and `harness serve`.

A loopback-only HTTP/1.1 server in a daemon thread; a request read whole (content-length or chunked);
a responder that writes a head, then chunks with a flush after each (so a client sees every SSE event
when it is sent), and can drop the connection the way a dying server does; errors in the Messages
API's shape; and `write_recorded`, which puts one recorded interaction back on the wire.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

from harness.cassette.recorder import REPLAYED_HEADER
from harness.cassette.sse import render_event
from harness.cassette.wire import body_bytes, stored_content_type
from harness.errors import HarnessError

LOOPBACK = "127.0.0.1"
MISS_HEADER = "x-harness-miss"  # set on every answer that is a harness miss, never on a recorded answer
Timing = Literal["none", "recorded"]
TIMINGS: tuple[str, ...] = ("none", "recorded")

# Headers that describe one connection, not the message: never copied from one hop to the next.
HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te", "trailer",
    "transfer-encoding", "upgrade",
})
# Framing this side decides for itself (bodies are sent decoded, chunked or with their own length).
FRAMING = frozenset({"content-length", "content-encoding"})


class ClientDisconnected(Exception):
    """The client hung up while we were answering it."""


def api_error(kind: str, message: str) -> dict[str, Any]:
    """A body in the Messages API's error shape, which every SDK turns into its typed error."""
    return {"type": "error", "error": {"type": kind, "message": message}}


@dataclass(frozen=True)
class IncomingRequest:
    method: str
    target: str  # path and query exactly as the client sent them
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.target).path or "/"

    @property
    def query(self) -> str:
        return urlsplit(self.target).query


class Responder:
    """Writes one answer: a head, then a whole body or chunks; or drops the connection."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self._handler = handler
        self.status: int | None = None
        self._chunked = False

    @property
    def started(self) -> bool:
        return self.status is not None

    def send_head(self, status: int, headers: Iterable[tuple[str, str]], *, chunked: bool = False,
                  length: int | None = None, reason: str | None = None) -> None:
        handler = self._handler
        try:
            handler.send_response(status, reason or None)
            for name, value in headers:
                if name.lower() not in HOP_BY_HOP and name.lower() not in FRAMING:
                    handler.send_header(name, value)
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
        if not data:
            return  # an empty chunk would end the body
        self._write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def finish(self) -> None:
        """End a chunked body properly (a dropped connection instead is a truncated stream)."""
        if self._chunked:
            self._write(b"0\r\n\r\n")

    def send_body(self, status: int, headers: Iterable[tuple[str, str]], body: bytes, *,
                  reason: str | None = None) -> None:
        self.send_head(status, headers, length=len(body), reason=reason)
        self._write(body)

    def send_json(self, status: int, payload: Any, headers: Iterable[tuple[str, str]] = ()) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_body(status, [*headers, ("content-type", "application/json")], data)

    def drop(self) -> None:
        """Close abruptly (RST, no FIN handshake): the client sees a broken connection or stream."""
        handler = self._handler
        handler.close_connection = True
        with contextlib.suppress(OSError):
            handler.wfile.flush()
        with contextlib.suppress(OSError):
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.connection.shutdown(socket.SHUT_RDWR)

    def _write(self, data: bytes) -> None:
        try:
            self._handler.wfile.write(data)
            self._handler.wfile.flush()
        except OSError as err:
            raise ClientDisconnected(str(err)) from err


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
    length = int(handler.headers.get("content-length") or 0)
    return handler.rfile.read(length) if length else b""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, chunked bodies
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """The owning server logs each exchange its own way."""

    def _dispatch(self) -> None:
        self.server_version = self.server.owner.server_name
        request = IncomingRequest(self.command, self.path, list(self.headers.items()), _read_body(self))
        responder = Responder(self)
        if self.server.owner.stopped:  # a request on a kept-alive connection after stop(): nobody is answering
            responder.drop()
            return
        self.server.owner._begin()
        try:
            self.server.owner.handle(request, responder)
        except ClientDisconnected:
            self.close_connection = True
        finally:
            self.server.owner._end()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _dispatch


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: LoopbackServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up is normal here; anything else is reported."""
        if not isinstance(sys.exc_info()[1], ConnectionError | ClientDisconnected):
            super().handle_error(request, client_address)


class LoopbackServer:
    """An HTTP server on 127.0.0.1 only, served from a daemon thread. Subclasses implement `handle`."""

    server_name = "harness"

    def __init__(self, *, port: int = 0) -> None:
        self.port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._in_flight = 0
        self._idle = threading.Condition()
        self.stopped = False

    def handle(self, request: IncomingRequest, responder: Responder) -> None:
        raise NotImplementedError

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> LoopbackServer:
        if self._server is not None:
            return self
        self.stopped = False
        try:
            self._server = _Server((LOOPBACK, self.port), _Handler)
        except OSError as err:
            raise HarnessError(f"cannot listen on {LOOPBACK}:{self.port}: {err.strerror or err}") from None
        self._server.owner = self
        self.port = self._server.server_address[1]
        # A short poll interval keeps stop() quick: shutdown() waits for the loop's next poll.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=self.server_name, daemon=True)
        self._thread.start()
        return self

    def stop(self, grace: float = 5.0) -> None:
        """Stop accepting, then give the exchanges under way up to `grace` seconds to finish."""
        server, self._server = self._server, None
        if server is None:
            return
        self.stopped = True
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        deadline = time.monotonic() + grace
        with self._idle:
            while self._in_flight and (left := deadline - time.monotonic()) > 0:
                self._idle.wait(left)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def _begin(self) -> None:
        with self._idle:
            self._in_flight += 1

    def _end(self) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()


def run_until_stopped(server: LoopbackServer, *, banner: str, url_file: Path | None = None,
                      on_stop: Callable[[], None] | None = None) -> None:
    """Serve in the foreground until Ctrl-C or SIGTERM; then stop, and call `on_stop` (saving, reports)."""
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        # Both signals set the event (rather than raising in the middle of whatever runs): the stop is
        # then always the same orderly path, even where SIGINT was inherited as ignored.
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, lambda *_: stop.set())
    server.start()
    try:
        print(banner.format(url=server.base_url), flush=True)
        if url_file is not None:
            url_file.write_text(server.base_url + "\n", encoding="utf-8")
        while not stop.wait(0.05):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        if threading.current_thread() is threading.main_thread():
            # A second Ctrl-C while we finish must not interrupt a save half-way.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        server.stop()
        if on_stop is not None:
            on_stop()


# ---------------------------------------------------------------------------------------------------------
# A recorded interaction, back on the wire


def replay_headers(stored: Mapping[str, Any]) -> list[tuple[str, str]]:
    headers = [(name, value) for name, value in (stored.get("headers") or {}).items()
               if name.lower() not in HOP_BY_HOP and name.lower() not in FRAMING]
    content_type = stored_content_type(stored)
    if content_type and not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("content-type", content_type))
    headers.append((REPLAYED_HEADER, "1"))
    return headers


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
    responder.send_json(status, api_error("invalid_request_error", message),
                        [(MISS_HEADER, "1"), ("x-should-retry", "false")])
