"""Building a trajectory's runs from exchanges: which request continues which conversation, and its steps.

Every record of a run is a list of `harness.run.Exchange`s: a cassette's interactions (recorded or
replayed, `cassette_exchanges`), a batch's results, the calls `run_loop` made. `build_runs` is the one
builder.

Runs. One cassette can hold several conversations (pydantic-ai's tool-search eval holds 4 in 11
interactions). A request continues the current run when the previous request's messages are a proper
prefix of its own (or are equal and that request failed: a retry); otherwise it starts a new run. Message threads
(SDK 2.x) are grouped by `previous_message_id` instead: a `continue` goes on from the run whose last reply it
names, and a run whose last request was threaded and answered is not extended by a request that repeats its
history (`thread.fork()` starts a thread of its own with the history so far: another run). Steps
are numbered 1..N across the whole trajectory, so that "step 5" names one step of one file. A request that
sends back a `pause_turn` response to let the API go on is a step of the same run that `continues` the
paused one: the same API turn, so a server call the pause left unanswered is answered there.

Prefix comparison uses a skeleton of each message (roles, text, tool ids, is_error) and ignores
thinking blocks, cache_control and tool_result contents, so that a client that compacts old tool
results or moves its cache breakpoint still reads as one conversation.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.batches import BATCHES_PATH, batch_exchanges
from harness.errors import CassetteError
from harness.jsondata import canonical_json, fingerprint
from harness.patterns import BadPattern, PatternTimeout, schema_validator
from harness.run import Exchange, Usage
from harness.trajectory.calls import attach_results, blocks_of, tool_calls_of
from harness.trajectory.parts import Attempt, FailedRequest, Run, Step

if TYPE_CHECKING:
    from harness.cassette.format import CassetteFile

__all__ = ["DAMAGE", "build_runs", "cassette_exchanges", "describe_damage", "request_summary"]

_THINKING = ("thinking", "redacted_thinking")
_THREAD_CREATE_ONLY = ("system", "tools")  # what a thread `continue` leaves out (anthropic SDK 2.x)

# What a value of the wrong type or size deep in a cassette raises when it is used; caught where the
# trajectory is built and turned into a CassetteError with the file and the interaction.
DAMAGE = (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError, OverflowError)


def build_runs(exchanges: Iterable[Exchange]) -> list[Run]:
    """The runs the exchanges make, in order, every step with its tool calls and their results."""
    return _Builder().build(exchanges)


class _Builder:
    def __init__(self) -> None:
        self.runs: list[Run] = []
        self.step_count = 0
        self.seen_ids: set[str] = set()
        # The full request behind each reply, by the reply's id, with the reply appended: a message-threads
        # `continue` request (anthropic SDK 2.x tool runner) sends only the new messages, without the thread's
        # create-only fields (system, tools), and names the reply it continues from.
        self.threads: dict[str, dict[str, Any]] = {}
        self.owners: dict[str, _OpenRun] = {}  # the run of each reply, by its id: a continue goes on from its reply

    def build(self, exchanges: Iterable[Exchange]) -> list[Run]:
        # Per run: its messages at the last step (the next delta starts after them), the failed tries waiting
        # for a message, and the (skeleton, failed) of its last request. A request continues the most recent
        # run it extends, not only the one just before it: a coding agent's subagent (the Claude Code CLI's
        # Agent tool) makes its own requests between two of the main conversation's, and each is its own run.
        open_runs: list[_OpenRun] = []
        for exchange in exchanges:
            exchange = self._resolved(exchange)
            messages = _messages_of(exchange.request)
            skeleton = [_skeleton(message) for message in messages]
            continued = _continued_reply(exchange)
            if continued in self.owners:
                # A thread `continue` goes on from the reply it names: the run whose last reply that is. One from an
                # earlier reply branches off (a run of its own).
                owner = self.owners[continued]
                state = owner if owner.last_reply == continued else None
            else:
                state = next(
                    (
                        item
                        for item in reversed(open_runs)
                        if item.run.label == exchange.label and not item.held and _continues(item.previous, skeleton)
                    ),
                    None,
                )
            if state is None:
                state = _OpenRun(Run(index=len(self.runs) + 1, label=exchange.label))
                self.runs.append(state.run)
                open_runs.append(state)
            run = state.run
            if exchange.message is None:
                state.pending.append((exchange, messages))
            else:
                attempts = [Attempt.of(item) for item, _ in state.pending] + [Attempt.of(exchange)]
                step = self._step(run, exchange, messages, state.base, attempts)
                run.steps.append(step)
                if step.message_id is not None:
                    reply = {"role": "assistant", "content": step.blocks}
                    self.threads[step.message_id] = {**exchange.request, "messages": [*messages, reply]}
                    self.owners[step.message_id] = state
                state.base, state.pending = len(messages), []
                state.last_reply = step.message_id
            state.previous = (skeleton, exchange.message is None)
            # A thread the server holds goes on only by a continue that names its last reply; a request that repeats
            # its history (a `thread.fork()`, which starts a thread of its own) is another run. After a failed
            # request the SDK replays the whole history, so the run is open to that again.
            state.held = exchange.message is not None and exchange.request.get("thread") is not None
        for state in open_runs:
            self._close(state.run, state.pending, state.base)
        for each in self.runs:
            attach_results(each)
        return self.runs

    def _close(self, run: Run | None, pending: list[tuple[Exchange, list[dict[str, Any]]]], base: int) -> None:
        if run is None or not pending:
            return
        last_exchange, last_messages = pending[-1]
        run.failed_request = FailedRequest(
            request=request_summary(last_exchange.request, last_messages),
            delta=last_messages[base:],
            attempts=[Attempt.of(item) for item, _ in pending],
        )

    def _resolved(self, exchange: Exchange) -> Exchange:
        """The exchange with the whole request it stands for, also when a thread `continue` sent only its tail."""
        request = exchange.request
        thread = request.get("thread")
        if not (isinstance(thread, Mapping) and thread.get("type") == "continue"):
            return exchange
        parent = self.threads.get(str(thread.get("previous_message_id")))
        if parent is None:
            return exchange  # continues a thread this cassette does not hold: the tail is all there is
        full = {
            **{k: v for k, v in parent.items() if k in _THREAD_CREATE_ONLY},
            **request,
            "messages": [*parent["messages"], *_messages_of(request)],
        }
        return dataclasses.replace(exchange, request=full)

    def _step(
        self, run: Run, exchange: Exchange, messages: list[dict[str, Any]], base: int, attempts: list[Attempt]
    ) -> Step:
        delta = messages[base:]
        self.step_count += 1
        index = self.step_count
        message = exchange.message or {}
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        counted = message_id is None or message_id not in self.seen_ids
        if message_id is not None:
            self.seen_ids.add(message_id)
        blocks = [_clean_block(block) for block in message.get("content") or [] if isinstance(block, Mapping)]
        previous = run.steps[-1] if run.steps else None
        # A paused turn is sent back as the request's last (assistant) message: the API carries on with it.
        paused = (
            previous is not None
            and previous.stop_reason == "pause_turn"
            and bool(delta)
            and delta[-1].get("role") == "assistant"
        )
        container = message.get("container")
        step = Step(
            index=index,
            run=run.index,
            request=request_summary(exchange.request, messages),
            delta=delta,
            message_id=message_id,
            model=_text_or_none(message.get("model")),
            blocks=blocks,
            stop_reason=_text_or_none(message.get("stop_reason")),
            stop_sequence=_text_or_none(message.get("stop_sequence")),
            # A labelled exchange is a Message Batches result (harness.batches): priced at the batch rate.
            usage=Usage.from_api(message.get("usage"), batch=exchange.label is not None),
            usage_counted=counted,
            attempts=attempts,
            container=_clean_block(container) if isinstance(container, Mapping) else None,
            continues=previous.index if paused and previous is not None else None,
        )
        step.tool_calls = tool_calls_of(blocks, index)
        step.structured_output = _structured_output(exchange.request, step)
        chosen = _output_format(exchange.request)
        if chosen is not None and isinstance(chosen.get("schema"), Mapping):
            step.output_schema = json.loads(json.dumps(chosen["schema"]))  # a copy: the check may hand it around
        return step


@dataclass
class _OpenRun:
    run: Run
    base: int = 0
    pending: list[tuple[Exchange, list[dict[str, Any]]]] = field(default_factory=list)
    previous: tuple[list[Any], bool] | None = None
    last_reply: str | None = None  # the id of the run's last reply
    held: bool = False  # its last request was threaded and answered: only a continue naming last_reply goes on


def _continued_reply(exchange: Exchange) -> str | None:
    """The reply id a thread `continue` names (`previous_message_id`); None for any other request."""
    thread = exchange.request.get("thread")
    if isinstance(thread, Mapping) and thread.get("type") == "continue":
        return str(thread.get("previous_message_id"))
    return None


def _continues(previous: tuple[list[Any], bool] | None, skeleton: list[Any]) -> bool:
    if previous is None:
        return False
    before, failed = previous
    if len(before) < len(skeleton):
        return skeleton[: len(before)] == before
    return failed and skeleton == before  # a retry of a request that got no message


def _messages_of(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = request.get("messages")
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _skeleton(message: Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies a message across requests, whatever a client re-sends differently."""
    keys: list[Any] = []
    for block in blocks_of(message):
        kind = block.get("type")
        if kind in _THINKING:
            continue  # some clients drop earlier thinking blocks; the API ignores them anyway
        if kind == "text":
            text = str(block.get("text", "")).strip()
            if text:
                keys.append(("text", text))
        elif kind == "tool_result":
            keys.append(("tool_result", block.get("tool_use_id"), bool(block.get("is_error"))))
        elif "id" in block:
            keys.append((kind, block.get("id")))
        elif "tool_use_id" in block:
            keys.append((kind, block.get("tool_use_id")))
        else:
            rest = {k: v for k, v in block.items() if k not in ("cache_control", "citations")}
            keys.append((kind, hashlib.sha256(canonical_json(rest).encode()).hexdigest()[:16]))
    return (message.get("role"), tuple(keys))


