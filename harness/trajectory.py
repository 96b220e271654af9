"""The trajectory of an agent run: Anthropic-native steps, derived from its exchanges.

Every record of a run is a list of `harness.run.Exchange`s: a cassette's interactions (recorded or
replayed), a batch's results, the calls `run_loop` made. `Trajectory.from_exchanges` is the one
builder; `from_cassette` and `from_run` only say where the exchanges come from.

A step is one /v1/messages exchange that returned a Message: what the request added to the
conversation (the delta), the response blocks, the stop_reason, the usage and the tool calls with the
results found in the next request. Failed calls (a 529, a timeout) are attempts of the step that
followed them; failures that nothing followed end the run as its `failed_request`.

Runs. One cassette can hold several conversations (pydantic-ai's tool-search eval holds 4 in 11
interactions). A request continues the current run when the previous request's messages are a proper
prefix of its own (or are equal and that request failed: a retry); otherwise it starts a new run. So a
`Trajectory` holds `runs`, and steps are numbered 1..N across the whole trajectory, so that "step 5"
names one step of one file. Checks see every run unless a golden selects some (`select_runs`).

Prefix comparison uses a skeleton of each message (roles, text, tool ids, is_error) and ignores
thinking blocks, cache_control and tool_result contents, so that a client that compacts old tool
results or moves its cache breakpoint still reads as one conversation.

The same run gives the same trajectory whether read from its cassette or from its `RunResult`:
`from_cassette(c).comparable() == from_run(r).comparable()`. `comparable()` leaves out what the two
records cannot share: timings, provenance, and the attempts inside a call (the SDK retries a 529 out
of the loop's sight, while the cassette records every try).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.batches import BATCHES_PATH, batch_exchanges
from harness.errors import CassetteError
from harness.jsondata import canonical_json, fingerprint
from harness.pricing import estimate_cost
from harness.run import Exchange, ToolCall, ToolResult, Usage

if TYPE_CHECKING:
    from harness.cassette.format import CassetteFile
    from harness.loop import RunResult

# Exchange, ToolCall, ToolResult, Usage and canonical_json are harness.run's, named here too so that
# existing `from harness.trajectory import ...` lines keep working.
__all__ = [
    "TRAJECTORY_VERSION",
    "Attempt",
    "Exchange",
    "FailedRequest",
    "Run",
    "RunOutcome",
    "Step",
    "ToolCall",
    "ToolResult",
    "Trajectory",
    "Usage",
    "canonical_json",
    "load_cassette_any",
    "load_trajectory",
]

TRAJECTORY_VERSION = 1
_THINKING = ("thinking", "redacted_thinking")


# --- the parts of a trajectory ------------------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """One try at a call: the recorded HTTP exchange (or the loop's call) and how it ended."""

    status: int | None  # HTTP status; None for a connection failure, or an error the loop saw without one
    error_type: str | None = None  # "overloaded_error", "timeout", ...; None when the try returned a message
    error_message: str | None = None
    interaction: int | None = None  # position in the cassette; None for a loop run
    stream: bool = False
    duration_ms: float | None = None  # known for loop runs, and for streams recorded with offsets
    first_token_ms: float | None = None
    retry_after: float | None = None  # seconds the server asked to wait (retry-after-ms / retry-after)

    @property
    def ok(self) -> bool:
        return self.error_type is None

    @classmethod
    def of(cls, exchange: Exchange) -> Attempt:
        failed = exchange.message is None
        return cls(
            status=exchange.status,
            error_type=(exchange.error_type or "error") if failed else None,
            error_message=exchange.error_message if failed else None,
            interaction=exchange.interaction,
            stream=bool(exchange.request.get("stream")),
            duration_ms=exchange.duration_ms,
            first_token_ms=exchange.first_token_ms,
            retry_after=exchange.retry_after if failed else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "ok": self.ok,
            "error_type": self.error_type,
            "error_message": self.error_message,
            "interaction": self.interaction,
            "stream": self.stream,
            "duration_ms": self.duration_ms,
            "first_token_ms": self.first_token_ms,
            "retry_after": self.retry_after,
        }


@dataclass
class Step:
    index: int  # 1..N across the whole trajectory
    run: int  # 1..R
    request: dict[str, Any]  # model, max_tokens, stream, tools (names), system fingerprint, message_count
    delta: list[dict[str, Any]]  # the messages this request added since the previous step of the run
    message_id: str | None
    model: str | None
    blocks: list[dict[str, Any]]  # response content blocks, None-valued keys left out
    stop_reason: str | None
    stop_sequence: str | None
    usage: Usage
    usage_counted: bool  # False when the same message id was already counted (a replayed duplicate)
    tool_calls: list[ToolCall] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(text for block in self.blocks
                       if block.get("type") == "text" and isinstance(text := block.get("text", ""), str))

    @property
    def duration_ms(self) -> float | None:
        known = [a.duration_ms for a in self.attempts if a.duration_ms is not None]
        return round(sum(known), 3) if known else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "run": self.run,
            "request": self.request,
            "delta": self.delta,
            "response": {
                "id": self.message_id,
                "model": self.model,
                "blocks": self.blocks,
                "stop_reason": self.stop_reason,
                "stop_sequence": self.stop_sequence,
            },
            "usage": self.usage.to_dict(),
            "usage_counted": self.usage_counted,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "attempts": [attempt.to_dict() for attempt in self.attempts],
            "duration_ms": self.duration_ms,
        }


