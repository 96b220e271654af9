"""What an agent run is made of, whichever record it comes from: exchanges, token usage, tool calls.

A run is a sequence of /v1/messages exchanges. Each `Exchange` is the request body that was sent and
either the Message that came back or the error, as data (HTTP status, API error type, message,
retry-after), never as an exception's text. The loop records one per model call as it makes them
(`RunResult.exchanges`); a cassette holds them as interactions (`Exchange.from_interaction`), whether
it was recorded live or is being replayed. The trajectory (harness/trajectory.py) is derived from
exchanges alone, so a live run, its replay and its cassette file read the same way.

`Usage` counts tokens by kind (`TOKEN_KINDS`: the API reports them apart and prices them apart), with
the billed passes of `usage.iterations` and the per-use server tool requests. `ToolCall` is one tool call
of any kind (`TOOL_KINDS`: the agent's tool_use, the API's server_tool_use, an MCP server's mcp_tool_use)
with the `ToolResult` that answered it. Every other module imports these; nothing here needs the
anthropic SDK.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.jsondata import canonical_json
from harness.wire.bodies import response_message

__all__ = [
    "API_USAGE_FIELDS",
    "CALL_BLOCKS",
    "TOKEN_KINDS",
    "TOOL_KINDS",
    "USAGE_FIELDS",
    "Exchange",
    "ToolCall",
    "ToolResult",
    "Usage",
    "UsageEntry",
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
class UsageEntry:
    """One entry of a response's `usage.iterations`: a sampling pass the API ran and billed on its own (a
    `compaction`, an `advisor_message`, a `fallback_message`, each `message` iteration of a server-tool loop),
    with the model that ran it when the entry names one (None: the response's model)."""

    type: str
    model: str | None = None
    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0
    cache_write_1h: int = 0  # of cache_write, the tokens written for an hour (priced above the 5-minute ones)

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read

    @classmethod
    def from_api(cls, item: Any) -> UsageEntry:
        model = _field(item, "model")
        return cls(type=str(_field(item, "type") or "message"), model=model if isinstance(model, str) else None,
                   **{kind: _count(item, name) for kind, name in API_USAGE_FIELDS.items()},
                   cache_write_1h=_count(_field(item, "cache_creation"), "ephemeral_1h_input_tokens"))

    @classmethod
    def from_dict(cls, data: Any) -> UsageEntry:
        model = _field(data, "model")
        return cls(type=str(_field(data, "type") or "message"), model=model if isinstance(model, str) else None,
                   **{kind: _count(data, kind) for kind in (*TOKEN_KINDS, "cache_write_1h")})

    def plus(self, other: UsageEntry) -> UsageEntry:
        return dataclasses.replace(self, **{kind: getattr(self, kind) + getattr(other, kind)
                                            for kind in (*TOKEN_KINDS, "cache_write_1h")})

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "model": self.model}
        out |= {kind: getattr(self, kind) for kind in TOKEN_KINDS}
        if self.cache_write_1h:
            out["cache_write_1h"] = self.cache_write_1h
        return out


# The entries of `usage.iterations` that are the response's own sampling, which the top-level counts sum;
# any other entry (a compaction, an advisor's pass) is billed beside the top-level counts, not in them.
_MESSAGE_ENTRIES = ("message", "fallback_message")


