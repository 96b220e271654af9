"""`sim-auto`: a simulated model for any agent, its own tools included.

For a request with tools it calls them with inputs made up from each tool's `input_schema` (valid
against it; see `harness.sim.schema_instances`), then answers with end_turn, quoting every tool_result
it received. By default every offered tool is called once, all in one turn (parallel tool use).
Options, after a colon in the model name (`sim-auto:serial,rounds=2`) or in the simulator's default
model (`harness sim --default-model sim-auto:until-corrected`):

- `serial`: one tool_use per turn (also what `disable_parallel_tool_use` asks for);
- `rounds=N`: call every tool N times before answering;
- `until-corrected`: a call whose result has `is_error` is made again with a new input (up to 3 tries),
  and the answer comes as soon as one such call has been corrected.

`tool_choice` is honoured as the real API does: `none` answers without tools, `any` and `tool` always
call (the named tool for `tool`) and write no text before the call. Inputs are seeded from the
simulator's seed, the tool's name and schema, and how many times the conversation already called the
tool, so the same request gets the same answer and a re-recording gives the same cassette.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.sim.conversation import Conversation, Reply, ToolExchange, text_block, tool_use_block
from harness.sim.schema_instances import SchemaUnsatisfied, instance_for

NAME = "auto"
MAX_TRIES = 3  # calls of one tool in a row that may fail before until-corrected gives up on it


@dataclass(frozen=True)
class AutoOptions:
    serial: bool = False
    rounds: int = 1
    until_corrected: bool = False

    def label(self) -> str:
        parts = (["serial"] if self.serial else []) + ([f"rounds={self.rounds}"] if self.rounds != 1 else [])
        parts += ["until-corrected"] if self.until_corrected else []
        return ",".join(parts)


class BadOptions(ValueError):
    pass


def parse_options(text: str) -> AutoOptions:
    """`serial,rounds=2,until-corrected` (any order, any subset) to options; BadOptions says what is wrong."""
    serial, rounds, until = False, 1, False
    for raw in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = raw.partition("=")
        if name == "serial" and not value:
            serial = True
        elif name == "until-corrected" and not value:
            until = True
        elif name == "rounds" and value.isdigit() and int(value) >= 1:
            rounds = int(value)
        else:
            raise BadOptions(f"sim-auto option {raw!r} is not one of: serial, rounds=N (N >= 1), until-corrected")
    return AutoOptions(serial, rounds, until)


def model(options: AutoOptions, seed: int) -> Callable[[Conversation], Reply]:
    return lambda conversation: answer(conversation, options, seed)


def answer(conversation: Conversation, options: AutoOptions, seed: int) -> Reply:
    choice = conversation.body.get("tool_choice")
    choice = choice if isinstance(choice, dict) else {}
    kind = choice.get("type", "auto")
    # Server tools (web search, code execution...) run on the API's side and have no input_schema:
    # a model never hands them to the client, so sim-auto calls only the client's own tools.
    tools = [tool for tool in conversation.tools if isinstance(tool.get("input_schema"), dict)]
    if kind == "tool":
        tools = [tool for tool in tools if tool["name"] == choice.get("name")]
    if kind == "none" or not tools:
        return _final(conversation, _task(conversation))
    exchanges = _task(conversation)
    pending = _pending(tools, exchanges, options)
    forced = kind in ("any", "tool")
    if pending is None and forced:  # the API makes the model call a tool: go round the tools again
        pending = [tools[len(exchanges) % len(tools)]["name"]]
    if not pending:
        return _final(conversation, exchanges)
    if options.serial or choice.get("disable_parallel_tool_use"):
        pending = pending[:1]
    content: list[dict[str, Any]] = []
    if not forced:  # with any/tool the API starts the reply at the tool call: no text first
        content.append(text_block(f"I'll call {', '.join(pending)}."))
    for name in pending:
        tool = conversation.tool(name) or {}
        earlier = len(conversation.calls_to(name))
        try:
            tool_input = instance_for(tool.get("input_schema") or {"type": "object"}, seed, name, earlier)
        except SchemaUnsatisfied as err:
            raise SchemaUnsatisfied(
                f"sim-auto cannot make an input for tool {name!r} that validates against its input_schema: {err}"
            ) from None
        content.append(tool_use_block(name, tool_input))
    return Reply(content, "tool_use")


def _task(conversation: Conversation) -> list[ToolExchange]:
    """The tool calls since the user last wrote (text, not only tool results): a new question starts afresh."""
    messages = conversation.messages
    start = 0
    for position, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") == "user" and (
            isinstance(content, str)
            or any(isinstance(b, dict) and b.get("type") != "tool_result" for b in content or [])
        ):
            start = position
    return Conversation({**conversation.body, "messages": messages[start:]}).exchanges


def _trailing_errors(calls: list[ToolExchange]) -> int:
    count = 0
    for call in reversed(calls):
        if not call.is_error:
            break
        count += 1
    return count


def _pending(tools: list[dict[str, Any]], exchanges: list[ToolExchange], options: AutoOptions) -> list[str] | None:
    """The tools to call now, in offered order; None when the plan is done and the answer is due."""
    names = [tool["name"] for tool in tools]
    by_tool = {name: [e for e in exchanges if e.name == name] for name in names}
    if options.until_corrected:
        for calls in by_tool.values():
            errors_then_success = any(c.is_error for c in calls) and calls and not calls[-1].is_error
            if errors_then_success:
                return None  # corrected: answer now
        retry = [name for name, calls in by_tool.items() if 0 < _trailing_errors(calls) < MAX_TRIES]
        if retry:
            return retry

        def made(name: str) -> int:
            calls = by_tool[name]
            return sum(1 for c in calls if not c.is_error) + (1 if _trailing_errors(calls) >= MAX_TRIES else 0)
    else:

        def made(name: str) -> int:
            return len(by_tool[name])

    remaining = [name for name in names if made(name) < options.rounds]
    if not remaining:
        return None
    this_round = min(made(name) for name in remaining)
    return [name for name in remaining if made(name) == this_round]


def _final(conversation: Conversation, exchanges: list[ToolExchange]) -> Reply:
    asked = conversation.last_user_text.strip().splitlines()
    lines = [f"sim-auto (a simulated model) answering: {asked[0][:200] if asked else '(no question)'}"]
    if not exchanges:
        lines.append("No tool was called." if conversation.tools else "No tools were offered, so none was called.")
    for exchange in exchanges:
        verdict = "failed (is_error)" if exchange.is_error else "returned"
        lines.append(f"- {exchange.name} {verdict}: {exchange.result_text or ''}")
    return Reply([text_block("\n".join(lines))], "end_turn")
