"""The one HTTP server core under `harness sim`, `harness proxy` and `harness serve`.

A hardened HTTP/1.1 server on loopback, served from a daemon thread:

- requests read whole before any route sees them, with strict framing: a Content-Length that is not
  a plain non-negative number, a chunk size that is not hex, or a body over `MAX_BODY_BYTES` is a 400
  (413 for the size), never a handler traceback and never "read to EOF";
- a request target with a control or non-ASCII character is a 400;
- a Host header that does not name a loopback address is a 403, so a web page that rebinds its own
  DNS name to 127.0.0.1 cannot read these servers (DNS rebinding);
- socket timeouts, so half-open connections do not hold a thread each for ever;
- a listen queue of 128 (socketserver's default of 5 resets connections from a burst of clients);
- TCP_NODELAY, since a head and its body leave in separate writes (Nagle would hold the body ~40 ms);
- a stop that ends the keep-alive connections still open, so a stopped server answers nothing more.

A front end is a `LoopbackServer` subclass with one method, `handle(request, responder)`: the
simulator (`harness.sim.server`), the recording proxy (`harness.proxy`) and the replay server
(`harness.serve`). On top of it: a responder that writes a head, then chunks with a flush after each (so a client sees
every SSE event when it is sent), and can drop the connection the way a dying server does; errors in
the Messages API's shape; and `write_recorded`, which puts one recorded interaction back on the wire.
"""

from __future__ import annotations

import contextlib
import ipaddress
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
from typing import Any, ClassVar, Literal, Protocol
from urllib.parse import urlsplit

from harness.errors import HarnessError
from harness.files import atomic_write_text
from harness.wire.bodies import FRAMING, HOP_BY_HOP, body_bytes, replay_headers
from harness.wire.sse import render_event

LOOPBACK = "127.0.0.1"
LISTEN_QUEUE = 128  # socketserver's default of 5 resets connections from a burst of async calls
SOCKET_TIMEOUT = 60.0  # seconds a connection may sit silent (mid-request or between requests) before it is closed
MAX_BODY_BYTES = 64 * 1024 * 1024  # the largest request body read (the API's own limit is 32 MB)
STOP_GRACE = 0.5  # seconds a stop on SIGTERM gives the answers under way before it cuts their connections
DONE_GRACE = 5.0  # seconds a run that ended by itself (`done`) gives the last answers to finish
MISS_HEADER = "x-harness-miss"  # set on every answer that is a harness miss, never on a recorded answer
Timing = Literal["none", "recorded"]
TIMINGS: tuple[str, ...] = ("none", "recorded")


class Clock(Protocol):
    """What the servers wait on: the `time` module, or a fake one in a test (only sleeping moves it)."""

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float, /) -> None: ...


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

    def header(self, name: str) -> str | None:
        """The last value of header `name`, whatever its case on the wire; None when absent."""
        wanted = name.lower()
        found = [value for key, value in self.headers if key.lower() == wanted]
        return found[-1] if found else None


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
        """One chunk of a chunked body, flushed so that the client sees it (an SSE event) at once."""
        if not data:
            return  # an empty chunk would end the body
        self.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def finish(self) -> None:
        """End a chunked body properly (a dropped connection instead is a truncated stream)."""
        if self._chunked:
            self.write(b"0\r\n\r\n")

    def send_body(self, status: int, headers: Iterable[tuple[str, str]], body: bytes, *,
                  reason: str | None = None) -> None:
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


