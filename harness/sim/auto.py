"""`sim-auto`: a simulated model for any agent, its own tools included, that plays like a model, deterministically.

For a request with tools it calls the tools the user's words call for, and answers in text when none does (a
greeting, a question no tool serves): word overlap between the current task's user text and each tool's name,
parameters and description, with a threshold (`harness.sim.relevance`). Each input is filled from the
conversation where the schema allows (the city the user named, a path, an expression, a key of an earlier
result) and made up, valid against the schema, only where it must be (`harness.sim.arguments`); the paths it made
up go out in the response header `x-harness-sim-invented`, which cassettes keep, so that `harness bless` compares
them by shape only. Calls whose inputs the conversation holds are made together (parallel tool use); a call still
missing an input waits a turn for their results (it depends on them). Once every chosen tool has answered, it
answers with end_turn, quoting every tool_result it received. Options, after a colon in the model name
(`sim-auto:serial,rounds=2`) or in the simulator's default model (`harness sim --default-model
sim-auto:until-corrected`):

- `serial`: one tool_use per turn (also what `disable_parallel_tool_use` asks for);
- `rounds=N`: call each chosen tool N times before answering;
- `until-corrected`: a call whose result has `is_error` is made again with a new, made-up input (up to 3 tries),
  and the answer comes as soon as one such call has been corrected;
- `chat-first[=N]`: the user's first turn (or first N turns) is answered without any tool, whatever it says.

Server tools (web search, web fetch, code execution, tool search; `harness.sim.server_tools`) are used first,
each `rounds` times a task, inside the same response (their results are played by the simulator), unless the
request has no words of substance (a greeting: "Hi!"). Anthropic-
defined client tools (memory, bash, text editor, computer; `harness.sim.defined_tools`) are chosen by the words of
what they do and called with inputs of their published shapes. A `defer_loading` tool is not called until a tool
search has surfaced it.

With `output_config.format` (structured outputs) the final answer is an instance of the schema, the same
for the same request (`harness.sim.structured`).

`tool_choice` is honoured as the real API does: `none` answers without tools; `any` and `tool` always call and
write no text before the call: `tool` the named tool, `any` the chosen tools, else the tool that fits the request
best, and once the chosen tools have answered a tool for giving the answer (smolagents' `final_answer`). Made-up
inputs are seeded from the simulator's seed, the tool's name and schema, and how many times the conversation
already called the tool, so the same request gets the same answer and a re-recording gives the same cassette.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.sim.arguments import Filled, Sources, fill, is_identifier
from harness.sim.conversation import Conversation, Reply, ToolExchange, text_block, tool_use_block
from harness.sim.defined_tools import defined_kind, input_for
from harness.sim.ids import request_fingerprint
from harness.sim.relevance import Profile, best_for, chosen, profile, request_words
from harness.sim.schema_instances import SchemaUnsatisfied
from harness.sim.server_tools import (
    RESULT_TYPES,
    SERVER_LOOP_LIMIT,
    Context,
    cited_answer,
    is_deferred,
    is_error_result,
    play,
    server_tools,
    summary,
    surfaced,
    urls_in,
)
from harness.sim.structured import apply_format

NAME = "auto"
MAX_TRIES = 3  # calls of one tool in a row that may fail before until-corrected gives up on it


@dataclass(frozen=True)
class AutoOptions:
    serial: bool = False
    rounds: int = 1
    until_corrected: bool = False
    chat_first: int = 0  # how many of the user's first turns are answered without tools

    def label(self) -> str:
        parts = (["serial"] if self.serial else []) + ([f"rounds={self.rounds}"] if self.rounds != 1 else [])
        parts += ["until-corrected"] if self.until_corrected else []
        parts += ["chat-first" + (f"={self.chat_first}" if self.chat_first > 1 else "")] if self.chat_first else []
        return ",".join(parts)


class BadOptions(ValueError):
    pass


def parse_options(text: str) -> AutoOptions:
    """`serial,rounds=2,until-corrected` (any order, any subset) to options; BadOptions says what is wrong."""
    serial, rounds, until, chat_first = False, 1, False, 0
    for raw in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = raw.partition("=")
        if name == "serial" and not value:
            serial = True
        elif name == "until-corrected" and not value:
            until = True
        elif name == "chat-first" and (not value or (value.isdigit() and int(value) >= 1)):
            chat_first = int(value or 1)
        elif name == "rounds" and value.isdigit() and int(value) >= 1:
            rounds = int(value)
        else:
            raise BadOptions(
                f"sim-auto option {raw!r} is not one of: serial, rounds=N (N >= 1), until-corrected, chat-first[=N]"
            )
    return AutoOptions(serial, rounds, until, chat_first)


def model(options: AutoOptions, seed: int) -> Callable[[Conversation], Reply]:
    return lambda conversation: answer(conversation, options, seed)


def answer(conversation: Conversation, options: AutoOptions, seed: int) -> Reply:
    # With output_config.format the answer is a schema instance, seeded by the request (harness.sim.structured).
    reply = _answer(conversation, options, seed)
    return apply_format(conversation, reply, seed, request_fingerprint(conversation.body))


def _answer(conversation: Conversation, options: AutoOptions, seed: int) -> Reply:
    choice = conversation.body.get("tool_choice")
    choice = choice if isinstance(choice, dict) else {}
    kind = choice.get("type", "auto")
    if kind == "none" or len(conversation.user_texts()) <= options.chat_first:
        return _final(conversation, _task(conversation), [])
    # Server tools serve any request with words of substance; a greeting or small talk ("Hi!") gets none.
    chatting = not request_words(_task_text(conversation)) and kind == "auto"
    played, paused = ([], False) if chatting else _server_calls(conversation, options, seed, choice)
    # Client tools: the agent's own (with an input_schema) and the Anthropic-defined ones (memory, bash, text
    # editor, computer), less the deferred ones that no tool search has surfaced yet.
    seen = surfaced(conversation.messages) | surfaced(played)
    tools = [
        tool for tool in conversation.tools
        if (isinstance(tool.get("input_schema"), dict) or defined_kind(tool))
        and (not is_deferred(tool) or tool["name"] in seen)
    ]
    if kind == "tool":
        tools = [tool for tool in tools if tool["name"] == choice.get("name")]
    forced = kind in ("any", "tool")
    intro = [] if forced else [text_block(f"I'll use {', '.join(_used(played))}.")] if played else []
    if paused:
        return Reply([*intro, *played], "pause_turn")
    if not tools:
        return _final(conversation, _task(conversation), played)
    exchanges = _task(conversation)
    request = _task_text(conversation)
    profiles = [profile(tool, defined_kind(tool)) for tool in tools]
    plan = _plan(conversation, tools, request, seen) if kind != "tool" else [tools[0]["name"]]
    planned = sorted((tool for tool in tools if tool["name"] in plan), key=lambda tool: plan.index(tool["name"]))
    pending = _pending(planned, exchanges, options) if planned else None
    if pending is None and forced and not played:  # the API makes the model call a tool: the closing one, if any
        pending = [_forced_call(profiles, request, exchanges, kind)]
    if not pending:
        return _final(conversation, exchanges, played)
    calls = _calls(conversation, pending, exchanges, seed, forced)
    if not calls:  # what is left needs an identifier nobody gave: ask for it, as a model does
        return _ask(conversation, pending, played)
    if options.serial or choice.get("disable_parallel_tool_use"):
        calls = calls[:1]
    content: list[dict[str, Any]] = list(played)
    if not forced:  # with any/tool the API starts the reply at the tool call: no text first
        content.insert(0, text_block(f"I'll {'use ' + ', '.join(_used(played)) + ', then ' if played else ''}"
                                     f"call {', '.join(name for name, _ in calls)}."))
    content += [tool_use_block(name, filled.input) for name, filled in calls]
    return Reply(content, "tool_use", invented=tuple(filled.invented for _, filled in calls))


# What a model forced to call a tool when it has nothing left to do calls: a tool for giving the answer.
_CLOSING_WORDS = "final answer respond reply finish done submit result"


def _forced_call(profiles: list[Profile], request: str, exchanges: list[ToolExchange], kind: str) -> str:
    """The tool a forced turn (`tool_choice` any or tool) calls when no tool is due: the named one for `tool`; for
    `any`, before any call the tool that best fits the request, after one a tool for giving the answer
    (smolagents' final_answer), else the offered tools in turn."""
    names = [each.name for each in profiles]
    if kind == "any":
        fits = best_for(profiles, request) if not exchanges else None
        closing = best_for(profiles, _CLOSING_WORDS)
        if fits or closing:
            return str(fits or closing)
    return names[len(exchanges) % len(names)]


def _plan(conversation: Conversation, tools: list[dict[str, Any]], request: str, seen: set[str]) -> list[str]:
    """The client tools the request calls for (`harness.sim.relevance`). A deferred tool not yet surfaced counts
    too, and is reached through the client's own tool search (a tool whose words say it searches or finds tools,
    as the SDK's `tools_runner_search_tool.py` offers), which is then called in its place."""
    hidden = [tool for tool in conversation.tools
              if is_deferred(tool) and tool["name"] not in seen and isinstance(tool.get("input_schema"), dict)]
    every = tools + hidden
    plan = chosen([profile(tool, defined_kind(tool)) for tool in every], request)
    if not hidden:
        return plan
    hidden_names = {tool["name"] for tool in hidden}
    searchers = [tool["name"] for tool in tools if _searches_tools(tool)]
    replaced = [searchers[0] if name in hidden_names and searchers else name for name in plan]
    return [name for name in dict.fromkeys(replaced) if name not in hidden_names]


def _searches_tools(tool: dict[str, Any]) -> bool:
    words = set(profile(tool).weights)
    return "tool" in words and bool(words & {"search", "find", "lookup", "discover"})


def _calls(
    conversation: Conversation, pending: list[str], exchanges: list[ToolExchange], seed: int, forced: bool
) -> list[tuple[str, Filled]]:
    """The calls of this turn and their inputs. A call whose required inputs the conversation holds is ready; a
    call still missing one waits for the results of the ready ones (it depends on them), unless none is ready:
    then the first is made with what is missing made up, except an identifier (an order number), which a model
    asks for instead ([]), unless `tool_choice` forces a call. A retry after an `is_error` result is made up
    afresh. A value the user's text gave one call of the turn is not given to the next."""
    request = _task_text(conversation)
    results = [exchange.result_json() for exchange in exchanges]
    texts = [exchange.result_text or "" for exchange in exchanges if not exchange.is_error]
    made: list[tuple[str, Filled]] = []
    taken: frozenset[str] = frozenset()
    for name in pending:
        tool = conversation.tool(name) or {}
        earlier = len(conversation.calls_to(name))
        own = [exchange for exchange in exchanges if exchange.name == name]
        retry = bool(own) and own[-1].is_error
        if defined_kind(tool):
            made.append((name, Filled(input_for(tool, earlier), ("$",))))
            continue
        schema = tool.get("input_schema") or {"type": "object"}
        sources = Sources("", ()) if retry else Sources(request, results, texts, taken)
        try:
            filled = fill(schema, sources, seed, name, earlier)
        except SchemaUnsatisfied as err:
            raise SchemaUnsatisfied(
                f"sim-auto cannot make an input for tool {name!r} that validates against its input_schema: {err}"
            ) from None
        made.append((name, filled))
        if not filled.invented:
            taken |= set(filled.from_text)
    ready = [(name, filled) for name, filled in made if not filled.invented]
    if ready:
        return ready
    first = next(((name, filled) for name, filled in made if forced or not filled.missing_ids), None)
    return [first] if first else []


def _ask(conversation: Conversation, pending: list[str], played: list[dict[str, Any]]) -> Reply:
    """The answer when every call left needs an identifier the conversation does not hold: a question for it."""
    wanted = []
    for name in pending:
        tool = conversation.tool(name) or {}
        properties = (tool.get("input_schema") or {}).get("properties") or {}
        required = (tool.get("input_schema") or {}).get("required") or []
        wanted += [f"the {key} for {name}" for key in required if is_identifier(key, properties.get(key))]
    asked = conversation.last_user_text.strip().splitlines()
    lines = [f"sim-auto (a simulated model) answering: {asked[0][:200] if asked else '(no question)'}",
             f"To go on I need {' and '.join(dict.fromkeys(wanted)) or 'more details'}: what is it?"]
    return Reply([*played, text_block("\n".join(lines))], "end_turn")


def _task_text(conversation: Conversation) -> str:
    """The user's words of the current task: the last user turn that has text."""
    return conversation.last_user_text


def _used(played: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(b["name"]) for b in played if b.get("type") == "server_tool_use"))


