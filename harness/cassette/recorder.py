"""`use_cassette`: record every Messages API exchange of any SDK client to a cassette, or replay it.

vcrpy does the capture: its httpx2 patch sees every request the anthropic SDK 2.x sends, sync or
async, streamed or not. The cassette object it talks to is ours, so that

- a lookup is one fingerprint in an index (vcrpy scans every interaction, twice, per request);
- a miss raises `CassetteMismatch`, an `anthropic.AnthropicError`, which the SDK neither wraps into
  "Connection error." nor retries, carrying a diff against the nearest recorded request;
- what is written is our format: allow-listed headers, parsed bodies, SSE as events, secrets out;
- recorded retries replay with zero backoff (the SDK would otherwise really sleep 0.5-2 s each).
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import functools
import hashlib
import inspect
import json
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from unittest import mock
from urllib.parse import urlsplit

import anthropic
import filelock
import httpx2
from anthropic._base_client import BaseClient
from vcr.patch import PATCHER_NAMES, CassettePatcherBuilder

from harness.cassette.format import CassetteFile, load_cassette, save_cassette
from harness.cassette.match import (
    RequestIndex,
    diff_summary,
    fingerprint_of_stored,
    nearest_recorded,
    request_fingerprint,
    stored_request_body,
)
from harness.cassette.redact import (
    Scrubber,
    credentials_in,
    header_items,
    keep_request_headers,
    keep_response_headers,
    redact_interaction,
)
from harness.cassette.wire import body_bytes, store_body, stored_content_type
from harness.errors import CassetteError
from harness.fingerprint import run_fingerprints

Mode = Literal["none", "once", "new_episodes", "all", "rewrite"]
MODES: tuple[str, ...] = ("none", "once", "new_episodes", "all", "rewrite")
REPLAYED_HEADER = "x-harness-replayed"

# Set while a replayed connection failure is being raised, so the SDK's retry waits zero seconds.
_replaying_failure: contextvars.ContextVar[bool] = contextvars.ContextVar("replaying_failure", default=False)


class CassetteMismatch(anthropic.AnthropicError):
    """A request that the cassette has no recording for, in a mode that may not record it."""

    def __init__(
        self,
        *,
        cassette_path: Path,
        position: int,
        method: str,
        path: str,
        reason: str,
        nearest_position: int | None = None,
        differences: Sequence[str] = (),
    ) -> None:
        self.cassette_path = cassette_path
        self.position = position
        self.method = method
        self.path = path
        self.reason = reason
        self.nearest_position = nearest_position
        self.differences = list(differences)
        lines = [f"{cassette_path}: request #{position + 1} ({method} {path}) {reason}"]
        if nearest_position is not None and self.differences:
            lines.append(f"Nearest recorded request is #{nearest_position + 1}; what changed (recorded -> now):")
            lines.extend(f"  - {line}" for line in self.differences)
        lines.append(
            "If the change is intended, re-record: mode='rewrite' (or --record-mode=rewrite), "
            "or 'new_episodes' to keep what still matches."
        )
        super().__init__("\n".join(lines))


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


@dataclass
class Lookup:
    """One request of the run, as matching sees it, and the recording found for it (if any)."""

    fingerprint: bytes
    method: str
    path: str
    query: str
    body: Any
    position_in_run: int
    position: int | None = None


class Cassette:
    """One cassette in use: matching, playing and recording, whatever carries the requests.

    In-process, vcrpy's httpx2 stub calls `can_play_response_for`, `play_response` and `append`; the
    proxy and the replay server call `lookup`, `play` and `record` directly.
    """

    skip_patchers = tuple(name for name in PATCHER_NAMES if name != "httpx2")
    custom_patches = ()

    def __init__(
        self,
        path: str | Path,
        mode: Mode = "none",
        *,
        ignore_fields: Sequence[str] = (),
        scrubbers: Sequence[Scrubber] = (),
        allow_repeats: bool = False,
        save_on_error: bool = False,
        note: str | None = None,
    ) -> None:
        if mode not in MODES:
            raise CassetteError(f"unknown record mode {mode!r}; use one of {', '.join(MODES)}", file=path)
        self.path = Path(path)
        self._path = str(self.path)  # vcrpy names its patched classes after this
        self.mode = mode
        self.ignore_fields = tuple(ignore_fields)
        self.scrubbers = tuple(scrubbers)
        self.allow_repeats = allow_repeats
        self.save_on_error = save_on_error
        self.note = note
        self.existed = self.path.exists()
        if self.existed and mode != "rewrite":
            self.recorded = load_cassette(self.path)
        elif mode == "none":
            raise CassetteError(
                "no cassette here, and mode 'none' only replays; record it first "
                "(mode='once', or pytest --record-mode=once)",
                file=self.path,
            )
        else:
            self.recorded = CassetteFile(meta={}, interactions=[], path=self.path)
        self.index = RequestIndex.build((i["request"] for i in self.recorded.interactions), self.ignore_fields)
        self.play_counts = [0] * len(self.recorded.interactions)
        self.new_interactions: list[dict[str, Any]] = []
        self.requests_seen = 0
        self._secrets: set[str] = set()
        self._prepared: dict[int, dict[str, Any]] = {}
        self._provenance: dict[str, Any] = {}

    # -- what the modes mean --------------------------------------------------------------------------
    @property
    def replays(self) -> bool:
        return self.mode in ("none", "once", "new_episodes")

    @property
    def write_protected(self) -> bool:
        return self.mode == "none" or (self.mode == "once" and self.existed)

    @property
    def unplayed(self) -> list[int]:
        """Positions of recorded interactions that this run never asked for."""
        return [position for position, count in enumerate(self.play_counts) if count == 0]

    # -- the transport-agnostic core: vcrpy's stub, the proxy and the replay server all call these ----------
    def lookup(self, method: str, path: str, query: str | None, raw_body: bytes | None) -> Lookup:
        """Register one request of the run and find the recording that answers it.

        `Lookup.position` is None when the request should go to the network (record modes); in a mode
        that may not record, a request with no recording raises CassetteMismatch here.
        """
        body = _json_or_raw(raw_body)
        fingerprint = request_fingerprint(method, path, query, body, self.ignore_fields)
        found = Lookup(fingerprint, method.upper(), path, query or "", body, self.requests_seen)
        self.requests_seen += 1
        if self.replays:
            found.position = self.index.peek(fingerprint)
            if found.position is None and self.allow_repeats:
                found.position = self._any_played(fingerprint)
        if found.position is None and self.write_protected:
            raise self.mismatch(found)
        return found

    def play(self, found: Lookup) -> dict[str, Any]:
        """Mark the recording that answers `found` as played and return its interaction."""
        position = self.index.take(found.fingerprint)
        if position is None:  # allow_repeats: serve a recording of it again
            position = found.position
        assert position is not None, "play() needs a lookup that found a recording"
        self.play_counts[position] += 1
        return self.recorded.interactions[position]

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
    ) -> None:
        """Add one exchange as it happened: a response (body or SSE events) or a connection failure."""
        request_items = header_items(request_headers)
        self._secrets.update(credentials_in(request_items))
        parsed = urlsplit(url)
        stored_request: dict[str, Any] = {"method": method.upper(), "host": parsed.hostname or "",
                                          "path": parsed.path or "/"}
        if parsed.query:
            stored_request["query"] = parsed.query
        stored_request["headers"] = keep_request_headers(request_items)
        store_body(stored_request, request_body)
        interaction: dict[str, Any] = {"request": stored_request}
        response_items = header_items(response_headers)
        if error is not None:
            interaction["error"] = error
        else:
            stored_response: dict[str, Any] = {"status": int(status or 0)}
            stored_response["headers"] = keep_response_headers(response_items)
            if events is not None:
                stored_response["events"] = events
            else:
                content_type = {k.lower(): v for k, v in response_items}.get("content-type")
                store_body(stored_response, response_body, content_type=content_type, allow_sse=True)
            if truncated:
                stored_response["truncated"] = True
            interaction["response"] = stored_response
        if elapsed_ms is not None:
            interaction["elapsed_ms"] = round(elapsed_ms, 1)
        if not self.new_interactions:
            self._note_provenance(request_items, stored_request, response_items)
        self.new_interactions.append(interaction)

    # -- vcrpy's side of the contract (its httpx2 stub calls these four) --------------------------------------
    def filter_request(self, request: Any) -> Any:
        return request

    def can_play_response_for(self, request: Any) -> bool:
        parsed = urlsplit(request.uri)
        request._harness = self.lookup(request.method, parsed.path, parsed.query, request.body)
        return request._harness.position is not None

    def play_response(self, request: Any) -> dict[str, Any]:
        interaction = self.play(request._harness)
        if "error" in interaction:
            _replaying_failure.set(True)
            raise _connection_error(interaction["error"], request)
        key = id(interaction)
        prepared = self._prepared.get(key)
        if prepared is None:
            prepared = self._prepared[key] = _vcr_response(interaction["response"])
        return prepared

    def append(self, request: Any, response: dict[str, Any]) -> None:
        self.record(method=request.method, url=request.uri, request_headers=request.headers,
                    request_body=request.body, status=int(response["status"]["code"]),
                    response_headers=response.get("headers") or {},
                    response_body=(response.get("body") or {}).get("string"))

    # -- saving -------------------------------------------------------------------------------------------
    def interactions_to_save(self) -> list[dict[str, Any]]:
        if self.mode == "rewrite" or not self.existed:
            kept: list[dict[str, Any]] = []
        elif self.mode == "all":
            renewed = {fingerprint_of_stored(i["request"], self.ignore_fields) for i in self.new_interactions}
            kept = [i for i in self.recorded.interactions
                    if fingerprint_of_stored(i["request"], self.ignore_fields) not in renewed]
        else:
            kept = list(self.recorded.interactions)
        fresh = []
        for offset, interaction in enumerate(self.new_interactions):
            redacted = redact_interaction(interaction, position=len(kept) + offset, known_secrets=self._secrets,
                                          scrubbers=self.scrubbers)
            if redacted is not None:
                fresh.append(redacted)
        return kept + fresh

    def save(self) -> Path | None:
        if self.write_protected or not self.new_interactions:
            return None
        meta = dict(self.recorded.meta) if self.mode in ("new_episodes", "all") and self.existed else {}
        meta.update(self._provenance)
        if self.note:
            meta["note"] = self.note
        cassette = CassetteFile(meta=meta, interactions=self.interactions_to_save(), path=self.path)
        return save_cassette(cassette)

    # -- helpers ------------------------------------------------------------------------------------------
    def _any_played(self, fingerprint: bytes) -> int | None:
        for position, interaction in enumerate(self.recorded.interactions):
            if fingerprint_of_stored(interaction["request"], self.ignore_fields) == fingerprint:
                return position
        return None

    def mismatch(self, found: Lookup) -> CassetteMismatch:
        """The error for a request with no recording left, with a diff against the nearest recorded one."""
        recorded_requests = [i["request"] for i in self.recorded.interactions]
        already = [p for p, r in enumerate(recorded_requests)
                   if fingerprint_of_stored(r, self.ignore_fields) == found.fingerprint]
        common = {"cassette_path": self.path, "position": found.position_in_run, "method": found.method,
                  "path": found.path}
        if already:
            reason = (f"was recorded {len(already)} time(s) and every recording was already played "
                      "(pass allow_repeats=True to serve it again)")
            return CassetteMismatch(**common, reason=reason)
        nearest = nearest_recorded(found.method, found.path, found.body, recorded_requests, found.position_in_run)
        differences: list[str] = []
        if nearest is not None:
            recorded = recorded_requests[nearest]
            if (recorded["method"], recorded["path"]) != (found.method, found.path):
                differences.append(f"route changed from {recorded['method']} {recorded['path']} "
                                   f"to {found.method} {found.path}")
            differences.extend(diff_summary(stored_request_body(recorded), found.body))
        reason = f"has no recording in this cassette (mode {self.mode!r} may not record)"
        return CassetteMismatch(**common, reason=reason, nearest_position=nearest, differences=differences)

    def _note_provenance(self, request_headers: list[tuple[str, str]], stored_request: dict[str, Any],
                         response_headers: list[tuple[str, str]]) -> None:
        names = {name.lower() for name, _ in response_headers}
        sent = {k.lower(): v for k, v in request_headers}
        version, lang = sent.get("x-stainless-package-version"), sent.get("x-stainless-lang")
        # Whichever client sent the run (the proxy records TypeScript, Go or curl as well): never guess.
        client = {"python": "anthropic-python", "js": "anthropic-typescript"}.get(lang or "", f"anthropic-{lang}")
        sdk = f"{client} {version}" if version else None
        self._provenance = {
            "format_version": 1,
            "source": "simulator" if "x-harness-simulator" in names else "live",
            "recorded_at": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
            "endpoint": stored_request.get("host") or None,
            "sdk_version": sdk,
            "fingerprints": run_fingerprints(stored_request.get("body")),
        }

    # -- installing -----------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def installed(self) -> Iterator[Cassette]:
        with contextlib.ExitStack() as stack:
            for patcher in CassettePatcherBuilder(self).build():
                stack.enter_context(patcher)
            if self.replays:
                stack.enter_context(mock.patch.object(
                    BaseClient, "_calculate_retry_timeout", _zero_backoff(BaseClient._calculate_retry_timeout)
                ))
            yield self


def _json_or_raw(body: bytes | None) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            return {"$base64": base64.b64encode(body).decode("ascii")}


def lock_path(path: Path) -> str:
    # Lock files live in the temp folder, not beside the cassette, so they never show up in a diff.
    folder = Path(tempfile.gettempdir()) / "loop-harness-locks"
    folder.mkdir(exist_ok=True)
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
    return str(folder / f"{digest}.lock")


def _vcr_response(stored: dict[str, Any]) -> dict[str, Any]:
    """What vcrpy's stub turns into an httpx2.Response: status, headers as lists, body bytes."""
    headers = {name: [value] for name, value in (stored.get("headers") or {}).items()
               if name not in ("content-length", "content-encoding", "transfer-encoding")}
    content_type = stored_content_type(stored)
    if content_type and "content-type" not in headers:
        headers["content-type"] = [content_type]
    headers[REPLAYED_HEADER] = ["1"]
    return {
        "status": {"code": stored["status"], "message": stored.get("reason", "")},
        "headers": headers,
        "body": {"string": body_bytes(stored)},
    }


