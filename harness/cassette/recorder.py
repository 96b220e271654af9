"""`use_cassette`: record every Messages API exchange of any SDK client to a cassette, or replay it.

The patch sits where vcrpy's httpx2 patch sits: on the transports (`HTTPTransport`, `MockTransport`,
WSGI/ASGI, sync and async), so it sees every request the anthropic SDK 2.x sends, streamed or not.
Replay answers first, from our index; a request it passes on is captured by vcrpy's own httpx2 stub
(which sends it, drains the response and hands the exchange to `Cassette.record`). Replay does not go
through vcrpy's stub because bench/replay.py measured its per-request Request and header copy (~40 us)
on the hot path, and because it could not replay a cut stream. So that

- a lookup is one hash of the request's bytes in an index (vcrpy scans every interaction, twice, per request);
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
import inspect
import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import anthropic
import httpx2
from anthropic._base_client import BaseClient

from harness.cassette.drift import Change, Drift, classify_request
from harness.cassette.fork import ForkReport, fork_provenance, spend_of
from harness.cassette.format import CassetteFile, load_cassette, save_cassette
from harness.cassette.lock import RecordingLock
from harness.cassette.match import (
    RequestIndex,
    diff_summary,
    fingerprint_of_stored,
    nearest_recorded,
    request_fingerprint,
    stored_request_body,
)
from harness.cassette.modes import MODES, Mode, placeholder_credential
from harness.cassette.multipart import match_body_of
from harness.cassette.normalize import (
    CLAUDE_CODE_PRESET,
    Applied,
    Normalization,
    is_claude_code,
    response_events,
)
from harness.cassette.redact import (
    Scrubber,
    credentials_in,
    credentials_in_query,
    header_items,
    keep_request_headers,
    keep_response_headers,
    redact_interaction,
    redact_live_request,
    rewrite_request_id,
)
from harness.cassette.sequence import Drift as ToolResultDrift
from harness.cassette.sequence import SequenceMatcher
from harness.cassette.shared_tls import shared_tls_contexts
from harness.cassette.wire import body_bytes, store_body, stored_content_type
from harness.errors import CassetteError, HarnessError
from harness.fingerprint import run_fingerprints
from harness.project import load_project

REPLAYED_HEADER = "x-harness-replayed"

# Set while a replayed connection failure is being raised, so the SDK's retry waits zero seconds.
_replaying_failure: contextvars.ContextVar[bool] = contextvars.ContextVar("replaying_failure", default=False)


# What to do about a miss, in the words of the tool the user is running: its own flags, never another's.
HINTS: dict[str, dict[str, str]] = {
    "python": {
        "miss": "If the change is intended, re-record: use_cassette(..., mode='rewrite'), or mode='new_episodes' "
                "to keep what still matches.",
        "repeat": "Pass allow_repeats=True to use_cassette to serve a recording again.",
    },
    "pytest": {
        "miss": "If the change is intended, re-record: pytest --record-mode=rewrite, or --record-mode=new_episodes "
                "to keep what still matches.",
        "repeat": "Mark the test @pytest.mark.cassette(allow_repeats=True) to serve a recording again.",
    },
    "proxy": {
        "miss": "If the change is intended, re-record: harness proxy --mode rewrite, or --mode new_episodes to keep "
                "what still matches.",
        "repeat": "harness proxy --mode new_episodes records it again.",
    },
    "serve": {
        "miss": "If the change is intended, re-record through harness proxy --mode rewrite (or --mode new_episodes "
                "to keep what still matches).",
        "repeat": "Start harness serve with --allow-repeats to serve a recording again.",
    },
}


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
        change: Drift | None = None,
        repeated: bool = False,
    ) -> None:
        self.cassette_path = cassette_path
        self.position = position
        self.method = method
        self.path = path
        self.reason = reason
        self.nearest_position = nearest_position
        self.differences = list(differences)
        # The kind of change (harness.cassette.drift): which edit this miss comes from.
        self.change = change
        self.kind = change.kind if change is not None else None
        self.repeated = repeated  # every recording of it was played already (not a changed request)
        super().__init__(self.describe("python"))

    def describe(self, tool: str = "python") -> str:
        """The message, its hint naming the flags of `tool` (python, pytest, proxy or serve)."""
        lines = [f"{self.cassette_path}: request #{self.position + 1} ({self.method} {self.path}) {self.reason}"]
        if self.change is not None and self.change.changes:
            lines.append(f"Kind of change: {self.change.summary()}")
        if self.nearest_position is not None and self.differences:
            lines.append(f"Nearest recorded request is #{self.nearest_position + 1}; what changed (recorded -> now):")
            lines.extend(f"  - {line}" for line in self.differences)
        lines.append(HINTS[tool]["repeat" if self.repeated else "miss"])
        return "\n".join(lines)


class AmbiguousCassette(CassetteError, anthropic.AnthropicError):
    """A request from a thread or task that entered no cassette while several are in use: none is right.
    An AnthropicError too, so that the SDK raises it as it is rather than as "Connection error."."""


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
    raw_body: bytes | None
    position_in_run: int
    position: int | None = None
    applied: Applied | None = None  # the normalization rules made concrete for this request
    drift: ToolResultDrift | None = None  # set when the `sequence` policy served it despite a tool_result difference

    @functools.cached_property
    def body(self) -> Any:
        """The body as matching reads it (parsed JSON, else text, else base64, normalized); parsed when first asked."""
        body = _json_or_raw(self.raw_body)
        return self.applied.request(body) if self.applied is not None else body


class Cassette:
    """One cassette in use: matching, playing and recording, whatever carries the requests.

    In-process, the transport patch (`installed`) calls `answer`, and vcrpy's capture calls `record`; the proxy and
    the replay server call `lookup`, `play` and `record` directly.
    """

    spans: Any = None  # harness.export.live.CassetteSpans when the recording is traced (use_cassette)

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
        secret_headers: Sequence[str] = (),
        rewrite_request_ids: bool = False,
        normalize: Normalization | None = None,
    ) -> None:
        if mode not in MODES:
            raise CassetteError(f"unknown record mode {mode!r}; use one of {', '.join(MODES)}", file=path)
        self.path = Path(path)
        self.mode = mode
        self.ignore_fields = tuple(ignore_fields)
        self.scrubbers = tuple(scrubbers)
        self.allow_repeats = allow_repeats
        self.save_on_error = save_on_error
        self.note = note
        self.secret_headers = tuple(secret_headers)  # more headers whose values are credentials
        self.rewrite_request_ids = rewrite_request_ids  # request ids are kept unless asked
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
        self._user_rules = normalize
        try:
            stored = Normalization.from_data(self.recorded.meta.get("matching"), where="harness.matching")
        except HarnessError as err:
            raise CassetteError(str(err), file=self.path) from None
        # The project's rules ([tool.loop-harness.matching]) for every cassette in it, then the run's own.
        project_rules = load_project(self.path.parent).matching
        self.rules = stored.merged(project_rules).merged(normalize)
        self.drifts: list[ToolResultDrift] = []
        # Recorded 400 invalid_request_error answers: the upstream refused the shape the client sent.
        self.rejected: list[dict[str, Any]] = []
        self._build_index()
        self.play_counts = [0] * len(self.recorded.interactions)
        self.new_interactions: list[dict[str, Any]] = []
        self.requests_seen = 0
        self.misses: list[CassetteMismatch] = []  # every miss raised, also those the caller swallowed
        self.played_order: list[int] = []  # recorded positions in the order the run first played them
        # Mode fork: the first request that had no recording, and how it differs from the nearest one.
        self.divergence: CassetteMismatch | None = None
        self.saved: Path | None = None  # where save() last wrote the cassette
        self.served: list[dict[str, Any]] = []  # this run's exchanges in order, played or recorded
        self._secrets: set[str] = set()
        self._provenance: dict[str, Any] = {}

    # -- what the modes mean --------------------------------------------------------------------------
    @property
    def replays(self) -> bool:
        return self.mode in ("none", "once", "new_episodes", "fork")

    @property
    def write_protected(self) -> bool:
        return self.mode == "none" or (self.mode == "once" and self.existed)

    @property
    def unplayed(self) -> list[int]:
        """Positions of recorded interactions that this run never asked for."""
        return [position for position, count in enumerate(self.play_counts) if count == 0]

    # -- normalization (harness.cassette.normalize): hooks kept small, the rules live there --------------
    @property
    def _ignore(self) -> tuple[str, ...]:
        return self.ignore_fields + self.rules.ignore

    def _build_index(self) -> None:
        requests = [self._matchable(i["request"]) for i in self.recorded.interactions]
        self.index = RequestIndex.build(requests, self._ignore)
        self._sequence = SequenceMatcher(requests, self._ignore) if self.rules.policy == "sequence" else None

    def _matchable(self, request: dict[str, Any]) -> dict[str, Any]:
        """A recorded request as matching sees it: its body normalized like a live one's."""
        if not self.rules.rewrites or "body" not in request:
            return request
        return {**request, "body": self.rules.for_request(request["body"]).request(request["body"])}

    def _notice_client(self, headers: Any) -> None:
        """The Claude Code CLI gets its preset, whatever the options said (stored from then on)."""
        if headers is not None and CLAUDE_CODE_PRESET not in self.rules.presets and is_claude_code(
                header_items(headers)):
            self.rules = self.rules.with_preset(CLAUDE_CODE_PRESET)
            self._build_index()

    def _applied(self, raw_body: bytes | None) -> Applied | None:
        if not self.rules.rewrites:
            return None
        parsed = _json_or_raw(raw_body)
        return self.rules.for_request(parsed)

    # -- the transport-agnostic core: the transport patch, the proxy and the replay server all call these ---
    def lookup(self, method: str, path: str, query: str | None, raw_body: bytes | None,
               headers: Any = None) -> Lookup:
        """Register one request of the run and find the recording that answers it.

        `Lookup.position` is None when the request should go to the network (record modes); in a mode
        that may not record, a request with no recording raises CassetteMismatch here. `headers` (the
        request's, read only when the bytes are not a recorded request's) name the credentials it sent.
        """
        self._notice_client(headers)
        found = Lookup(b"", method.upper(), path, query or "", raw_body, self.requests_seen)
        found.applied = self._applied(raw_body)
        # Byte for byte a recorded request (only when no rule rewrites bodies), else parse and match canonically.
        known = None if found.applied else self.index.known_fingerprint(method, path, query, raw_body)
        if known is None:
            # Not byte for byte a recorded request: parse it (normalized), redact it as the recorder would
            # have written it (so a prompt holding a key matches, and no miss message shows the key), and
            # match canonically. The credentials are the run's so far (a key one client sent may be pasted
            # in another's prompt); only read here, off the path of requests that match by their bytes.
            self._secrets.update(credentials_in(header_items(headers or ()), self.secret_headers))
            found.query, found.body = redact_live_request(found.query, found.body, self._secrets, raw_body)
            known = request_fingerprint(method, path, found.query, found.body, self._ignore)
        found.fingerprint = known
        self.requests_seen += 1
        if self.replays and self.divergence is None:
            found.position = self.index.peek(found.fingerprint)
            if found.position is None and self.allow_repeats:
                found.position = self._any_played(found.fingerprint)
            if found.position is None and self._sequence is not None:
                found.drift = self._sequence.drifted(found, self.play_counts)
                if found.drift is not None:
                    found.position = found.drift.recorded_position
        if found.position is None and self.write_protected:
            miss = self.mismatch(found)
            self.misses.append(miss)  # kept: an agent loop may catch the error and end its run on it
            raise miss
        if found.position is None and self.mode == "fork" and self.existed and self.divergence is None:
            # The fork point: from here on every request of the run is sent and recorded.
            self.divergence = self.mismatch(found)
        return found

    def play(self, found: Lookup) -> dict[str, Any]:
        """Mark the recording that answers `found` as played and return its interaction (this run's values
        put back where the recording holds placeholders)."""
        if found.drift is not None:
            position: int | None = found.drift.recorded_position
            self.index.discard(position)
            self.drifts.append(found.drift)
        else:
            position = self.index.take(found.fingerprint)
        if position is None:  # allow_repeats: serve a recording of it again
            position = found.position
        assert position is not None, "play() needs a lookup that found a recording"
        if not self.play_counts[position]:
            self.played_order.append(position)
        self.play_counts[position] += 1
        interaction = self.recorded.interactions[position]
        if found.applied is not None and "response" in interaction:
            interaction = {**interaction, "response": found.applied.expand(interaction["response"])}
        self.served.append(interaction)
        return interaction

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
        self._notice_client(request_headers)
        request_items = header_items(request_headers)
        parsed = urlsplit(url)
        self._secrets.update(credentials_in(request_items, self.secret_headers))
        self._secrets.update(credentials_in_query(parsed.query))
        if parsed.password:
            self._secrets.add(parsed.password)
        stored_request: dict[str, Any] = {"method": method.upper(), "host": parsed.hostname or "",
                                          "path": parsed.path or "/"}
        if parsed.query:
            stored_request["query"] = parsed.query
        stored_request["headers"] = keep_request_headers(request_items)
        store_body(stored_request, request_body)
        applied = self.rules.for_request(stored_request["body"]) if (
            self.rules.rewrites and "body" in stored_request) else None
        if applied is not None:
            stored_request["body"] = applied.request(stored_request["body"])
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
            if applied is not None:
                stored_response = normalized_response(stored_response, applied)
            interaction["response"] = stored_response
            self._note_rejection(len(self.new_interactions), stored_response)
        if elapsed_ms is not None:
            interaction["elapsed_ms"] = round(elapsed_ms, 1)
        if not self.new_interactions:
            self._note_provenance(request_items, stored_request, response_items)
        self._note_simulator_model(response_items)
        self.new_interactions.append(interaction)
        if self.spans is not None:
            self.spans.recorded(interaction, elapsed_ms)
        self.served.append(interaction)

    # -- in-process: what the transport patch calls ----------------------------------------------------------
    def answer(self, request: httpx2.Request, raw_body: bytes) -> httpx2.Response | None:
        """The recorded response to `request`, or None when it should go to the network and be recorded.

        A recorded connection failure is raised as the httpx2 error the transport would have raised.
        """
        path, _, query = request.url.raw_path.decode("ascii").partition("?")
        found = self.lookup(request.method, path, query, raw_body, request.headers)
        if found.position is None:
            return None
        interaction = self.play(found)
        if "error" in interaction:
            _replaying_failure.set(True)
            raise _connection_error(interaction["error"], request)
        return _replayed_response(interaction["response"])

    def record_failure(self, request: httpx2.Request, raw_body: bytes, error: httpx2.TransportError) -> None:
        """A request that got no response (vcrpy records only responses): kept, so that replay fails the
        same way and the SDK's retry of it replays too."""
        kind = ("timeout" if isinstance(error, httpx2.TimeoutException)
                else "connect" if isinstance(error, httpx2.ConnectError) else "disconnect")
        self.record(method=request.method, url=str(request.url), request_headers=request.headers.multi_items(),
                    request_body=raw_body, error={"kind": kind, "message": f"{type(error).__name__}: {error}"})

    def this_run(self) -> CassetteFile:
        """The run that just happened, from memory: each exchange as it was played or recorded, in order.

        Not the file: on a first recording it is not written yet, and in new_episodes it holds the old run too.
        """
        meta = {**self.recorded.meta, **self._provenance}
        return CassetteFile(meta=meta, interactions=list(self.served), path=self.path)

    # -- saving -------------------------------------------------------------------------------------------
    def interactions_to_save(self) -> list[dict[str, Any]]:
        redacted = [self.redacted(interaction, offset) for offset, interaction in enumerate(self.new_interactions)]
        fresh = [interaction for interaction in redacted if interaction is not None]
        if self.mode == "rewrite" or not self.existed:
            kept: list[dict[str, Any]] = []
        elif self.mode == "fork":  # the replayed prefix; the recorded rest is replaced by what the fork records
            kept = [self.recorded.interactions[position] for position in self.played_order]
        elif self.mode == "all":
            # Compared as written: a recording is renewed by the redacted form of the new one.
            renewed = {fingerprint_of_stored(self._matchable(i["request"]), self._ignore) for i in fresh}
            kept = [i for i in self.recorded.interactions
                    if fingerprint_of_stored(self._matchable(i["request"]), self._ignore) not in renewed]
        else:
            kept = list(self.recorded.interactions)
        if self.rewrite_request_ids:
            for offset, interaction in enumerate(fresh):
                rewrite_request_id(interaction, len(kept) + offset)
        return kept + fresh

    def redacted(self, interaction: dict[str, Any], position: int) -> dict[str, Any] | None:
        """One new interaction as it may be written (secrets out, hooks applied); None if a hook drops it.
        Request ids, when asked to be rewritten, are numbered by `interactions_to_save` at the final save."""
        return redact_interaction(interaction, position=position, known_secrets=self._secrets,
                                  scrubbers=self.scrubbers)

    @property
    def provenance(self) -> dict[str, Any]:
        """What the run was recorded against (source, endpoint, SDK, fingerprints), once it recorded something."""
        return dict(self._provenance)

    @provenance.setter
    def provenance(self, value: dict[str, Any]) -> None:
        self._provenance = dict(value)

    def save(self) -> Path | None:
        if self.write_protected or not self.new_interactions:
            return None
        meta = dict(self.recorded.meta) if self.mode in ("new_episodes", "all") and self.existed else {}
        meta.update(self._provenance)
        interactions = self.interactions_to_save()
        if self.mode == "fork" and self.existed and self.divergence is not None:
            meta = fork_provenance(self.recorded.meta, self._provenance, replayed=len(self.played_order),
                                   re_recorded=len(interactions) - len(self.played_order),
                                   first_divergent_request=self.divergence.position + 1,
                                   change=self.divergence.change)
        if self.rules:
            meta["matching"] = self.rules.to_data()  # stored, so a reviewer sees what matching leaves out
        if self.note:
            meta["note"] = self.note
        cassette = CassetteFile(meta=meta, interactions=interactions, path=self.path)
        self.saved = save_cassette(cassette)
        return self.saved

    def fork_report(self) -> ForkReport:
        """Mode fork: where the run parted from the recording and why; what was replayed (not paid again) and
        what was recorded, with tokens and list-price cost."""
        divergence = self.divergence
        replaced = len(self.unplayed) if divergence is not None else 0
        return ForkReport(
            path=self.path,
            first_divergent_request=divergence.position + 1 if divergence is not None else None,
            change=divergence.change if divergence is not None else None,
            replayed=spend_of(self.recorded.interactions[p] for p in self.played_order),
            recorded=spend_of(self.new_interactions),
            replaced=replaced,
            written=self.saved is not None,
        )

    # -- helpers ------------------------------------------------------------------------------------------
    def _any_played(self, fingerprint: bytes) -> int | None:
        for position, interaction in enumerate(self.recorded.interactions):
            if fingerprint_of_stored(self._matchable(interaction["request"]), self._ignore) == fingerprint:
                return position
        return None

    def _note_rejection(self, position: int, response: dict[str, Any]) -> None:
        """A 400 invalid_request_error: the upstream refused the client's request (the Claude Code CLI then
        retries a degraded one). Kept in the cassette as it happened, and listed so that it is reported."""
        body = response.get("body")
        error = body.get("error") if isinstance(body, dict) else None
        if response.get("status") == 400 and isinstance(error, dict) and error.get("type") == "invalid_request_error":
            self.rejected.append({"position": position, "message": str(error.get("message", ""))})

    def mismatch(self, found: Lookup) -> CassetteMismatch:
        """The error for a request with no recording left, with a diff against the nearest recorded one."""
        recorded_requests = [self._matchable(i["request"]) for i in self.recorded.interactions]
        already = [p for p, r in enumerate(recorded_requests)
                   if fingerprint_of_stored(r, self._ignore) == found.fingerprint]
        common = {"cassette_path": self.path, "position": found.position_in_run, "method": found.method,
                  "path": found.path}
        if already:
            times = "once" if len(already) == 1 else f"{len(already)} times"
            reason = f"was recorded {times} and every recording was already played"
            repeated = Change("other", "repeats", f"sent more often than the {len(already)} time(s) recorded")
            return CassetteMismatch(**common, reason=reason, change=Drift.of(repeated), repeated=True)
        nearest = nearest_recorded(found.method, found.path, found.body, recorded_requests, found.position_in_run)
        differences: list[str] = []
        change = Drift.of(Change("other", "cassette", "has no recorded request to compare with"))
        if nearest is not None:
            recorded = recorded_requests[nearest]
            change = classify_request(recorded, found.method, found.path, found.query, found.body, self.ignore_fields)
            if (recorded["method"], recorded["path"]) != (found.method, found.path):
                differences.append(f"route changed from {recorded['method']} {recorded['path']} "
                                   f"to {found.method} {found.path}")
            differences.extend(diff_summary(stored_request_body(recorded), found.body))
        reason = f"has no recording in this cassette (mode {self.mode!r} may not record)"
        if self.mode == "fork":
            reason = "has no recording in this cassette: the fork records from here"
        return CassetteMismatch(**common, reason=reason, nearest_position=nearest, differences=differences,
                                change=change)

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

    def _note_simulator_model(self, response_headers: list[tuple[str, str]]) -> None:
        """Which simulator model(s) answered the run, in the order they first did (the simulator says so)."""
        model = {name.lower(): value for name, value in response_headers}.get("x-harness-sim-model")
        if not model or not self._provenance:
            return
        seen = [m for m in str(self._provenance.get("simulator_model") or "").split(", ") if m]
        if model not in seen:
            self._provenance["simulator_model"] = ", ".join([*seen, model])

    # -- installing -----------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def installed(self) -> Iterator[Cassette]:
        """Route the requests sent from this context (this thread, this asyncio task) to this cassette."""
        with _routing(self):
            yield self


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
#
# The transports are patched once while any cassette is in use, and each request goes to the cassette of the
# context that sent it (a contextvar: each thread, and each asyncio task from where it was created, has its
# own). Two threads recording two cassettes at once never mix, and the patch comes off when the last cassette
# closes, in whatever order they close. A thread that entered no cassette of its own (a worker pool under a
# `with use_cassette`) is routed to the one cassette in use; with several in use, it is refused, since no
# answer would be right.

