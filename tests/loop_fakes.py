"""A scripted fake of the Messages API, served to the real SDK through `httpx2.MockTransport`.

`FakeMessagesAPI(script)` answers each POST /v1/messages with the next item of its script: a Message
dict (JSON, or SSE events when the request says "stream": true), an `ApiError`, an exception for the
transport to raise (e.g. `httpx2.ReadTimeout`), or a callable `(request) -> item` for replies that
depend on the request or must act (advance a fake clock) while the call is in flight.

Like the real API, it rejects (400) a request whose history breaks the tool_use/tool_result pairing,
so a loop bug fails the test with the reason instead of passing silently. Every request is kept:
`api.bodies` are the parsed JSON bodies, `api.requests` the httpx2 requests (headers, timeout).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2
from jsonschema import Draft202012Validator

from harness.tools import ToolOutput

MODEL = "claude-sonnet-5"
_ids = itertools.count(1)


# --- building responses --------------------------------------------------------------------------


def usage(input: int = 100, output: int = 20, cache_write: int = 0, cache_read: int = 0) -> dict[str, int]:
    return {
        "input_tokens": input,
        "output_tokens": output,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, tool_input: Mapping[str, Any] | None = None, *, id: str | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": id or f"toolu_{next(_ids):04d}", "name": name, "input": dict(tool_input or {})}


def message(
    *content: dict[str, Any] | str,
    stop_reason: str | None = "end_turn",
    stop_sequence: str | None = None,
    usage_: Mapping[str, int] | None = None,
    model: str = MODEL,
) -> dict[str, Any]:
    """A Message as the API returns it; plain strings become text blocks."""
    return {
        "id": f"msg_{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [text(block) if isinstance(block, str) else block for block in content],
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": dict(usage_ or usage()),
    }


def tools_message(*calls: dict[str, Any], preamble: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """An assistant turn asking for tools (stop_reason tool_use)."""
    content = ([text(preamble)] if preamble else []) + list(calls)
    return message(*content, stop_reason="tool_use", **kwargs)


@dataclass(frozen=True)
class ApiError:
    """An HTTP error response of the API's shape."""

    status: int = 500
    type: str = "api_error"
    message: str = "Internal server error"


# --- the fake ------------------------------------------------------------------------------------

ScriptItem = dict[str, Any] | ApiError | Exception | Callable[[httpx2.Request], Any]


class FakeMessagesAPI:
    def __init__(self, script: Iterable[ScriptItem]) -> None:
        self.script = list(script)
        self.requests: list[httpx2.Request] = []

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]

    def timeouts(self) -> list[dict[str, float | None]]:
        return [request.extensions.get("timeout", {}) for request in self.requests]

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        body = json.loads(request.content)
        problem = request_problem(body)
        if problem:
            return _error_response(ApiError(400, "invalid_request_error", problem))
        if not self.script:
            return _error_response(
                ApiError(400, "invalid_request_error", f"fake script exhausted at request {len(self.requests)}")
            )
        item = self.script.pop(0)
        if callable(item) and not isinstance(item, Exception):
            item = item(request)
        if isinstance(item, Exception):
            raise item
        if isinstance(item, ApiError):
            return _error_response(item)
        if body.get("stream"):
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=encode_sse(sse_events(item))
            )
        return httpx2.Response(200, json=item)


def _error_response(error: ApiError) -> httpx2.Response:
    payload = {"type": "error", "error": {"type": error.type, "message": error.message}}
    return httpx2.Response(error.status, json=payload)