def _connection_error(error: dict[str, Any], request: Any) -> Exception:
    message = error.get("message") or f"replayed {error['kind']}"
    http_request = httpx2.Request(request.method, request.uri)
    if error["kind"] == "timeout":
        return httpx2.ReadTimeout(message, request=http_request)
    if error["kind"] == "connect":
        return httpx2.ConnectError(message, request=http_request)
    return httpx2.RemoteProtocolError(message, request=http_request)


class use_cassette:  # a class, so one object is both the context manager and the decorator
    """Record to or replay from a cassette: `with use_cassette(path, mode=...)` or `@use_cassette(path)`.

    Modes: none (replay only; a request with no recording fails with a diff), once (record when the
    file does not exist, else like none), new_episodes (replay what matches, record the rest), all
    (send every request, replacing the recordings it renews), rewrite (record afresh; the old file
    is replaced only when the run ends well).
    """

    def __init__(self, path: str | Path, mode: Mode = "none", **options: Any) -> None:
        self.path = Path(path)
        self.mode = mode
        self.options = options
        self._stack: contextlib.ExitStack | None = None
        self._lock: filelock.FileLock | None = None
        self.cassette: Cassette | None = None

    def __enter__(self) -> Cassette:
        lock = filelock.FileLock(lock_path(self.path)) if self.mode != "none" else None
        if lock is not None:
            # Two processes (xdist workers, two terminals) recording one cassette take turns, whole runs at
            # a time, so their interactions never interleave.
            lock.acquire()
        try:
            cassette = Cassette(self.path, self.mode, **self.options)
            patches = contextlib.ExitStack()
            patches.enter_context(cassette.installed())
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        self._lock, self._stack, self.cassette = lock, patches, cassette
        return cassette

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self._stack is not None and self.cassette is not None
        patches, cassette, lock = self._stack, self.cassette, self._lock
        self._stack, self.cassette, self._lock = None, None, None
        try:
            patches.close()
            if exc_type is None or cassette.save_on_error:
                cassette.save()
        finally:
            if lock is not None:
                lock.release()

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(function):
            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with use_cassette(self.path, self.mode, **self.options):
                    return await function(*args, **kwargs)

            return run_async

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with use_cassette(self.path, self.mode, **self.options):
                return function(*args, **kwargs)

        return run


__all__ = ["MODES", "Cassette", "CassetteMismatch", "Lookup", "Mode", "use_cassette"]