def _task_start(messages: list[dict[str, Any]]) -> int:
    """Where the current task starts: the last user turn with text (not only tool results)."""
    start = 0
    for position, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") == "user" and (
            isinstance(content, str)
            or any(isinstance(b, dict) and b.get("type") != "tool_result" for b in content or [])
        ):
            start = position
    return start


def _blocks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, list):
            blocks.extend(block for block in content if isinstance(block, dict))
    return blocks


def _server_calls(
    conversation: Conversation, options: AutoOptions, seed: int, choice: dict[str, Any]
) -> tuple[list[dict[str, Any]], bool]:
    """The server tool calls this response makes, each with its result, and whether the server's loop limit
    paused the turn. Each offered server tool is used `rounds` times a task (tool search first), less what the
    conversation already did; a use past `max_uses` gets the API's error result and ends that tool's uses."""
    messages = conversation.messages
    offered = [tool for tool in server_tools(conversation.tools)
               if not is_deferred(tool.definition) or tool.name in surfaced(messages)]
    if choice.get("type") == "tool":
        offered = [tool for tool in offered if tool.name == choice.get("name")]
    if not offered:
        return [], False
    earlier = _blocks(messages[_task_start(messages):])
    # A paused turn sent back is continued: its uses count against max_uses with this response's.
    continued = _blocks(messages[-1:]) if messages and messages[-1].get("role") == "assistant" else []
    made = Counter(str(b.get("name")) for b in earlier if b.get("type") == "server_tool_use")
    ids_by_call = {b.get("id"): str(b.get("name")) for b in earlier if b.get("type") == "server_tool_use"}
    stopped = {ids_by_call.get(b.get("tool_use_id")) for b in earlier if is_error_result(b)}
    played: list[dict[str, Any]] = []
    question = conversation.last_user_text
    while True:
        due = [(made[call], position, tool, call) for position, tool in enumerate(offered) for call in tool.calls
               if made[call] < options.rounds and not stopped & set(tool.calls)]
        if not due:
            return played, False
        if len(played) // 2 == SERVER_LOOP_LIMIT:
            return played, True
        _, _, tool, call = min(due, key=lambda item: item[:2])
        in_request = sum(1 for b in continued + played
                         if b.get("type") == "server_tool_use" and b.get("name") in tool.calls)
        over = tool.max_uses is not None and in_request >= tool.max_uses
        context = Context(question, tuple(urls_in(earlier + played, question)), tuple(conversation.tools), seed,
                          made[call])
        played += play(call, context, over_max_uses=over)
        made[call] += 1
        if over:
            stopped |= set(tool.calls)


