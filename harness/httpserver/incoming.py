"""Reading one request whole, strictly, before any route sees it.

- strict framing: a Content-Length that is not a plain non-negative number, a chunk size that is not hex,
  both framings at once, or a body over `MAX_BODY_BYTES` is a 400 (413 for the size), never a handler
  traceback and never "read to EOF";
- a request target with a control or non-ASCII character is a 400;
- a Host header that does not name a loopback address is a 403, so a web page that rebinds its own
  DNS name to 127.0.0.1 cannot read these servers (DNS rebinding);
- bounded memory: a body is read into one buffer (`MAX_BODY_BYTES` at most, else 413), and the bodies held
  at once by all the process's servers share `TOTAL_BODY_BYTES` (`BodyBudget`: wait, then 503);
- a socket timeout, so a half-open connection does not hold a thread for ever;
- TCP_NODELAY, since a head and its body leave in separate writes (Nagle would hold the body ~40 ms).

`HardenedHandler` does all of it, under every server of harness.httpserver; the request a route gets is an
`IncomingRequest`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from harness.httpserver.answers import api_error

__all__ = [
    "BODY_BUDGET",
    "MAX_BODY_BYTES",
    "SOCKET_TIMEOUT",
    "TOTAL_BODY_BYTES",
    "BodyBudget",
    "HardenedHandler",
    "IncomingRequest",
    "MalformedRequest",
    "is_loopback_host",
    "read_body",
]

SOCKET_TIMEOUT = 60.0  # seconds a connection may sit silent (mid-request or between requests) before it is closed
MAX_BODY_BYTES = 64 * 1024 * 1024  # the largest request body read (the API's own limit is 32 MB)
# Request bodies held at once by every server in the process (two of the largest), and how long a request
# waits for room before a 503.
TOTAL_BODY_BYTES = 2 * MAX_BODY_BYTES
BODY_WAIT_SECONDS = 30.0


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


class BodyBudget:
    """The bytes of request bodies held at once by every server in this process, bounded by `limit`.

    A request takes its body's size before reading it (a chunked one chunk by chunk) and gives it back when
    its answer is done. One that finds no room waits up to `wait` seconds for others to finish, then is
    answered 503 (retryable: the SDK tries again), so eight clients sending 60 MB each are read a few at a
    time instead of holding 480 MB of bodies and their parsed copies at once.
    """

    def __init__(self, limit: int, wait: float) -> None:
        self.limit = limit
        self.wait = wait
        self.held = 0
        self._room = threading.Condition()

    def reserve(self, size: int) -> None:
        with self._room:
            if not self._room.wait_for(lambda: self.held + size <= self.limit, timeout=self.wait):
                raise MalformedRequest(
                    f"the server is busy reading other requests' bodies ({self.held} of {self.limit} bytes "
                    "held); try again", 503)
            self.held += size

    def release(self, size: int) -> None:
        if size:
            with self._room:
                self.held -= size
                self._room.notify_all()


class _Taken:
    """What one request took from a BodyBudget, to give it all back at once."""

    def __init__(self, budget: BodyBudget) -> None:
        self.budget = budget
        self.size = 0

    def take(self, size: int) -> None:
        self.budget.reserve(size)
        self.size += size

    def give_back(self) -> None:
        size, self.size = self.size, 0
        self.budget.release(size)


BODY_BUDGET = BodyBudget(TOTAL_BODY_BYTES, BODY_WAIT_SECONDS)


def read_body(rfile: Any, headers: Any, budget: _Taken | None = None) -> bytes:
    """The request body, by its framing (chunked or Content-Length); MalformedRequest when the framing is bad, the
    body is over MAX_BODY_BYTES (413) or, with a `budget`, there is no room for it (503)."""
    encoding = (headers.get("transfer-encoding") or "").strip().lower()
    lengths = headers.get_all("content-length") or []
    if encoding and encoding != "chunked":
        raise MalformedRequest(f"Transfer-Encoding {encoding!r} is not supported; send chunked or a Content-Length")
    if encoding == "chunked":
        if lengths:  # both framings at once is how requests are smuggled
            raise MalformedRequest("a request may not carry both Content-Length and Transfer-Encoding")
        # One growing buffer: a list of chunks costs an object (~35 bytes) per chunk, 19 bytes of memory per
        # byte sent in 2-byte chunks.
        body = bytearray()
        while True:
            line = rfile.readline(1026)
            size_text = line.split(b";")[0].strip()
            if not line.endswith(b"\n") or not size_text or not all(c in b"0123456789abcdefABCDEF" for c in size_text):
                raise MalformedRequest(f"chunk size {line[:40]!r} is not a hexadecimal number")
            size = int(size_text, 16)
            if len(body) + size > MAX_BODY_BYTES:
                raise MalformedRequest(f"the chunked body exceeds {MAX_BODY_BYTES} bytes", 413)
            if size == 0:
                for _ in range(100):  # trailers, up to the blank line
                    if rfile.readline(65537) in (b"\r\n", b"\n", b""):
                        return bytes(body)
                raise MalformedRequest("too many trailer lines after the last chunk")
            if budget is not None:
                budget.take(size)
            start = len(body)
            body.extend(rfile.read(size))
            if len(body) - start != size:
                raise MalformedRequest(f"the body ended after {len(body) - start} of {size} bytes")
            if rfile.readline(3) not in (b"\r\n", b"\n"):
                raise MalformedRequest("a chunk is not followed by CRLF")
    if len(set(lengths)) > 1:
        raise MalformedRequest(f"conflicting Content-Length headers {lengths!r}")
    length = _content_length(lengths[0]) if lengths else 0
    if length and budget is not None:
        budget.take(length)
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
    budget = BODY_BUDGET  # shared by every server of the process: memory is the process's

    def setup(self) -> None:
        super().setup()
        self._taken = _Taken(self.budget)

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:
        """The owning server logs each exchange its own way."""

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        finally:  # the answer is done (or the connection gone): the body's bytes go back to the budget
            self.body = b""
            self._taken.give_back()

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        refusal = self._refusal()
        if refusal is None:
            try:
                self.body = read_body(self.rfile, self.headers, self._taken)
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
            return MalformedRequest(
                f"Host {host[:80]!r} is not a loopback name; this server answers only "
                "requests addressed to 127.0.0.1, ::1 or localhost",
                403,
            )
        return None

    def refuse(self, status: int, reason: str) -> None:
        """Answer with an API-shaped error and close the connection (what follows on it cannot be trusted)."""
        self.close_connection = True
        kind = {403: "permission_error", 413: "request_too_large", 503: "overloaded_error"}.get(
            status, "invalid_request_error")
        data = json.dumps(api_error(kind, f"{self.server_version}: {reason}")).encode("utf-8")
        with contextlib.suppress(OSError):
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
