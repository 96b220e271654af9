"""Request checks the real Messages API makes, with its wording, so clients meet the same 400s and 401s.

Messages are copied from real error bodies: the recorded ones in shared/real-cassettes (401 "invalid
x-api-key", 400 "messages.0: all messages must have non-empty content ...", 400 effort level) and
ones reported verbatim in public issue threads (tool pairing, role order, input_schema). Each check
returns an `ApiError` (data, not an exception); the first failing check wins, as in the real API.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from harness.sim.request_shapes import check_request_shape, check_tool_shape, effort_levels

_SCHEMA_DOCS = "https://docs.claude.com/en/docs/tool-use"
# Every level the installed SDK can send; the real 400 lists a model's levels in alphabetical order.
EFFORT_LEVELS = tuple(sorted(effort_levels()))
# "xhigh ... Not all models accept this level" (the SDK's docstring): the real API refused it for
# claude-opus-4-6 (recorded in shared/real-cassettes); the models before it refuse it too.
_NO_XHIGH_PREFIXES = ("claude-opus-4-6", "claude-opus-4-5", "claude-opus-4-1", "claude-opus-4-0", "claude-opus-4-2",
                      "claude-sonnet-4", "claude-haiku-4", "claude-3")


def model_effort_levels(model: Any) -> tuple[str, ...]:
    """The effort levels a model accepts: all the SDK's, but xhigh only on models that take it."""
    if isinstance(model, str) and model.startswith(_NO_XHIGH_PREFIXES):
        return tuple(level for level in EFFORT_LEVELS if level != "xhigh")
    return EFFORT_LEVELS


@dataclass(frozen=True)
class ApiError:
    status: int
    type: str  # invalid_request_error, authentication_error, not_found_error, ...
    message: str
    details: Mapping[str, Any] | None = None  # sent as error.details: {"error_code": ..., ...}


def _invalid(message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message)


def check_auth(headers: Mapping[str, str]) -> ApiError | None:
    """401 unless an x-api-key or `Authorization: Bearer <token>` is sent (SDK 2.x sends keys as Bearer).

    Any non-empty credential is accepted, except ones containing "invalid": those get the real API's
    401 for a wrong key ("invalid x-api-key"), so that authentication-error handling can be rehearsed.
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    key = (lowered.get("x-api-key") or "").strip()
    authorization = (lowered.get("authorization") or "").strip()
    if not key and authorization:
        scheme, _, key = authorization.partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            return ApiError(401, "authentication_error", "Invalid bearer token")
    if not key:
        return ApiError(401, "authentication_error", "x-api-key header is required")
    if "invalid" in key.lower():
        return ApiError(401, "authentication_error", "invalid x-api-key")
    return None


def check_messages_request(body: Any) -> ApiError | None:
    """All checks for POST /v1/messages (on the request with its consecutive turns combined)."""
    return _check(combine_turns(body), require_max_tokens=True)


def combine_turns(body: Any) -> Any:
    """The request with consecutive `user` (or `assistant`) turns combined into one, as the API does: the SDK's
    `MessageCreateParams.messages` says "Consecutive `user` or `assistant` turns in your request will be combined
    into a single turn" (instructor's JSON-mode retry sends two user turns in a row). A string content becomes one
    text block. Anything malformed is left as it is, for the checks to name."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return body
    combined: list[Any] = []
    for message in body["messages"]:
        previous = combined[-1] if combined else None
        if (
            isinstance(message, dict)
            and isinstance(previous, dict)
            and message.get("role") in ("user", "assistant")
            and message.get("role") == previous.get("role")
            and not _is_empty(message.get("content"))
            and not _is_empty(previous.get("content"))
            and isinstance(message.get("content"), str | list)
            and isinstance(previous.get("content"), str | list)
        ):
            combined[-1] = {**previous, "content": _as_blocks(previous["content"]) + _as_blocks(message["content"])}
        else:
            combined.append(message)
    if len(combined) == len(body["messages"]):
        return body
    return {**body, "messages": combined}


def _as_blocks(content: str | list[Any]) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def check_count_tokens_request(body: Any) -> ApiError | None:
    """POST /v1/messages/count_tokens takes the same body without max_tokens."""
    return _check(body, require_max_tokens=False)


