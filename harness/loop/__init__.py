"""The reference agent loop: send, read stop_reason, run tools, append, call again -- with guards.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

A package: the records of a run (harness.loop.result), the machine (harness.loop.machine) and,
here, its two drivers.

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
from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any

import anthropic

from harness.loop.machine import (
    _CallModel,
    _Effect,
    _Machine,
    _ModelReply,
    _Reply,
    _RunTool,
    _ToolReply,
)
from harness.loop.result import (
    DEFAULT_MODEL,
    Event,
    LoopConfig,
    ModelCall,
    Outcome,
    RunResult,
    TokenBudget,
    ToolRegistryLike,
)
from harness.run import ToolCall, Usage

if TYPE_CHECKING:
    pass

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




# --- the drivers: the only places that do I/O --------------------------------------------------


class _Keep(Enum):
    """A `run_loop` keyword left out: the config's value stands."""

    KEEP = "keep"


KEEP = _Keep.KEEP


def _settings(config: LoopConfig | None, given: Mapping[str, Any]) -> LoopConfig:
    """`config` (default LoopConfig()) with the fields named by keyword on run_loop replaced."""
    config = config or LoopConfig()
    chosen = {name: value for name, value in given.items() if value is not KEEP}
    return dataclasses.replace(config, **chosen) if chosen else config


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
    max_steps: int | _Keep = KEEP,
    budget: TokenBudget | _Keep = KEEP,
    call_timeout: float | _Keep | None = KEEP,
    deadline: float | _Keep | None = KEEP,
    repeat_limit: int | _Keep | None = KEEP,
    stream: bool | _Keep = KEEP,
    compact_after: int | _Keep | None = KEEP,
    cache_prompts: bool | _Keep = KEEP,
    stop_sequences: tuple[str, ...] | _Keep = KEEP,
    summary_prompt: str | _Keep = KEEP,
    clock: Callable[[], float] | _Keep = KEEP,
) -> RunResult:
    """Run the agent loop to an outcome. The keywords after `tracer_provider` are `LoopConfig`'s fields: each
    one given replaces that field of `config` (default LoopConfig()), e.g. max_steps=5.

    `tracer_provider` (else OpenTelemetry's global one, when set) gets GenAI spans of the run as it goes
    (harness/telemetry/live.py).
    """
    fields = dict(max_steps=max_steps, budget=budget, call_timeout=call_timeout, deadline=deadline,
                  repeat_limit=repeat_limit, stream=stream, compact_after=compact_after, cache_prompts=cache_prompts,
                  stop_sequences=stop_sequences, summary_prompt=summary_prompt, clock=clock)
    steps = _Machine(system=system, user=user, tools=tools, model=model, max_tokens=max_tokens,
                     config=_settings(config, fields), on_event=on_event).run()
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
    max_steps: int | _Keep = KEEP,
    budget: TokenBudget | _Keep = KEEP,
    call_timeout: float | _Keep | None = KEEP,
    deadline: float | _Keep | None = KEEP,
    repeat_limit: int | _Keep | None = KEEP,
    stream: bool | _Keep = KEEP,
    compact_after: int | _Keep | None = KEEP,
    cache_prompts: bool | _Keep = KEEP,
    stop_sequences: tuple[str, ...] | _Keep = KEEP,
    summary_prompt: str | _Keep = KEEP,
    clock: Callable[[], float] | _Keep = KEEP,
) -> RunResult:
    """`run_loop` for `anthropic.AsyncAnthropic`.

    Tools run synchronously on the event loop's thread: registry tools are plain functions, and some
    (sqlite connections) must stay on the thread that made them.
    """
    fields = dict(max_steps=max_steps, budget=budget, call_timeout=call_timeout, deadline=deadline,
                  repeat_limit=repeat_limit, stream=stream, compact_after=compact_after, cache_prompts=cache_prompts,
                  stop_sequences=stop_sequences, summary_prompt=summary_prompt, clock=clock)
    steps = _Machine(system=system, user=user, tools=tools, model=model, max_tokens=max_tokens,
                     config=_settings(config, fields), on_event=on_event).run()
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