class MalformedRequest(Exception):
    """A request this server will not read: answered with `status` and the reason, then the connection closes."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.status = status


def is_loopback_host(host_header: str) -> bool:
    """Whether a Host header names this machine: localhost (or *.localhost), 127.0.0.0/8 or ::1, any port."""
    host = host_header.strip().lower()
    if host.startswith("["):  # [::1]:8080
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _content_length(value: str) -> int:
    text = value.strip()
    # int() would also take "+5", " 5", "5_0" and "-1"; the grammar is digits only.
    if not text.isascii() or not text.isdigit():
        raise MalformedRequest(f"Content-Length {value!r} is not a non-negative whole number")
    length = int(text)
    if length > MAX_BODY_BYTES:
        raise MalformedRequest(f"the body is {length} bytes; this server reads at most {MAX_BODY_BYTES}", 413)
    return length


def _read_exactly(rfile: Any, size: int) -> bytes:
    data = rfile.read(size)
    if len(data) != size:
        raise MalformedRequest(f"the body ended after {len(data)} of {size} bytes")
    return data


def read_body(rfile: Any, headers: Any) -> bytes:
    """The request body, by its framing (chunked or Content-Length); MalformedRequest when the framing is bad."""
    encoding = (headers.get("transfer-encoding") or "").strip().lower()
    lengths = headers.get_all("content-length") or []
    if encoding and encoding != "chunked":
        raise MalformedRequest(f"Transfer-Encoding {encoding!r} is not supported; send chunked or a Content-Length")
    if encoding == "chunked":
        if lengths:  # both framings at once is how requests are smuggled
            raise MalformedRequest("a request may not carry both Content-Length and Transfer-Encoding")
        chunks: list[bytes] = []
        total = 0
        while True:
            line = rfile.readline(1026)
            size_text = line.split(b";")[0].strip()
            if not line.endswith(b"\n") or not size_text or not all(c in b"0123456789abcdefABCDEF" for c in size_text):
                raise MalformedRequest(f"chunk size {line[:40]!r} is not a hexadecimal number")
            size = int(size_text, 16)
            total += size
            if total > MAX_BODY_BYTES:
                raise MalformedRequest(f"the chunked body exceeds {MAX_BODY_BYTES} bytes", 413)
            if size == 0:
                for _ in range(100):  # trailers, up to the blank line
                    if rfile.readline(65537) in (b"\r\n", b"\n", b""):
                        return b"".join(chunks)
                raise MalformedRequest("too many trailer lines after the last chunk")
            chunks.append(_read_exactly(rfile, size))
            if rfile.readline(3) not in (b"\r\n", b"\n"):
                raise MalformedRequest("a chunk is not followed by CRLF")
    if len(set(lengths)) > 1:
        raise MalformedRequest(f"conflicting Content-Length headers {lengths!r}")
    length = _content_length(lengths[0]) if lengths else 0
    return _read_exactly(rfile, length) if length else b""


class HardenedHandler(BaseHTTPRequestHandler):
    """Reads and checks each request before any route runs: target, Host, framing; the body is `self.body`.

    The handler under every `LoopbackServer` (sim, proxy, serve) derives from it.
    """

    protocol_version = "HTTP/1.1"  # keep-alive, chunked bodies
    sys_version = ""
    timeout = SOCKET_TIMEOUT  # socketserver sets it on the connection: a silent client is cut loose
    # Head and body leave in separate writes: with Nagle on, the body waits for the delayed ACK of the head
    # (about 40 ms a request on loopback).
    disable_nagle_algorithm = True
    body: bytes = b""

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:
        """The owning server logs each exchange its own way."""

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        refusal = self._refusal()
        if refusal is None:
            try:
                self.body = read_body(self.rfile, self.headers)
            except MalformedRequest as err:
                refusal = err
            except TimeoutError:
                refusal = MalformedRequest("the body did not arrive in time", 408)
        if refusal is not None:
            self.refuse(refusal.status, str(refusal))
            return False
        return True

    def _refusal(self) -> MalformedRequest | None:
        if not self.path.isascii() or not self.path.isprintable():
            return MalformedRequest(f"the request target {self.path[:80]!r} has characters a URL may not have")
        host = self.headers.get("host")
        if host is not None and not is_loopback_host(host):
            return MalformedRequest(f"Host {host[:80]!r} is not a loopback name; this server answers only "
                                    "requests addressed to 127.0.0.1, ::1 or localhost", 403)
        return None

    def refuse(self, status: int, reason: str) -> None:
        """Answer with an API-shaped error and close the connection (what follows on it cannot be trusted)."""
        self.close_connection = True
        kind = {403: "permission_error", 413: "request_too_large"}.get(status, "invalid_request_error")
        data = json.dumps(api_error(kind, f"{self.server_version}: {reason}")).encode("utf-8")
        with contextlib.suppress(OSError):
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()


class HttpServer(ThreadingHTTPServer):
    """A threading HTTP server that tracks its open connections, so that a stop can end them."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = LISTEN_QUEUE
    quiet_errors: ClassVar[tuple[type[BaseException], ...]] = (ConnectionError, TimeoutError, ClientDisconnected)
    owner: Any  # the object that answers: a LoopbackServer or the Simulator

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up or went silent is normal here; anything else is reported."""
        if not isinstance(sys.exc_info()[1], self.quiet_errors):
            super().handle_error(request, client_address)

    def finish_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        try:
            super().finish_request(request, client_address)
        finally:
            with self._open_lock:
                self._open.discard(request)

    def close_open_connections(self) -> None:
        """End the connections still open (keep-alive or mid-answer): a stopped server answers nothing more."""
        with self._open_lock:
            connections = list(self._open)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(HardenedHandler):
    server: HttpServer

    def setup(self) -> None:
        super().setup()
        self.server_version = self.server.owner.server_name

    def _dispatch(self) -> None:
        owner: LoopbackServer = self.server.owner
        request = IncomingRequest(self.command, self.path, list(self.headers.items()), self.body)
        responder = Responder(self)
        if owner.stopped:  # a request on a kept-alive connection after stop(): nobody is answering
            responder.drop()
            return
        owner._begin()
        try:
            owner.handle(request, responder)
        except ClientDisconnected:
            self.close_connection = True
        finally:
            owner._end()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _dispatch


class LoopbackServer:
    """An HTTP server on loopback only (127.0.0.1 unless `host` names another loopback address), served
    from a daemon thread. Subclasses implement `handle`."""

    server_name = "harness"

    def __init__(self, *, host: str = LOOPBACK, port: int = 0) -> None:
        self.host = host
        self.port = port
        self._server: HttpServer | None = None
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
            self._server = HttpServer((self.host, self.port), _Handler)
        except OSError as err:
            raise HarnessError(f"cannot listen on {self.host}:{self.port}: {err.strerror or err}") from None
        self._server.owner = self
        self.port = self._server.server_address[1]
        # A short poll interval keeps stop() quick: shutdown() waits for the loop's next poll.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=self.server_name, daemon=True)
        self._thread.start()
        return self

    def stop(self, grace: float = 5.0) -> None:
        """Stop accepting, give the exchanges under way up to `grace` seconds to finish, then cut them off."""
        server, self._server = self._server, None
        if server is None:
            return
        self.stopped = True
        server.shutdown()  # stop accepting, and close the listening socket
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        deadline = time.monotonic() + grace
        with self._idle:
            while self._in_flight and (left := deadline - time.monotonic()) > 0:
                self._idle.wait(left)
        server.close_open_connections()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _begin(self) -> None:
        with self._idle:
            self._in_flight += 1

    def _end(self) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()


def run_until_stopped(server: LoopbackServer, *, banner: str, url_file: Path | None = None,
                      on_stop: Callable[[], None] | None = None, done: Callable[[], bool] | None = None) -> None:
    """Serve in the foreground until Ctrl-C, SIGTERM or `done()`; then stop, and call `on_stop` (saving, reports).

    The URL goes to `url_file` in one atomic write, so a script that waits for the file never reads half a URL.
    A signal stops within a second (`STOP_GRACE`); `done` ending the run lets the last answers finish first.
    """
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        # Both signals set the event (rather than raising in the middle of whatever runs): the stop is
        # then always the same orderly path, even where SIGINT was inherited as ignored.
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, lambda *_: stop.set())
    server.start()
    finished = False
    try:
        print(banner.format(url=server.base_url), flush=True)
        if url_file is not None:
            atomic_write_text(url_file, server.base_url + "\n")
        while not stop.wait(0.05):
            if done is not None and done():
                finished = True
                break
    except KeyboardInterrupt:
        pass
    finally:
        if threading.current_thread() is threading.main_thread():
            # A second Ctrl-C while we finish must not interrupt a save half-way.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        server.stop(DONE_GRACE if finished else STOP_GRACE)  # SIGTERM means now: gone within a second
        if on_stop is not None:
            on_stop()


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
    responder.send_json(status, api_error("invalid_request_error", message),
                        [(MISS_HEADER, "1"), ("x-should-retry", "false")])