def check_continue_request(body: Any) -> ApiError | None:
    """What a `thread: continue` request must get right on its own, before the thread supplies the rest:
    the top-level fields and options. Its `messages` may be empty (resuming a `pause_turn` reply)."""
    error = _check_top_level(body, require_max_tokens=True)
    if error:
        return error
    if not isinstance(body["messages"], list):
        return _invalid("messages: Input should be a valid list")
    return _check_options(body)


def _check_top_level(body: Any, *, require_max_tokens: bool) -> ApiError | None:
    if not isinstance(body, dict):
        return _invalid("Input should be a valid dictionary")
    required = ("model", "messages", "max_tokens") if require_max_tokens else ("model", "messages")
    for field in required:
        if field not in body:
            return _invalid(f"{field}: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        return _invalid("model: Input should be a valid string")
    if require_max_tokens:
        max_tokens = body["max_tokens"]
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
            return _invalid("max_tokens: Input should be a valid integer")
        if max_tokens < 1:
            return _invalid("max_tokens: Input should be greater than or equal to 1")
    return None


def _check(body: Any, *, require_max_tokens: bool) -> ApiError | None:
    error = _check_top_level(body, require_max_tokens=require_max_tokens)
    if error:
        return error
    for check in (
        _check_options,
        _check_tools,
        _check_message_shapes,
        _check_tool_blocks_need_tools,
        _check_unexpected_tool_results,
        _check_tool_uses_answered,
        _check_shape,
    ):
        error = check(body)
        if error:
            return error
    return None


def _check_shape(body: dict[str, Any]) -> ApiError | None:
    # Last: the hand-written checks above word their 400s as the real API does; this one catches the rest.
    problem = check_request_shape(body)
    return _invalid(problem) if problem else None


def _check_options(body: dict[str, Any]) -> ApiError | None:
    output_config = body.get("output_config")
    if isinstance(output_config, dict) and "effort" in output_config:
        effort = output_config["effort"]
        supported = model_effort_levels(body.get("model"))
        if effort is not None and effort not in supported:
            levels = ", ".join(supported)
            return _invalid(
                f"This model does not support effort level '{effort}'. Supported levels: {levels}."
            )
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or isinstance(budget, bool):
            return _invalid("thinking.enabled.budget_tokens: Field required")
        if budget < 1024:
            return _invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
        max_tokens = body.get("max_tokens")
        if isinstance(max_tokens, int) and max_tokens <= budget:
            return _invalid(
                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
                "#max-tokens-and-context-window-size"
            )
    return None


def _check_tools(body: dict[str, Any]) -> ApiError | None:
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        return _invalid("tools: Input should be a valid list")
    names: set[str] = set()
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return _invalid(f"tools.{index}: Input should be a valid dictionary")
        if tool.get("type") not in (None, "custom"):
            # server and Anthropic-defined tools (web_search_..., bash_...) carry no input_schema; their type
            # must be one the API knows, with the fields that type declares
            problem = check_tool_shape(tool, f"tools.{index}")
            if problem:
                return _invalid(problem)
            continue
        where = f"tools.{index}.custom"
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            return _invalid(f"{where}.name: Field required")
        if name in names:
            return _invalid("tools: Tool names must be unique.")
        names.add(name)
        error = _check_input_schema(where, tool.get("input_schema", _MISSING))
        if error:
            return error
    return None


_MISSING = object()


def _check_input_schema(where: str, schema: Any) -> ApiError | None:
    if schema is _MISSING:
        return _invalid(f"{where}.input_schema: Field required")
    if not isinstance(schema, dict):
        return _invalid(f"{where}.input_schema: Input should be a valid dictionary")
    if schema.get("type") != "object":
        return _invalid(f"{where}.input_schema.type: Input should be 'object'")
    if any(key in schema for key in ("oneOf", "allOf", "anyOf")):
        return _invalid(
            f"{where}.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"
        )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return _invalid(
            f"{where}.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12 "
            f"(https://json-schema.org/draft/2020-12). Learn more about tool use at {_SCHEMA_DOCS}."
        )
    return None


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _is_empty(content: Any) -> bool:
    return content is None or content == "" or content == []


def _conversation(messages: list[Any]) -> list[tuple[int, Any]]:
    """(index, message) of the user and assistant turns: `role: "system"` messages (which the SDK's
    MessageParam allows) sit between turns without taking part in alternation or tool pairing."""
    return [(index, m) for index, m in enumerate(messages) if not (isinstance(m, dict) and m.get("role") == "system")]


def _starts_with_compaction(message: dict[str, Any]) -> bool:
    """A conversation after a compaction starts with the assistant turn holding the compaction block."""
    blocks = _blocks(message)
    return bool(blocks) and isinstance(blocks[0], dict) and blocks[0].get("type") == "compaction"


def _check_message_shapes(body: dict[str, Any]) -> ApiError | None:
    messages = body["messages"]
    if not isinstance(messages, list):
        return _invalid("messages: Input should be a valid list")
    if not messages:
        return _invalid("messages: at least one message is required")
    turns = _conversation(messages)
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            return _invalid(f"messages.{index}: Input should be a valid dictionary")
        role = message.get("role")
        if role == "system":
            if _is_empty(message.get("content")) and not message.get("output_config"):
                return _invalid(f"messages.{index}: a system message needs content or output_config")
            continue
        if role not in ("user", "assistant"):
            return _invalid(f"messages.{index}.role: Input should be 'user', 'assistant' or 'system'")
        if "content" not in message:
            return _invalid(f"messages.{index}.content: Field required")
        is_final_assistant = index == turns[-1][0] and role == "assistant"
        if _is_empty(message["content"]) and not is_final_assistant:
            return _invalid(
                f"messages.{index}: all messages must have non-empty content except for the optional "
                "final assistant message"
            )
        for block in _blocks(message):
            if isinstance(block, dict) and block.get("type") == "text" and not block.get("text"):
                return _invalid("messages: text content blocks must be non-empty")
        if index == turns[0][0] and role != "user" and not _starts_with_compaction(message):
            return _invalid('messages: first message must use the "user" role')
    if not turns:
        return _invalid('messages: first message must use the "user" role')
    return None


def _typed(message: dict[str, Any], kind: str) -> list[tuple[int, dict[str, Any]]]:
    return [
        (position, block)
        for position, block in enumerate(_blocks(message))
        if isinstance(block, dict) and block.get("type") == kind
    ]


def _check_tool_blocks_need_tools(body: dict[str, Any]) -> ApiError | None:
    if body.get("tools"):
        return None
    for message in body["messages"]:
        if _typed(message, "tool_use") or _typed(message, "tool_result"):
            return _invalid("Requests which include `tool_use` or `tool_result` blocks must define tools.")
    return None


def _turns_beside(messages: list[Any], role: str, offset: int) -> Iterator[tuple[int, Any, int, Any]]:
    """Each `role` turn beside the turn `offset` away (-1 the one before, +1 the one after; system messages
    do not count), as (index, message, its index, it); ({} at index + offset) where there is none."""
    turns = _conversation(messages)
    for turn, (index, message) in enumerate(turns):
        if message["role"] != role:
            continue
        near = turn + offset
        near_index, near_message = turns[near] if 0 <= near < len(turns) else (index + offset, {})
        yield index, message, near_index, near_message


def _check_unexpected_tool_results(body: dict[str, Any]) -> ApiError | None:
    for index, message, _, previous in _turns_beside(body["messages"], "user", -1):
        offered = {block.get("id") for _, block in _typed(previous, "tool_use")}
        for position, block in _typed(message, "tool_result"):
            tool_use_id = block.get("tool_use_id")
            if tool_use_id not in offered:
                return _invalid(
                    f"messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {tool_use_id}. Each `tool_result` block must have a corresponding `tool_use` "
                    "block in the previous message."
                )
    return None


def _check_tool_uses_answered(body: dict[str, Any]) -> ApiError | None:
    for index, message, following_index, following in _turns_beside(body["messages"], "assistant", +1):
        ids = [block.get("id") for _, block in _typed(message, "tool_use")]
        if not ids:
            continue
        answered = {block.get("tool_use_id") for _, block in _typed(following, "tool_result")}
        missing = [tool_use_id for tool_use_id in ids if tool_use_id not in answered]
        if missing:
            return _invalid(
                f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(str(item) for item in missing)}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
        leading = 0
        for block in _blocks(following):
            if not (isinstance(block, dict) and block.get("type") == "tool_result"):
                break
            leading += 1
        if leading < len(ids):
            return _invalid(
                f"messages.{following_index}: Did not find {len(ids)} `tool_result` block(s) at the beginning of "
                "this message. Messages following `tool_use` blocks must begin with a matching number of "
                "`tool_result` blocks."
            )
    return None