@dataclass(frozen=True)
class Usage:
    """Token counts, each kind apart: the API reports them apart and prices them differently.

    The counts are what was billed. For a response whose `usage.iterations` lists its sampling passes they
    are the sum over every entry: the top-level counts leave a compaction pass out (a compaction of 99,195
    input tokens beside a reply of 162 reads 99,357 here). Beside the tokens: the per-use server tool
    requests (`usage.server_tool_use`), the part of the cache writes made for an hour, and whether the
    response came out of a Message Batch (priced at the batch discount).
    """

    input: int = 0
    output: int = 0
    cache_write: int = 0  # usage.cache_creation_input_tokens
    cache_read: int = 0  # usage.cache_read_input_tokens
    cache_write_1h: int = 0  # of cache_write: usage.cache_creation.ephemeral_1h_input_tokens
    web_search_requests: int = 0  # usage.server_tool_use, billed per use
    web_fetch_requests: int = 0
    iterations: tuple[UsageEntry, ...] = ()  # usage.iterations, where the response had them
    batch: bool = False  # a Message Batch result (service_tier "batch")

    KINDS: ClassVar[tuple[str, ...]] = TOKEN_KINDS

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read

    @property
    def entries(self) -> tuple[UsageEntry, ...]:
        """The passes to price one by one: the iterations, or the whole usage as one `message` pass."""
        if self.iterations:
            return self.iterations
        return (UsageEntry("message", None, self.input, self.output, self.cache_write, self.cache_read,
                           self.cache_write_1h),)

    @classmethod
    def from_api(cls, usage: Any, *, batch: bool = False) -> Usage:
        """From a Messages API `usage`: the SDK's object or its JSON. Every field is optional (2024
        recordings lack the cache ones); a count that is not a plain non-negative number reads as 0.
        `batch` says the response was a Message Batch result (else `service_tier` says so, or not)."""
        top = UsageEntry.from_api(usage)
        raw = _field(usage, "iterations")
        iterations = tuple(UsageEntry.from_api(item) for item in raw if item is not None) \
            if isinstance(raw, list | tuple) else ()
        counted = top
        if iterations:
            if any(entry.type in _MESSAGE_ENTRIES for entry in iterations):
                counted = _sum_entries(iterations, "billed")
            else:  # only side passes listed (an on-demand compaction): the top-level counts stand beside them
                counted = _sum_entries((top, *iterations), "billed")
        tools = _field(usage, "server_tool_use")
        return cls(
            **{kind: getattr(counted, kind) for kind in (*TOKEN_KINDS, "cache_write_1h")},
            web_search_requests=_count(tools, "web_search_requests"),
            web_fetch_requests=_count(tools, "web_fetch_requests"),
            iterations=iterations,
            batch=batch or _field(usage, "service_tier") == "batch",
        )

    @classmethod
    def from_dict(cls, data: Any) -> Usage:
        """The inverse of `to_dict`: our own kind names (a results file, a golden); "total" is derived."""
        tools = _field(data, "server_tool_use")
        raw = _field(data, "iterations")
        return cls(
            **{kind: _count(data, kind) for kind in (*TOKEN_KINDS, "cache_write_1h")},
            web_search_requests=_count(tools, "web_search_requests"),
            web_fetch_requests=_count(tools, "web_fetch_requests"),
            iterations=tuple(UsageEntry.from_dict(item) for item in raw if isinstance(item, Mapping))
            if isinstance(raw, list) else (),
            batch=_field(data, "batch") is True,
        )

    def __add__(self, other: Usage) -> Usage:
        iterations: tuple[UsageEntry, ...] = ()
        if self.iterations or other.iterations:  # passes of one type and model, summed
            merged: dict[tuple[str, str | None], UsageEntry] = {}
            for entry in (*self.entries, *other.entries):
                key = (entry.type, entry.model)
                merged[key] = merged[key].plus(entry) if key in merged else entry
            iterations = tuple(merged.values())
        return Usage(
            **{kind: getattr(self, kind) + getattr(other, kind) for kind in TOKEN_KINDS},
            cache_write_1h=self.cache_write_1h + other.cache_write_1h,
            web_search_requests=self.web_search_requests + other.web_search_requests,
            web_fetch_requests=self.web_fetch_requests + other.web_fetch_requests,
            iterations=iterations,
            batch=self.batch and other.batch if (self.total and other.total) else self.batch or other.batch,
        )

    def to_dict(self) -> dict[str, Any]:
        """The kinds and their total; beside them, only where there are any: the 1-hour cache writes, the
        server tool requests, the iterations and the batch flag."""
        out: dict[str, Any] = {kind: getattr(self, kind) for kind in TOKEN_KINDS} | {"total": self.total}
        if self.cache_write_1h:
            out["cache_write_1h"] = self.cache_write_1h
        if self.web_search_requests or self.web_fetch_requests:
            out["server_tool_use"] = {"web_search_requests": self.web_search_requests,
                                      "web_fetch_requests": self.web_fetch_requests}
        if self.iterations:
            out["iterations"] = [entry.to_dict() for entry in self.iterations]
        if self.batch:
            out["batch"] = True
        return out