@dataclass
class FailedRequest:
    """The request a run ended on: every try failed (an API error, a timeout), so no step came of it."""

    request: dict[str, Any]
    delta: list[dict[str, Any]]
    attempts: list[Attempt]

    def to_dict(self) -> dict[str, Any]:
        return {
            "request": self.request,
            "delta": self.delta,
            "attempts": [attempt.to_dict() for attempt in self.attempts],
        }


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended: on a stop_reason (kind "stop") or on a request that never got a message ("error")."""

    kind: str  # "stop" | "error"
    stop_reason: str | None = None
    step: int | None = None  # the last step of the run
    status: int | None = None  # for errors: the last try's HTTP status
    error_type: str | None = None
    error_message: str | None = None

    def describe(self) -> str:
        if self.kind == "stop":
            return f"stop_reason {self.stop_reason}"
        status = f"HTTP {self.status} " if self.status else ""
        return f"error {status}{self.error_type or ''}".strip()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "stop_reason": self.stop_reason,
            "step": self.step,
            "status": self.status,
            "error_type": self.error_type,
            "error_message": self.error_message,
        }


@dataclass
class Run:
    index: int
    steps: list[Step] = field(default_factory=list)
    failed_request: FailedRequest | None = None
    label: str | None = None  # the custom_id, for a run that is one request of a Message Batch

    @property
    def outcome(self) -> RunOutcome:
        last = self.steps[-1] if self.steps else None
        if self.failed_request is not None:
            final = self.failed_request.attempts[-1]
            return RunOutcome(
                kind="error",
                step=last.index if last else None,
                status=final.status,
                error_type=final.error_type,
                error_message=final.error_message,
            )
        assert last is not None  # a run holds at least one step or a failed request
        return RunOutcome(kind="stop", stop_reason=last.stop_reason, step=last.index)

    @property
    def final_text(self) -> str:
        return self.steps[-1].text if self.steps else ""

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for step in self.steps for call in step.tool_calls]

    @property
    def usage(self) -> Usage:
        return sum((step.usage for step in self.steps if step.usage_counted), Usage())

    def conversation(self) -> list[tuple[int | None, dict[str, Any]]]:
        """The run's messages in order, each with the step whose request added it (None: the failed request).

        Deltas concatenate to the last request's conversation, because each request extends the one before.
        """
        out: list[tuple[int | None, dict[str, Any]]] = []
        for step in self.steps:
            out.extend((step.index, message) for message in step.delta)
        if self.failed_request is not None:
            out.extend((None, message) for message in self.failed_request.delta)
        return out

    def to_dict(self) -> dict[str, Any]:
        out = {
            "index": self.index,
            "steps": [step.to_dict() for step in self.steps],
            "failed_request": self.failed_request.to_dict() if self.failed_request else None,
            "outcome": self.outcome.to_dict(),
            "final_text": self.final_text,
            "usage": self.usage.to_dict(),
        }
        if self.label is not None:
            out["label"] = self.label
        return out


# --- the trajectory ----------------------------------------------------------------------------------------


@dataclass
class Trajectory:
    runs: list[Run]
    source: dict[str, Any] = field(default_factory=dict)
    skipped: list[dict[str, Any]] = field(default_factory=list)  # interactions that are not Messages API calls

    # -- construction --------------------------------------------------------------------------------------
    @classmethod
    def from_exchanges(
        cls,
        exchanges: Iterable[Exchange],
        *,
        source: Mapping[str, Any] | None = None,
        skipped: Sequence[Mapping[str, Any]] = (),
    ) -> Trajectory:
        return _Builder(source or {}, skipped).build(exchanges)

    @classmethod
    def from_cassette(cls, cassette: CassetteFile) -> Trajectory:
        exchanges: list[Exchange] = []
        skipped: list[dict[str, Any]] = []
        for position, interaction in enumerate(cassette.interactions):
            try:
                exchange, why_not = Exchange.from_interaction(position, interaction)
            except _DAMAGE as err:  # a shape the schema lets through but no reader can use
                raise CassetteError(f"this interaction cannot be read: {_describe_damage(err)}",
                                    file=cassette.path, where=f"interactions[{position}]") from None
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
        try:
            trajectory = cls.from_exchanges(exchanges, source=source, skipped=skipped)
        except _DAMAGE as err:
            raise CassetteError(f"its interactions do not add up to a trajectory: {_describe_damage(err)}",
                                file=cassette.path) from None
        return trajectory

    @classmethod
    def from_run(cls, result: RunResult) -> Trajectory:
        """From a `harness.loop.RunResult`: the exchanges the loop recorded, read as a cassette's are.

        The loop sees one exchange per call (the SDK retries out of its sight), so each step has one
        attempt; a call that failed is the run's failed request, with its status and error type as the
        loop received them.
        """
        source = {"kind": "run", "model": result.model, "loop_outcome": result.outcome.value}
        return cls.from_exchanges(result.exchanges, source=source)

    # -- reading ---------------------------------------------------------------------------------------------
    @property
    def steps(self) -> list[Step]:
        return [step for run in self.runs for step in run.steps]

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for run in self.runs for call in run.tool_calls]

    @property
    def last_run(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    @property
    def final_text(self) -> str:
        return self.runs[-1].final_text if self.runs else ""

    @property
    def final_step(self) -> Step | None:
        """The last run's last step: the one whose text is the final answer (None when that run got none)."""
        run = self.last_run
        return run.steps[-1] if run is not None and run.steps else None

    @property
    def outcome(self) -> RunOutcome | None:
        return self.runs[-1].outcome if self.runs else None

    @property
    def usage(self) -> Usage:
        return sum((run.usage for run in self.runs), Usage())

    @property
    def model(self) -> str | None:
        """The model that answered last (the dated id), else the one last asked for."""
        for step in reversed(self.steps):
            if step.model or step.request.get("model"):
                return step.model or step.request.get("model")
        for run in reversed(self.runs):
            if run.failed_request is not None and run.failed_request.request.get("model"):
                return run.failed_request.request["model"]
        return None

    @property
    def cost_usd(self) -> float | None:
        """List-price estimate summed per step; None when any counted step's model has no known price."""
        total = 0.0
        for step in self.steps:
            if not step.usage_counted:
                continue
            model = step.model or step.request.get("model") or ""
            cost = estimate_cost(model, step.usage)
            if cost is None:
                return None
            total += cost
        return round(total, 6)

    def select_runs(self, which: str | int) -> Trajectory:
        """Only some runs: "all", "last", a run number (1-based) or a label (a batch request's custom_id).
        Step numbers stay as they were."""
        if which == "all":
            runs = list(self.runs)
        elif which == "last":
            runs = self.runs[-1:]
        elif isinstance(which, str) and any(run.label == which for run in self.runs):
            runs = [run for run in self.runs if run.label == which]
        elif isinstance(which, int) and 1 <= which <= len(self.runs):
            runs = [self.runs[which - 1]]
        else:
            raise ValueError(f"no run {which!r}: this trajectory has {len(self.runs)} run(s)")
        return Trajectory(runs=runs, source=dict(self.source), skipped=list(self.skipped))

    # -- JSON --------------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        outcome = self.outcome
        return {
            "trajectory_version": TRAJECTORY_VERSION,
            "source": self.source,
            "model": self.model,
            "outcome": outcome.to_dict() if outcome else None,
            "final_text": self.final_text,
            "usage": self.usage.to_dict(),
            "cost_usd": self.cost_usd,
            "counts": {
                "runs": len(self.runs),
                "steps": len(self.steps),
                "tool_calls": len(self.tool_calls),
                "attempts": sum(len(s.attempts) for s in self.steps)
                + sum(len(r.failed_request.attempts) for r in self.runs if r.failed_request),
            },
            "runs": [run.to_dict() for run in self.runs],
            "skipped": self.skipped,
        }

    def comparable(self) -> dict[str, Any]:
        """`to_dict()` without what two records of one run cannot share: provenance, timings, attempts."""
        data = self.to_dict()
        data.pop("source")
        data["counts"].pop("attempts")
        data.pop("skipped")
        for run in data["runs"]:
            for step in run["steps"]:
                step.pop("attempts")
                step.pop("duration_ms")
            if run["failed_request"] is not None:
                run["failed_request"] = {"delta": run["failed_request"]["delta"]}
            for key in ("status", "error_type", "error_message"):
                run["outcome"].pop(key)
        if data["outcome"] is not None:
            for key in ("status", "error_type", "error_message"):
                data["outcome"].pop(key)
        return data