def request_problem(body: Mapping[str, Any]) -> str | None:
    """What the real API would reject this request for (the pairing rules the loop must keep), or None."""
    messages = body.get("messages", [])
    uses_tools = False
    for index, turn in enumerate(messages):
        content = turn.get("content")
        blocks = content if isinstance(content, list) else []
        if turn.get("role") == "assistant":
            uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            uses_tools = uses_tools or bool(uses)
            if not uses or index == len(messages) - 1:
                continue
            following = messages[index + 1]
            after = following.get("content") if following.get("role") == "user" else None
            results = [b.get("tool_use_id") for b in after or [] if b.get("type") == "tool_result"]
            if results != uses:
                return f"messages.{index}: tool_use ids {uses} need tool_results in the next user turn, got {results}"
            leading = [b.get("type") for b in after[: len(results)]]
            if set(leading) != {"tool_result"}:
                return f"messages.{index + 1}: tool_result blocks must come first in the user turn"
        elif any(b.get("type") == "tool_result" for b in blocks):
            uses_tools = True
            previous = messages[index - 1] if index else {}
            previous_ids = {b.get("id") for b in previous.get("content", []) if isinstance(b, dict)}
            stray = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
            if index == 0 or not set(stray) <= previous_ids:
                return f"messages.{index}: tool_result ids {stray} have no tool_use in the previous turn"
    if uses_tools and not body.get("tools"):
        return "requests with tool_use or tool_result blocks must define tools"
    return None


# --- SSE -----------------------------------------------------------------------------------------


def sse_events(final: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The stream of events the API sends for `final`, with text and tool input cut into pieces."""
    usage_ = dict(final["usage"])
    start = {
        **final,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage_, "output_tokens": 1},
    }
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(final["content"]):
        if block["type"] == "text":
            opening, deltas = (
                {**block, "text": ""},
                [{"type": "text_delta", "text": piece} for piece in _halves(block["text"])],
            )
        elif block["type"] == "tool_use":
            opening, deltas = (
                {**block, "input": {}},
                [{"type": "input_json_delta", "partial_json": piece} for piece in _halves(json.dumps(block["input"]))],
            )
        else:
            opening, deltas = dict(block), []
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
        )
        events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": final["stop_reason"], "stop_sequence": final.get("stop_sequence")}
    events.append(
        (
            "message_delta",
            {"type": "message_delta", "delta": delta, "usage": {"output_tokens": usage_["output_tokens"]}},
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _halves(value: str) -> list[str]:
    middle = len(value) // 2
    return [piece for piece in (value[:middle], value[middle:]) if piece]


def encode_sse(events: Iterable[tuple[str, Mapping[str, Any]]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


# --- clients -------------------------------------------------------------------------------------


def sync_client(api: FakeMessagesAPI) -> anthropic.Anthropic:
    # max_retries=0: the SDK would sleep between retries, and each retry would eat a script item.
    return anthropic.Anthropic(
        api_key="sk-ant-test-not-a-key",
        base_url="http://127.0.0.1:9",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(api.handle)),
    )


def async_client(api: FakeMessagesAPI) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key="sk-ant-test-not-a-key",
        base_url="http://127.0.0.1:9",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(api.handle)),
    )


# --- tools and time ------------------------------------------------------------------------------


class FakeTools:
    """A ToolRegistry stand-in: plain functions, optional JSON Schemas, every failure an is_error output."""

    def __init__(
        self, functions: Mapping[str, Callable[..., Any]], schemas: Mapping[str, dict[str, Any]] | None = None
    ) -> None:
        self.functions = dict(functions)
        self.schemas = dict(schemas or {})
        self.runs: list[tuple[str, Any]] = []

    @property
    def names(self) -> list[str]:
        return list(self.functions)

    def __contains__(self, name: object) -> bool:
        return name in self.functions

    def definitions(self) -> list[dict[str, Any]]:
        return [
            {"name": name, "description": f"fake {name}", "input_schema": self.schemas.get(name, {"type": "object"})}
            for name in self.functions
        ]

    def run(self, name: str, tool_input: Any) -> ToolOutput:
        self.runs.append((name, tool_input))
        if name not in self.functions:
            return ToolOutput(f"UnknownTool: no tool named {name!r}", is_error=True)
        errors = [e.message for e in Draft202012Validator(self.schemas.get(name, {})).iter_errors(tool_input)]
        if errors:
            return ToolOutput(f"InvalidInput for {name}: " + "; ".join(errors), is_error=True)
        try:
            result = self.functions[name](**tool_input)
        except Exception as exc:
            return ToolOutput(f"{type(exc).__name__}: {exc}", is_error=True)
        return ToolOutput(result if isinstance(result, str) else json.dumps(result))


class FakeClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
