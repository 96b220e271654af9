"""The network block: while a test replays (record mode none), it may reach loopback only.

Blocked at the socket (connect, connect_ex, getaddrinfo), so whatever client the test uses, nothing silently
goes live; a blocked attempt is a `NetworkBlocked` error saying how to record instead.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

__all__ = ["NetworkBlocked", "network_blocked"]


class NetworkBlocked(OSError):
    """A test in record mode none tried to reach a host other than loopback."""


def _is_loopback(host: Any) -> bool:
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _guard(original: Callable[..., Any], describe: Callable[..., tuple[Any, Any]]) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        host, port = describe(*args, **kwargs)
        if not _is_loopback(host):
            raise NetworkBlocked(
                f"loop-harness blocked a connection to {host}:{port}: record mode is 'none', so this test may "
                "talk to loopback only. Record with --record-mode=once (or new_episodes) to reach the network."
            )
        return original(*args, **kwargs)

    return guarded


def _connect_target(sock: socket.socket, address: Any, *_: Any) -> tuple[Any, Any]:
    if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
        return address[0], address[1]
    return "localhost", None  # unix sockets and the like never leave the machine


@contextlib.contextmanager
def network_blocked() -> Iterator[None]:
    """Inside, every connection to a host other than loopback raises NetworkBlocked."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", _guard(socket.socket.connect, _connect_target))
        patch.setattr(socket.socket, "connect_ex", _guard(socket.socket.connect_ex, _connect_target))
        patch.setattr(socket, "getaddrinfo", _guard(socket.getaddrinfo, lambda host, port, *a, **k: (host, port)))
        yield