def _clean_block(block: Mapping[str, Any]) -> dict[str, Any]:
    # A Message from the SDK spells absent fields as null; the wire JSON often leaves them out.
    return {key: value for key, value in block.items() if value is not None}


# Sampling parameters a request may set; kept in the summary (under "params") only when it sets them.
_SAMPLING_PARAMS = ("temperature", "top_p", "top_k", "stop_sequences")


def request_summary(request: Mapping[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """What a request asked for, in short: model, limits, tool names, fingerprints; the output config
    (effort, the schema's fingerprint), MCP server names and context edits where it set them."""
    tools = request.get("tools")
    names = [t.get("name") for t in tools if isinstance(t, Mapping)] if isinstance(tools, list) else []
    summary: dict[str, Any] = {
        "model": request.get("model"),
        "max_tokens": request.get("max_tokens"),
        "stream": bool(request.get("stream")),
        "tools": names,
        "system": fingerprint(request.get("system")),
        "message_count": len(messages),
    }
    params = {key: request[key] for key in _SAMPLING_PARAMS if request.get(key) is not None}
    if params:
        summary["params"] = params
    output = _output_config(request)
    if output:
        summary["output_config"] = output
    servers = request.get("mcp_servers")
    if isinstance(servers, list) and servers:  # names only: a server's authorization_token stays out
        summary["mcp_servers"] = [s.get("name") for s in servers if isinstance(s, Mapping)]
    edits = (
        (request.get("context_management") or {}).get("edits")
        if isinstance(request.get("context_management"), Mapping)
        else None
    )
    if isinstance(edits, list) and edits:
        summary["context_management"] = [e.get("type") for e in edits if isinstance(e, Mapping)]
    return summary


def _output_format(request: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The structured-output format a request asked for: output_config.format, or the beta output_format."""
    config = request.get("output_config")
    chosen = config.get("format") if isinstance(config, Mapping) else None
    chosen = chosen if chosen is not None else request.get("output_format")
    return chosen if isinstance(chosen, Mapping) else None


def _output_config(request: Mapping[str, Any]) -> dict[str, Any]:
    config = request.get("output_config")
    out: dict[str, Any] = {}
    if isinstance(config, Mapping) and config.get("effort") is not None:
        out["effort"] = config["effort"]
    chosen = _output_format(request)
    if chosen is not None:
        out["format"] = {"type": chosen.get("type"), "schema": fingerprint(chosen.get("schema"))}
    return out


def _structured_output(request: Mapping[str, Any], step: Step) -> dict[str, Any] | None:
    """The answer read as JSON and checked against the schema the request asked for; None when it asked for
    none, or the step is not an answer (a tool call, a pause)."""
    chosen = _output_format(request)
    if chosen is None or step.stop_reason in ("tool_use", "pause_turn") or not step.text.strip():
        return None
    schema = chosen.get("schema")
    verdict: dict[str, Any] = {"schema": fingerprint(schema), "valid": False, "problem": None}
    try:
        instance = json.loads(step.text)
    except ValueError as err:
        verdict["problem"] = f"the answer is not JSON: {err}"
        return verdict
    from jsonschema.exceptions import SchemaError  # here: only runs that asked for structured output pay for it

    try:
        error = next(
            iter(schema_validator(schema if isinstance(schema, Mapping) else {}).iter_errors(instance)), None
        )
    except SchemaError as err:
        verdict["problem"] = f"the request's schema is not a JSON Schema: {err.message}"
        return verdict
    except PatternTimeout as err:  # the schema came with the recording: its pattern is as untrusted as the rest
        verdict["problem"] = f"the request's schema: {err}"
        return verdict
    except BadPattern as err:
        verdict["problem"] = f"the request's schema has a pattern that does not compile: {err}"
        return verdict
    if error is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "the answer"
        verdict["problem"] = f"{where.lstrip('.')}: {error.message}"
    else:
        verdict["valid"] = True
    return verdict


def _text_or_none(value: Any) -> str | None:
    """A field the API sends as text; anything else in a file reads as absent (shown as "?")."""
    return value if isinstance(value, str) else None


def describe_damage(err: BaseException) -> str:
    if isinstance(err, RecursionError):
        return "values nested too deep"
    if isinstance(err, KeyError):
        return f"the field {err.args[0]!r} is missing"
    return f"{err}"[:300] or type(err).__name__


def _is_batch_call(interaction: Mapping[str, Any]) -> bool:
    return str((interaction.get("request") or {}).get("path", "")).startswith(BATCHES_PATH)


def cassette_exchanges(cassette: CassetteFile) -> tuple[list[Exchange], list[dict[str, Any]], dict[str, Any]]:
    """A cassette's Messages exchanges (a batch's results among them, one per custom_id), the interactions
    that are not Messages calls (and why), and where the run came from."""
    exchanges: list[Exchange] = []
    skipped: list[dict[str, Any]] = []
    for position, interaction in enumerate(cassette.interactions):
        try:
            exchange, why_not = Exchange.from_interaction(position, interaction)
        except DAMAGE as err:  # a shape the schema lets through but no reader can use
            raise CassetteError(
                f"this interaction cannot be read: {describe_damage(err)}",
                file=cassette.path,
                where=f"interactions[{position}]",
            ) from None
        if exchange is None and _is_batch_call(interaction):
            continue  # read below: each result of a batch becomes a run, named by its custom_id
        if exchange is None:
            skipped.append({"interaction": position, "reason": why_not})
        else:
            exchanges.append(exchange)
    exchanges.extend(batch_exchanges(cassette.interactions))  # one run per custom_id of each batch
    meta = cassette.meta or {}
    source = {
        "kind": "cassette",
        "path": str(cassette.path) if cassette.path else None,
        "recorded_from": meta.get("source"),
        "recorded_at": meta.get("recorded_at"),
        "imported_from": meta.get("imported_from"),
        "fingerprints": meta.get("fingerprints") or {},
    }
    return exchanges, skipped, source
