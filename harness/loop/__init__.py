"""The reference agent loop: send, read stop_reason, run tools, append, call again -- with guards.

The loop is a pure state machine (`_Machine.run`, a generator) that yields the I/O it needs -- a
model call or a tool run -- and is sent the result back. `run_loop` and `run_loop_async` are thin
drivers that perform that I/O with `anthropic.Anthropic` or `anthropic.AsyncAnthropic`; everything
else (stop reasons, guards, history, records) is shared, so the two cannot drift apart.

Every way a run can end is an `Outcome` on the returned `RunResult`, never an exception: API errors
after the SDK's own retries, timeouts, a guard firing, a model refusing. The result keeps the partial
run (conversation, exchanges, tool calls, usage) so a failure can be read like a success.

The run is recorded as `harness.run` records: one `Exchange` per model call (the exact body sent,
then the Message, or the error as data: status, API error type, message, retry-after), the
`ToolCall`s it answered and the `Usage` it spent. `Trajectory.from_run` reads those exchanges as it
reads a cassette's.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

import anthropic
import httpx2

from harness.pricing import estimate_cost
from harness.run import Exchange, ToolCall, ToolResult, Usage, retry_after_seconds

if TYPE_CHECKING:
    from anthropic.types import Message

__all__ = [
    "DEFAULT_MODEL",
    "Event",
    "LoopConfig",
    "ModelCall",
    "Outcome",
    "RunResult",
    "TokenBudget",
    "ToolCall",
    "Usage",
    "run_loop",
    "run_loop_async",
]

DEFAULT_MODEL = "claude-sonnet-5"

SUMMARY_PROMPT = (
    "You have reached the step limit for this task, so no more tools can be run. Using only what you "
    "have gathered so far, give your best final answer now, and say briefly what is still missing."
)
REPEAT_MESSAGE = (
    "Not run: this is call number {count} in a row of {name} with the same input, and its output has "
    "not changed. Repeating it will not help; try a different strategy (other arguments, another tool) "
    "or answer with what you have."
)


class Outcome(StrEnum):
    """How a run ended. Only `ended` is a success."""

    ENDED = "ended"  # end_turn, or a stop sequence fired
    REFUSED = "refused"  # stop_reason refusal; never retried
    STEP_LIMIT = "step_limit"  # max steps reached; final_text is a best-effort summary
    BUDGET = "budget"  # the cumulative token budget was exceeded
    DEADLINE = "deadline"  # the wall-clock deadline for the whole run passed
    MAX_TOKENS = "max_tokens"  # the answer was cut off at max_tokens
    CONTEXT_WINDOW = "context_window"  # stop_reason model_context_window_exceeded
    ERROR = "error"  # API / connection / timeout error, or a stop reason this loop does not know


class ToolRegistryLike(Protocol):
    """What the loop needs of `harness.tools.ToolRegistry`."""

    def definitions(self) -> list[dict]: ...

    def run(self, name: str, tool_input: Any) -> Any: ...  # -> ToolOutput(content, is_error)


@dataclass(frozen=True)
class TokenBudget:
    """Cumulative token limits for a run; None means no limit on that kind."""

    input: int | None = None
    output: int | None = None
    cache_write: int | None = None
    cache_read: int | None = None
    total: int | None = None

    def exceeded(self, usage: Usage) -> str | None:
        """Why `usage` is over budget, or None when it is within it."""
        for kind in ("input", "output", "cache_write", "cache_read", "total"):
            limit = getattr(self, kind)
            used = getattr(usage, kind)
            if limit is not None and used > limit:
                label = kind.replace("_", " ")
                return f"{label} tokens {used:,} exceeded the budget of {limit:,}"
        return None


@dataclass(frozen=True)
class LoopConfig:
    """The loop's guards and options. Every field can be overridden by keyword on `run_loop`."""

    max_steps: int = 10  # model calls before the loop asks for a best-effort summary (one extra call)
    budget: TokenBudget = field(default_factory=lambda: TokenBudget(total=500_000))
    call_timeout: float | None = 120.0  # seconds per model call; None leaves the SDK's default
    deadline: float | None = None  # seconds of wall clock for the whole run
    repeat_limit: int | None = 2  # identical tool calls allowed in a row before the breaker answers
    stream: bool = False  # use messages.stream(...) instead of messages.create(...)
    compact_after: int | None = None  # keep the last N tool-result turns verbatim in requests
    cache_prompts: bool = False  # cache_control on the system prompt and the last tool definition
    stop_sequences: tuple[str, ...] = ()
    summary_prompt: str = SUMMARY_PROMPT
    # The clock the deadline is measured on; tests pass a fake one.
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps}")
        if self.repeat_limit is not None and self.repeat_limit < 1:
            raise ValueError(f"repeat_limit must be at least 1 or None, got {self.repeat_limit}")
        if self.compact_after is not None and self.compact_after < 1:
            raise ValueError(f"compact_after must be at least 1 or None, got {self.compact_after}")
        for name in ("call_timeout", "deadline"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive or None, got {value}")


@dataclass(frozen=True)
class ModelCall:
    """One completed Messages API call: the exact JSON body sent and the Message received.

    A view of a successful `Exchange` (`RunResult.calls`), numbered by the step it made.
    """

    step: int
    request: dict[str, Any]
    response: dict[str, Any]  # Message.model_dump(mode="json")
    duration_ms: float


@dataclass(frozen=True)
class Event:
    """One model call (kind "model_call") or tool execution (kind "tool_call"), in the order they ran.

    A model call that failed has an event (data: "error" for a person, and its status and error_type)
    but no `ModelCall`; its `Exchange` holds the error as data.
    """

    kind: str
    step: int
    duration_ms: float
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class RunResult:
    final_text: str  # text of the last response (for step_limit: the best-effort summary)
    outcome: Outcome
    reason: str  # what happened, for a person: which step, which limit, which error
    incomplete: bool  # final_text is not a finished answer
    stop_sequence: str | None
    steps: int  # completed model calls, the summary call included
    model: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    exchanges: list[Exchange] = field(default_factory=list)  # every model call, in order, failed ones included
    events: list[Event] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)  # the conversation, as recorded

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.ENDED

    @property
    def calls(self) -> list[ModelCall]:
        """The model calls that returned a Message: step 1..N."""
        answered = [exchange for exchange in self.exchanges if exchange.message is not None]
        return [ModelCall(step=step, request=dict(exchange.request), response=dict(exchange.message or {}),
                          duration_ms=exchange.duration_ms or 0.0)
                for step, exchange in enumerate(answered, start=1)]

    @property
    def error(self) -> dict[str, Any] | None:
        """The failed model call that ended the run, as data (status, error_type, ...); None when none did."""
        last = self.exchanges[-1] if self.exchanges else None
        return last.failure() if last is not None else None

    @property
    def cost_usd(self) -> float | None:
        """List-price estimate of the run (None for a model without a known price)."""
        return estimate_cost(self.model, self.usage)

    def to_dict(self) -> dict[str, Any]:
        return {
            "final_text": self.final_text,
            "outcome": self.outcome.value,
            "ok": self.ok,
            "reason": self.reason,
            "incomplete": self.incomplete,
            "stop_sequence": self.stop_sequence,
            "steps": self.steps,
            "model": self.model,
            "tool_calls": [_tool_call_record(call) for call in self.tool_calls],
            "usage": self.usage.to_dict(),
            "cost_usd": self.cost_usd,
            "calls": [dataclasses.asdict(call) for call in self.calls],
            "error": self.error,
            "events": [event.to_dict() for event in self.events],
            "messages": self.messages,
        }


