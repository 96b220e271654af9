"""The loopback refuser: the HTTP proxy a guarded process's children are pointed at, which forwards nothing.

A child that honours the proxy variables (curl, wget, git, pip, node with a proxy agent, Python's urllib, requests
and httpx, Go's net/http...) asks it for its target, by `CONNECT host:port` or by an absolute URL; it answers
403 with the host named in the status line and the body, and closes. So the child's request never leaves the
machine, and what it prints says why. Each refused target is kept (`refused`), for tests and reports.

Stdlib only; one daemon thread per process, started on first use, on 127.0.0.1 and a free port.
"""

from __future__ import annotations

import contextlib
import re
import socket
import socketserver
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

__all__ = ["Refuser"]

_READ_LIMIT = 16 * 1024  # a request head longer than this is refused as it stands
_PRINTABLE = re.compile(r"[^\x21-\x7e]")


def _target(head: bytes) -> str:
    """`host:port` of a proxy request's first line, or what it was when it names none."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split()
    if len(parts) >= 2:
        method, target = parts[0].upper(), parts[1]
        if method == "CONNECT":
            return _PRINTABLE.sub("?", target)[:300]
        split = urlsplit(target)
        if split.hostname:
            port = split.port or (443 if split.scheme == "https" else 80)
            return _PRINTABLE.sub("?", f"{split.hostname}:{port}")[:300]
    return "an unnamed host"


class Refuser:
    """A loopback HTTP proxy that refuses every request, naming its target and `hint()`."""

    def __init__(self, hint: Callable[[], str]) -> None:
        self.refused: list[str] = []
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                connection: socket.socket = self.request
                connection.settimeout(10)
                head = b""
                try:
                    while b"\r\n\r\n" not in head and len(head) < _READ_LIMIT:
                        chunk = connection.recv(4096)
                        if not chunk:
                            break
                        head += chunk
                except OSError:
                    pass
                target = _target(head)
                outer.refused.append(target)
                text = f"loop-harness blocked a connection to {target}: {hint()}"
                reason = _PRINTABLE.sub(" ", text)[:400].replace("  ", " ")
                body = (text + "\n").encode("utf-8", "replace")
                answer = (f"HTTP/1.1 403 {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                          f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("latin-1", "replace")
                with contextlib.suppress(OSError):  # the child gave up first
                    connection.sendall(answer + body)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request: object, client_address: object) -> None:  # a child gone: nothing to say
                pass

        self._server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, name="loop-harness egress refuser", daemon=True).start()

