"""What a scripted model reads from a request, and what it answers.

`Conversation` is a read-only view of a validated Messages request (system text, last user text,
the tool calls already made and their results). `Reply` is a policy's answer before the server adds
ids, usage and thinking. Policies are pure functions `Conversation -> Reply`, so the same request
always gives the same reply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.cassette.headers import INVENTED_HEADER as INVENTED_HEADER
from harness.sim.faults import Fault


@dataclass(frozen=True)
class Reply:
    content: list[dict[str, Any]]  # tool_use blocks carry id "" here; the server numbers them
    stop_reason: str
    stop_details: dict[str, Any] | None = None
    output_tokens: int | None = None  # overrides the count taken from the content (max_tokens cut-offs)
    context_window: int | None = None  # usage shows input + output filling a window of this many tokens
    usage: dict[str, Any] | None = None  # fields that replace the computed usage (a script or function says so)
    fault: Fault | None = None  # carry this answer out with a fault (a script's turn); no content: it replaces it
    # Per tool_use block of `content`, in order: the input paths the model made up rather than took from the
    # conversation ("$.units"; "$" for all of it). The server sends them in INVENTED_HEADER by tool_use id.
    invented: tuple[tuple[str, ...], ...] = ()


# A response header, kept by cassettes: {"toolu_...": ["$.units"]} for the tool inputs a simulator model made up,
# so that `harness bless` compares those by shape only and never pins them as exact values.


def invented_header(content: list[dict[str, Any]], reply: Reply) -> str | None:
    """The INVENTED_HEADER value for a built message's content (ids numbered), or None when nothing was made up."""
    calls = [block for block in content if block.get("type") == "tool_use"]
    marked = {str(call.get("id")): list(paths) for call, paths in zip(calls, reply.invented, strict=False) if paths}
    return json.dumps(marked, separators=(",", ":"), sort_keys=True) if marked else None


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_block(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": "", "name": name, "input": tool_input}


@dataclass(frozen=True)
class ToolExchange:
    """One tool call from an assistant turn and the result the client sent back (None if not yet)."""

    tool_use_id: str
    name: str
    input: Any
    result_text: str | None = None
    is_error: bool = False

    def result_json(self) -> Any:
        """The result parsed as JSON, or None when it is missing, an error, or not JSON."""
        if self.result_text is None or self.is_error:
            return None
        try:
            return json.loads(self.result_text)
        except ValueError:
            return None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


@dataclass(frozen=True)
class Conversation:
    body: dict[str, Any]
    exchanges: list[ToolExchange] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exchanges", self._collect_exchanges())

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages") or []

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def max_tokens(self) -> int:
        return int(self.body.get("max_tokens") or 1)

    @property
    def system_text(self) -> str:
        return _text_of(self.body.get("system"))

    @property
    def tools(self) -> list[dict[str, Any]]:
        return [tool for tool in self.body.get("tools") or [] if isinstance(tool, dict) and tool.get("name")]

    @property
    def tool_names(self) -> list[str]:
        return [tool["name"] for tool in self.tools]

    def tool(self, name: str) -> dict[str, Any] | None:
        return next((tool for tool in self.tools if tool["name"] == name), None)

    @property
    def thinking_enabled(self) -> bool:
        thinking = self.body.get("thinking")
        return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")

    def user_texts(self) -> list[str]:
        """The plain text of each user turn, in order (tool results left out)."""
        return [
            text
            for text in (_text_of(m.get("content")) for m in self.messages if m.get("role") == "user")
            if text
        ]

    @property
    def first_user_text(self) -> str:
        texts = self.user_texts()
        return texts[0] if texts else ""

    @property
    def last_user_text(self) -> str:
        texts = self.user_texts()
        return texts[-1] if texts else ""

    def assistant_turns(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("role") == "assistant"]

    def calls_to(self, name: str) -> list[ToolExchange]:
        return [exchange for exchange in self.exchanges if exchange.name == name]

    def _collect_exchanges(self) -> list[ToolExchange]:
        calls: dict[str, ToolExchange] = {}
        order: list[str] = []
        for message in self.messages:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and message.get("role") == "assistant":
                    calls[block["id"]] = ToolExchange(block["id"], str(block.get("name")), block.get("input"))
                    order.append(block["id"])
                elif block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                    call = calls[block["tool_use_id"]]
                    calls[call.tool_use_id] = ToolExchange(
                        call.tool_use_id,
                        call.name,
                        call.input,
                        result_text=_text_of(block.get("content")),
                        is_error=bool(block.get("is_error")),
                    )
        return [calls[tool_use_id] for tool_use_id in order]
