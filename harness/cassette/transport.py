"""The replay transport: in process, every request an httpx2 client sends goes to the cassette of its context.

The patch sits where vcrpy's httpx2 patch sits: on the transports (`HTTPTransport`, `MockTransport`,
WSGI/ASGI, sync and async), so it sees every request the anthropic SDK 2.x sends, streamed or not.
Replay answers first, from the cassette's index (`answer`); a request it passes on is captured by vcrpy's
own httpx2 stub (which sends it, drains the response and hands the exchange to `Cassette.record`). Replay
does not go through vcrpy's stub because bench/replay.py measured its per-request Request and header copy
(~40 us) on the hot path, and because it could not replay a cut stream. Recorded retries replay with zero
backoff (the SDK would otherwise really sleep 0.5-2 s each).

Routing: the transports are patched once while any cassette is in use, and each request goes to the cassette
of the context that sent it (a contextvar: each thread, and each asyncio task from where it was created, has
its own). Two threads recording two cassettes at once never mix, and the patch comes off when the last
cassette closes, in whatever order they close. A thread that entered no cassette of its own (a worker pool
under a `with use_cassette`) is routed to the one cassette in use; with several in use, it is refused, since
no answer would be right.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any
from unittest import mock

import anthropic
import httpx2
from anthropic._base_client import BaseClient

from harness.cassette.wire import REPLAYED_HEADER, body_bytes, replay_headers
from harness.errors import CassetteError

if TYPE_CHECKING:
    from harness.cassette.recorder import Cassette

# Set while a replayed connection failure is being raised, so the SDK's retry waits zero seconds.
_replaying_failure: contextvars.ContextVar[bool] = contextvars.ContextVar("replaying_failure", default=False)


class AmbiguousCassette(CassetteError, anthropic.AnthropicError):
    """A request from a thread or task that entered no cassette while several are in use: none is right.
    An AnthropicError too, so that the SDK raises it as it is rather than as "Connection error."."""


# -- answering one request from the cassette ------------------------------------------------------------------
def answer(cassette: Cassette, request: httpx2.Request, raw_body: bytes) -> httpx2.Response | None:
    """The recorded response to `request`, or None when it should go to the network and be recorded.

    A recorded connection failure is raised as the httpx2 error the transport would have raised.
    """
    path, _, query = request.url.raw_path.decode("ascii").partition("?")
    found = cassette.lookup(request.method, path, query, raw_body, request.headers)
    if found.position is None:
        return None
    interaction = cassette.play(found)
    if "error" in interaction:
        _replaying_failure.set(True)
        raise _connection_error(interaction["error"], request)
    return replayed_response(interaction["response"])


def replayed_response(stored: dict[str, Any]) -> httpx2.Response:
    """The httpx2.Response for a stored response: its kept headers, the body bytes, unread like a real one."""
    reason = stored.get("reason")
    return httpx2.Response(stored["status"], headers=replay_headers(stored),
                           stream=httpx2.ByteStream(body_bytes(stored)),
                           extensions={"reason_phrase": reason.encode("ascii")} if reason else None)


def _connection_error(error: dict[str, Any], request: httpx2.Request) -> Exception:
    message = error.get("message") or f"replayed {error['kind']}"
    if error["kind"] == "timeout":
        return httpx2.ReadTimeout(message, request=request)
    if error["kind"] == "connect":
        return httpx2.ConnectError(message, request=request)
    return httpx2.RemoteProtocolError(message, request=request)


def failure_kind(error: httpx2.RequestError) -> str:
    """How a cassette names a request that got no answer, in process and behind the proxy alike.

    Any timeout is `timeout`, a connect timeout included: the SDK raises APITimeoutError for it (not
    APIConnectionError), and replaying `timeout` raises a timeout again. `connect`: no connection was made.
    """
    if isinstance(error, httpx2.TimeoutException):
        return "timeout"
    return "connect" if isinstance(error, httpx2.ConnectError) else "disconnect"


def failure_of(error: httpx2.TransportError) -> dict[str, str]:
    """A request that got no response, as the cassette stores it: `replay` raises the same kind again."""
    return {"kind": failure_kind(error), "message": f"{type(error).__name__}: {error}"}


def _zero_backoff(original: Callable[..., float]) -> Callable[..., float]:
    @functools.wraps(original)
    def calculate(self: Any, remaining_retries: int, options: Any, response_headers: Any = None) -> float:
        if response_headers is not None and REPLAYED_HEADER in response_headers:
            return 0.0
        if _replaying_failure.get():
            _replaying_failure.set(False)
            return 0.0
        return original(self, remaining_retries, options, response_headers)

    return calculate


# The transports vcrpy patches for httpx2: every way an httpx2 client sends a request.
_PATCHED_TRANSPORTS: tuple[tuple[type, str, bool], ...] = (
    (httpx2.HTTPTransport, "handle_request", False),
    (httpx2.AsyncHTTPTransport, "handle_async_request", True),
    (httpx2.WSGITransport, "handle_request", False),
    (httpx2.ASGITransport, "handle_async_request", True),
    (httpx2.MockTransport, "handle_request", False),
    (httpx2.MockTransport, "handle_async_request", True),
)


class _VcrCapture:
    """The cassette as vcrpy's httpx2 stub sees it once replay has passed a request on: nothing to play,
    nothing protected, and every exchange vcrpy captures handed to `Cassette.record`."""

    write_protected = False

    def __init__(self, cassette: Cassette) -> None:
        self._cassette = cassette

    def can_play_response_for(self, request: Any) -> bool:
        return False

    def filter_request(self, request: Any) -> Any:
        return request

    def append(self, request: Any, response: dict[str, Any]) -> None:
        self._cassette.record(method=request.method, url=request.uri, request_headers=request.headers,
                              request_body=request.body, status=int(response["status"]["code"]),
                              response_headers=response.get("headers") or {},
                              response_body=(response.get("body") or {}).get("string"))


# -- routing: one process-wide patch, one cassette per context ----------------------------------------------
_context_cassettes: contextvars.ContextVar[tuple[Cassette, ...]] = contextvars.ContextVar("cassettes", default=())
_routing_lock = threading.Lock()
_open_cassettes: list[Cassette] = []
_patches: contextlib.ExitStack | None = None


@contextlib.contextmanager
def routing(cassette: Cassette) -> Iterator[None]:
    """Route the requests sent from this context (this thread, this asyncio task) to `cassette` while inside."""
    global _patches
    with _routing_lock:
        if _patches is None:
            patches = contextlib.ExitStack()
            for transport, method, is_async in _PATCHED_TRANSPORTS:
                real = getattr(transport, method)
                patches.enter_context(mock.patch.object(transport, method,
                                                        _async_handler(real) if is_async else _sync_handler(real)))
            patches.enter_context(mock.patch.object(
                BaseClient, "_calculate_retry_timeout", _zero_backoff(BaseClient._calculate_retry_timeout)))
            _patches = patches
        _open_cassettes.append(cassette)
    _context_cassettes.set((*_context_cassettes.get(), cassette))
    try:
        yield
    finally:
        # Only this one goes: another cassette entered after it in this context stays in use.
        _context_cassettes.set(tuple(c for c in _context_cassettes.get() if c is not cassette))
        with _routing_lock:
            _open_cassettes.remove(cassette)
            if not _open_cassettes and _patches is not None:
                _patches.close()
                _patches = None


def _cassette_for_this_context() -> Cassette | None:
    """The innermost cassette this context entered that is still open; None when none is open at all."""
    for cassette in reversed(_context_cassettes.get()):
        if any(cassette is open_ for open_ in _open_cassettes):
            return cassette
    with _routing_lock:
        if len(_open_cassettes) == 1:
            return _open_cassettes[0]
        if not _open_cassettes:
            return None
        paths = ", ".join(str(c.path) for c in _open_cassettes)
    raise AmbiguousCassette(f"a request from a thread or task that entered no cassette, while {len(_open_cassettes)} "
                        f"are in use in this process ({paths}); enter use_cassette in the thread or task that sends "
                        "it, so that it goes to the right one")


def _sync_handler(real: Callable[..., httpx2.Response]) -> Callable[..., httpx2.Response]:
    # Replay answers from the index first (one hash of the request's bytes); what it passes on goes to the
    # network through vcrpy's own stub, which sends it, drains the response and hands us the exchange.
    @functools.wraps(real)
    def handle_request(transport: Any, request: httpx2.Request) -> httpx2.Response:
        cassette = _cassette_for_this_context()
        if cassette is None:
            return real(transport, request)
        raw_body = request.read()
        replayed = cassette.answer(request, raw_body)
        if replayed is not None:
            return replayed
        if cassette.spans is not None:
            cassette.spans.sending()
        try:
            from vcr.stubs.httpx_stubs import vcr_handle_request  # recording only: vcrpy costs replay 0.35 s

            return vcr_handle_request(_VcrCapture(cassette), real, httpx2)(transport, request)
        except httpx2.TransportError as err:
            cassette.record_failure(request, raw_body, err)
            raise

    return handle_request


def _async_handler(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    async def handle_async_request(transport: Any, request: httpx2.Request) -> httpx2.Response:
        cassette = _cassette_for_this_context()
        if cassette is None:
            return await real(transport, request)
        raw_body = await request.aread()
        replayed = cassette.answer(request, raw_body)
        if replayed is not None:
            return replayed
        if cassette.spans is not None:
            cassette.spans.sending()
        try:
            from vcr.stubs.httpx_stubs import vcr_handle_async_request  # recording only (see above)

            return await vcr_handle_async_request(_VcrCapture(cassette), real, httpx2)(transport, request)
        except httpx2.TransportError as err:
            cassette.record_failure(request, raw_body, err)
            raise

    return handle_async_request
