"""The recorder: each exchange the run sent to the network, as it happened, turned into what the cassette stores.

Allow-listed headers, parsed bodies, SSE as events, a connection failure as `error`; the run's credentials
collected as they pass (written nowhere: `redacted` takes them out of what is saved); the provenance block
(what the run was recorded against) from the first exchange; refused requests (400 invalid_request_error)
listed so that they are reported.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from harness.cassette.headers import credentials_sent, header_items, keep_response_headers, stored_request_head
from harness.cassette.redact import Scrubber, redact_interaction
from harness.jsondata import run_fingerprints
from harness.normalize import Applied, Normalization, response_events
from harness.wire.bodies import store_body


class Capture:
    """What one run recorded: `new_interactions` in order (not yet redacted), its provenance and refusals."""

    def __init__(self, *, secrets: set[str], secret_headers: Sequence[str] = (),
                 scrubbers: Sequence[Scrubber] = ()) -> None:
        self.secrets = secrets  # the run's credentials, shared with matching
        self.secret_headers = tuple(secret_headers)  # more headers whose values are credentials
        self.scrubbers = tuple(scrubbers)
        self.new_interactions: list[dict[str, Any]] = []
        # Recorded 400 invalid_request_error answers: the upstream refused the shape the client sent.
        self.rejected: list[dict[str, Any]] = []
        self.provenance: dict[str, Any] = {}
        self.spans: Any = None  # harness.telemetry.live.CassetteSpans when the recording is traced
        # Told of each exchange as it is recorded (`harness record`'s progress line on a terminal).
        self.listener: Callable[[dict[str, Any]], None] | None = None

    def record(
        self,
        *,
        rules: Normalization,
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
    ) -> dict[str, Any]:
        """Add one exchange as it happened: a response (body or SSE events) or a connection failure."""
        request_items = header_items(request_headers)
        parsed = urlsplit(url)
        self.secrets.update(credentials_sent(request_items, parsed, self.secret_headers))
        stored_request = stored_request_head(method.upper(), parsed, request_items)
        store_body(stored_request, request_body)
        applied = rules.for_request(stored_request["body"]) if (rules.rewrites and "body" in stored_request) else None
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
        if self.listener is not None:
            self.listener(interaction)
        return interaction

    def redacted(self, interaction: dict[str, Any], position: int) -> dict[str, Any] | None:
        """One new interaction as it may be written (secrets out, hooks applied); None if a hook drops it.
        Request ids, when asked to be rewritten, are numbered by the storage at the final save."""
        return redact_interaction(interaction, position=position, known_secrets=self.secrets,
                                  scrubbers=self.scrubbers)

    def fresh(self) -> list[dict[str, Any]]:
        """This run's recordings as they may be written, in order; those a scrubber dropped left out."""
        redacted = [self.redacted(interaction, offset) for offset, interaction in enumerate(self.new_interactions)]
        return [interaction for interaction in redacted if interaction is not None]

    def _note_rejection(self, position: int, response: dict[str, Any]) -> None:
        """A 400 invalid_request_error: the upstream refused the client's request (the Claude Code CLI then
        retries a degraded one). Kept in the cassette as it happened, and listed so that it is reported."""
        body = response.get("body")
        error = body.get("error") if isinstance(body, dict) else None
        if response.get("status") == 400 and isinstance(error, dict) and error.get("type") == "invalid_request_error":
            self.rejected.append({"position": position, "message": str(error.get("message", ""))})

    def _note_provenance(self, request_headers: list[tuple[str, str]], stored_request: dict[str, Any],
                         response_headers: list[tuple[str, str]]) -> None:
        names = {name.lower() for name, _ in response_headers}
        sent = {k.lower(): v for k, v in request_headers}
        version, lang = sent.get("x-stainless-package-version"), sent.get("x-stainless-lang")
        # Whichever client sent the run (the proxy records TypeScript, Go or curl as well): never guess.
        client = {"python": "anthropic-python", "js": "anthropic-typescript"}.get(lang or "", f"anthropic-{lang}")
        sdk = f"{client} {version}" if version else None
        self.provenance = {
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
        if not model or not self.provenance:
            return
        seen = [m for m in str(self.provenance.get("simulator_model") or "").split(", ") if m]
        if model not in seen:
            self.provenance["simulator_model"] = ", ".join([*seen, model])


def normalized_response(stored: dict[str, Any], applied: Applied) -> dict[str, Any]:
    """A stored response with this run's values (paths, ids) as placeholders; SSE deltas kept whole."""
    out = dict(stored)
    if "events" in out:
        out["events"] = response_events(out["events"], applied)
    if "body" in out:
        out["body"] = applied.response_values(out["body"])
    return out


def spans_for(provider: Any) -> Any:
    """Spans for what the cassette records (harness/telemetry/live.py), or None; nothing per replayed request."""
    if provider is None and "opentelemetry.trace" not in sys.modules:
        return None  # nobody imported OpenTelemetry, so no global provider is set
    from harness.telemetry.live import cassette_spans

    return cassette_spans(provider)
