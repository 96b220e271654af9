"""What an agent run is made of, whichever record it comes from: exchanges, token usage, tool calls.

A run is a sequence of /v1/messages exchanges. Each `Exchange` is the request body that was sent and
either the Message that came back or the error, as data (HTTP status, API error type, message,
retry-after), never as an exception's text. The loop records one per model call as it makes them
(`RunResult.exchanges`); a cassette holds them as interactions (`Exchange.from_interaction`), whether
it was recorded live or is being replayed. The trajectory (harness/trajectory.py) is derived from
exchanges alone, so a live run, its replay and its cassette file read the same way.

`Usage` counts tokens by kind (`TOKEN_KINDS`: the API reports them apart and prices them apart), and
`ToolCall` is one tool_use with the `ToolResult` that answered it. Every other module imports these;
nothing here needs the anthropic SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.cassette.wire import response_message
from harness.jsondata import canonical_json

__all__ = [
    "API_USAGE_FIELDS",
    "TOKEN_KINDS",
    "USAGE_FIELDS",
    "Exchange",
    "ToolCall",
    "ToolResult",
    "Usage",
    "canonical_json",
    "retry_after_seconds",
]

MESSAGES_PATH = "/v1/messages"

# The kinds of token a run is counted (and priced) in, in the order every report lists them.
TOKEN_KINDS: tuple[str, ...] = ("input", "output", "cache_write", "cache_read")
# The keys of `Usage.to_dict()`: the kinds and their total.
USAGE_FIELDS: tuple[str, ...] = (*TOKEN_KINDS, "total")
# Each kind's name in a Messages API `usage` object.
API_USAGE_FIELDS: Mapping[str, str] = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_write": "cache_creation_input_tokens",
    "cache_read": "cache_read_input_tokens",
}
_MAX_COUNT = 1e15  # a count from a file beyond this is damage, not usage


# --- tokens ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """Token counts, each kind apart: the API reports them apart and prices them differently."""

    input: int = 0
    output: int = 0
    cache_write: int = 0  # usage.cache_creation_input_tokens
    cache_read: int = 0  # usage.cache_read_input_tokens

    KINDS: ClassVar[tuple[str, ...]] = TOKEN_KINDS

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read

    @classmethod
    def from_api(cls, usage: Any) -> Usage:
        """From a Messages API `usage`: the SDK's object or its JSON. Every field is optional (2024
        recordings lack the cache ones); a count that is not a plain non-negative number reads as 0."""
        return cls(**{kind: _count(usage, name) for kind, name in API_USAGE_FIELDS.items()})

    @classmethod
    def from_dict(cls, data: Any) -> Usage:
        """The inverse of `to_dict`: our own kind names (a results file, a golden); "total" is derived."""
        return cls(**{kind: _count(data, kind) for kind in TOKEN_KINDS})

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, kind) + getattr(other, kind) for kind in TOKEN_KINDS))

    def to_dict(self) -> dict[str, int]:
        return {kind: getattr(self, kind) for kind in TOKEN_KINDS} | {"total": self.total}


def _count(source: Any, name: str) -> int:
    value = source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)
    plain = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < _MAX_COUNT
    return int(value) if plain else 0


# --- tool calls ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolResult:
    """The tool_result that answered a tool call."""

    content: str  # text parts joined; other parts (images) as "[image]"
    is_error: bool
    step: int | None  # the step whose request carried it; None when that request got no message (or was never sent)

    @property
    def chars(self) -> int:
        return len(self.content)

    def to_dict(self) -> dict[str, Any]:
        return {"content": self.content, "chars": self.chars, "is_error": self.is_error, "step": self.step}


@dataclass
class ToolCall:
    """A tool_use (client tool) or server_tool_use block of a response, with its result when one was found.

    The loop makes these as it runs tools (with how long each took, and whether the repeated-call
    breaker answered instead); the trajectory finds them in the recorded responses and requests.
    """

    id: str
    name: str
    input: Any
    step: int  # the step whose response asked for it
    server: bool = False  # run by the API (web search, code execution); its result is in the same response
    result: ToolResult | None = None
    duration_ms: float | None = None  # how long the loop's tool ran; None where no one measured it
    synthetic: bool = False  # answered by the loop's repeated-call breaker instead of running the tool

    @property
    def key(self) -> str:
        """Same tool, same canonical input: the identity of a call for retry and loop detection."""
        return f"{self.name} {canonical_json(self.input)}"

    @property
    def output(self) -> str:
        """The result's content ("" while there is none)."""
        return self.result.content if self.result is not None else ""

    @property
    def is_error(self) -> bool:
        return self.result is not None and self.result.is_error

    @property
    def chars(self) -> int:
        return len(self.output)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "input": self.input,
            "step": self.step,
            "server": self.server,
            "result": self.result.to_dict() if self.result else None,
        }


