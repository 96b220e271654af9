"""One run's matching: which recording answers each request of the run, what was played, what missed.

The index over the recorded requests (`harness.cassette.match`) with the run's normalization rules
(`harness.normalize`) and matching policy (`harness.cassette.sequence`) applied. `Matcher.lookup`
registers one request of the run and finds its recording; `Matcher.play` marks it played. The transport
patch, the proxy and the replay server all reach these two through `Cassette`, whatever carries the requests.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cassette import modes
from harness.cassette.drift import Change, Drift, classify_request
from harness.cassette.format import CassetteFile
from harness.cassette.headers import credentials_in, header_items
from harness.cassette.match import (
    RequestIndex,
    diff_summary,
    fingerprint_of_stored,
    nearest_recorded,
    request_fingerprint,
    stored_request_body,
)
from harness.cassette.mismatch import CassetteMismatch
from harness.cassette.modes import Mode
from harness.cassette.redact import redact_live_request
from harness.cassette.sequence import SequenceMatcher
from harness.cassette.tolerant import TolerantMatcher, ToleratedDifference
from harness.cassette.way_out import tool_output_way_out
from harness.normalize import CLAUDE_CODE_PRESET, Applied, Normalization, is_claude_code
from harness.wire.multipart import match_body_of


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
    # Set when it was served a recording it is not exactly (harness.cassette.tolerant): what was tolerated.
    drift: ToleratedDifference | None = None

    @functools.cached_property
    def body(self) -> Any:
        """The body as matching reads it (parsed JSON, else text, else base64, normalized); parsed when first asked."""
        body = parsed_body(self.raw_body)
        return self.applied.request(body) if self.applied is not None else body


def parsed_body(body: bytes | None) -> Any:
    """Request bytes as matching reads them: JSON parsed, multipart by its parts, else text, else base64."""
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


class Matcher:
    """The recorded requests of one cassette, indexed, and what this run has asked of them so far.

    `secrets` is the run's set of credentials, shared with the recorder: a key one client sent may be pasted
    in another's prompt, and a live request is redacted with them before it is matched.
    """

    def __init__(self, recorded: CassetteFile, *, path: Path, mode: Mode, existed: bool, rules: Normalization,
                 ignore_fields: Sequence[str] = (), allow_repeats: bool = False, secrets: set[str],
                 secret_headers: Sequence[str] = ()) -> None:
        self.recorded = recorded
        self.path = path
        self.mode = mode
        self.existed = existed
        self.rules = rules
        self.ignore_fields = tuple(ignore_fields)
        self.allow_repeats = allow_repeats
        self.secrets = secrets
        self.secret_headers = tuple(secret_headers)
        self.play_counts = [0] * len(recorded.interactions)
        self.played_order: list[int] = []  # recorded positions in the order the run first played them
        self.requests_seen = 0
        self.misses: list[CassetteMismatch] = []  # every miss raised, also those the caller swallowed
        # Mode fork: the first request that had no recording, and how it differs from the nearest one.
        self.divergence: CassetteMismatch | None = None
        self.drifts: list[ToleratedDifference] = []  # what the policy served anyway, to warn about
        self._build_index()

    @property
    def unplayed(self) -> list[int]:
        """Positions of recorded interactions that this run never asked for."""
        return [position for position, count in enumerate(self.play_counts) if count == 0]

    # -- normalization (harness.normalize): hooks kept small, the rules live there --------------
    @property
    def ignore(self) -> tuple[str, ...]:
        return self.ignore_fields + self.rules.ignore

    def _build_index(self) -> None:
        requests = [self.matchable(i["request"]) for i in self.recorded.interactions]
        self.index = RequestIndex.build(requests, self.ignore)
        self._tolerant = TolerantMatcher(requests, self.ignore, self.rules)
        self._sequence = SequenceMatcher(requests, self.ignore) if self.rules.policy == "sequence" else None

    def matchable(self, request: dict[str, Any]) -> dict[str, Any]:
        """A recorded request as matching sees it: its body normalized like a live one's."""
        if not self.rules.rewrites or "body" not in request:
            return request
        return {**request, "body": self.rules.for_request(request["body"]).request(request["body"])}

    def fingerprint_of(self, request: dict[str, Any]) -> bytes:
        """The fingerprint of a stored request, normalized as matching sees it."""
        return fingerprint_of_stored(self.matchable(request), self.ignore)

    def notice_client(self, headers: Any) -> None:
        """The Claude Code CLI gets its preset, whatever the options said (stored from then on)."""
        if headers is not None and CLAUDE_CODE_PRESET not in self.rules.presets and is_claude_code(headers):
            self.rules = self.rules.with_preset(CLAUDE_CODE_PRESET)
            self._build_index()

    def _applied(self, raw_body: bytes | None) -> Applied | None:
        if not self.rules.rewrites:
            return None
        return self.rules.for_request(parsed_body(raw_body))

    # -- one request of the run -------------------------------------------------------------------------
    def lookup(self, method: str, path: str, query: str | None, raw_body: bytes | None,
               headers: Any = None) -> Lookup:
        """Register one request of the run and find the recording that answers it.

        `Lookup.position` is None when the request should go to the network (record modes); in a mode
        that may not record, a request with no recording raises CassetteMismatch here. `headers` (the
        request's, read only when the bytes are not a recorded request's) name the credentials it sent.
        """
        self.notice_client(headers)
        found = Lookup(b"", method.upper(), path, query or "", raw_body, self.requests_seen)
        found.applied = self._applied(raw_body)
        # Byte for byte a recorded request (only when no rule rewrites bodies), else parse and match canonically.
        known = None if found.applied else self.index.known_fingerprint(method, path, query, raw_body)
        if known is None:
            # Not byte for byte a recorded request: parse it (normalized), redact it as the recorder would
            # have written it (so a prompt holding a key matches, and no miss message shows the key), and
            # match canonically. The credentials are the run's so far (a key one client sent may be pasted
            # in another's prompt); only read here, off the path of requests that match by their bytes.
            self.secrets.update(credentials_in(header_items(headers or ()), self.secret_headers))
            found.query, found.body = redact_live_request(found.query, found.body, self.secrets, raw_body)
            known = request_fingerprint(method, path, found.query, found.body, self.ignore)
        found.fingerprint = known
        self.requests_seen += 1
        if modes.replays(self.mode) and self.divergence is None:
            found.position = self.index.peek(found.fingerprint)
            if found.position is None and self.allow_repeats:
                found.position = self._any_played(found.fingerprint)
            if found.position is None:  # tool_results in another order, volatile values changed
                found.drift = self._tolerant.matched(found, self.play_counts)
            if found.drift is None and found.position is None and self._sequence is not None:
                found.drift = self._sequence.drifted(found, self.play_counts)
            if found.drift is not None:
                found.position = found.drift.recorded_position
        if found.position is None and modes.write_protected(self.mode, self.existed):
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
        position: int | None
        if found.drift is not None:
            position = found.drift.recorded_position
            self.index.discard(position)
            if found.drift.reported:
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
        return interaction

    def _any_played(self, fingerprint: bytes) -> int | None:
        for position, interaction in enumerate(self.recorded.interactions):
            if self.fingerprint_of(interaction["request"]) == fingerprint:
                return position
        return None

    def mismatch(self, found: Lookup) -> CassetteMismatch:
        """The error for a request with no recording left, with a diff against the nearest recorded one."""
        recorded_requests = [self.matchable(i["request"]) for i in self.recorded.interactions]
        already = [p for p, r in enumerate(recorded_requests)
                   if fingerprint_of_stored(r, self.ignore) == found.fingerprint] or self._tolerant.alike(found)
        miss = functools.partial(CassetteMismatch, cassette_path=self.path, position=found.position_in_run,
                                 method=found.method, path=found.path)
        if already:
            times = "once" if len(already) == 1 else f"{len(already)} times"
            reason = f"was recorded {times} and every recording was already played"
            repeated = Change("other", "repeats", f"sent more often than the {len(already)} time(s) recorded")
            return miss(reason=reason, change=Drift.of(repeated), repeated=True)
        nearest = nearest_recorded(found.method, found.path, found.body, recorded_requests, found.position_in_run)
        differences: list[str] = []
        change = Drift.of(Change("other", "cassette", "has no recorded request to compare with"))
        way_out = None
        if nearest is not None:
            recorded = recorded_requests[nearest]
            change = classify_request(recorded, found.method, found.path, found.query, found.body, self.ignore_fields)
            if change.kinds == ["tool_result"]:
                way_out = tool_output_way_out(stored_request_body(recorded), found.body,
                                              strict=self.rules.match_policy == "strict")
            if (recorded["method"], recorded["path"]) != (found.method, found.path):
                differences.append(f"route changed from {recorded['method']} {recorded['path']} "
                                   f"to {found.method} {found.path}")
            differences.extend(diff_summary(stored_request_body(recorded), found.body))
        reason = f"has no recording in this cassette (mode {self.mode!r} may not record)"
        if self.mode == "fork":
            reason = "has no recording in this cassette: the fork records from here"
        return miss(reason=reason, nearest_position=nearest, differences=differences, change=change, way_out=way_out)