_context_cassettes: contextvars.ContextVar[tuple[Cassette, ...]] = contextvars.ContextVar("cassettes", default=())
_routing_lock = threading.Lock()
_open_cassettes: list[Cassette] = []
_patches: contextlib.ExitStack | None = None


@contextlib.contextmanager
def _routing(cassette: Cassette) -> Iterator[None]:
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


def normalized_response(stored: dict[str, Any], applied: Applied) -> dict[str, Any]:
    """A stored response with this run's values (paths, ids) as placeholders; SSE deltas kept whole."""
    out = dict(stored)
    if "events" in out:
        out["events"] = response_events(out["events"], applied)
    if "body" in out:
        out["body"] = applied.response_values(out["body"])
    return out


def _json_or_raw(body: bytes | None) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        uploaded = match_body_of(body)  # multipart/form-data: matched by its parts, never its boundary
        if uploaded is not None:
            return uploaded
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            return {"$base64": base64.b64encode(body).decode("ascii")}


_NOT_REPLAYED_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})


def _replayed_response(stored: dict[str, Any]) -> httpx2.Response:
    """The httpx2.Response for a stored response: its kept headers, the body bytes, unread like a real one."""
    headers = [(name, value) for name, value in (stored.get("headers") or {}).items()
               if name not in _NOT_REPLAYED_HEADERS]
    content_type = stored_content_type(stored)
    if content_type and "content-type" not in (stored.get("headers") or {}):
        headers.append(("content-type", content_type))
    headers.append((REPLAYED_HEADER, "1"))
    reason = stored.get("reason")
    return httpx2.Response(stored["status"], headers=headers, stream=httpx2.ByteStream(body_bytes(stored)),
                           extensions={"reason_phrase": reason.encode("ascii")} if reason else None)