def _task(conversation: Conversation) -> list[ToolExchange]:
    """The tool calls since the user last wrote (text, not only tool results): a new question starts afresh."""
    messages = conversation.messages
    return Conversation({**conversation.body, "messages": messages[_task_start(messages):]}).exchanges


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


def _final(conversation: Conversation, exchanges: list[ToolExchange], played: list[dict[str, Any]]) -> Reply:
    asked = conversation.last_user_text.strip().splitlines()
    lines = [f"sim-auto (a simulated model) answering: {asked[0][:200] if asked else '(no question)'}"]
    messages = conversation.messages
    server_blocks = _blocks(messages[_task_start(messages):]) + played
    names = {b.get("id"): b.get("name") for b in server_blocks if b.get("type") == "server_tool_use"}
    results = [b for b in server_blocks if b.get("type") in RESULT_TYPES]
    if not exchanges and not results:
        lines.append("No tool was called." if conversation.tools else "No tools were offered, so none was called.")
    for block in results:
        name = names.get(block.get("tool_use_id")) or block.get("type")
        lines.append(f"- {name} (played by the harness simulator): {summary(block)}")
    for exchange in exchanges:
        verdict = "failed (is_error)" if exchange.is_error else "returned"
        lines.append(f"- {exchange.name} {verdict}: {exchange.result_text or ''}")
    cited = cited_answer(results)
    return Reply([*played, text_block("\n".join(lines)), *([cited] if cited else [])], "end_turn")
