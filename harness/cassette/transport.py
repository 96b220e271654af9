"""The in-process seam: every request any anthropic SDK client sends goes to the cassette of its context.

Where it sits. The SDK (2.x) builds every attempt of every client in one place, `BaseClient._build_request`,
and hands it to its http client's `send`; it accepts only an `httpx2.Client` / `AsyncClient` there. Every
httpx2 client, whatever transport or mounts it was given, picks the transport for each request in one
method, `_transport_for_url`. The patch wraps that choice: while a cassette is in use, a request's
transport is the cassette's, wrapped around the one the client would have used. One patch thus sees the
SDK's default clients, `DefaultAsyncHttpxClient`, `DefaultAioHttpClient` (its aiohttp transport), a
user's `http_client=` with any transport (a MockTransport, a custom one, proxies and mounts),
`with_options()` and copied clients (they share the http client), and every resource (beta, threads,
batches, files, models), streamed or not; and httpx2's own send path (auth, event hooks, redirects,
cookies, timing) runs in replay exactly as it does live. (The patch used to sit on httpx2's transport
classes, so a transport of any other class, such as aiohttp's, went to the network unseen.)

At the SDK's seam (`_build_request`, patched too) each attempt of a client is checked once:

- a client built with no credential (`anthropic.Anthropic()` with no key set) gets a placeholder key, so an
  agent that builds its own client needs no key to replay, nor to record against `harness sim` or any
  loopback base URL. The placeholder is never sent anywhere else: a recording that would send it to
  another host fails with `MissingCredential`, one line naming both ways out. It never reaches the disk
  (no credential does: the recorder keeps allow-listed headers only);
- its http client must reach the seam: a client class (or instance) that replaces a method of httpx2's send
  path without calling through to httpx2's own could carry the request past the cassette, so the attempt
  fails at once with `UninterceptedClient`, naming the SDK client, the http client and the transport,
  before anything is sent. An override that calls through (`super().send(...)`) is fine.

Replay answers first, from the cassette's index (`answer`); a request it passes on is captured by vcrpy's
own httpx2 stub around the real transport (it sends it, drains the response and hands the exchange to
`Cassette.record`). Replay does not go through vcrpy's stub because bench/replay.py measured its
per-request Request and header copy (~40 us) on the hot path, and because it could not replay a cut stream.
Recorded retries replay with zero backoff (the SDK would otherwise really sleep 0.5-2 s each).

Routing: the patch is installed once while any cassette is in use, and each request goes to the cassette
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
import ipaddress
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from unittest import mock

import anthropic
import httpx2
from anthropic._base_client import BaseClient
from anthropic._compat import model_copy

from harness.cassette.modes import PLACEHOLDER_API_KEY
from harness.errors import CassetteError
from harness.wire.bodies import REPLAYED_HEADER, body_bytes, replay_headers

if TYPE_CHECKING:
    from harness.cassette.lookup import Lookup


class Player(Protocol):
    """What the transport asks of a cassette (harness.cassette.recorder.Cassette is one), typed here so that
    the transport never imports the recorder that imports it."""

    @property
    def path(self) -> Path: ...

    @property
    def mode(self) -> str: ...

    @property
    def write_protected(self) -> bool: ...

    @property
    def spans(self) -> Any: ...  # harness.telemetry.live.CassetteSpans when the recording is traced, or None

    def lookup(self, method: str, path: str, query: str | None, raw_body: bytes | None,
               headers: Any = None) -> Lookup: ...

    def play(self, found: Lookup) -> dict[str, Any]: ...

    def record(
        self,
        *,
        method: str,
        url: str,
        request_headers: Any,
        request_body: bytes | str | None,
        status: int | None = None,
        response_headers: Any = (),
        response_body: bytes | str | None = None,
        events: list[dict[str, Any]] | None = None,
        truncated: bool = False,
        error: dict[str, str] | None = None,
        elapsed_ms: float | None = None,
    ) -> None: ...

    def answer(self, request: httpx2.Request, raw_body: bytes) -> httpx2.Response | None: ...

    def record_failure(self, request: httpx2.Request, raw_body: bytes, error: httpx2.TransportError) -> None: ...

# Set while a replayed connection failure is being raised, so the SDK's retry waits zero seconds.
_replaying_failure: contextvars.ContextVar[bool] = contextvars.ContextVar("replaying_failure", default=False)
# Set while this seam sends a request on to the network and records it: the patches of other libraries
# (harness.cassette.other_clients) let it through, so that the SDK's aiohttp transport is not recorded twice.
passed_on: contextvars.ContextVar[bool] = contextvars.ContextVar("passed_on", default=False)


class AmbiguousCassette(CassetteError, anthropic.AnthropicError):
    """A request from a thread or task that entered no cassette while several are in use: none is right.
    An AnthropicError too, so that the SDK raises it as it is rather than as "Connection error."."""


class UninterceptedClient(CassetteError, anthropic.AnthropicError):
    """An SDK client whose http client could carry a request past the cassette: stopped before it is sent."""


class MissingCredential(CassetteError, anthropic.AnthropicError):
    """A recording that would send the placeholder key to a host other than loopback: there is no key."""


# -- answering one request from the cassette ------------------------------------------------------------------
def answer(cassette: Player, request: httpx2.Request, raw_body: bytes) -> httpx2.Response | None:
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
    # A recorded header or reason phrase is any text; httpx takes ASCII for text, so others go as their UTF-8 bytes.
    headers = [(name.encode("utf-8"), value.encode("utf-8")) for name, value in replay_headers(stored)]
    return httpx2.Response(stored["status"], headers=headers, stream=httpx2.ByteStream(body_bytes(stored)),
                           extensions={"reason_phrase": reason.encode("ascii", "replace")} if reason else None)


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


@functools.cache  # one wrapper per real method: every cassette opened installs them again
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


# -- the cassette's transport: wrapped around whichever one the client chose for the request --------------------
class _VcrCapture:
    """The cassette as vcrpy's httpx2 stub sees it once replay has passed a request on: nothing to play,
    nothing protected, and every exchange vcrpy captures handed to `Cassette.record`."""

    write_protected = False

    def __init__(self, cassette: Player) -> None:
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


class _CassetteTransport(httpx2.BaseTransport):
    """What a sync httpx2 client sends through while a cassette is in use: the cassette answers, or the request
    goes on to `real` (the transport the client chose) and the exchange is recorded."""

    def __init__(self, cassette: Player, real: httpx2.BaseTransport) -> None:
        self.cassette = cassette
        self.real = real

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        cassette = self.cassette
        raw_body = request.read()
        replayed = cassette.answer(request, raw_body)
        if replayed is not None:
            return replayed
        _check_credential(cassette, request)
        if cassette.spans is not None:
            cassette.spans.sending()
        try:
            from vcr.stubs.httpx_stubs import vcr_handle_request  # recording only: vcrpy costs replay 0.35 s

            send = vcr_handle_request(_VcrCapture(cassette), lambda _, sent: self.real.handle_request(sent), httpx2)
            sending = passed_on.set(True)
            try:
                return send(self.real, request)
            finally:
                passed_on.reset(sending)
        except httpx2.TransportError as err:
            cassette.record_failure(request, raw_body, err)
            raise


class _AsyncCassetteTransport(httpx2.AsyncBaseTransport):
    """`_CassetteTransport` for an async client (httpx2's own, aiohttp's, any other)."""

    def __init__(self, cassette: Player, real: httpx2.AsyncBaseTransport) -> None:
        self.cassette = cassette
        self.real = real

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        cassette = self.cassette
        raw_body = await request.aread()
        replayed = cassette.answer(request, raw_body)
        if replayed is not None:
            return replayed
        _check_credential(cassette, request)
        if cassette.spans is not None:
            cassette.spans.sending()
        try:
            from vcr.stubs.httpx_stubs import vcr_handle_async_request  # recording only (see above)

            send = vcr_handle_async_request(_VcrCapture(cassette),
                                            lambda _, sent: self.real.handle_async_request(sent), httpx2)
            sending = passed_on.set(True)
            try:
                return await send(self.real, request)
            finally:
                passed_on.reset(sending)
        except httpx2.TransportError as err:
            cassette.record_failure(request, raw_body, err)
            raise


@functools.cache  # one wrapper per real method: every cassette opened installs them again
def _routed(
    real: Callable[..., Any], wrapper: type[_CassetteTransport | _AsyncCassetteTransport]
) -> Callable[..., Any]:
    """`real` (a client class's `_transport_for_url`) with the transport it picks wrapped in `wrapper` while a
    cassette is open in this context."""

    @functools.wraps(real)
    def _transport_for_url(client: Any, url: httpx2.URL) -> Any:
        transport = real(client, url)
        cassette = _cassette_for_this_context()
        return transport if cassette is None else wrapper(cassette, transport)

    return _transport_for_url


# -- the SDK's seam: each attempt of every client, before it is sent --------------------------------------------
_CREDENTIAL_HEADERS = ("x-api-key", "authorization")
_PLACEHOLDER_VALUES = frozenset({PLACEHOLDER_API_KEY, f"Bearer {PLACEHOLDER_API_KEY}"})


@functools.cache  # one wrapper per real method: every cassette opened installs them again
def _checked_attempt(real: Callable[..., httpx2.Request]) -> Callable[..., httpx2.Request]:
    @functools.wraps(real)
    def _build_request(client: Any, options: Any, *, retries_taken: int = 0) -> httpx2.Request:
        cassette = _cassette_for_this_context()
        if cassette is None:
            return real(client, options, retries_taken=retries_taken)
        if _has_no_credential(client):
            options = model_copy(options)
            headers = options.headers if isinstance(options.headers, Mapping) else {}
            options.headers = {**headers, "X-Api-Key": PLACEHOLDER_API_KEY}
        request = real(client, options, retries_taken=retries_taken)
        bypass = _bypass(client._client)
        if bypass is not None:
            raise _uninterceptable(cassette, client, request, bypass)
        return request

    return _build_request


def _has_no_credential(client: Any) -> bool:
    """An `Anthropic` / `AsyncAnthropic` with no key, token, credentials provider nor credential header."""
    if not isinstance(client, anthropic.Anthropic | anthropic.AsyncAnthropic):
        return False  # Bedrock, Vertex and the like sign requests their own way
    if client.api_key is not None or client.auth_token is not None or getattr(client, "credentials", None):
        return False
    custom = getattr(client, "_custom_headers", None) or {}
    return not any(str(name).lower() in _CREDENTIAL_HEADERS for name in custom)


def _check_credential(cassette: Player, request: httpx2.Request) -> None:
    check_credential(cassette, request.url.host, request.url.scheme, request.headers.multi_items())


def check_credential(cassette: Player, host: str, scheme: str, headers: list[tuple[str, str]]) -> None:
    """About to record: the placeholder key may go to loopback (the simulator) only. (Any client: litellm reads
    ANTHROPIC_API_KEY, which a cassette recording against loopback sets to the placeholder.)"""
    sent = [value for name, value in headers if name.lower() in _CREDENTIAL_HEADERS]
    if not any(value in _PLACEHOLDER_VALUES for value in sent) or _is_loopback(host):
        return
    # An empty ANTHROPIC_BASE_URL (a simulator's URL file read before it was written) leaves the SDK no host.
    where = f"{scheme}://{host}" if host else "an empty base URL"
    raise MissingCredential(
        f"no API key to record against {where}: set ANTHROPIC_API_KEY, or record "
        "against the local simulator (harness sim --port 8765 &, then ANTHROPIC_BASE_URL=http://127.0.0.1:8765)",
        file=cassette.path)


def records_on_loopback() -> bool:
    """Whether ANTHROPIC_BASE_URL points at loopback (harness sim, a local proxy): recording there needs no key."""
    return loopback_url(os.environ.get("ANTHROPIC_BASE_URL"))


def loopback_url(base_url: str | None) -> bool:
    """Whether `base_url` names a loopback host (harness sim, a local proxy)."""
    try:
        return base_url is not None and base_url != "" and _is_loopback(httpx2.URL(base_url).host)
    except httpx2.InvalidURL:  # the SDK will say what is wrong with it when a client is built
        return False


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0]).is_loopback
    except ValueError:
        return False


# httpx2's send path, in the order a request goes down it; the last picks the transport (the patch's place).
_SEND_PATH = ("send", "_send_handling_auth", "_send_handling_redirects", "_send_single_request", "_transport_for_url")
_verdicts: dict[type, str | None] = {}  # a client class -> why it could bypass the seam, or None


def _bypass(http: Any) -> str | None:
    """Why a request through the http client `http` could go past the cassette, or None when it cannot."""
    if not isinstance(http, httpx2.Client | httpx2.AsyncClient):
        return f"{_name(type(http))} is not an httpx2 client"
    replaced = [name for name in _SEND_PATH if name in vars(http)]
    if replaced:
        return f"its {replaced[0]}() is replaced on the instance"
    cls = type(http)
    if cls not in _verdicts:
        _verdicts[cls] = _class_bypass(cls)
    return _verdicts[cls]


def _class_bypass(cls: type) -> str | None:
    base = httpx2.Client if issubclass(cls, httpx2.Client) else httpx2.AsyncClient
    for name in _SEND_PATH:
        override = getattr(cls, name)
        if override is getattr(base, name) or hasattr(override, "__wrapped__"):
            continue
        code = getattr(override, "__code__", None)
        # An override that calls through names the method it overrides (super().send, httpx2.Client.send).
        if code is None or name not in code.co_names:
            owner = next(klass for klass in cls.__mro__ if name in vars(klass))
            return f"whose {_name(owner)}.{name}() does not call httpx2's own"
    return None


def _name(cls: type) -> str:
    module = cls.__module__
    if module.startswith(("anthropic.", "httpx2.")):
        module = module.split(".", 1)[0]  # anthropic._client.Anthropic is anthropic.Anthropic to its users
    return f"{module}.{cls.__qualname__}"


def _uninterceptable(cassette: Player, client: Any, request: httpx2.Request, bypass: str) -> UninterceptedClient:
    http = client._client
    real = _REAL_TRANSPORT_FOR_URL.get(httpx2.Client if isinstance(http, httpx2.Client) else httpx2.AsyncClient)
    try:
        transport = _name(type(real(http, request.url))) if real is not None else "unknown"
    except Exception:  # naming the transport must not hide the reason
        transport = getattr(type(getattr(http, "_transport", None)), "__qualname__", "unknown")
    doing = ("it would leave the process unseen, so it was stopped before it was sent" if cassette.write_protected
             else "it would go out unrecorded, so it was stopped before it was sent")
    return UninterceptedClient(
        f"{_name(type(client))} sent {request.method} {request.url.path} through {_name(type(http))} (transport "
        f"{transport}), {bypass}: the cassette cannot see that request ({doing}; mode {cassette.mode!r}). Give the "
        "client an httpx2 client whose overrides call through to httpx2's (any transport will do), or record it "
        "with harness proxy", file=cassette.path)


# -- routing: one process-wide patch, one cassette per context ----------------------------------------------
_context_cassettes: contextvars.ContextVar[tuple[Player, ...]] = contextvars.ContextVar("cassettes", default=())
_routing_lock = threading.Lock()
_open_cassettes: list[Player] = []
_patches: contextlib.ExitStack | None = None
_REAL_TRANSPORT_FOR_URL: dict[type, Callable[..., Any]] = {}


def _install() -> contextlib.ExitStack:
    patches = contextlib.ExitStack()
    for client_class, wrapper in ((httpx2.Client, _CassetteTransport), (httpx2.AsyncClient, _AsyncCassetteTransport)):
        real = getattr(client_class, "_transport_for_url", None)
        if real is None:  # an httpx2 whose clients choose transports elsewhere: say so rather than miss requests
            raise CassetteError(f"httpx2 {httpx2.__version__} has no {client_class.__name__}._transport_for_url: "
                                "loop-harness cannot route this httpx2's requests to a cassette")
        _REAL_TRANSPORT_FOR_URL[client_class] = real
        patches.enter_context(mock.patch.object(client_class, "_transport_for_url", _routed(real, wrapper)))
    patches.enter_context(mock.patch.object(BaseClient, "_build_request", _checked_attempt(BaseClient._build_request)))
    patches.enter_context(mock.patch.object(
        BaseClient, "_calculate_retry_timeout", _zero_backoff(BaseClient._calculate_retry_timeout)))
    patches.callback(_verdicts.clear)  # verdicts compare with the patched methods
    return patches


@contextlib.contextmanager
def routing(cassette: Player) -> Iterator[None]:
    """Route the requests sent from this context (this thread, this asyncio task) to `cassette` while inside."""
    global _patches
    with _routing_lock:
        if _patches is None:
            _patches = _install()
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


def cassette_in_use() -> Player | None:
    """The cassette a request sent from here goes to (None when none is open); AmbiguousCassette when several
    are open and this thread or task entered none."""
    return _cassette_for_this_context()


def _cassette_for_this_context() -> Player | None:
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
                            f"are in use in this process ({paths}); enter use_cassette in the thread or task that "
                            "sends it, so that it goes to the right one")