# --- exchanges -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One /v1/messages call: the request body, then the Message or the error as data."""

    request: Mapping[str, Any]
    message: Mapping[str, Any] | None  # the Message JSON; None when the call failed
    status: int | None = None  # HTTP status; None for a connection failure (no response at all)
    error_type: str | None = None  # "overloaded_error", "timeout", "connect", ...; None for a message
    error_message: str | None = None
    retry_after: float | None = None  # seconds, from the response's retry-after(-ms) header
    interaction: int | None = None  # position in the cassette; None for a loop run
    duration_ms: float | None = None
    first_token_ms: float | None = None
    label: str | None = None  # a batch request's custom_id: each label is a run of its own

    @property
    def ok(self) -> bool:
        return self.message is not None

    def failure(self) -> dict[str, Any] | None:
        """The failure as data (status, error_type, error_message, retry_after), or None for a message."""
        if self.ok:
            return None
        return {"status": self.status, "error_type": self.error_type or "error",
                "error_message": self.error_message, "retry_after": self.retry_after}

    @classmethod
    def from_interaction(cls, position: int, interaction: Mapping[str, Any]) -> tuple[Exchange | None, str]:
        """One cassette interaction as an exchange, or None and why it is not a Messages API call."""
        request = interaction.get("request") or {}
        method = str(request.get("method", "")).upper()
        path = str(request.get("path", ""))
        if method != "POST" or not path.rstrip("/").endswith(MESSAGES_PATH):
            return None, f"{method} {path} is not a Messages API call"
        body = request.get("body")
        if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
            return None, "the request body has no messages list"
        if "error" in interaction:  # a connection failure: no response at all
            failure = interaction["error"] or {}
            return cls(request=body, message=None, status=None, error_type=str(failure.get("kind", "connection")),
                       error_message=failure.get("message"), interaction=position), ""
        response = interaction.get("response") or {}
        status = response.get("status")
        status = int(status) if isinstance(status, int) else None
        payload = response_message(response)
        duration, first_token = _stream_timing(response.get("events"))
        elapsed = interaction.get("elapsed_ms")  # the whole exchange, where the recorder measured it
        if isinstance(elapsed, int | float) and not isinstance(elapsed, bool):
            duration = float(elapsed)
        # A stream cut off before its message_delta carried no answer the SDK would return: a failed try.
        complete = not response.get("truncated") and (
            "events" not in response or bool((payload or {}).get("stop_reason")))
        if status == 200 and isinstance(payload, Mapping) and _is_message(payload) and complete:
            return cls(request=body, message=payload, status=status, interaction=position, duration_ms=duration,
                       first_token_ms=first_token), ""
        error = payload.get("error") if isinstance(payload, Mapping) else None
        error = error if isinstance(error, Mapping) else {}
        cut = status == 200 and not error
        return cls(
            request=body,
            message=None,
            status=status,
            error_type=str(error.get("type") or ("stream_truncated" if cut else f"http_{status}")),
            error_message=error.get("message") or ("the stream ended before the message did" if cut else None),
            retry_after=retry_after_seconds(_headers(response.get("headers"))),
            interaction=position,
            duration_ms=duration,
            first_token_ms=first_token,
        ), ""


def retry_after_seconds(headers: Mapping[str, Any]) -> float | None:
    """How long the server asked a client to wait: retry-after-ms, else retry-after in seconds (a date, a
    negative or unreadable value: None). Header names in any case; the loop, the trajectory and the pacer
    (harness.pacing) all read it here."""
    lowered = {str(name).lower(): value for name, value in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(name)
        try:
            seconds = float(value) / scale if value is not None else None
        except (TypeError, ValueError):
            seconds = None  # an HTTP date, or damage
        if seconds is not None and 0 <= seconds < _MAX_COUNT:
            return seconds
    return None


def _headers(stored: Any) -> dict[str, Any]:
    """A stored response's headers by lower-case name (the recorder stores them so; a damaged file may not)."""
    return {str(name).lower(): value for name, value in stored.items()} if isinstance(stored, Mapping) else {}


def _is_message(payload: Mapping[str, Any]) -> bool:
    return payload.get("type") == "message" or (payload.get("role") == "assistant" and "content" in payload)


def _stream_timing(events: Any) -> tuple[float | None, float | None]:
    if not isinstance(events, list):
        return None, None
    offsets = [e.get("offset_ms") for e in events if isinstance(e, Mapping) and e.get("offset_ms") is not None]
    if not offsets:
        return None, None
    first = next(
        (e.get("offset_ms") for e in events if isinstance(e, Mapping) and e.get("event") == "content_block_delta"),
        None,
    )
    return float(offsets[-1]), float(first) if first is not None else None
