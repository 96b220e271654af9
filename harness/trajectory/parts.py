"""The parts of a trajectory: runs of steps, each step's tries, how a run ended.

A step is one /v1/messages exchange that returned a Message: what the request added to the conversation
(the delta), the response blocks, the stop_reason, the usage and its cost, the tool calls of every kind
(harness.run.ToolCall) with their results. Failed calls (a 529, a timeout) are attempts of the step that
followed them; failures that nothing followed end the run as its `failed_request`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.pricing import Cost, cost_of
from harness.run import Exchange, ToolCall, Usage

__all__ = ["Attempt", "FailedRequest", "Run", "RunOutcome", "Step"]


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
    request: dict[str, Any]  # model, max_tokens, stream, tools (names), system fingerprint, message_count, ...
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
    container: dict[str, Any] | None = None  # the code execution container: id, expires_at, skills
    continues: int | None = None  # the step whose pause_turn this request continues (the same API turn)
    structured_output: dict[str, Any] | None = None  # the answer checked against output_config.format's schema
    # The JSON Schema the request asked the answer to follow (output_config.format / output_format), as sent; kept
    # off to_dict (the fingerprint in `request` says it there): `harness bless` proposes it to output_schema.
    output_schema: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        return "".join(
            text
            for block in self.blocks
            if block.get("type") == "text" and isinstance(text := block.get("text", ""), str)
        )

    @property
    def duration_ms(self) -> float | None:
        known = [a.duration_ms for a in self.attempts if a.duration_ms is not None]
        return round(sum(known), 3) if known else None

    @property
    def priced_model(self) -> str:
        return self.model or self.request.get("model") or ""

    @property
    def cost(self) -> Cost | None:
        """What this step's response cost (0 when its message id was already counted); None when unpriced."""
        if not self.usage_counted:
            return Cost(0.0)
        return cost_of(self.priced_model, self.usage)

    @property
    def citations(self) -> list[Mapping[str, Any]]:
        """The citations of the response's text blocks, in order."""
        return [
            citation
            for block in self.blocks
            if block.get("type") == "text"
            for citation in block.get("citations") or []
            if isinstance(citation, Mapping)
        ]

    @property
    def compactions(self) -> list[dict[str, Any]]:
        """The response's compaction blocks (the summary that replaces the history before it)."""
        return [block for block in self.blocks if block.get("type") == "compaction"]

    def to_dict(self) -> dict[str, Any]:
        cost = self.cost
        out: dict[str, Any] = {
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
            "cost": cost.to_dict() if cost is not None else None,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "attempts": [attempt.to_dict() for attempt in self.attempts],
            "duration_ms": self.duration_ms,
        }
        if self.container is not None:
            out["response"]["container"] = self.container
        if self.continues is not None:
            out["continues"] = self.continues
        if self.structured_output is not None:
            out["structured_output"] = self.structured_output
        return out


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