def _sum_entries(entries: tuple[UsageEntry, ...], name: str) -> UsageEntry:
    total = UsageEntry(name)
    for entry in entries:
        total = total.plus(entry)
    return total


def _field(source: Any, name: str) -> Any:
    return source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)


def _count(source: Any, name: str) -> int:
    value = _field(source, name)
    plain = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < _MAX_COUNT
    return int(value) if plain else 0


# --- tool calls ------------------------------------------------------------------------------------------


# Who runs a tool call: the agent ("client": a tool_use, answered by a tool_result in the next user turn), the
# API ("server": a server_tool_use such as web search or code execution, answered by its *_tool_result block
# in the same response) or an MCP server the API connects to ("mcp": an mcp_tool_use, answered by an
# mcp_tool_result in the same response).
TOOL_KINDS: tuple[str, ...] = ("client", "server", "mcp")
CALL_BLOCKS: Mapping[str, str] = {"tool_use": "client", "server_tool_use": "server", "mcp_tool_use": "mcp"}


@dataclass(frozen=True)
class ToolResult:
    """The block that answered a tool call: a tool_result, an mcp_tool_result or a server tool's result."""

    content: str  # as a person reads it: text parts joined; a search's results as "title <url>" lines; ...
    is_error: bool
    step: int | None  # the step whose request (client) or response (server, MCP) carried it; None when that
    # request got no message (or was never sent)
    type: str = "tool_result"  # the block's type: tool_result, mcp_tool_result, web_search_tool_result, ...
    error_code: str | None = None  # a server tool's error (max_uses_exceeded, url_not_accessible, ...)
    details: Mapping[str, Any] | None = None  # what the block holds, readably: results, a page, the output

    @property
    def chars(self) -> int:
        return len(self.content)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": self.content, "chars": self.chars, "is_error": self.is_error,
                               "step": self.step}
        if self.type != "tool_result":
            out["type"] = self.type
        if self.error_code is not None:
            out["error_code"] = self.error_code
        if self.details:
            out["details"] = dict(self.details)
        return out


@dataclass
class ToolCall:
    """A tool call of a response (a tool_use, server_tool_use or mcp_tool_use block), with its result when
    one was found, its kind (`TOOL_KINDS`) and, for a call made from code execution, its `caller`.

    The loop makes these as it runs tools (with how long each took, and whether the repeated-call
    breaker answered instead); the trajectory finds them in the recorded responses and requests.
    """

    id: str
    name: str
    input: Any
    step: int  # the step whose response asked for it
    kind: str = "client"  # "client", "server" or "mcp"
    result: ToolResult | None = None
    duration_ms: float | None = None  # how long the loop's tool ran; None where no one measured it
    synthetic: bool = False  # answered by the loop's repeated-call breaker instead of running the tool
    server_name: str | None = None  # the MCP server, for an mcp call
    caller: Mapping[str, Any] | None = None  # {"type": "code_execution_20250825", "tool_id": ...}: a call made
    # by code the API ran (programmatic tool calling); None for a direct call

    @property
    def server(self) -> bool:
        """Run on the API's side (a server tool or an MCP server): its result is in the same response."""
        return self.kind != "client"

    @property
    def key(self) -> str:
        """Same tool, same canonical input: the identity of a call for retry and loop detection."""
        return f"{self.kind} {self.server_name or ''} {self.name} {canonical_json(self.input)}"

    @property
    def label(self) -> str:
        """The tool's name as a person tells it apart: an MCP tool with its server ("docs/search")."""
        return f"{self.server_name}/{self.name}" if self.server_name else self.name

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
        out = {
            "id": self.id,
            "name": self.name,
            "input": self.input,
            "step": self.step,
            "server": self.server,
            "kind": self.kind,
            "result": self.result.to_dict() if self.result else None,
        }
        if self.server_name is not None:
            out["server_name"] = self.server_name
        if self.caller is not None:
            out["caller"] = dict(self.caller)
        return out


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
    offsets = [e["offset_ms"] for e in events if isinstance(e, Mapping) and e.get("offset_ms") is not None]
    if not offsets:
        return None, None
    first = next(
        (e.get("offset_ms") for e in events if isinstance(e, Mapping) and e.get("event") == "content_block_delta"),
        None,
    )
    return float(offsets[-1]), float(first) if first is not None else None
