"""Trajectories as an inspect_ai eval log: one sample per cassette, readable by `inspect_ai.log.read_eval_log`
and shown by `inspect view`. Needs `loop-harness[inspect]`.

Each sample holds the run's transcript as inspect's own events: a model event per try at each model call
(input, output, usage; a failed try carries its error), a tool event per tool call the agent ran, and a
score event per eval check. Messages and outputs are converted by inspect_ai's own Anthropic converters
(`messages_from_anthropic`, `model_output_from_anthropic`), so they read as an inspect run with the
Anthropic provider would. The checks are those of the suite cases that name the cassette (harness eval's
own runner, see checks.py), as scores "C"/"I" with the check's reason as the explanation; the eval's
results give each check's accuracy over the samples.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError
from harness.files import write_target
from harness.run import Usage
from harness.trajectory import Attempt, Step, Trajectory
from harness.trajectory.calls import content_text

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.model import ModelOutput

EXTRA = "inspect"
TASK = "loop_harness"
SUFFIXES = (".eval", ".json")


def require_inspect() -> None:
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError as err:
        raise HarnessError(
            f"the inspect_ai export needs inspect_ai ({err.name} is missing): pip install 'loop-harness[{EXTRA}]'"
        ) from None


@dataclass
class CassetteSample:
    """One cassette to export: its trajectory and the eval records (harness eval's) that judged it."""

    trajectory: Trajectory
    label: str  # the sample id: the cassette path as given
    records: list[dict[str, Any]] = field(default_factory=list)


def write_inspect_log(path: str | Path, cases: Sequence[CassetteSample], *, task: str = TASK) -> Path:
    """Write the eval log (.eval, inspect's default, or .json by the file's suffix) atomically."""
    require_inspect()
    from inspect_ai.log import write_eval_log

    target = Path(path)
    if target.suffix not in SUFFIXES:
        raise HarnessError(f"an inspect_ai log is a .eval or a .json file, not {target.suffix or 'no suffix'!r}",
                           file=target)
    log = eval_log(cases, task=task)
    target = write_target(target)  # the one write path's rule: no link out of the project, no FIFO or device
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.stem}.", suffix=target.suffix)
    os.close(handle)
    try:
        write_eval_log(log, temporary, format="auto")
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target


def eval_log(cases: Sequence[CassetteSample], *, task: str = TASK) -> EvalLog:
    require_inspect()
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, EvalStats

    from harness._version import __version__

    samples = asyncio.run(_samples(cases))
    created = _now()
    model = next((f"anthropic/{c.trajectory.model}" for c in cases if c.trajectory.model), "anthropic/unknown")
    spec = EvalSpec(
        eval_id=uuid.uuid4().hex,
        run_id=uuid.uuid4().hex,
        created=created,
        task=task,
        task_id=uuid.uuid4().hex,
        task_description="cassettes exported by loop-harness (harness export --inspect)",
        dataset=EvalDataset(name="cassettes", samples=len(samples), sample_ids=[s.id for s in samples]),
        model=model,
        config=EvalConfig(epochs=1),
        packages={"loop-harness": __version__},
        metadata={"exported_by": "harness export --inspect"},
    )
    usage: dict[str, Any] = {}
    for sample in samples:
        for name, counts in sample.model_usage.items():
            usage[name] = usage[name] + counts if name in usage else counts
    return EvalLog(
        version=2,
        status="success",
        eval=spec,
        results=_results(samples),
        stats=EvalStats(started_at=created, completed_at=created, model_usage=usage),
        samples=samples,
    )


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _results(samples: list[EvalSample]) -> Any:
    """Each check's accuracy (share of samples it passed) over the samples it scored."""
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    passed: dict[str, list[bool]] = {}
    for sample in samples:
        for name, score in (sample.scores or {}).items():
            passed.setdefault(name, []).append(score.value == "C")
    scores = [
        EvalScore(name=name, scorer=name, scored_samples=len(values), unscored_samples=len(samples) - len(values),
                  metrics={"accuracy": EvalMetric(name="accuracy", value=sum(values) / len(values))})
        for name, values in passed.items()
    ]
    return EvalResults(total_samples=len(samples), completed_samples=len(samples), scores=scores)


async def _samples(cases: Sequence[CassetteSample]) -> list[EvalSample]:
    samples, seen = [], set()
    for case in cases:
        base = case.label
        sample_id, n = base, 1
        while sample_id in seen:  # the same cassette twice: inspect needs distinct sample ids
            n += 1
            sample_id = f"{base}~{n}"
        seen.add(sample_id)
        samples.append(await _sample(case, sample_id))
    return samples


def _origin(trajectory: Trajectory) -> datetime:
    recorded_at = trajectory.source.get("recorded_at")
    if isinstance(recorded_at, str):
        try:
            moment = datetime.fromisoformat(recorded_at.replace("Z", "+00:00"))
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        except ValueError:
            pass
    return datetime.now(UTC)


