"""One verifying TLS context for every httpx2 client built during a replay, instead of one per client.

Each `anthropic.Anthropic()` builds an httpx2 transport, and each transport builds an `ssl.SSLContext` that
loads the system's CA bundle (`load_verify_locations`): about 36 ms a client. A test that builds its own
client pays that on every test, although a replay answers every request at the transport and opens no
connection. While a replay is in use (`use_cassette` in a mode that may not record, hence the pytest
plugin's cassettes in mode none), a client built with the default TLS settings gets the context the first
such client built: the same settings, the same CAs, verified the same way, loaded once per process. A
client that outlives the cassette keeps a context as good as the one it would have built, so it still
verifies if it ever talks to a real host. Clients built with their own `verify=` or `cert=` are left alone.

A shared context is one object: code that reaches into its client's transport to change the context
(`load_cert_chain` on it) changes it for the others too; pass `verify=<your context>` for that.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

_lock = threading.Lock()
_users = 0  # replays in use in this process (threads and tasks each enter their own)
_original: Callable[..., Any] | None = None
_contexts: dict[tuple[bool, str | None, str | None], Any] = {}


def _transports_module() -> Any:
    """httpx2's module whose transports build their contexts (it imports `create_ssl_context` by name)."""
    from httpx2._transports import default

    return default if callable(getattr(default, "create_ssl_context", None)) else None


def _shared_context(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is not True or cert:
            return original(verify=verify, cert=cert, trust_env=trust_env)
        # What the default context reads from the environment is part of its identity.
        key = (trust_env, os.environ.get("SSL_CERT_FILE") if trust_env else None,
               os.environ.get("SSL_CERT_DIR") if trust_env else None)
        with _lock:
            context = _contexts.get(key)
            if context is None:
                context = _contexts[key] = original(verify=True, cert=None, trust_env=trust_env)
        return context

    return create_ssl_context


@contextlib.contextmanager
def shared_tls_contexts() -> Iterator[None]:
    """While inside, httpx2 clients built with default TLS settings share one verifying context."""
    global _users, _original
    module = _transports_module()
    if module is None:  # an httpx2 that builds contexts elsewhere: clients keep building their own
        yield
        return
    with _lock:
        if _users == 0:
            _original = module.create_ssl_context
            module.create_ssl_context = _shared_context(_original)
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _original is not None:
                module.create_ssl_context = _original
                _original = None
