"""The judged check `rubric`: whether a run meets a criterion written in words, as a model judges it.

    {"check": "rubric", "params": {
        "criterion": "every email that needs a reply is listed under Needs a reply, with its deadline",
        "on": "final_answer",                      # or "trajectory" (tool calls and results), or "both" (default)
        "model": "claude-sonnet-4-6",              # the judge (default DEFAULT_MODEL)
        "examples": [{"output": "...", "verdict": "fail", "why": "..."}],   # labelled cases shown to the judge
        "threshold": 0.8}}                         # pass on the judge's score instead of its verdict

Checks stay pure functions: this module renders the judge's request from the trajectory (`judge_request`) and
turns the judge's answer into a CheckResult (`judged`). The call itself, recorded to and replayed from a judge
cassette beside the golden, is harness.evals.judge's: run through the registry alone, the check says so.

The request asks for a fixed JSON shape (VERDICT_SCHEMA: verdict, score, reasons quoting the run with their
steps) with structured outputs (`output_config.format`); a plain JSON text answer (a model or endpoint without
structured outputs, a fenced block) is read too. The run is rendered without the ids a recording makes up
(message and tool_use ids), so re-recording the same run asks the same question, and windowed: each tool
result is clipped, and a run longer than `max_chars` keeps its first and last steps and says what it left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import jsonschema

from harness.checks.base import CheckResult, CheckSpec, fail
from harness.jsondata import canonical_json, json_path
from harness.trajectory import Step, Trajectory

NAME = "rubric"
DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_MAX_CHARS = 24_000  # the rendered run; about 6k tokens, so a judge call stays cheap whatever the run
RESULT_CHARS = 6_000  # one tool result, head and tail kept
MAX_TOKENS = 1_024
ON = ("final_answer", "trajectory", "both")

# Each part of the question is its own text block, so a judge cassette miss can say which part changed.
CRITERION_HEAD = "Criterion:"
EXAMPLES_HEAD = "Labelled examples:"
RUN_HEAD = "The run"

SYSTEM = (
    "You judge one run of an AI agent against one criterion. Judge only what the criterion asks, only from the "
    'run as shown. Answer with one JSON object: verdict ("pass" when the criterion holds, else "fail"), '
    "score (a number from 0 to 1: how fully it holds), and reasons: for each point that decides the verdict, the "
    'step it is about (the number after "step" in the run; 0 when it is about the run as a whole), a short quote '
    "copied exactly from the run, and a one-sentence explanation."
)

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["verdict", "score", "reasons"],
    "properties": {
        "verdict": {"type": "string", "enum": ["pass", "fail"]},
        # The API's structured outputs take no numeric bounds: as the SDK's transform_schema does, they are
        # written into the description for the judge to follow, and parse_verdict enforces them.
        "score": {"type": "number", "description": "how fully the criterion holds\n\n{minimum: 0, maximum: 1}"},
        "reasons": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["step", "quote", "explanation"],
                "properties": {
                    "step": {"type": "integer"},
                    "quote": {"type": "string"},
                    "explanation": {"type": "string"},
                },
            },
        },
    },
}


# --- the question ---------------------------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half:,} characters left out …]\n{text[-half:]}"


def _user_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = [str(b.get("text", "")) for b in content or [] if isinstance(b, Mapping) and b.get("type") == "text"]
    return "\n".join(part for part in parts if part)


def _task(trajectory: Trajectory) -> str:
    for step in trajectory.steps:
        for message in step.delta:
            if message.get("role") == "user" and (text := _user_text(message)):
                return text
    return ""


def _step_text(step: Step, *, calls: bool, answer: bool, last: bool) -> str:
    lines = []
    if step.text and (answer if last else calls):
        label = "final answer" if last else "assistant"
        lines.append(f"step {step.index} ({label}):\n{step.text}")
    if calls:
        for call in step.tool_calls:
            lines.append(f"step {step.index}: tool call {call.name}({canonical_json(call.input)})")
            if call.result is not None:
                flag = " (error)" if call.result.is_error else ""
                result = _clip(call.result.content, RESULT_CHARS)
                lines.append(f"step {step.index}: {call.name} returned{flag}:\n{result}")
    return "\n".join(lines)


def _windowed(chunks: list[str], budget: int) -> list[str]:
    """The chunks within `budget` characters: taken from both ends in turn, the middle left out and named."""
    if sum(len(chunk) for chunk in chunks) <= budget:
        return chunks
    head: list[str] = []
    tail: list[str] = []
    used, low, high = 0, 0, len(chunks) - 1
    take_head = True
    while low <= high:
        index = low if take_head else high
        if used + len(chunks[index]) > budget:
            break
        used += len(chunks[index])
        if take_head:
            head.append(chunks[low])
            low += 1
        else:
            tail.insert(0, chunks[high])
            high -= 1
        take_head = not take_head
    left = high - low + 1
    note = f"[… {left} step(s) left out to keep the run within {budget:,} characters …]"
    return [*head, note, *tail] if left else [*head, *tail]


def render_run(trajectory: Trajectory, on: str = "both", max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The run as the judge reads it: the task, then each step's tool calls and results and the final answer, as
    `on` says; ids left out; windowed within `max_chars`."""
    steps = trajectory.steps
    last = trajectory.final_step
    chunks = []
    for step in steps:
        is_last = last is not None and step.index == last.index
        text = _step_text(step, calls=on in ("trajectory", "both"), answer=on in ("final_answer", "both"), last=is_last)
        if text:
            chunks.append(text)
    task = _task(trajectory)
    body = "\n\n".join(_windowed(chunks, max(0, max_chars - len(task))))
    return f"task (the user's message):\n{_clip(task, max_chars // 4)}\n\n{body}".strip()