class _Clock:
    """Event times: recorded durations where the cassette has them, else 1 ms apart (the order, no more)."""

    def __init__(self, origin: datetime) -> None:
        self.origin = origin
        self.elapsed = 0.0  # seconds since the origin

    def take(self, duration_ms: float | None) -> tuple[datetime, float, datetime, float]:
        start = self.elapsed
        self.elapsed += (duration_ms if duration_ms is not None else 1.0) / 1000
        spent = (duration_ms or 0.0) / 1000
        return (self.origin + timedelta(seconds=start), start, self.origin + timedelta(seconds=start + spent), spent)


async def _sample(case: CassetteSample, sample_id: str) -> EvalSample:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage, messages_from_anthropic

    trajectory = case.trajectory
    clock = _Clock(_origin(trajectory))
    events: list[Any] = []
    usage: dict[str, ModelUsage] = {}
    messages: list[Any] = []
    output = ModelOutput(model=trajectory.model or "")
    for run in trajectory.runs:
        conversation: list[dict[str, Any]] = []
        for step in run.steps:
            conversation.extend(step.delta)
            inputs = await messages_from_anthropic(_readable(conversation))  # type: ignore[arg-type]
            step_output = await _output(step)
            failed = [a for a in step.attempts if not a.ok]
            for attempt in failed:
                events.append(_model_event(step.request, inputs, _error_output(step.request, attempt), clock, attempt))
            events.append(_model_event(step.request, inputs, step_output, clock, step.attempts[-1],
                                       retries=len(failed)))
            if step.usage_counted and step_output.usage is not None:
                name = f"anthropic/{step.model or step.request.get('model') or 'unknown'}"
                usage[name] = usage[name] + step_output.usage if name in usage else step_output.usage
            events.extend(_tool_event(call, clock) for call in step.tool_calls)  # every kind: client, server, MCP
            output = step_output
            messages = [*inputs, step_output.message]
        if run.failed_request is not None:
            conversation.extend(run.failed_request.delta)
            inputs = await messages_from_anthropic(_readable(conversation))  # type: ignore[arg-type]
            for attempt in run.failed_request.attempts:
                output = _error_output(run.failed_request.request, attempt)
                events.append(_model_event(run.failed_request.request, inputs, output, clock, attempt))
            messages = inputs
    scores = _scores(case.records)
    events.extend(_score_event(name, score, clock) for name, score in scores.items())
    first = trajectory.runs[0] if trajectory.runs else None
    opening = first.conversation()[:1] if first else []
    sample_input = (await messages_from_anthropic(_readable([m for _, m in opening]))  # type: ignore[arg-type]
                    if opening else "")
    return EvalSample(
        id=sample_id,
        epoch=1,
        input=sample_input or "",
        target="",
        messages=messages,
        output=output,
        scores=scores or None,
        metadata=_metadata(case),
        events=events,
        model_usage=usage,
        started_at=clock.origin.isoformat(),
        completed_at=(clock.origin + timedelta(seconds=clock.elapsed)).isoformat(),
        total_time=round(clock.elapsed, 3),
        uuid=uuid.uuid4().hex,
    )


def _metadata(case: CassetteSample) -> dict[str, Any]:
    trajectory = case.trajectory
    outcome = trajectory.outcome
    source = trajectory.source
    return {
        "cassette": source.get("path"),
        "recorded_from": source.get("recorded_from"),
        "recorded_at": source.get("recorded_at"),
        "runs": len(trajectory.runs),
        "steps": len(trajectory.steps),
        "outcome": outcome.describe() if outcome else None,
        "usage": trajectory.usage.to_dict(),
        "eval_cases": [record["id"] for record in case.records],
    }


async def _output(step: Step) -> ModelOutput:
    from inspect_ai.model import model_output_from_anthropic

    usage = step.usage if step.usage_counted else Usage()
    message = {
        "id": step.message_id or f"step-{step.index}",
        "type": "message",
        "role": "assistant",
        "model": step.model or step.request.get("model") or "unknown",
        "content": _inspect_blocks(step.blocks),
        "stop_reason": step.stop_reason,
        "stop_sequence": step.stop_sequence,
        "usage": {"input_tokens": usage.input, "output_tokens": usage.output,
                  "cache_creation_input_tokens": usage.cache_write, "cache_read_input_tokens": usage.cache_read},
    }
    return await model_output_from_anthropic(message)


# The blocks inspect_ai's Anthropic converters read (the SDK's non-beta ContentBlock and its params); any
# other (an MCP call and its result, a compaction, a fallback marker) goes to them as text saying what it
# was, and the call itself is a tool event of its own.
_INSPECT_BLOCKS = frozenset({
    "text", "thinking", "redacted_thinking", "tool_use", "tool_result", "server_tool_use", "web_search_tool_result",
    "web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result", "tool_search_tool_result", "container_upload", "image", "document",
})


def _inspect_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    server_calls: set[str] = set()
    for block in blocks:
        kind = str(block.get("type", ""))
        if kind == "server_tool_use":
            server_calls.add(str(block.get("id")))
        answers_earlier = not kind.endswith("_tool_result") or kind == "tool_result" or \
            str(block.get("tool_use_id")) in server_calls  # a paused turn's result comes without its call
        if kind in _INSPECT_BLOCKS and answers_earlier:
            out.append(block)
        else:
            out.append({"type": "text", "text": _as_text(block)})
    return out


