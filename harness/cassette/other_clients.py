"""Every other HTTP client inside `use_cassette`: httpx 0.x, requests, urllib3, aiohttp, http.client, botocore.

Why. The SDK's requests reach the cassette through httpx2 (harness.cassette.transport). litellm builds its own
httpx 0.x client, and other code posts to the Messages API with requests, urllib3 or aiohttp: those requests
went past the cassette, recorded nowhere and, in replay, sent to the network.

How. vcrpy already patches each of these libraries where a request is about to be sent (its stubs). Its patches
are pointed at `ROUTE`, which speaks vcrpy's cassette protocol (can it play this, play it, record it, is this
request one of ours) and answers each question from the cassette of the context that sent the request, through
`Cassette.lookup`, `play` and `record`: the matching, normalization, redaction, provenance and miss reports of
the SDK's path, for every library. vcrpy's httpx2 patch is left out (the SDK's seam owns httpx2), and a request
that seam passes on to the network (through the SDK's aiohttp transport) is recorded there, not twice.

Which requests: those of the Anthropic API, whatever their host. A request carrying `anthropic-version` (the API
refuses any request without it, so every client of the API sends it, and no other service's request does), or one
to a Messages API path (`/v1/messages` and below: a client that left the header out gets the API's 400, recorded
as any answer). The host is no part of the rule: litellm pointed at `harness sim` on loopback, at a gateway or at
the API sends the same request, and matching never read the host. Any other request (a tool fetching a page, a
tokenizer download, telemetry) is left alone: it is not the model's, and a cassette holding it would miss the day
the page changed. (In the modes that may not record, the egress guard refuses those that leave the machine.)

When. vcrpy's patch module imports every library it knows (httpx 0.x, requests, botocore, ...): 0.18 s of CPU
with the SDK loaded, which a replay through the SDK alone never needs (bench/README.md, issue 30). So vcrpy's
patches go on only when the process has imported one of those libraries by the time a cassette is entered (vcrpy
then costs 0.03 s); aiohttp, which the SDK imports itself, gets a patch of its own that loads vcrpy's aiohttp stub
on the first request it has to look at. A process that imported none of them before the cassette (only the SDK)
has its urllib / http.client requests left alone.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

from harness.cassette import transport
from harness.wire.bodies import body_bytes, replay_headers

# Libraries that vcrpy patches and the anthropic SDK does not import itself: one of them loaded means an agent may
# send through it, and vcrpy's import then costs little (it imports them all).
_VCRPY_LIBRARIES = ("httpx", "requests", "urllib3", "botocore", "httplib2", "tornado")
_MESSAGES_PATH = "/v1/messages"
_NOT_OURS = None  # what `_routed` caches for a request that is not the cassette's


def is_api_request(path: str, header_names: Iterable[str]) -> bool:
    """Whether a request is one the cassette records: one of the Anthropic API, by its header or its path."""
    if any(name.lower() == "anthropic-version" for name in header_names):
        return True
    path = path.rstrip("/")
    return path.endswith(_MESSAGES_PATH) or f"{_MESSAGES_PATH}/" in path  # a gateway's prefix before it too


def _text(value: Any) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def _header_items(headers: Any) -> list[tuple[str, str]]:
    """A vcrpy request's headers (a case-insensitive dict; http.client may leave a tuple or bytes) as pairs."""
    items = []
    for name, value in headers.items():
        if isinstance(value, list | tuple):
            value = value[0] if value else ""
        items.append((_text(name), _text(value)))
    return items


def _body_of(request: Any) -> bytes | None:
    """The bytes the request sends. aiohttp's `json=` reaches vcrpy as the object itself: sent as JSON."""
    body = request.body_bytes
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, dict | list):
        return json.dumps(body).encode("utf-8")
    return str(body).encode("utf-8")


