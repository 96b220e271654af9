"""The OpenTelemetry GenAI semantic conventions, as attribute dictionaries: no OpenTelemetry import here.

One place spells the conventions' names, so the export of a cassette and the spans of a live run carry
the same attributes. The conventions (gen_ai.*) have moved out of the `opentelemetry-semantic-conventions`
package into their own repository, so the names are written out here rather than imported.

Token counts: the conventions say `gen_ai.usage.input_tokens` "SHOULD include all types of input tokens,
including cached tokens", and that the two cache counts are parts of it. The Messages API reports
`input_tokens` without the cache, so input_tokens here is input + cache write + cache read, and
`harness show`'s "in" is input_tokens - cache_write.input_tokens - cache_read.input_tokens.

Message content (prompts, answers, tool arguments and results) is left out unless asked for: it can be
sensitive, and the conventions make it opt-in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from harness.run import Usage

PROVIDER = "anthropic"

OPERATION = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT = "gen_ai.usage.input_tokens"
USAGE_OUTPUT = "gen_ai.usage.output_tokens"
USAGE_CACHE_WRITE = "gen_ai.usage.cache_write.input_tokens"
USAGE_CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"
HTTP_STATUS = "http.response.status_code"

CHAT = "chat"
EXECUTE_TOOL = "execute_tool"
INVOKE_AGENT = "invoke_agent"

# Request fields that are the conventions' request parameters: body key -> attribute.
REQUEST_PARAMETERS = {
    "max_tokens": REQUEST_MAX_TOKENS,
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "stop_sequences": "gen_ai.request.stop_sequences",
}

AttributeValue = str | bool | int | float | list[str] | list[int] | list[float]


def chat_span_name(model: str | None) -> str:
    return f"{CHAT} {model}" if model else CHAT


def tool_span_name(name: str) -> str:
    return f"{EXECUTE_TOOL} {name}"


def request_attributes(request: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """From a request body, or a trajectory step's request summary (which keeps the same keys)."""
    attributes: dict[str, AttributeValue] = {OPERATION: CHAT, PROVIDER_NAME: PROVIDER}
    if isinstance(request.get("model"), str):
        attributes[REQUEST_MODEL] = request["model"]
    parameters = {**request, **(request.get("params") or {})}  # the summary keeps the rarer ones under params
    for key, name in REQUEST_PARAMETERS.items():
        value = parameters.get(key)
        if key == "stop_sequences":
            if isinstance(value, list) and value:
                attributes[name] = [str(item) for item in value]
        elif isinstance(value, int | float) and not isinstance(value, bool):
            attributes[name] = value
    if request.get("stream"):
        attributes[REQUEST_STREAM] = True
    return attributes


def usage_attributes(usage: Usage) -> dict[str, AttributeValue]:
    return {
        USAGE_INPUT: usage.input + usage.cache_write + usage.cache_read,
        USAGE_OUTPUT: usage.output,
        USAGE_CACHE_WRITE: usage.cache_write,
        USAGE_CACHE_READ: usage.cache_read,
    }


def response_attributes(
    *, message_id: str | None, model: str | None, stop_reason: str | None, usage: Usage
) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {}
    if message_id:
        attributes[RESPONSE_ID] = message_id
    if model:
        attributes[RESPONSE_MODEL] = model
    if stop_reason:
        attributes[RESPONSE_FINISH_REASONS] = [stop_reason]
    return attributes | usage_attributes(usage)


def error_attributes(*, status: int | None, error_type: str | None) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {ERROR_TYPE: error_type or "error"}
    if status is not None:
        attributes[HTTP_STATUS] = status
    return attributes


def tool_attributes(
    *,
    call_id: str,
    name: str,
    server: bool = False,
    arguments: Any = None,
    result: str | None = None,
    include_content: bool = False,
) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        OPERATION: EXECUTE_TOOL,
        PROVIDER_NAME: PROVIDER,
        TOOL_NAME: name,
        TOOL_CALL_ID: call_id,
        # "function": run by the agent; a server tool (web search, code execution) runs inside the API call.
        TOOL_TYPE: "extension" if server else "function",
    }
    if include_content:
        attributes[TOOL_CALL_ARGUMENTS] = _json(arguments)
        if result is not None:
            attributes[TOOL_CALL_RESULT] = result
    return attributes


def content_attributes(
    messages: Iterable[Mapping[str, Any]], blocks: Iterable[Mapping[str, Any]] | None, stop_reason: str | None
) -> dict[str, AttributeValue]:
    """gen_ai.input.messages / gen_ai.output.messages, in the conventions' JSON shape (role + parts)."""
    attributes: dict[str, AttributeValue] = {INPUT_MESSAGES: _json([_message(m) for m in messages])}
    if blocks is not None:
        output: dict[str, Any] = {"role": "assistant", "parts": [_part(b) for b in blocks]}
        if stop_reason:
            output["finish_reason"] = stop_reason
        attributes[OUTPUT_MESSAGES] = _json([output])
    return attributes


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    parts = [_part(block) for block in blocks if isinstance(block, Mapping)]
    role = str(message.get("role", "user"))
    # The API carries tool results in user turns; the conventions give them a role of their own.
    if parts and role == "user" and all(part["type"] == "tool_call_response" for part in parts):
        role = "tool"
    return {"role": role, "parts": parts}


def _part(block: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(block.get("type", ""))
    if kind == "text":
        return {"type": "text", "content": str(block.get("text", ""))}
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        return {"type": "tool_call", "id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")}
    if kind == "tool_result" or (kind.endswith("_tool_result") and "tool_use_id" in block):
        return {"type": "tool_call_response", "id": block.get("tool_use_id"), "response": block.get("content")}
    if kind == "thinking":
        return {"type": "reasoning", "content": str(block.get("thinking", ""))}
    return {"type": kind or "unknown"}  # images, documents, redacted thinking: the kind, not the bytes


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