def _as_text(block: Mapping[str, Any]) -> str:
    kind = str(block.get("type", "block"))
    if kind == "mcp_tool_use":
        return f"[{kind} {block.get('server_name')}/{block.get('name')} {json.dumps(block.get('input'))}]"
    if kind == "compaction":
        return f"[compaction summary] {block.get('content') or '(none)'}"
    if "tool_use_id" in block:
        return f"[{kind} for {block.get('tool_use_id')}] {content_text(block.get('content'))}"
    return f"[{kind}]"


def _readable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**message, "content": _inspect_blocks(message["content"])} if isinstance(message.get("content"), list)
            else message for message in messages]


def _error_output(request: dict[str, Any], attempt: Attempt) -> ModelOutput:
    from inspect_ai.model import ModelOutput

    return ModelOutput(model=str(request.get("model") or ""), error=_error_text(attempt))


def _error_text(attempt: Attempt) -> str:
    status = f"HTTP {attempt.status} " if attempt.status else ""
    message = f": {attempt.error_message}" if attempt.error_message else ""
    return f"{status}{attempt.error_type or 'error'}{message}"


def _model_event(request: dict[str, Any], inputs: list[Any], output: ModelOutput, clock: _Clock, attempt: Attempt,
                 *, retries: int = 0) -> Any:
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import GenerateConfig
    from inspect_ai.tool import ToolInfo

    start, working_start, end, spent = clock.take(attempt.duration_ms)
    params = request.get("params") or {}
    config = GenerateConfig(max_tokens=request.get("max_tokens"), temperature=params.get("temperature"),
                            top_p=params.get("top_p"), top_k=params.get("top_k"),
                            stop_seqs=params.get("stop_sequences"))
    return ModelEvent(
        model=f"anthropic/{request.get('model') or 'unknown'}",
        input=inputs,
        tools=[ToolInfo(name=str(name), description="") for name in request.get("tools") or []],
        tool_choice="auto",
        config=config,
        output=output,
        retries=retries or None,
        error=None if attempt.ok else _error_text(attempt),
        timestamp=start,
        working_start=working_start,
        completed=end,
        working_time=spent,
        metadata={"interaction": attempt.interaction, "status": attempt.status, "stream": attempt.stream},
    )


def _tool_event(call: Any, clock: _Clock) -> Any:
    from inspect_ai.event import ToolEvent
    from inspect_ai.tool import ToolCallError

    start, working_start, end, spent = clock.take(None)
    result = call.result
    arguments = call.input if isinstance(call.input, dict) else {"input": call.input}
    error = ToolCallError(type="unknown", message=result.content) if result is not None and result.is_error else None
    # the API ran it (a server tool, an MCP server): its error code, where it gave one, is the message
    return ToolEvent(
        id=call.id,
        function=call.name,
        arguments=arguments,
        result=result.content if result is not None else "",
        error=error,
        failed=True if error else None,
        timestamp=start,
        working_start=working_start,
        completed=end,
        working_time=spent,
        metadata=_tool_metadata(call),
    )


def _tool_metadata(call: Any) -> dict[str, Any] | None:
    """Who ran the call (a server tool, an MCP server), its caller, and a missing result, where they apply."""
    metadata: dict[str, Any] = {}
    if call.kind != "client":
        metadata["kind"] = call.kind
    if call.server_name is not None:
        metadata["mcp_server"] = call.server_name
    if call.caller is not None:
        metadata["caller"] = dict(call.caller)
    if call.result is None:
        metadata["result"] = "none: the run ended before it"
    elif call.result.details:
        metadata["details"] = dict(call.result.details)
    return metadata or None


def _scores(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One score per check; named `case/check` when more than one case judged this cassette."""
    from inspect_ai.scorer import CORRECT, INCORRECT, Score

    scores: dict[str, Any] = {}
    for record in records:
        if record["status"] == "error":
            error = record.get("error") or {}
            scores[_name(record, "load", len(records))] = Score(
                value=INCORRECT, explanation=f"the case could not run: {error.get('reason')}",
                metadata={"case": record["id"], "error": error})
            continue
        for check in record["checks"]:
            scores[_name(record, check["id"], len(records))] = Score(
                value=CORRECT if check["passed"] else INCORRECT,
                explanation=check["reason"],
                metadata={"case": record["id"], "check": check["check"], "step": check["step"],
                          "evidence": check["evidence"]},
            )
    return scores


def _name(record: dict[str, Any], check: str, cases: int) -> str:
    return check if cases == 1 else f"{record['id']}/{check}"


def _score_event(name: str, score: Any, clock: _Clock) -> Any:
    from inspect_ai.event import ScoreEvent

    start, working_start, _, _ = clock.take(None)
    return ScoreEvent(score=score, scorer=name, timestamp=start, working_start=working_start)


__all__ = ["CassetteSample", "eval_log", "require_inspect", "write_inspect_log"]
