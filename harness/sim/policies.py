"""The built-in scripted models (`sim-<policy>`); `harness.sim.models` says how a request picks one.

`echo` answers "You said: ..." and is only ever chosen by name (`sim-echo`): a Claude model id no
policy claims is answered by `sim-auto`. The misbehaving policies exist to trip the agent loop's
guards: `repeat` (same tool call forever), `max-tokens`, `refuse`, `pause-turn` and `context-window`.
`read-file` drives a coding agent (the Claude Code CLI) through its Read tool (see harness.sim.read_file).

Other packages add scripted models through the entry point group `loop_harness.sim_models`
(`name = "package.module:OBJECT"`, an `AddedPolicy`): the bundled demo adds `dayflow` and `sql` that
way (harness_demo/sim/), each also chosen for a request that names no model but offers its tool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.plugins import SIM_MODELS_GROUP, Registry, installed
from harness.sim.conversation import Conversation, Reply, text_block, tool_use_block
from harness.sim.read_file import read_file

Policy = Callable[[Conversation], Reply]
POLICY_HEADER = "x-harness-sim-policy"
MODEL_PREFIX = "sim-"


def echo(conversation: Conversation) -> Reply:
    said = conversation.last_user_text.strip() or "(nothing)"
    return Reply([text_block(f"You said: {said}")], "end_turn")


def _example_value(schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(schema, dict) and "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if isinstance(schema, dict) and "default" in schema:
        return schema["default"]
    return {"string": "example", "integer": 1, "number": 1, "boolean": False, "array": [], "object": {}}.get(
        kind if isinstance(kind, str) else "string", "example"
    )


def repeat(conversation: Conversation) -> Reply:
    """Call the first tool with the same input every turn, never finishing."""
    if not conversation.tools:
        return Reply([text_block("I would call a tool again, but none is defined.")], "end_turn")
    tool = conversation.tools[0]
    earlier = conversation.calls_to(tool["name"])
    if earlier and isinstance(earlier[0].input, dict):
        tool_input = dict(earlier[0].input)
    else:
        schema = tool.get("input_schema") or {}
        properties = schema.get("properties") or {}
        tool_input = {name: _example_value(properties.get(name)) for name in schema.get("required") or []}
    return Reply(
        [text_block("Let me check that again."), tool_use_block(tool["name"], tool_input)], "tool_use"
    )


_RAMBLE = (
    "Here is a thorough answer, covering every angle of the question in turn, with background, "
    "examples and caveats, because the model has been scripted never to stop on its own. "
)


def max_tokens(conversation: Conversation) -> Reply:
    """A text cut off mid-word by the token limit, billed at exactly max_tokens like the real API."""
    limit = conversation.max_tokens
    shown_chars = min(limit, 120) * 4
    text = (_RAMBLE * (shown_chars // len(_RAMBLE) + 2))[: max(1, shown_chars - 1)]
    return Reply([text_block(text)], "max_tokens", output_tokens=limit)


def refuse(conversation: Conversation) -> Reply:
    explanation = "The simulator's refusal policy declines every request."
    return Reply(
        [text_block("I can't help with that.")],
        "refusal",
        stop_details={"type": "refusal", "category": None, "explanation": explanation},
    )


def pause_turn(conversation: Conversation) -> Reply:
    """pause_turn first; once the paused turn is sent back, finish with end_turn."""
    if conversation.assistant_turns():
        return Reply([text_block("Done: the long-running work has finished.")], "end_turn")
    return Reply([text_block("Working on it; this needs another turn.")], "pause_turn")


CONTEXT_WINDOW_TOKENS = 200_000


def context_window(conversation: Conversation) -> Reply:
    """Stop mid-sentence with model_context_window_exceeded, usage showing the prompt filling the window."""
    text = "I have read everything so far, but this conversation has grown too long for me to"
    return Reply([text_block(text)], "model_context_window_exceeded", context_window=CONTEXT_WINDOW_TOKENS)


@dataclass(frozen=True)
class AddedPolicy:
    """A scripted model another package adds (entry point group `loop_harness.sim_models`)."""

    policy: Policy
    answers_tools: tuple[str, ...] = ()  # tools that pick it for a request naming no model


_BUILT_IN: dict[str, Policy] = {
    "echo": echo,
    "repeat": repeat,
    "max-tokens": max_tokens,
    "refuse": refuse,
    "pause-turn": pause_turn,
    "context-window": context_window,
    "read-file": read_file,
}
POLICIES: Registry[Policy] = Registry(_BUILT_IN.items(), SIM_MODELS_GROUP,
                                          lambda name, added: [(name, added.policy)], added_first=True)


def auto_detected() -> tuple[tuple[str, str], ...]:
    """(tool name, policy) pairs, for requests that name no policy: the added models' `answers_tools`."""
    return tuple((tool, name) for name, added in installed(SIM_MODELS_GROUP) for tool in added.answers_tools)
