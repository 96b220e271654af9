"""The egress guard's core: while on, nothing in this process, nor in a child it starts, reaches a host but loopback.

In this process it is an audit hook (PEP 578). CPython audits every way out in C, before the system call:
`socket.connect` (connect and connect_ex, of `socket` and `_socket` alike), `socket.sendto` (UDP, TCP fast open),
`socket.sendmsg`, and the name lookups `socket.getaddrinfo`, `gethostbyname` (and `_ex`), `gethostbyaddr` and
`getnameinfo`. So no client library, C extension going through the socket module, thread or asyncio loop of the
process gets past it, where patching `socket.socket.connect` left `_socket`, `sendto` and DNS open. A hook cannot
be removed: it is added on first use, and while no guard is on it returns after one check of one global.

A child process gets an environment (`child_environment`): proxy variables pointing at the loopback refuser
(harness/egress/refuser.py), NO_PROXY for loopback only, a PYTHONPATH entry whose `sitecustomize` turns this guard
on for good in a Python child (a multiprocessing `spawn` child too), and NODE_OPTIONS requiring the same guard
for node (harness/egress/child/). A child started with no `env=` inherits it through the C environment, which the
guard sets while it is on; an explicit `env=` mapping of subprocess is given it as the child is started (its audit
event carries the mapping before it is read). This process's own `os.environ` is
left as it was, so that a client made here meets the hook (one clear error) rather than the refuser; only
`env=os.environ` itself is given the guard's variables, until the guard ends.

Stdlib only, and loadable by path: a Python child's sitecustomize loads this file where harness may not be
importable.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

ENV_FLAG = "HARNESS_EGRESS_GUARD"  # in a child's environment: the guard is on there; the value ends its errors
_HERE = os.path.dirname(os.path.abspath(__file__))
CHILD_DIR = os.path.join(_HERE, "child")  # holds sitecustomize.py and nothing else Python could import
NODE_GUARD = os.path.join(CHILD_DIR, "egress-guard.js")
_PROXY_KEYS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_NO_PROXY = "localhost,127.0.0.1,::1,[::1]"
ENV_KEYS = (*_PROXY_KEYS, "NO_PROXY", "no_proxy", "PYTHONPATH", "NODE_OPTIONS", ENV_FLAG)


class EgressBlocked(OSError):
    """A request to a host other than loopback while the egress guard is on (a replay may not reach the network)."""


_entries: list[tuple[object, str]] = []  # (token, hint) of each guard on, outermost first; empty: the guard is off
_lock = threading.RLock()
_state: dict[str, Any] = {"hook": False, "proxy": None, "own_host": None}


def is_loopback(host: Any) -> bool:
    """Whether `host` (a name or an address, str or bytes) never leaves this machine: loopback, localhost, the
    unspecified address (connecting to it reaches this machine)."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if host is None or host == "":
        return True
    text = str(host).strip("[]").split("%", 1)[0].rstrip(".").lower()
    if text == "localhost" or text.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or address.is_unspecified or bool(mapped is not None and mapped.is_loopback)


def active() -> bool:
    """Whether a guard is on in this process."""
    return bool(_entries)


def hint() -> str:
    """What the errors of the outermost guard on say to do instead (the one the user started)."""
    return _entries[0][1] if _entries else "loop-harness allows loopback only here."


def _refuse(what: str, target: str) -> None:
    raise EgressBlocked(f"loop-harness blocked {what} {target}: {hint()}")


# -- the checks, one per audited event: each raises EgressBlocked, before the system call ---------------------------
def _own_host(host: Any) -> bool:
    """This machine's own name: getfqdn(), logging and mail helpers look it up, and it names no other host."""
    if _state["own_host"] is None:
        _state["own_host"] = socket.gethostname().lower()
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    return isinstance(host, str) and host.rstrip(".").lower() == _state["own_host"]


def _check_address(what: str, args: tuple[Any, ...]) -> None:
    sock, address = args[0], args[1]
    family = getattr(sock, "family", None)
    if family in (socket.AF_INET, socket.AF_INET6):
        if isinstance(address, tuple) and len(address) >= 2 and not is_loopback(address[0]):
            _refuse(what, f"{address[0]}:{address[1]}")
    elif family not in (getattr(socket, "AF_UNIX", None), getattr(socket, "AF_NETLINK", None)) and address is not None:
        # A raw packet, Bluetooth, a VM's host (vsock), CAN...: a way off the machine we cannot judge. (A unix socket
        # or netlink never leaves it; sendmsg with no address sends on a connection already checked.)
        name = getattr(family, "name", family)
        _refuse(what, f"{address!r} (socket family {name})")


def _check_lookup(args: tuple[Any, ...]) -> None:  # getaddrinfo(host, port, ...): asked to connect
    host, port = args[0], args[1]
    if not is_loopback(host) and not _own_host(host):
        shown = host.decode("ascii", "replace") if isinstance(host, bytes) else host
        _refuse("a connection to", f"{shown}:{port}")


def _check_name(what: str) -> Callable[[tuple[Any, ...]], None]:
    def check(args: tuple[Any, ...]) -> None:
        host = args[0][0] if isinstance(args[0], tuple) else args[0]
        if not is_loopback(host) and not _own_host(host):
            _refuse(what, str(host))

    return check