def _connection_error(error: dict[str, Any], request: httpx2.Request) -> Exception:
    message = error.get("message") or f"replayed {error['kind']}"
    if error["kind"] == "timeout":
        return httpx2.ReadTimeout(message, request=request)
    if error["kind"] == "connect":
        return httpx2.ConnectError(message, request=request)
    return httpx2.RemoteProtocolError(message, request=request)


def _cassette_spans(provider: Any) -> Any:
    """Spans for what the cassette records (harness/export/live.py), or None; nothing per replayed request."""
    if provider is None and "opentelemetry.trace" not in sys.modules:
        return None  # nobody imported OpenTelemetry, so no global provider is set
    from harness.export.live import cassette_spans

    return cassette_spans(provider)


class use_cassette:  # a class, so one object is both the context manager and the decorator
    """Record to or replay from a cassette: `with use_cassette(path, mode=...)` or `@use_cassette(path)`.

    Modes: none (replay only; a request with no recording fails with a diff), once (record when the
    file does not exist, else like none), new_episodes (replay what matches, record the rest), all
    (send every request, replacing the recordings it renews), rewrite (record afresh; the old file
    is replaced only when the run ends well), fork (replay the recorded prefix while requests match,
    record from the first divergent request on; the old file is replaced only when the run ends well,
    and `cassette.fork_report()` says what was replayed and what re-recorded, and why).
    `tracer_provider=` (else OpenTelemetry's global one, when set) gets a GenAI chat span for each
    exchange the cassette records.
    """

    def __init__(self, path: str | Path, mode: Mode = "none", *, lock_timeout: float | None = None,
                 **options: Any) -> None:
        self.path = Path(path)
        self.mode = mode
        self.lock_timeout = lock_timeout
        self.options = options
        self._stack: contextlib.ExitStack | None = None
        self._lock: RecordingLock | None = None
        self.cassette: Cassette | None = None

    def __enter__(self) -> Cassette:
        options = dict(self.options)
        tracer_provider = options.pop("tracer_provider", None)
        # Two recorders of one cassette (xdist workers, two terminals, a proxy) take turns, whole runs at a
        # time, so their interactions never interleave; a holder that never lets go is named, then given up on.
        lock = RecordingLock(self.path, timeout=self.lock_timeout).acquire() if self.mode != "none" else None
        try:
            cassette = Cassette(self.path, self.mode, **options)
            cassette.spans = _cassette_spans(tracer_provider)
            patches = contextlib.ExitStack()
            if cassette.write_protected:  # a replay: a client made inside needs no key (CI has none)
                patches.enter_context(placeholder_credential())
                patches.enter_context(shared_tls_contexts())  # ...nor a CA bundle load of its own
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
                with use_cassette(self.path, self.mode, lock_timeout=self.lock_timeout, **self.options):
                    return await function(*args, **kwargs)

            return run_async

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with use_cassette(self.path, self.mode, lock_timeout=self.lock_timeout, **self.options):
                return function(*args, **kwargs)

        return run


__all__ = ["MODES", "AmbiguousCassette", "Cassette", "CassetteMismatch", "Lookup", "Mode", "use_cassette"]