def _examples_text(examples: Sequence[Mapping[str, Any]]) -> str:
    lines = [EXAMPLES_HEAD]
    for number, example in enumerate(examples, start=1):
        why = f" ({example['why']})" if example.get("why") else ""
        lines.append(f"example {number}: {example['verdict']}{why}:\n{example['output']}")
    return "\n\n".join(lines)


def judge_request(trajectory: Trajectory, params: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages API request that asks the judge (keyword arguments of `client.messages.create`)."""
    on = str(params.get("on", "both"))
    content = [{"type": "text", "text": f"{CRITERION_HEAD}\n{params['criterion']}"}]
    if params.get("examples"):
        content.append({"type": "text", "text": _examples_text(params["examples"])})
    run = render_run(trajectory, on, int(params.get("max_chars", DEFAULT_MAX_CHARS)))
    content.append({"type": "text", "text": f"{RUN_HEAD} ({on.replace('_', ' ')}):\n<run>\n{run}\n</run>"})
    return {
        "model": str(params.get("model", DEFAULT_MODEL)),
        "max_tokens": MAX_TOKENS,
        "system": SYSTEM,
        "messages": [{"role": "user", "content": content}],
        "output_config": {"format": {"type": "json_schema", "schema": VERDICT_SCHEMA}},
    }


def request_parts(body: Mapping[str, Any]) -> dict[str, Any]:
    """A judge request split into the parts a person changes: the judge model, the instructions, the criterion,
    the examples, the judged run, anything else. Two requests differing in a part differ in what it names."""
    parts: dict[str, Any] = {"criterion": None, "examples": None, "run": None}
    messages = body.get("messages") or []
    content = messages[0].get("content") if messages and isinstance(messages[0], Mapping) else None
    for block in content if isinstance(content, list) else []:
        text = str(block.get("text", "")) if isinstance(block, Mapping) else ""
        for key, head in (("criterion", CRITERION_HEAD), ("examples", EXAMPLES_HEAD), ("run", RUN_HEAD)):
            if text.startswith(head):
                parts[key] = text
    parts["judge model"] = body.get("model")
    parts["judge instructions"] = body.get("system")
    rest = {key: value for key, value in body.items() if key not in ("model", "system", "messages")}
    parts["request options"] = canonical_json(rest)
    return parts


# --- the answer -------------------------------------------------------------------------------------------------


@cache
def _verdict_validator() -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator(VERDICT_SCHEMA)


class VerdictError(ValueError):
    """The judge's answer is not the verdict shape."""


def _json_in(text: str) -> Any:
    stripped = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", stripped, flags=re.DOTALL)
    if fenced:
        stripped = fenced.group(1)
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start == -1 or end <= start:
            raise VerdictError(f"no JSON object in the judge's answer: {text[:200]!r}") from None
        try:
            return json.loads(stripped[start : end + 1])
        except json.JSONDecodeError as err:
            raise VerdictError(f"the judge's answer is not JSON ({err.msg}): {text[:200]!r}") from None


def parse_verdict(message: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict in a judge's Message (a dict): its text, as structured outputs return it or as plain JSON."""
    text = "".join(str(block.get("text", "")) for block in message.get("content") or [] if block.get("type") == "text")
    verdict = _json_in(text)
    error = jsonschema.exceptions.best_match(_verdict_validator().iter_errors(verdict))
    if error is not None:
        raise VerdictError(f"the judge's answer is not the verdict shape at {json_path(error.absolute_path)}: "
                           f"{error.message}")
    if not 0 <= verdict["score"] <= 1:
        raise VerdictError(f"the judge's score {verdict['score']} is not between 0 and 1")
    return verdict


def run_text(request: Mapping[str, Any]) -> str:
    """The rendered run a judge request shows (what its reasons must quote)."""
    parts = request_parts(request)
    return str(parts["run"] or "")


def judged(
    verdict: Mapping[str, Any], params: Mapping[str, Any], *, judge: str, shown: str | None = None
) -> CheckResult:
    """The check's result from a parsed verdict: the judge's reasons, each naming its step. `judge` says who
    judged ("claude-sonnet-4-6, simulator"); with `shown` (the run the judge read), a quote that is not in it is
    marked, so a reason the judge made up reads as such."""
    threshold = params.get("threshold")
    score = float(verdict["score"])
    passed = score >= float(threshold) if threshold is not None else verdict["verdict"] == "pass"
    reasons = [dict(r) for r in verdict["reasons"]]
    if shown is not None:
        flat = " ".join(shown.split())  # whitespace aside: a judge may fold a quote's line breaks
        for r in reasons:
            r["quote_found"] = " ".join(r["quote"].split()) in flat
    said = "; ".join(
        (f"step {r['step']}: " if r["step"] else "")
        + f"“{r['quote']}”{'' if r.get('quote_found', True) else ' (not found in the run)'} {r['explanation']}".strip()
        for r in reasons
    )
    graded = f" (score {score:.2f}{f', threshold {float(threshold):g}' if threshold is not None else ''})"
    reason = f"the judge ({judge}) says {verdict['verdict']}{graded}" + (f": {said}" if said else "")
    step = next((int(r["step"]) for r in reasons if r["step"]), None)
    return CheckResult(
        name=NAME,
        passed=passed,
        reason=reason,
        step=step,
        score=score,
        evidence={"verdict": verdict["verdict"], "score": score, "reasons": reasons, "judge": judge},
    )


def rubric(trajectory: Trajectory, params: Mapping[str, Any]) -> CheckResult:
    """Run through the registry alone there is no judge: the eval runner (harness.evals.judge) asks one."""
    return fail(
        NAME,
        "rubric is judged by a model: run it with `harness eval`, which replays the judge's recorded "
        "answer (harness.evals.judge)",
        judged=False,
    )


CHECKS = (
    CheckSpec(
        name=NAME,
        function=rubric,
        description="a criterion in words, judged by a model; the judge's calls are recorded to a judge cassette "
        "beside the golden and replayed (harness eval --judge replay|record|rewrite)",
        params_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["criterion"],
            "properties": {
                "criterion": {"type": "string", "minLength": 1, "description": "what must hold, in words"},
                "on": {
                    "enum": list(ON),
                    "default": "both",
                    "description": "what the judge reads: the final answer, the tool calls and results, or both",
                },
                "model": {"type": "string", "minLength": 1, "default": DEFAULT_MODEL, "description": "the judge"},
                "examples": {
                    "type": "array",
                    "description": "labelled cases shown to the judge",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["output", "verdict"],
                        "properties": {
                            "output": {"type": "string", "minLength": 1},
                            "verdict": {"enum": ["pass", "fail"]},
                            "why": {"type": "string"},
                        },
                    },
                },
                "threshold": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "description": "pass when the judge's score reaches this, instead of on its verdict",
                },
                "max_chars": {
                    "type": "integer",
                    "minimum": 1000,
                    "default": DEFAULT_MAX_CHARS,
                    "description": "the rendered run's budget; a longer run keeps its first and last steps",
                },
            },
        },
    ),
)
