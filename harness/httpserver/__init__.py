"""The one HTTP server core under `harness sim`, `harness proxy` and `harness serve`.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

A hardened HTTP/1.1 server on loopback, served from a daemon thread:

- every request read whole and checked before any route sees it (harness.httpserver.incoming: strict framing,
  a loopback Host, socket timeouts, TCP_NODELAY);
- a listen queue of 128 (socketserver's default of 5 resets connections from a burst of clients);
- a stop that ends the keep-alive connections still open, so a stopped server answers nothing more.

A front end is a `LoopbackServer` subclass with one method, `handle(request, responder)`: the
simulator (`harness.sim.server`), the recording proxy (`harness.proxy`) and the replay server
(`harness.serve`). It answers through a `Responder` (harness.httpserver.answers: a head, then chunks with a flush
after each, or a dropped connection; errors in the Messages API's shape; `write_recorded`, which puts one recorded
interaction back on the wire). `run_until_stopped` serves one in the foreground until a signal or the run's end.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Protocol

from harness.errors import HarnessError
from harness.files import atomic_write_text
from harness.httpserver.answers import ClientDisconnected, Responder
from harness.httpserver.incoming import HardenedHandler, IncomingRequest

__all__ = ["LISTEN_QUEUE", "LOOPBACK", "Clock", "HttpServer", "LoopbackServer", "run_until_stopped"]

LOOPBACK = "127.0.0.1"
LISTEN_QUEUE = 128  # socketserver's default of 5 resets connections from a burst of async calls

STOP_GRACE = 0.5  # seconds a stop on SIGTERM gives the answers under way before it cuts their connections
DONE_GRACE = 5.0  # seconds a run that ended by itself (`done`) gives the last answers to finish


class Clock(Protocol):
    """What the servers wait on: the `time` module, or a fake one in a test (only sleeping moves it)."""

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float, /) -> None: ...


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

    The URL goes to `url_file` in one atomic write once listening, so a script that waits for the file never reads
    half a URL; a file left there by an earlier run is removed first, before the port is even tried.
    A signal stops within a second (`STOP_GRACE`); `done` ending the run lets the last answers finish first.
    """
    stop = threading.Event()
    if url_file is not None:  # one left by a run that was killed names a server that is gone: never offer it
        url_file.unlink(missing_ok=True)
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
