"""Compaction and context-management edits, applied to a request before the model reads it.

What the API does with them, as the SDK's types describe (`BetaContextManagementConfigParam`,
`BetaCompactionConfigParam`, `BetaCompactionBlock`, `BetaIterationsUsage`):

- A `compaction` block in `messages` stands for everything before it: the API drops those messages (and the
  blocks before it in its own message), so a conversation may start with the assistant turn holding it.
- `compaction: {"type": "summarize"}` makes the request a compaction request: the answer is one `compaction`
  block (a summary, signed), `stop_reason: "compaction"`, nothing sampled after it; `usage.iterations` holds
  the compaction pass (`type: compaction`) with the input it read.
- `context_management.edits`, in order:
  - `clear_tool_uses_20250919`: past its trigger (input tokens, default 100,000, or tool uses), the results of
    all but the last `keep` tool uses (default 3; `exclude_tools` kept) are cleared (`clear_tool_inputs` clears
    the inputs too); reported in `context_management.applied_edits` with the uses and tokens cleared;
  - `clear_thinking_20251015`: the thinking of all but the last `keep` assistant turns (default 1; `"all"`
    keeps all) is cleared; reported the same way;
  - `compact_20260112`: past its trigger (input tokens, default 150,000) the conversation is summarized into a
    `compaction` block that starts the answer; the model then answers from the summary and the last user turn
    (or, with `pause_after_compaction`, the answer stops there with `stop_reason: "compaction"`).
    `usage.iterations` lists the compaction pass, then the message; the top-level usage is the message's.

Summaries are the simulator's own text (it says so), made from the turns they replace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.sim import ids
from harness.sim.tokens import count_input, count_text

CLEARED = "[cleared by context management (harness simulator)]"
_CLEAR_TRIGGER = 100_000
_COMPACT_TRIGGER = 150_000
_KEEP_TOOL_USES = 3


@dataclass
class Edited:
    """The request as the model reads it, and what the edits did (for the answer's usage and fields)."""

    body: dict[str, Any]
    applied: list[dict[str, Any]] = field(default_factory=list)  # context_management.applied_edits
    compaction: dict[str, Any] | None = None  # the compaction block that starts the answer
    compaction_usage: dict[str, Any] | None = None  # its usage.iterations entry
    only_compaction: bool = False  # a compaction request, or pause_after_compaction: nothing sampled after it

    @property
    def context_management(self) -> dict[str, Any] | None:
        asked = isinstance(self.body.get("context_management"), dict)
        return {"applied_edits": self.applied} if asked else None


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def after_compaction(messages: list[Any]) -> list[Any]:
    """The messages the API reads: from the last compaction block that holds a summary on."""
    for index in range(len(messages) - 1, -1, -1):
        blocks = _blocks(messages[index])
        at = next(
            (
                i
                for i in range(len(blocks) - 1, -1, -1)
                if isinstance(blocks[i], dict) and blocks[i].get("type") == "compaction" and blocks[i].get("content")
            ),
            None,
        )
        if at is not None:
            return [{**messages[index], "content": blocks[at:]}, *messages[index + 1 :]]
    return messages


def _trigger_hit(trigger: Any, default: int, tokens: int, tool_uses: int) -> bool:
    if isinstance(trigger, dict) and trigger.get("type") == "tool_uses":
        return tool_uses >= int(trigger.get("value") or 0)
    value = trigger.get("value") if isinstance(trigger, dict) else None
    return tokens >= (value if isinstance(value, int) else default)


def _tool_uses(messages: list[Any]) -> list[tuple[int, int, dict[str, Any]]]:
    return [
        (m, b, block)
        for m, message in enumerate(messages)
        if message.get("role") == "assistant"
        for b, block in enumerate(_blocks(message))
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]


def _clear_tool_uses(body: dict[str, Any], edit: dict[str, Any]) -> dict[str, Any] | None:
    messages = body["messages"]
    uses = _tool_uses(messages)
    if not _trigger_hit(edit.get("trigger"), _CLEAR_TRIGGER, count_input(body), len(uses)):
        return None
    keep = edit.get("keep")
    kept = int(keep.get("value", _KEEP_TOOL_USES)) if isinstance(keep, dict) else _KEEP_TOOL_USES
    excluded = set(edit.get("exclude_tools") or [])
    clear_inputs = edit.get("clear_tool_inputs")
    older = [(m, b, use) for m, b, use in uses[: max(0, len(uses) - kept)] if use.get("name") not in excluded]
    if not older:
        return None
    cleared_ids = {use.get("id") for _, _, use in older}
    before = count_input(body)
    edited = []
    for message in messages:
        blocks = []
        for block in _blocks(message) or []:
            if not isinstance(block, dict):
                pass
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in cleared_ids:
                block = {**block, "content": CLEARED}
            elif (
                block.get("type") == "tool_use"
                and block.get("id") in cleared_ids
                and (clear_inputs is True or (isinstance(clear_inputs, list) and block.get("name") in clear_inputs))
            ):
                block = {**block, "input": {}}
            blocks.append(block)
        edited.append({**message, "content": blocks} if isinstance(message.get("content"), list) else message)
    body["messages"] = edited
    return {"type": edit["type"], "cleared_tool_uses": len(older), "cleared_input_tokens": before - count_input(body)}


def _clear_thinking(body: dict[str, Any], edit: dict[str, Any]) -> dict[str, Any] | None:
    keep = edit.get("keep")
    if keep == "all" or (isinstance(keep, dict) and keep.get("type") == "all"):
        return None
    kept = int(keep.get("value", 1)) if isinstance(keep, dict) else 1
    messages = body["messages"]
    thinking_turns = [
        index
        for index, message in enumerate(messages)
        if message.get("role") == "assistant"
        and any(isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking") for b in _blocks(message))
    ]
    cleared = thinking_turns[: max(0, len(thinking_turns) - kept)]
    if not cleared:
        return None
    before = count_input(body)
    body["messages"] = [
        {
            **message,
            "content": [
                b
                for b in _blocks(message)
                if not (isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking"))
            ],
        }
        if index in cleared
        else message
        for index, message in enumerate(messages)
    ]
    return {
        "type": edit["type"],
        "cleared_thinking_turns": len(cleared),
        "cleared_input_tokens": before - count_input(body),
    }


def _summary(body: dict[str, Any], instructions: Any) -> str:
    turns = [m for m in body["messages"] if isinstance(m, dict) and m.get("role") in ("user", "assistant")]
    calls = [block.get("name") for _, _, block in _tool_uses(body["messages"])]
    first = next((m for m in turns if m.get("role") == "user"), {})
    opening = first.get("content")
    asked = (
        opening
        if isinstance(opening, str)
        else " ".join(str(b.get("text", "")) for b in _blocks(first) if isinstance(b, dict) and b.get("type") == "text")
    )
    text = (
        f"Summary written by the harness simulator (not a model) of {len(turns)} earlier turns. "
        f"The user first asked: {asked.strip()[:200] or '(no text)'}. "
        f"Tools called: {', '.join(str(c) for c in calls) or 'none'}."
    )
    if isinstance(instructions, str) and instructions.strip():
        text += f" Instructions followed: {instructions.strip()[:200]}"
    return text


def _compact(body: dict[str, Any], instructions: Any, seed: int, fingerprint: str) -> tuple[dict[str, Any], dict]:
    summary = _summary(body, instructions)
    block = {
        "type": "compaction",
        "content": summary,
        "encrypted_content": None,
        "signature": ids.signature(seed, fingerprint, -1),
    }
    usage = {
        "type": "compaction",
        "input_tokens": count_input(body),
        "output_tokens": count_text(summary),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    return block, usage


def apply(body: dict[str, Any], seed: int, fingerprint: str) -> Edited:
    """The request as the model reads it after compaction blocks, a compaction request and the edits."""
    edited = {**body, "messages": after_compaction(list(body.get("messages") or []))}
    outcome = Edited(edited)
    compaction = body.get("compaction")
    if isinstance(compaction, dict) and compaction.get("type") == "summarize":
        outcome.compaction, outcome.compaction_usage = _compact(
            edited, compaction.get("instructions"), seed, fingerprint
        )
        outcome.only_compaction = True
        return outcome
    management = body.get("context_management")
    for edit in (management.get("edits") or []) if isinstance(management, dict) else []:
        kind = edit.get("type") if isinstance(edit, dict) else None
        if kind == "clear_tool_uses_20250919":
            applied = _clear_tool_uses(edited, edit)
        elif kind == "clear_thinking_20251015":
            applied = _clear_thinking(edited, edit)
        elif kind == "compact_20260112" and _trigger_hit(edit.get("trigger"), _COMPACT_TRIGGER, count_input(edited), 0):
            outcome.compaction, outcome.compaction_usage = _compact(edited, edit.get("instructions"), seed, fingerprint)
            outcome.only_compaction = edit.get("pause_after_compaction") is True
            last_user = next((m for m in reversed(edited["messages"]) if m.get("role") == "user"), None)
            # The model answers from the summary and the turn it was asked last.
            edited["messages"] = [
                {"role": "assistant", "content": [outcome.compaction]},
                *([last_user] if last_user else []),
            ]
            continue
        else:
            continue
        if applied:
            outcome.applied.append(applied)
    return outcome
