"""Function models: `Simulator(model=callable)`, where a test decides each turn in Python.

The callable gets the parsed request (a dict, as the client sent it) and returns the model's turn as a
message dict, of which only `content` is needed (a string or a list of content blocks); `stop_reason`
defaults to tool_use when the content calls a tool and end_turn otherwise, and `usage` may replace
any usage fields. Or it raises `SimulatedApiError(status, type, message)` to answer with that error.
The simulator adds what the real API adds: ids, thinking when enabled, max_tokens and stop_sequences,
usage. A tool_use of a tool the request did not offer is answered as a 400, as the API would refuse it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from harness.sim.conversation import Conversation, Reply
from harness.sim.validation import ApiError

_BLOCK_TYPES = ("text", "tool_use", "thinking", "redacted_thinking")
STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal",
                "model_context_window_exceeded")


class SimulatedApiError(Exception):
    """Raised by a function model to answer with an API error (e.g. 529 overloaded_error)."""

    def __init__(self, status: int, type: str, message: str) -> None:
        super().__init__(f"{status} {type}: {message}")
        self.error = ApiError(status, type, message)


class BadTurn(ValueError):
    """A turn a model returned that is not a message: the reason says which field and why."""


def reply_from_message(message: Any) -> Reply:
    """A Reply from a message dict (see the module doc); BadTurn when it is not one."""
    if not isinstance(message, Mapping):
        raise BadTurn(f"expected a message dict with `content`, got {type(message).__name__}")
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        raise BadTurn("`content` must be a non-empty string or list of content blocks")
    blocks = []
    for position, block in enumerate(content):
        if not isinstance(block, Mapping) or block.get("type") not in _BLOCK_TYPES:
            raise BadTurn(f"content[{position}] must be a block of type {', '.join(_BLOCK_TYPES)}")
        block = dict(block)
        if block["type"] == "tool_use":
            if not isinstance(block.get("name"), str) or not isinstance(block.get("input", {}), Mapping):
                raise BadTurn(f"content[{position}]: a tool_use needs a `name` and a dict `input`")
            block = {"type": "tool_use", "id": str(block.get("id") or ""), "name": block["name"],
                     "input": dict(block.get("input") or {})}
        blocks.append(block)
    calls = any(block["type"] == "tool_use" for block in blocks)
    stop_reason = message.get("stop_reason") or ("tool_use" if calls else "end_turn")
    if stop_reason not in STOP_REASONS:
        raise BadTurn(f"stop_reason {stop_reason!r} is not one of {', '.join(STOP_REASONS)}")
    usage = message.get("usage")
    if usage is not None and not isinstance(usage, Mapping):
        raise BadTurn("`usage` must be a dict of usage fields")
    return Reply(blocks, stop_reason, stop_details=message.get("stop_details"),
                 usage=dict(usage) if usage else None)


def unoffered_tool(conversation: Conversation, reply: Reply, where: str) -> ApiError | None:
    """The 400 for a turn that calls a tool the request did not offer."""
    offered = conversation.tool_names
    for block in reply.content:
        if block.get("type") == "tool_use" and block["name"] not in offered:
            tools = ", ".join(offered) or "none"
            return ApiError(400, "invalid_request_error",
                            f"{where}: tool_use names tool {block['name']!r}, which this request does not offer "
                            f"(tools: {tools})")
    return None


def function_model(function: Callable[[dict[str, Any]], Any]) -> Callable[[Conversation], Reply | ApiError]:
    name = getattr(function, "__qualname__", None) or repr(function)

    def answer(conversation: Conversation) -> Reply | ApiError:
        try:
            message = function(copy.deepcopy(conversation.body))
        except SimulatedApiError as raised:
            return raised.error
        try:
            reply = reply_from_message(message)
        except BadTurn as err:
            return ApiError(500, "api_error", f"model function {name} returned a bad turn: {err}")
        return unoffered_tool(conversation, reply, f"model function {name}") or reply

    return answer