def _tool_call_record(call: ToolCall) -> dict[str, Any]:
    """A tool call as `RunResult.to_dict()` has always given it: what the loop ran and answered."""
    return {"step": call.step, "name": call.name, "id": call.id, "input": call.input, "output": call.output,
            "is_error": call.is_error, "duration_ms": call.duration_ms, "chars": call.chars,
            "synthetic": call.synthetic}


# --- the I/O the machine asks its driver for --------------------------------------------------


@dataclass(frozen=True)
class _CallModel:
    body: dict[str, Any]  # the exact JSON body; "stream": True selects messages.stream(...)
    timeout: float | None


@dataclass(frozen=True)
class _ModelReply:
    message: Message | None
    error: Exception | None
    duration_ms: float


@dataclass(frozen=True)
class _RunTool:
    name: str
    tool_input: Any
    id: str = ""  # the tool_use id, for the driver's tracing


@dataclass(frozen=True)
class _ToolReply:
    content: str
    is_error: bool
    duration_ms: float


_Effect = _CallModel | _RunTool
_Reply = _ModelReply | _ToolReply
_Run = Generator[_Effect, _Reply, RunResult]


# --- the state machine -------------------------------------------------------------------------

_CONTINUE = ("tool_use", "pause_turn")


class _Machine:
    def __init__(
        self,
        *,
        system: str,
        user: str | list,
        tools: ToolRegistryLike | None,
        model: str,
        max_tokens: int,
        config: LoopConfig,
        on_event: Callable[[Event], None] | None,
    ) -> None:
        self.system = system
        self.tools = tools
        self.model = model
        self.max_tokens = max_tokens
        self.config = config
        self.on_event = on_event
        self.started = config.clock()
        self.messages: list[dict[str, Any]] = _initial_messages(user)
        self.tool_definitions = _tool_definitions(tools, cache=config.cache_prompts)
        self.usage = Usage()
        self.exchanges: list[Exchange] = []
        self.events: list[Event] = []
        self.tool_calls: list[ToolCall] = []
        self.unsent: list[ToolCall] = []  # answered, their results not yet carried by a request that got a message
        self.steps = 0
        self.last_message: Message | None = None
        self._streak_key: str | None = None
        self._streak = 0

    # The loop proper: five phases per step, and one exit per outcome.
    def run(self) -> _Run:
        while True:
            reply = yield from self._call_model(summary=False)
            if isinstance(reply, RunResult):
                return reply
            message = reply
            stop_reason = message.stop_reason
            if stop_reason not in _CONTINUE:
                return self._finish_on_stop(message)

            over = self.config.budget.exceeded(self.usage)
            if over:
                return self._finish(Outcome.BUDGET, f"{over} after step {self.steps}; the run was stopped")

            results: list[dict[str, Any]] = []
            if stop_reason == "tool_use":
                tool_uses = [block for block in message.content if block.type == "tool_use"]
                if not tool_uses:
                    return self._finish(Outcome.ERROR, f"step {self.steps}: stop_reason tool_use but no tool_use block")
                for block in tool_uses:
                    results.append((yield from self._run_tool(block)))
            # pause_turn: the assistant content is already appended; calling again resumes the turn.

            if self.steps >= self.config.max_steps:
                return (yield from self._summarize(results))
            if results:
                self.messages.append({"role": "user", "content": results})

    def _finish_on_stop(self, message: Message) -> RunResult:
        stop_reason = message.stop_reason
        step = self.steps
        if stop_reason == "end_turn":
            return self._finish(Outcome.ENDED, f"end_turn at step {step}")
        if stop_reason == "stop_sequence":
            fired = message.stop_sequence
            return self._finish(Outcome.ENDED, f"stop sequence {fired!r} fired at step {step}", stop_sequence=fired)
        if stop_reason == "refusal":
            return self._finish(Outcome.REFUSED, f"the model refused at step {step}; not retried")
        if stop_reason == "max_tokens":
            return self._finish(
                Outcome.MAX_TOKENS,
                f"the response was cut off at max_tokens={self.max_tokens} at step {step}; "
                "raise max_tokens or ask for less",
            )
        if stop_reason == "model_context_window_exceeded":
            usage = message.usage
            context = (
                usage.input_tokens + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
            )
            return self._finish(
                Outcome.CONTEXT_WINDOW,
                f"the model's context window was exceeded at step {step}: that call had "
                f"{context:,} input tokens (cache included); compact the history or use fewer tools",
            )
        return self._finish(Outcome.ERROR, f"unknown stop_reason {stop_reason!r} at step {step}")

    def _summarize(self, results: list[dict[str, Any]]) -> _Run:
        """Max steps reached: one last call, tools off, asking for a best-effort answer."""
        limit = self.config.max_steps
        # The history ends in the assistant's tool_use turn: its tool_results must come first.
        self.messages.append(
            {"role": "user", "content": [*results, {"type": "text", "text": self.config.summary_prompt}]}
        )
        reply = yield from self._call_model(summary=True)
        if isinstance(reply, RunResult):
            if reply.outcome is Outcome.DEADLINE:
                return reply
            reply.outcome = Outcome.STEP_LIMIT
            reply.incomplete = True
            reply.reason = f"max steps ({limit}) reached and the summary call failed: {reply.reason}"
            return reply
        return self._finish(
            Outcome.STEP_LIMIT,
            f"max steps ({limit}) reached without end_turn; final_text is a best-effort summary "
            f"(summary call stop_reason {reply.stop_reason})",
        )

    def _call_model(self, *, summary: bool) -> Generator[_Effect, _Reply, Message | RunResult]:
        """Phases 1-2: send the conversation, record the reply. A RunResult when the run must end."""
        remaining = self._remaining()
        if remaining is not None and remaining <= 0:
            return self._finish(Outcome.DEADLINE, self._deadline_reason("before"))
        timeout = self.config.call_timeout
        if remaining is not None:
            timeout = remaining if timeout is None else min(timeout, remaining)

        body = self._request_body(summary=summary)
        reply = yield _CallModel(body=body, timeout=timeout)
        assert isinstance(reply, _ModelReply)
        step = self.steps + 1

        if reply.message is None:
            error = reply.error
            assert error is not None
            failed = _failed_exchange(body, error, reply.duration_ms)
            self.exchanges.append(failed)
            described = f"{type(error).__name__}: {error}"
            self._event("model_call", step, reply.duration_ms,
                        {"error": described, "status": failed.status, "error_type": failed.error_type})
            remaining = self._remaining()
            if remaining is not None and remaining <= 0:
                return self._finish(Outcome.DEADLINE, f"{self._deadline_reason('during')} ({described})")
            return self._finish(Outcome.ERROR, f"step {step}: the model call failed: {described}")

        message = reply.message
        self.steps = step
        self.last_message = message
        self.usage = self.usage + Usage.from_api(message.usage)
        self.exchanges.append(Exchange(request=body, message=message.model_dump(mode="json"), status=200,
                                       duration_ms=reply.duration_ms))
        for call in self.unsent:  # this request carried their results
            if call.result is not None:
                call.result = dataclasses.replace(call.result, step=step)
        self.unsent = []
        # Phase 4, first half: the assistant turn goes into history exactly as returned.
        self.messages.append(
            {"role": "assistant", "content": [block.to_dict(mode="json") for block in message.content]}
        )
        self._event(
            "model_call",
            step,
            reply.duration_ms,
            {
                "stop_reason": message.stop_reason,
                "usage": message.usage.model_dump(mode="json", exclude_none=True),
                "summary": summary,
            },
        )
        return message

    def _run_tool(self, block: Any) -> Generator[_Effect, _Reply, dict[str, Any]]:
        """Phase 3 for one tool_use block; returns its tool_result block."""
        key = json.dumps([block.name, block.input], sort_keys=True, default=str)
        self._streak = self._streak + 1 if key == self._streak_key else 1
        self._streak_key = key

        limit = self.config.repeat_limit
        synthetic = limit is not None and self._streak > limit
        if synthetic:
            content = REPEAT_MESSAGE.format(count=self._streak, name=block.name)
            outcome = _ToolReply(content=content, is_error=True, duration_ms=0.0)
        elif self.tools is None:
            content = f"Unknown tool {block.name!r}: this run has no tools."
            outcome = _ToolReply(content=content, is_error=True, duration_ms=0.0)
        else:
            reply = yield _RunTool(name=block.name, tool_input=block.input, id=block.id)
            assert isinstance(reply, _ToolReply)
            outcome = reply

        call = ToolCall(
            id=block.id,
            name=block.name,
            input=block.input,
            step=self.steps,
            result=ToolResult(content=outcome.content, is_error=outcome.is_error, step=None),
            duration_ms=outcome.duration_ms,
            synthetic=synthetic,
        )
        self.tool_calls.append(call)
        self.unsent.append(call)
        self._event(
            "tool_call",
            self.steps,
            outcome.duration_ms,
            {
                "name": call.name,
                "id": call.id,
                "input": call.input,
                "is_error": call.is_error,
                "chars": call.chars,
                "synthetic": synthetic,
            },
        )
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.id, "content": outcome.content}
        if outcome.is_error:
            result["is_error"] = True
        return result

    def _request_body(self, *, summary: bool) -> dict[str, Any]:
        config = self.config
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if self.system:
            if config.cache_prompts:
                body["system"] = [{"type": "text", "text": self.system, "cache_control": {"type": "ephemeral"}}]
            else:
                body["system"] = self.system
        body["messages"] = _compacted(self.messages, config.compact_after)
        if self.tool_definitions:
            # Tools stay defined on the summary call: the API rejects tool_use history without them.
            body["tools"] = self.tool_definitions
            if summary:
                body["tool_choice"] = {"type": "none"}
        if config.stop_sequences:
            body["stop_sequences"] = list(config.stop_sequences)
        if config.stream:
            body["stream"] = True
        # A pure-JSON deep copy: what is recorded is what is sent, immune to later history changes.
        return json.loads(json.dumps(body))

    def _remaining(self) -> float | None:
        if self.config.deadline is None:
            return None
        return self.config.deadline - (self.config.clock() - self.started)

    def _deadline_reason(self, when: str) -> str:
        return f"deadline of {self.config.deadline:g}s for the run reached {when} model call {self.steps + 1}"

    def _event(self, kind: str, step: int, duration_ms: float, data: dict[str, Any]) -> None:
        event = Event(kind=kind, step=step, duration_ms=duration_ms, data=data)
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def _finish(self, outcome: Outcome, reason: str, *, stop_sequence: str | None = None) -> RunResult:
        final_text = ""
        if self.last_message is not None:
            final_text = "".join(b.text for b in self.last_message.content if b.type == "text")
        return RunResult(
            final_text=final_text,
            outcome=outcome,
            reason=reason,
            incomplete=outcome not in (Outcome.ENDED, Outcome.REFUSED),
            stop_sequence=stop_sequence,
            steps=self.steps,
            model=self.model,
            tool_calls=self.tool_calls,
            usage=self.usage,
            exchanges=self.exchanges,
            events=self.events,
            messages=self.messages,
        )