def _give_child(index: int) -> Callable[[tuple[Any, ...]], None]:
    """A process about to start: its explicit environment gets the guard's; none, and it inherits the C one."""

    def give(args: tuple[Any, ...]) -> None:
        env = args[index] if len(args) > index else None
        if env is None:
            _export()  # re-set: the C environment may have been set since, through os.environ
        elif env is os.environ:  # `env=os.environ`, this process's view: given the guard's until the guard ends
            saved = _state.setdefault("python_view", {})  # key: (what it held before, what the guard put)
            for key, value in child_environment(os.environ.get).items():
                saved[key] = (saved[key][0] if key in saved else os.environ.get(key), value)
                os.environ[key] = value
        elif isinstance(env, MutableMapping):
            bytes_keys = any(isinstance(key, bytes) for key in env)
            current = (lambda key: _text(env.get(key.encode()))) if bytes_keys else env.get
            for key, value in child_environment(current).items():
                env[key.encode() if bytes_keys else key] = value.encode() if bytes_keys else value
        # An immutable mapping cannot be given anything: docs/record-replay.md says so.

    return give


def _text(value: Any) -> str | None:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


_CHECKS: dict[str, Callable[[tuple[Any, ...]], None]] = {
    "socket.connect": lambda args: _check_address("a connection to", args),
    "socket.sendto": lambda args: _check_address("a packet to", args),
    "socket.sendmsg": lambda args: _check_address("a packet to", args),
    "socket.getaddrinfo": _check_lookup,
    "socket.gethostbyname": _check_name("a DNS lookup of"),
    "socket.gethostbyaddr": _check_name("a reverse DNS lookup of"),
    "socket.getnameinfo": _check_name("a reverse DNS lookup of"),
    # subprocess audits before it reads `env`; os.exec*e and os.posix_spawn read theirs first (docs say so).
    "subprocess.Popen": _give_child(3),
    "os.exec": lambda args: _export() if len(args) < 3 or args[2] is None else None,
    "os.system": _give_child(1),  # no environment of its own: the C one
}


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _entries:  # the whole cost while no guard is on
        return
    check = _CHECKS.get(event)
    if check is not None:
        check(args)


# -- the environment of a child ---------------------------------------------------------------------------------
def _quoted(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"' if (" " in path or '"' in path) else path


def child_environment(current: Callable[[str], str | None]) -> dict[str, str]:
    """What a child's environment gets while the guard is on, `current` reading the environment it had: the
    proxies (when a refuser runs), NO_PROXY for loopback only, the PYTHONPATH entry and the node option added to
    what it held, and the flag with the hint its errors end with."""
    values: dict[str, str] = {}
    if _state["proxy"]:
        values.update(dict.fromkeys(_PROXY_KEYS, _state["proxy"]))
    values["NO_PROXY"] = values["no_proxy"] = _NO_PROXY
    paths = [entry for entry in (current("PYTHONPATH") or "").split(os.pathsep) if entry]
    values["PYTHONPATH"] = os.pathsep.join([CHILD_DIR, *(entry for entry in paths if entry != CHILD_DIR)])
    node_options = current("NODE_OPTIONS") or ""
    require = f"--require {_quoted(NODE_GUARD)}"
    values["NODE_OPTIONS"] = node_options if require in node_options else f"{node_options} {require}".strip()
    values[ENV_FLAG] = hint()
    return values


def _export() -> None:
    """Set the C environment a child inherits; os.environ, this process's view, is left as it was. subprocess's
    posix_spawn path would hand the child os.environ itself for "no env=": its own off switch sends it through
    fork_exec, which inherits the C environment, while the guard is on."""
    for key, value in child_environment(os.environ.get).items():
        os.putenv(key, value)
    if "subprocess" in sys.modules and getattr(sys.modules["subprocess"], "_USE_POSIX_SPAWN", False):
        _state["posix_spawn"] = True
        setattr(sys.modules["subprocess"], "_USE_POSIX_SPAWN", False)  # noqa: B010 (a private knob: no stub)


def _unexport() -> None:
    for key, (before, given) in (_state.pop("python_view", None) or {}).items():
        if os.environ.get(key) == given:  # still what the guard put there, not the code's own change
            if before is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = before
    if _state.pop("posix_spawn", False) and "subprocess" in sys.modules:
        setattr(sys.modules["subprocess"], "_USE_POSIX_SPAWN", True)  # noqa: B010
    for key in ENV_KEYS:
        if key in os.environ:
            os.putenv(key, os.environ[key])
        else:
            os.unsetenv(key)


# -- on and off -----------------------------------------------------------------------------------------------------
def set_proxy(url: str | None) -> None:
    """The loopback refuser children's proxy variables point at (harness.egress starts it)."""
    _state["proxy"] = url


@contextlib.contextmanager
def guarded(hint_text: str) -> Iterator[None]:
    """Inside, every way out of the machine but loopback raises EgressBlocked ending with `hint_text` (what to do
    instead), here and in a child started from here. Reentrant and process-wide: any thread, any nesting."""
    token = object()
    with _lock:
        if not _state["hook"]:
            sys.addaudithook(_hook)
            _state["hook"] = True
        _entries.append((token, hint_text))
        if len(_entries) == 1:
            _export()
    try:
        yield
    finally:
        with _lock:
            _entries[:] = [entry for entry in _entries if entry[0] is not token]
            if not _entries:
                _unexport()


def enforce_in_child(hint_text: str) -> None:
    """A child of a guarded process: the guard on for good, its own children given the environment it got."""
    proxy = os.environ.get("HTTP_PROXY")
    set_proxy(proxy if proxy and is_loopback(proxy.split("://", 1)[-1].rsplit(":", 1)[0]) else None)
    on = guarded(hint_text)
    on.__enter__()
    _state["for_good"] = on  # kept: a context manager collected would close its generator, and the guard with it