# --- building ------------------------------------------------------------------------------------------------


class _Builder:
    def __init__(self, source: Mapping[str, Any], skipped: Sequence[Mapping[str, Any]]) -> None:
        self.source = dict(source)
        self.skipped = [dict(item) for item in skipped]
        self.runs: list[Run] = []
        self.step_count = 0
        self.seen_ids: set[str] = set()
        # The full request behind each reply, by the reply's id, with the reply appended: a message-threads
        # `continue` request (anthropic SDK 2.x tool runner) sends only the new messages, without the thread's
        # create-only fields (system, tools), and names the reply it continues from.
        self.threads: dict[str, dict[str, Any]] = {}

    def build(self, exchanges: Iterable[Exchange]) -> Trajectory:
        # Per run: its messages at the last step (the next delta starts after them), the failed tries waiting
        # for a message, and the (skeleton, failed) of its last request. A request continues the most recent
        # run it extends, not only the one just before it: a coding agent's subagent (the Claude Code CLI's
        # Agent tool) makes its own requests between two of the main conversation's, and each is its own run.
        open_runs: list[_OpenRun] = []
        for exchange in exchanges:
            exchange = self._resolved(exchange)
            messages = _messages_of(exchange.request)
            skeleton = [_skeleton(message) for message in messages]
            state = next((item for item in reversed(open_runs)
                          if item.run.label == exchange.label and _continues(item.previous, skeleton)), None)
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
                state.base, state.pending = len(messages), []
            state.previous = (skeleton, exchange.message is None)
        for state in open_runs:
            self._close(state.run, state.pending, state.base)
        for each in self.runs:
            _attach_results(each)
        return Trajectory(runs=self.runs, source=self.source, skipped=self.skipped)

    def _close(self, run: Run | None, pending: list[tuple[Exchange, list[dict[str, Any]]]], base: int) -> None:
        if run is None or not pending:
            return
        last_exchange, last_messages = pending[-1]
        run.failed_request = FailedRequest(
            request=_request_summary(last_exchange.request, last_messages),
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
        full = {**{k: v for k, v in parent.items() if k in _THREAD_CREATE_ONLY}, **request,
                "messages": [*parent["messages"], *_messages_of(request)]}
        return dataclasses.replace(exchange, request=full)

    def _step(self, run: Run, exchange: Exchange, messages: list[dict[str, Any]], base: int,
              attempts: list[Attempt]) -> Step:
        delta = messages[base:]
        self.step_count += 1
        index = self.step_count
        message = exchange.message or {}
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        counted = message_id is None or message_id not in self.seen_ids
        if message_id is not None:
            self.seen_ids.add(message_id)
        blocks = [_clean_block(block) for block in message.get("content") or [] if isinstance(block, Mapping)]
        step = Step(
            index=index,
            run=run.index,
            request=_request_summary(exchange.request, messages),
            delta=delta,
            message_id=message_id,
            model=message.get("model"),
            blocks=blocks,
            stop_reason=_text_or_none(message.get("stop_reason")),
            stop_sequence=_text_or_none(message.get("stop_sequence")),
            usage=Usage.from_api(message.get("usage")),
            usage_counted=counted,
            attempts=attempts,
        )
        step.tool_calls = _tool_calls_of(blocks, index)
        return step


_THREAD_CREATE_ONLY = ("system", "tools")  # what a thread `continue` leaves out (anthropic SDK 2.x)


@dataclass
class _OpenRun:
    run: Run
    base: int = 0
    pending: list[tuple[Exchange, list[dict[str, Any]]]] = field(default_factory=list)
    previous: tuple[list[Any], bool] | None = None


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


def _blocks_of(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _skeleton(message: Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies a message across requests, whatever a client re-sends differently."""
    keys: list[Any] = []
    for block in _blocks_of(message):
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


def _request_summary(request: Mapping[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    tools = request.get("tools")
    names = [t.get("name") for t in tools if isinstance(t, Mapping)] if isinstance(tools, list) else []
    summary = {
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
    return summary


def _tool_calls_of(blocks: list[dict[str, Any]], step: int) -> list[ToolCall]:
    calls = []
    server_results: dict[str, dict[str, Any]] = {}
    for block in blocks:
        kind = str(block.get("type", ""))
        if kind.endswith("_tool_result") and "tool_use_id" in block:
            server_results[str(block["tool_use_id"])] = block
    for block in blocks:
        kind = block.get("type")
        if kind not in ("tool_use", "server_tool_use"):
            continue
        call = ToolCall(
            id=str(block.get("id", "")),
            name=str(block.get("name", "")),
            input=block.get("input", {}),
            step=step,
            server=kind == "server_tool_use",
        )
        if call.server and call.id in server_results:
            answer = server_results[call.id]
            content = answer.get("content")
            failed = isinstance(content, Mapping) and str(content.get("type", "")).endswith("_error")
            call.result = ToolResult(content=_content_text(content), is_error=failed, step=step)
        calls.append(call)
    return calls


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, Mapping):
                parts.append(f"[{part.get('type', 'block')}]")
            else:
                parts.append(str(part))
        return "".join(parts)
    return canonical_json(content)


def _attach_results(run: Run) -> None:
    """Each client tool call's result is in the next request of the run: the next step's, or the failed one."""
    requests: list[tuple[int | None, list[dict[str, Any]]]] = [(step.index, step.delta) for step in run.steps]
    if run.failed_request is not None:
        requests.append((None, run.failed_request.delta))
    for position, step in enumerate(run.steps):
        if position + 1 >= len(requests):
            break
        carrier, delta = requests[position + 1]
        results: dict[str, dict[str, Any]] = {}
        for message in delta:
            if message.get("role") != "user":
                continue
            for block in _blocks_of(message):
                if block.get("type") == "tool_result":
                    results.setdefault(str(block.get("tool_use_id")), block)
        for call in step.tool_calls:
            if call.server or call.id not in results:
                continue
            block = results[call.id]
            call.result = ToolResult(
                content=_content_text(block.get("content")), is_error=bool(block.get("is_error")), step=carrier
            )


# --- reading cassettes ---------------------------------------------------------------------------------------


def _is_batch_call(interaction: Mapping[str, Any]) -> bool:
    return str((interaction.get("request") or {}).get("path", "")).startswith(BATCHES_PATH)


# What a value of the wrong type or size deep in a cassette raises when it is used; caught where the
# trajectory is built and turned into a CassetteError with the file and the interaction.
_DAMAGE = (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError, OverflowError)


def _text_or_none(value: Any) -> str | None:
    """A field the API sends as text; anything else in a file reads as absent (shown as "?")."""
    return value if isinstance(value, str) else None


def _describe_damage(err: BaseException) -> str:
    if isinstance(err, RecursionError):
        return "values nested too deep"
    if isinstance(err, KeyError):
        return f"the field {err.args[0]!r} is missing"
    return f"{err}"[:300] or type(err).__name__


def load_cassette_any(path: str | Path) -> CassetteFile:
    """Our cassette, or a foreign one (vcrpy, pydantic-ai, HAR) converted in memory."""
    from harness.cassette.importer import load_any_cassette  # here: its readers cost 0.2 s to import

    return load_any_cassette(path)


def load_trajectory(path: str | Path) -> Trajectory:
    """A cassette file (ours or a foreign one) as a trajectory."""
    trajectory = Trajectory.from_cassette(load_cassette_any(path))
    if not trajectory.source.get("path"):  # an import in memory has no path of its own
        trajectory.source["path"] = str(path)
    return trajectory


def batch_trajectories(source: str | Path | CassetteFile | Trajectory) -> dict[str, Trajectory]:
    """{custom_id: Trajectory} for every batch request whose result a cassette (a path, a CassetteFile or a
    Trajectory built from one) holds, in the order of the results."""
    if isinstance(source, Trajectory):
        full = source
    elif hasattr(source, "interactions"):
        full = Trajectory.from_cassette(source)
    else:
        full = load_trajectory(source)
    return {run.label: full.select_runs(run.label) for run in full.runs if run.label is not None}
