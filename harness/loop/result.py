"""What a run of the agent loop is: how it is configured (LoopConfig, TokenBudget) and what it returns
(RunResult, with its Outcome, the ModelCall records and the Events it emitted).

Every way a run can end is an `Outcome` on the `RunResult`, never an exception; the result keeps the partial
run (conversation, exchanges, tool calls, usage) so a failure can be read like a success.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from harness.pricing import estimate_cost
from harness.run import Exchange, ToolCall, Usage

DEFAULT_MODEL = "claude-sonnet-5"


SUMMARY_PROMPT = (
    "You have reached the step limit for this task, so no more tools can be run. Using only what you "
    "have gathered so far, give your best final answer now, and say briefly what is still missing."
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
        return [
            ModelCall(
                step=step,
                request=dict(exchange.request),
                response=dict(exchange.message or {}),
                duration_ms=exchange.duration_ms or 0.0,
            )
            for step, exchange in enumerate(answered, start=1)
        ]

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
    return {
        "step": call.step,
        "name": call.name,
        "id": call.id,
        "input": call.input,
        "output": call.output,
        "is_error": call.is_error,
        "duration_ms": call.duration_ms,
        "chars": call.chars,
        "synthetic": call.synthetic,
    }