class _Route:
    """vcrpy's cassette, as its stubs see it: each request answered by the cassette of the context that sent it.

    A request is looked up once (vcrpy may ask twice: before connecting and before reading the response); what
    was found is kept on vcrpy's request object, and a miss raised again as the same error.
    """

    _path = "_loop_harness"  # vcrpy names the classes it builds after it
    custom_patches = ()
    skip_patchers = ("httpx2", "aiohttp")  # httpx2: the SDK's seam; aiohttp: `_lazy_aiohttp`

    def _routed(self, request: Any) -> tuple[transport.Player, Any] | None:
        cached = request.__dict__.get("_loop_harness", _UNSEEN)
        if isinstance(cached, BaseException):
            raise cached
        if cached is not _UNSEEN:
            return cached
        found = _NOT_OURS
        try:
            url = urlsplit(request.uri)
            headers = _header_items(request.headers)
            if not transport.passed_on.get() and is_api_request(url.path, [name for name, _ in headers]):
                cassette = transport.cassette_in_use()
                if cassette is not None:
                    looked_up = cassette.lookup(request.method, url.path, url.query, _body_of(request), headers)
                    if looked_up.position is None:  # about to be sent: the SDK's seam checks the same
                        transport.check_credential(cassette, url.hostname or "", url.scheme, headers)
                        if cassette.spans is not None:
                            cassette.spans.sending()
                    found = (cassette, looked_up)
        except BaseException as err:
            request._loop_harness = err
            raise
        request._loop_harness = found
        return found

    # -- vcrpy's cassette protocol ----------------------------------------------------------------------------
    @property
    def write_protected(self) -> bool:
        try:
            cassette = transport.cassette_in_use()
        except transport.AmbiguousCassette:
            return False  # only a request of the API asks, and it is refused by its own lookup
        return cassette is not None and cassette.write_protected

    def can_play_response_for(self, request: Any) -> bool:
        routed = self._routed(request)
        return routed is not None and routed[1].position is not None

    def filter_request(self, request: Any) -> Any:
        """vcrpy's filter: the request when the cassette records it, None when it is let through unrecorded."""
        return request if self._routed(request) is not None else None

    def play_response(self, request: Any) -> dict[str, Any]:
        routed = self._routed(request)
        assert routed is not None and routed[1].position is not None, "vcrpy plays only what can be played"
        cassette, found = routed
        interaction = cassette.play(found)
        if "error" in interaction:  # recorded through the SDK: a connection that failed fails again
            error = interaction["error"]
            raise ConnectionError(error.get("message") or f"replayed {error['kind']}")
        stored = interaction["response"]
        headers: dict[str, list[str]] = {}
        for name, value in replay_headers(stored):
            headers.setdefault(name, []).append(value)
        return {"status": {"code": stored["status"], "message": stored.get("reason") or ""},
                "headers": headers, "body": {"string": body_bytes(stored)}}

    def append(self, request: Any, response: dict[str, Any]) -> None:
        routed = self._routed(request)
        if routed is None:
            return
        cassette, _ = routed
        cassette.record(method=request.method, url=request.uri, request_headers=_header_items(request.headers),
                        request_body=_body_of(request), status=int(response["status"]["code"]),
                        response_headers=response.get("headers") or {},
                        response_body=(response.get("body") or {}).get("string"))

    def find_requests_with_most_matches(self, request: Any) -> list[tuple[Any]]:
        """vcrpy's aiohttp stub asks this for a redirect it replays: the redirect's own request is looked up."""
        return [(request,)]


_UNSEEN = object()
ROUTE = _Route()


@functools.cache  # one wrapper per real method
def _lazy_aiohttp(real: Callable[..., Any]) -> Callable[..., Any]:
    """aiohttp's `ClientSession._request` through vcrpy's aiohttp stub, loaded by the first request that needs it."""

    @functools.wraps(real)
    async def _request(session: Any, method: str, url: Any, **kwargs: Any) -> Any:
        if transport.passed_on.get():  # the SDK's seam sends this one, and records it
            return await real(session, method, url, **kwargs)
        return await _aiohttp_stub(real)(session, method, url, **kwargs)

    return _request


@functools.cache
def _aiohttp_stub(real: Callable[..., Any]) -> Callable[..., Any]:
    from vcr.stubs.aiohttp_stubs import vcr_request

    return vcr_request(ROUTE, real)


def _install() -> contextlib.ExitStack:
    patches = contextlib.ExitStack()
    aiohttp_client = sys.modules.get("aiohttp.client")
    if aiohttp_client is not None:
        session = aiohttp_client.ClientSession
        patches.enter_context(mock.patch.object(session, "_request", _lazy_aiohttp(session._request)))
    if any(name in sys.modules for name in _VCRPY_LIBRARIES):
        for patcher in _vcrpy_patchers():
            patches.enter_context(patcher)
    return patches


@functools.cache
def _vcrpy_patchers() -> list[Any]:
    """vcrpy's patches, built once a process and entered by every cassette: building them (34 patches, classes made
    for the route) took 1.7 ms, entering and leaving them 0.2 ms, and pytest opens a cassette per test."""
    from vcr.patch import CassettePatcherBuilder, ConnectionRemover

    return [_EmptiedAfter(patcher) if isinstance(patcher, ConnectionRemover) else patcher
            for patcher in CassettePatcherBuilder(ROUTE).build()]


class _EmptiedAfter:
    """vcrpy's ConnectionRemover (its stub connections taken out of urllib3's pools at the exit), made to be entered
    again: it keeps the pools it saw, which would keep them alive and close them again at every later exit."""

    def __init__(self, remover: Any) -> None:
        self.remover = remover

    def __enter__(self) -> None:
        self.remover.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.remover.__exit__(*exc)
        self.remover._connection_pool_to_connections.clear()


_lock = threading.Lock()
_users = 0
_patches: contextlib.ExitStack | None = None


@contextlib.contextmanager
def intercepted() -> Iterator[None]:
    """The other libraries patched while inside: once for the process, however many cassettes are open."""
    global _users, _patches
    with _lock:
        if _patches is None:
            _patches = _install()
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _patches is not None:
                _patches.close()
                _patches = None
