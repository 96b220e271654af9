"""Trajectory match: the tool calls a run made against the ones a golden expects.

Sequence modes (`mode`):
- strict: the same calls in the same order, no more, no fewer;
- unordered: the same calls in any order (a one-to-one assignment must exist);
- subset: every call made is one the golden expects (expected calls may be left out);
- superset: every expected call was made (other calls are allowed).

Argument modes (`args`, per tool in `tools`): exact (equal after leaving out `ignore_paths`), ignore
(names only), subset (the call's arguments are a part of the expected ones), superset (the call has
at least the expected arguments, with their values). An expected call without `input` matches on its
name alone. Unordered modes find a maximum bipartite matching, never a greedy first fit.

Paths in `ignore_paths` are dotted, with `[n]` or `*` for list items and `*` for any key:
"options.verbose", "$.filters[*].id".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.checks.base import CheckResult, CheckSpec, fail, ok
from harness.checks.matching import maximum_matching
from harness.jsondata import canonical_json, drop_paths, parse_path
from harness.run import ToolCall
from harness.trajectory import Trajectory

NAME = "trajectory_match"
MODES = ("strict", "unordered", "subset", "superset")
ARG_MODES = ("exact", "ignore", "subset", "superset")
_MISSING = object()


# --- argument paths -----------------------------------------------------------------------------------------


def _join(path: str, key: Any) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"


def _same_scalar(a: Any, b: Any) -> bool:
    # JSON has one number type, but true is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def argument_mismatches(actual: Any, expected: Any, mode: str, path: str = "$") -> list[str]:
    """Where `actual` breaks `expected` under an argument mode; [] when it matches."""
    if mode == "ignore":
        return []
    if isinstance(actual, dict) and isinstance(expected, dict):
        problems = []
        for key in expected:
            if key not in actual:
                if mode in ("exact", "superset"):
                    problems.append(
                        f"argument {_join(path, key)} is missing (expected {canonical_json(expected[key])})"
                    )
                continue
            problems.extend(argument_mismatches(actual[key], expected[key], mode, _join(path, key)))
        if mode in ("exact", "subset"):
            problems.extend(
                f"argument {_join(path, key)} = {canonical_json(actual[key])} is not expected"
                for key in actual
                if key not in expected
            )
        return problems
    if isinstance(actual, list) and isinstance(expected, list):
        if len(actual) != len(expected):
            return [f"argument {path} has {len(actual)} item(s), expected {len(expected)}"]
        problems = []
        for index, (one, other) in enumerate(zip(actual, expected, strict=True)):
            problems.extend(argument_mismatches(one, other, mode, _join(path, index)))
        return problems
    if type(actual) is not type(expected) and not (
        isinstance(actual, int | float)
        and isinstance(expected, int | float)
        and not isinstance(actual, bool)
        and not isinstance(expected, bool)
    ):
        return [f"argument {path} is {canonical_json(actual)}, expected {canonical_json(expected)}"]
    if not _same_scalar(actual, expected):
        return [f"argument {path} is {canonical_json(actual)}, expected {canonical_json(expected)}"]
    return []


# --- matching ------------------------------------------------------------------------------------------------


class _Rules:
    def __init__(self, params: Mapping[str, Any]) -> None:
        self.args = str(params.get("args", "exact"))
        self.ignore = [parse_path(p) for p in params.get("ignore_paths") or []]
        self.per_tool: dict[str, tuple[str, list[tuple[str, ...]]]] = {}
        for name, override in (params.get("tools") or {}).items():
            paths = self.ignore + [parse_path(p) for p in override.get("ignore_paths") or []]
            self.per_tool[name] = (str(override.get("args", self.args)), paths)

    def mismatches(self, expected: Mapping[str, Any], call: ToolCall) -> list[str]:
        if call.name != expected["name"]:
            return [f"tool is {call.name}, expected {expected['name']}"]
        if "input" not in expected:
            return []
        mode, paths = self.per_tool.get(call.name, (self.args, self.ignore))
        return argument_mismatches(drop_paths(call.input, paths), drop_paths(expected["input"], paths), mode)


def _describe(expected: Mapping[str, Any]) -> str:
    if "input" not in expected:
        return str(expected["name"])
    text = canonical_json(expected["input"])
    return f"{expected['name']}({text if len(text) <= 80 else text[:79] + '…'})"


def _describe_call(call: ToolCall) -> str:
    text = canonical_json(call.input)
    return f"{call.name}({text if len(text) <= 80 else text[:79] + '…'})"


def _strict(
    expected: list[Mapping[str, Any]], calls: list[ToolCall], rules: _Rules, last_step: int | None
) -> CheckResult | None:
    for position, (want, call) in enumerate(zip(expected, calls, strict=False), start=1):
        problems = rules.mismatches(want, call)
        if problems:
            return fail(
                NAME,
                f"step {call.step}: tool call {position} is {_describe_call(call)}: {problems[0]}",
                step=call.step,
                position=position,
                expected=dict(want),
                actual=call.to_dict(),
                problems=problems,
            )
    if len(calls) > len(expected):
        extra = calls[len(expected)]
        return fail(
            NAME,
            f"step {extra.step}: unexpected extra tool call {_describe_call(extra)} "
            f"({len(calls)} calls, expected {len(expected)})",
            step=extra.step,
            extra=[call.to_dict() for call in calls[len(expected) :]],
        )
    if len(calls) < len(expected):
        want = expected[len(calls)]
        return fail(
            NAME,
            f"step {last_step}: the run ended without tool call {len(calls) + 1}, "
            f"{_describe(want)} ({len(calls)} calls, expected {len(expected)})",
            step=last_step,
            missing=[dict(item) for item in expected[len(calls) :]],
        )
    return None


def _unordered(
    expected: list[Mapping[str, Any]],
    calls: list[ToolCall],
    rules: _Rules,
    mode: str,
    last_step: int | None,
    evidence: dict[str, Any],
) -> CheckResult | None:
    adjacency = [[j for j, call in enumerate(calls) if not rules.mismatches(want, call)] for want in expected]
    matched = maximum_matching(adjacency, len(calls))
    used = set(matched.values())
    evidence["matching"] = [{"expected": i, "call": j, "step": calls[j].step} for i, j in sorted(matched.items())]
    if mode in ("unordered", "superset"):
        for index, want in enumerate(expected):
            if index in matched:
                continue
            same_name = [(j, c) for j, c in enumerate(calls) if c.name == want["name"]]
            free = [(j, c) for j, c in same_name if j not in used]
            if free:  # a call of that tool is left over: its arguments are what is wrong
                _, nearest = min(free, key=lambda item: (len(rules.mismatches(want, item[1])), item[0]))
                problems = rules.mismatches(want, nearest)
                return fail(
                    NAME,
                    f"step {nearest.step}: expected call {_describe(want)} is not matched; nearest is "
                    f"{_describe_call(nearest)}: {problems[0]}",
                    step=nearest.step,
                    unmatched_expected=dict(want),
                    nearest=nearest.to_dict(),
                    problems=problems,
                    **evidence,
                )
            if same_name:  # every call of that tool answers another expected call: this one was never made
                steps = ", ".join(str(s) for s in dict.fromkeys(c.step for _, c in same_name))
                return fail(
                    NAME,
                    f"step {last_step}: the run ended without a call matching {_describe(want)}; "
                    f"each {want['name']} call (step {steps}) matches another expected call",
                    step=last_step,
                    unmatched_expected=dict(want),
                    **evidence,
                )
            return fail(
                NAME,
                f"step {last_step}: the run ended without calling {_describe(want)}",
                step=last_step,
                unmatched_expected=dict(want),
                **evidence,
            )
    if mode in ("unordered", "subset"):
        for j, call in enumerate(calls):
            if j not in used:
                return fail(
                    NAME,
                    f"step {call.step}: unexpected tool call {_describe_call(call)}",
                    step=call.step,
                    unexpected=call.to_dict(),
                    **evidence,
                )
    return None


def trajectory_match(trajectory: Trajectory, params: Mapping[str, Any]) -> CheckResult:
    mode = str(params.get("mode", "strict"))
    expected = [dict(item) for item in params.get("expected") or []]
    calls = trajectory.tool_calls
    if not params.get("include_server_tools", True):
        calls = [call for call in calls if not call.server]
    rules = _Rules(params)
    last_step = trajectory.steps[-1].index if trajectory.steps else None
    evidence: dict[str, Any] = {}
    if mode == "strict":
        failure = _strict(expected, calls, rules, last_step)
    else:
        failure = _unordered(expected, calls, rules, mode, last_step, evidence)
    if failure is not None:
        return failure
    return ok(
        NAME,
        f"{len(calls)} tool call(s) match the {len(expected)} expected ({mode}, arguments {rules.args})",
        calls=[_describe_call(call) for call in calls],
        **evidence,
    )


_EXPECTED_CALL = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "input": {"type": "object", "description": "expected arguments; leave out to match on the name alone"},
    },
}
_PATHS = {"type": "array", "items": {"type": "string", "minLength": 1}}

CHECKS = (
    CheckSpec(
        name=NAME,
        function=trajectory_match,
        description="the run's tool calls against the expected ones: sequence mode strict|unordered|subset|superset, "
        "argument mode exact|ignore|subset|superset, per-tool overrides, ignored argument paths",
        params_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["expected"],
            "properties": {
                "expected": {"type": "array", "items": _EXPECTED_CALL},
                "mode": {"enum": list(MODES), "default": "strict"},
                "args": {"enum": list(ARG_MODES), "default": "exact"},
                "ignore_paths": {**_PATHS, "description": "argument paths left out of every comparison"},
                "tools": {
                    "type": "object",
                    "description": "per-tool overrides, by tool name",
                    "additionalProperties": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {"args": {"enum": list(ARG_MODES)}, "ignore_paths": _PATHS},
                    },
                },
                "include_server_tools": {
                    "type": "boolean",
                    "default": True,
                    "description": "count server tool calls (web search, code execution)",
                },
            },
        },
    ),
)