def _initial_messages(user: str | list) -> list[dict[str, Any]]:
    """A user prompt (text, or content blocks), or a whole conversation so far (dicts with a role)."""
    if isinstance(user, str):
        return [{"role": "user", "content": user}]
    items = json.loads(json.dumps(list(user)))
    if items and all(isinstance(item, Mapping) and "role" in item for item in items):
        return items
    return [{"role": "user", "content": items}]


def _tool_definitions(tools: ToolRegistryLike | None, *, cache: bool) -> list[dict[str, Any]]:
    if tools is None:
        return []
    definitions = json.loads(json.dumps(tools.definitions()))
    if cache and definitions:
        # One breakpoint on the last tool caches the whole tools array (and the system prompt before it).
        definitions[-1]["cache_control"] = {"type": "ephemeral"}
    return definitions


def _compacted(messages: list[dict[str, Any]], keep: int | None) -> list[dict[str, Any]]:
    """The history as sent: tool_result contents older than the last `keep` result turns shortened.

    Only the content changes; every block, its tool_use_id and is_error, and the turn order stay,
    since the API pairs each tool_result with its tool_use.
    """
    if keep is None:
        return messages
    names = {
        block.get("id"): block.get("name")
        for message in messages
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_use"
    }
    result_turns = [
        index
        for index, message in enumerate(messages)
        if message["role"] == "user"
        and isinstance(message["content"], list)
        and any(block.get("type") == "tool_result" for block in message["content"])
    ]
    old = set(result_turns[:-keep])
    if not old:
        return messages
    compacted = []
    for index, message in enumerate(messages):
        if index in old:
            blocks = [_compact_block(block, names) for block in message["content"]]
            message = {**message, "content": blocks}
        compacted.append(message)
    return compacted


