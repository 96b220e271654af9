"""Outcome and budget checks: how each run ended, what it cost, and whether it went round in circles.

- outcome: every run ended on an expected stop_reason (default end_turn), or on an expected error
  (a recording of a 401 is expected to end on a 401);
- budgets: steps, tool calls, tokens by kind and cost under limits; the failure names the step at
  which the running total first went over;
- no_repeated_calls: no call (same tool, same canonical input) more than `max_in_a_row` times in a row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.checks.base import CheckResult, CheckSpec, counted, fail, ok
from harness.run import USAGE_FIELDS, Usage, canonical_json
from harness.trajectory import Trajectory

STOP_REASONS = (
    "end_turn",
    "tool_use",
    "max_tokens",
    "stop_sequence",
    "pause_turn",
    "refusal",
    "model_context_window_exceeded",
)


# --- outcome ---------------------------------------------------------------------------------------------------


def _expected_error_text(expected: Any) -> str:
    if expected is True:
        return "an error"
    parts = [str(expected[key]) for key in ("status", "type") if key in expected]
    return "error " + " ".join(parts)


def outcome(trajectory: Trajectory, params: Mapping[str, Any]) -> CheckResult:
    name = "outcome"
    expected_error = params.get("error")
    wanted = params.get("stop_reason", "end_turn")
    reasons = [wanted] if isinstance(wanted, str) else list(wanted)
    if not trajectory.runs:
        return fail(name, "the cassette holds no Messages API call")
    endings = []
    for run in trajectory.runs:
        result = run.outcome
        endings.append({"run": run.index, **result.to_dict()})
        where = f"step {result.step}" if result.step is not None else f"run {run.index}"
        if expected_error is not None:
            if result.kind != "error":
                return fail(
                    name,
                    f"{where}: run {run.index} ended on stop_reason {result.stop_reason}, expected "
                    f"{_expected_error_text(expected_error)}",
                    step=result.step,
                    endings=endings,
                )
            if isinstance(expected_error, Mapping):
                if "status" in expected_error and result.status != expected_error["status"]:
                    return fail(
                        name,
                        f"{where}: run {run.index} ended with HTTP {result.status} {result.error_type}, "
                        f"expected HTTP {expected_error['status']}",
                        step=result.step,
                        endings=endings,
                    )
                if "type" in expected_error and result.error_type != expected_error["type"]:
                    return fail(
                        name,
                        f"{where}: run {run.index} ended with {result.error_type}, expected {expected_error['type']}",
                        step=result.step,
                        endings=endings,
                    )
            continue
        if result.kind == "error":
            after = f" after step {result.step}" if result.step is not None else " before any step"
            return fail(
                name,
                f"run {run.index} ended{after} with {result.describe()} "
                f"({result.error_message or 'no message'}), expected stop_reason {' or '.join(reasons)}",
                step=result.step,
                endings=endings,
            )
        if result.stop_reason not in reasons:
            return fail(
                name,
                f"{where}: run {run.index} ended on stop_reason {result.stop_reason}, expected {' or '.join(reasons)}",
                step=result.step,
                endings=endings,
            )
    described = _expected_error_text(expected_error) if expected_error is not None else " or ".join(reasons)
    last = trajectory.runs[-1].outcome
    return ok(name, f"{len(trajectory.runs)} run(s) ended as expected ({described})", step=last.step, endings=endings)


# --- budgets ---------------------------------------------------------------------------------------------------


def budgets(trajectory: Trajectory, params: Mapping[str, Any]) -> CheckResult:
    name = "budgets"
    steps = trajectory.steps
    evidence: dict[str, Any] = {
        "steps": len(steps),
        "tool_calls": len(trajectory.tool_calls),
        "usage": trajectory.usage.to_dict(),
        "cost_usd": trajectory.cost_usd,
    }
    limit = params.get("max_steps")
    if limit is not None and len(steps) > limit:
        over = steps[limit]
        return fail(
            name, f"step {over.index}: {counted(len(steps), 'step')}, over the limit of {limit}", step=over.index,
            **evidence,
        )
    limit = params.get("max_tool_calls")
    calls = trajectory.tool_calls
    if limit is not None and len(calls) > limit:
        over_call = calls[limit]
        return fail(
            name,
            f"step {over_call.step}: {counted(len(calls), 'tool call')}, over the limit of {limit}",
            step=over_call.step,
            **evidence,
        )
    token_limits = params.get("max_tokens") or {}
    running = Usage()
    for step in steps:
        if step.usage_counted:
            running = running + step.usage
        for kind, cap in token_limits.items():
            used = running.total if kind == "total" else getattr(running, kind)
            if used > cap:
                label = kind.replace("_", " ")
                return fail(
                    name,
                    f"step {step.index}: {label} tokens reached {used:,}, over the budget of {cap:,}",
                    step=step.index,
                    kind=kind,
                    **evidence,
                )
    cap_cost = params.get("max_cost_usd")
    if cap_cost is not None:
        cost = trajectory.cost_usd
        if cost is None:
            if params.get("unknown_cost") == "fail":
                return fail(
                    name,
                    f"the cost of model {trajectory.model} is unknown, so the ${cap_cost} budget cannot be confirmed",
                    **evidence,
                )
        elif cost > cap_cost:
            last = steps[-1].index if steps else None
            return fail(
                name,
                f"step {last}: the run cost ${cost:.4f}, over the budget of ${cap_cost:.4f}",
                step=last,
                **evidence,
            )
    cost_text = "unknown" if evidence["cost_usd"] is None else f"${evidence['cost_usd']:.4f}"
    totals = (f"{counted(len(steps), 'step')}, {counted(len(calls), 'tool call')}, "
              f"{counted(trajectory.usage.total, 'token')}, cost {cost_text}")
    return ok(name, f"{totals}: within budget", **evidence)


# --- repeated calls --------------------------------------------------------------------------------------------


def no_repeated_calls(trajectory: Trajectory, params: Mapping[str, Any]) -> CheckResult:
    name = "no_repeated_calls"
    limit = int(params.get("max_in_a_row", 2))
    longest = 0
    for run in trajectory.runs:
        streak = 0
        previous: str | None = None
        for call in run.tool_calls:
            streak = streak + 1 if call.key == previous else 1
            previous = call.key
            longest = max(longest, streak)
            if streak > limit:
                text = canonical_json(call.input)
                text = text if len(text) <= 80 else text[:79] + "…"
                return fail(
                    name,
                    f"step {call.step}: {call.name}({text}) called {streak} times in a row (limit {limit})",
                    step=call.step,
                    tool=call.name,
                    input=call.input,
                    in_a_row=streak,
                )
    return ok(
        name, f"no call repeated more than {limit} times in a row (longest streak {longest})", longest_streak=longest
    )


def _one_ending(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    if "stop_reason" in params and "error" in params:
        return [("error", "give either stop_reason or error, not both: a run ends one way")]
    return []


_ERROR = {
    "oneOf": [
        {"const": True},
        {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "properties": {
                "status": {"type": "integer", "minimum": 100, "maximum": 599},
                "type": {"type": "string", "description": "API error type, e.g. overloaded_error, or timeout"},
            },
        },
    ]
}
_COUNT = {"type": "integer", "minimum": 0}

CHECKS = (
    CheckSpec(
        name="outcome",
        function=outcome,
        description="every run ended on an expected stop_reason (default end_turn) or on an expected error",
        params_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "stop_reason": {
                    "oneOf": [
                        {"enum": list(STOP_REASONS)},
                        {"type": "array", "items": {"enum": list(STOP_REASONS)}, "minItems": 1},
                    ],
                    "default": "end_turn",
                },
                "error": {**_ERROR, "description": "expect the run to end on an error (true, or its status/type)"},
            },
        },
        validate_params=_one_ending,
    ),
    CheckSpec(
        name="budgets",
        function=budgets,
        description="steps, tool calls, tokens by kind and cost under limits",
        params_schema={
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "properties": {
                "max_steps": _COUNT,
                "max_tool_calls": _COUNT,
                "max_tokens": {
                    "type": "object",
                    "additionalProperties": False,
                    "minProperties": 1,
                    "properties": {kind: _COUNT for kind in USAGE_FIELDS},
                },
                "max_cost_usd": {"type": "number", "minimum": 0},
                "unknown_cost": {
                    "enum": ["pass", "fail"],
                    "default": "pass",
                    "description": "what a model without a known price does to max_cost_usd",
                },
            },
        },
    ),
    CheckSpec(
        name="no_repeated_calls",
        function=no_repeated_calls,
        description="no tool call (same tool, same canonical input) more than max_in_a_row times in a row",
        params_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {"max_in_a_row": {"type": "integer", "minimum": 1, "default": 2}},
        },
    ),
)