def _compact_block(block: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    if block.get("type") != "tool_result":
        return block
    content = block.get("content", "")
    if isinstance(content, str):
        chars = len(content)
    else:
        chars = sum(len(part.get("text", "")) for part in content if isinstance(part, Mapping))
    name = names.get(block.get("tool_use_id"), "unknown tool")
    placeholder = f"[compacted: {chars:,} chars from {name}]"
    if isinstance(content, str) and len(content) <= len(placeholder):
        return block  # already shorter than its placeholder
    return {**block, "content": placeholder}


def _failed_exchange(body: dict[str, Any], error: Exception, duration_ms: float) -> Exchange:
    """A call that raised (after the SDK's retries), with the error as the data the SDK parsed for us.

    Connection failures get the recorder's words (timeout, connect, disconnect), so a live run and its
    cassette name them alike.
    """
    status: int | None = None
    retry_after: float | None = None
    if isinstance(error, anthropic.APIStatusError):
        status = error.status_code
        kind = error.type or f"http_{status}"
        message = error.api_message or error.message
        retry_after = retry_after_seconds(error.response.headers)
    elif isinstance(error, anthropic.APITimeoutError):
        kind, message = "timeout", str(error.__cause__ or error)
    elif isinstance(error, anthropic.APIConnectionError):
        kind = "connect" if isinstance(error.__cause__, httpx2.ConnectError) else "disconnect"
        message = str(error.__cause__ or error)
    else:  # not the API's: a bug in a client wrapper, a transport of the caller's
        kind, message = type(error).__name__, str(error)
    return Exchange(request=body, message=None, status=status, error_type=kind, error_message=message,
                    retry_after=retry_after, duration_ms=duration_ms)


# --- the drivers: the only places that do I/O --------------------------------------------------


def _settings(config: LoopConfig | None, overrides: Mapping[str, Any]) -> LoopConfig:
    config = config or LoopConfig()
    if not overrides:
        return config
    known = {f.name for f in dataclasses.fields(LoopConfig)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise TypeError(f"run_loop got unknown option(s) {unknown}; LoopConfig has {sorted(known)}")
    return dataclasses.replace(config, **overrides)


def _sdk_arguments(effect: _CallModel) -> tuple[dict[str, Any], bool]:
    kwargs = dict(effect.body)
    stream = bool(kwargs.pop("stream", False))
    if effect.timeout is not None:
        kwargs["timeout"] = effect.timeout
    return kwargs, stream


def _elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def _tool_reply(tools: ToolRegistryLike, effect: _RunTool) -> _ToolReply:
    start = time.perf_counter()
    try:
        output = tools.run(effect.name, effect.tool_input)
        content, is_error = output.content, bool(output.is_error)
    except Exception as exc:  # the registry promises not to raise; a bug there must not end the run
        content, is_error = f"{type(exc).__name__}: {exc}", True
    if not isinstance(content, str):
        content = json.dumps(content, default=str)
    return _ToolReply(content=content, is_error=is_error, duration_ms=_elapsed_ms(start))


def _call_sync(client: anthropic.Anthropic, effect: _CallModel) -> _ModelReply:
    kwargs, stream = _sdk_arguments(effect)
    start = time.perf_counter()
    try:
        if stream:
            with client.messages.stream(**kwargs) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**kwargs)
    except Exception as exc:  # after the SDK's own retries: the run ends with this as its reason
        return _ModelReply(message=None, error=exc, duration_ms=_elapsed_ms(start))
    return _ModelReply(message=message, error=None, duration_ms=_elapsed_ms(start))


async def _call_async(client: anthropic.AsyncAnthropic, effect: _CallModel) -> _ModelReply:
    kwargs, stream = _sdk_arguments(effect)
    start = time.perf_counter()
    try:
        if stream:
            async with client.messages.stream(**kwargs) as events:
                message = await events.get_final_message()
        else:
            message = await client.messages.create(**kwargs)
    except Exception as exc:
        return _ModelReply(message=None, error=exc, duration_ms=_elapsed_ms(start))
    return _ModelReply(message=message, error=None, duration_ms=_elapsed_ms(start))


def _loop_spans(provider: Any, model: str, client: Any = None) -> Any:
    """The run's span emitter (harness/telemetry/live.py), or None when there is no provider to emit to."""
    if provider is None and "opentelemetry.trace" not in sys.modules:
        return None  # nobody imported OpenTelemetry, so no global provider is set
    from harness.telemetry.live import loop_spans

    return loop_spans(provider, model=model, client=client)


def _span_start(spans: Any, effect: _Effect) -> Any:
    if isinstance(effect, _CallModel):
        return spans.model_call(effect.body)
    return spans.tool_call(effect.name, effect.id, effect.tool_input)


def _span_end(spans: Any, opened: Any, reply: _Reply) -> None:
    if isinstance(reply, _ModelReply):
        spans.model_reply(opened, reply.message, reply.error)
    else:
        spans.tool_reply(opened, reply.content, reply.is_error)


def run_loop(
    client: anthropic.Anthropic,
    *,
    system: str,
    user: str | list,
    tools: ToolRegistryLike | None,
    model: str = DEFAULT_MODEL,
    max_tokens: int = 2048,
    config: LoopConfig | None = None,
    on_event: Callable[[Event], None] | None = None,
    tracer_provider: Any = None,
    **overrides: Any,
) -> RunResult:
    """Run the agent loop to an outcome. `overrides` replace `LoopConfig` fields, e.g. max_steps=5.

    `tracer_provider` (else OpenTelemetry's global one, when set) gets GenAI spans of the run as it goes
    (harness/telemetry/live.py).
    """
    steps = _Machine(system=system, user=user, tools=tools, model=model, max_tokens=max_tokens,
                     config=_settings(config, overrides), on_event=on_event).run()
    spans = _loop_spans(tracer_provider, model, client)
    result: RunResult | None = None
    reply: _Reply | None = None
    try:
        while True:
            try:
                effect = steps.send(reply)  # type: ignore[arg-type]  # the first send must be None
            except StopIteration as done:
                result = done.value
                return result
            opened = spans and _span_start(spans, effect)
            if isinstance(effect, _CallModel):
                reply = _call_sync(client, effect)
            else:
                assert tools is not None
                reply = _tool_reply(tools, effect)
            if opened:
                _span_end(spans, opened, reply)
    finally:
        if spans:
            spans.finish(result)


async def run_loop_async(
    client: anthropic.AsyncAnthropic,
    *,
    system: str,
    user: str | list,
    tools: ToolRegistryLike | None,
    model: str = DEFAULT_MODEL,
    max_tokens: int = 2048,
    config: LoopConfig | None = None,
    on_event: Callable[[Event], None] | None = None,
    tracer_provider: Any = None,
    **overrides: Any,
) -> RunResult:
    """`run_loop` for `anthropic.AsyncAnthropic`.

    Tools run synchronously on the event loop's thread: registry tools are plain functions, and some
    (sqlite connections) must stay on the thread that made them.
    """
    steps = _Machine(system=system, user=user, tools=tools, model=model, max_tokens=max_tokens,
                     config=_settings(config, overrides), on_event=on_event).run()
    spans = _loop_spans(tracer_provider, model, client)
    result: RunResult | None = None
    reply: _Reply | None = None
    try:
        while True:
            try:
                effect = steps.send(reply)  # type: ignore[arg-type]
            except StopIteration as done:
                result = done.value
                return result
            opened = spans and _span_start(spans, effect)
            if isinstance(effect, _CallModel):
                reply = await _call_async(client, effect)
            else:
                assert tools is not None
                reply = _tool_reply(tools, effect)
            if opened:
                _span_end(spans, opened, reply)
    finally:
        if spans:
            spans.finish(result)
