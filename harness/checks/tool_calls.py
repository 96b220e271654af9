"""Trajectory match: the tool calls a run made against the ones a golden expects.

Sequence modes (`mode`):
- strict: the same calls in the same order, no more, no fewer;
- in_order: the expected calls appear in this order; other calls may come between them;
- unordered: the same calls in any order (a one-to-one assignment must exist);
- subset: every call made is one the golden expects (expected calls may be left out);
- superset: every expected call was made (other calls are allowed).

Argument modes (`args`, per tool in `tools`): exact (equal after leaving out `ignore_paths`), ignore
(names only), subset (the call's arguments are a part of the expected ones), superset (the call has
at least the expected arguments, with their values). An expected call's `shape_paths` are compared by JSON
type only (what a simulator made up: `harness bless` writes them from the cassette). An expected call
without `input` matches on its name alone. Unordered modes find a maximum bipartite matching, never a greedy first fit.

Every result carries a `score`: the F1 of the tool calls (precision: matched calls / calls made; recall:
matched calls / calls expected) under the maximum matching the mode allows (a bipartite matching for the
unordered modes, the longest order-keeping one for strict and in_order), so a near miss reads 0.8, not 0.
With `threshold`, the score decides: the check passes when the F1 reaches it, and the reason still names the
first step that broke the mode. Expected calls may carry a `turn` label: calls with one label must be made in
one assistant turn (parallel tool use), calls with different labels in different turns, in the labels' order
(sequential).

Paths in `ignore_paths` are dotted, with `[n]` or `*` for list items and `*` for any key:
"options.verbose", "$.filters[*].id".
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from harness.checks.base import CheckResult, CheckSpec, counted, fail, ok
from harness.checks.matching import maximum_matching
from harness.jsondata import canonical_json, drop_paths, parse_path
from harness.run import ToolCall
from harness.trajectory import Trajectory

NAME = "trajectory_match"
MODES = ("strict", "in_order", "unordered", "subset", "superset")
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
        actual, wanted = drop_paths(call.input, paths), drop_paths(expected["input"], paths)
        for shaped in (parse_path(path) for path in expected.get("shape_paths") or []):
            actual, wanted = _typed_at(actual, shaped), _typed_at(wanted, shaped)
        return argument_mismatches(actual, wanted, mode)


def _json_type(value: Any) -> str:
    kinds = ((bool, "<boolean>"), (int | float, "<number>"), (dict, "<object>"), (list, "<array>"), (str, "<string>"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "<null>")


def _typed_at(value: Any, path: tuple[str, ...]) -> Any:
    """`value` with what `path` names replaced by its JSON type: a `shape_paths` entry is compared by type only."""
    if not path:
        return _json_type(value)
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {key: _typed_at(item, rest) if head in ("*", key) else item for key, item in value.items()}
    if isinstance(value, list) and (head == "*" or head.isdigit()):
        return [_typed_at(item, rest) if head in ("*", str(i)) else item for i, item in enumerate(value)]
    return value


def _describe(expected: Mapping[str, Any]) -> str:
    if "input" not in expected:
        return str(expected["name"])
    text = canonical_json(expected["input"])
    return f"{expected['name']}({text if len(text) <= 80 else text[:79] + '…'})"


def _describe_call(call: ToolCall) -> str:
    text = canonical_json(call.input)
    return f"{call.name}({text if len(text) <= 80 else text[:79] + '…'})"


def _strict(
    expected: Sequence[Mapping[str, Any]], calls: list[ToolCall], rules: _Rules, last_step: int | None
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
            f"({counted(len(calls), 'call')}, expected {len(expected)})",
            step=extra.step,
            extra=[call.to_dict() for call in calls[len(expected) :]],
        )
    if len(calls) < len(expected):
        want = expected[len(calls)]
        return fail(
            NAME,
            f"step {last_step}: the run ended without tool call {len(calls) + 1}, "
            f"{_describe(want)} ({counted(len(calls), 'call')}, expected {len(expected)})",
            step=last_step,
            missing=[dict(item) for item in expected[len(calls) :]],
        )
    return None


def _unordered(
    expected: Sequence[Mapping[str, Any]],
    calls: list[ToolCall],
    rules: _Rules,
    mode: str,
    last_step: int | None,
    evidence: dict[str, Any],
    matched: Mapping[int, int],
) -> CheckResult | None:
    used = set(matched.values())
    evidence["matching"] = [{"expected": i, "call": j, "step": calls[j].step} for i, j in sorted(matched.items())]
    if mode in ("unordered", "superset"):
        for index, want in enumerate(expected):
            if index in matched:
                continue
            same_name = [(j, c) for j, c in enumerate(calls) if c.name == want["name"]]
            free = [(j, c) for j, c in same_name if j not in used]
            if free:  # a call of that tool is left over: its arguments are what is wrong
                return _nearest_miss(
                    want, [call for _, call in free], rules, evidence, f"expected call {_describe(want)} is not matched"
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


def _nearest_miss(
    want: Mapping[str, Any], candidates: list[ToolCall], rules: _Rules, evidence: dict[str, Any], what: str
) -> CheckResult:
    """`want` matched none of `candidates` (calls of its tool): the failure names the nearest one (fewest
    differences, the earliest among equals) and its first difference."""
    nearest = min(candidates, key=lambda call: len(rules.mismatches(want, call)))
    problems = rules.mismatches(want, nearest)
    return fail(
        NAME,
        f"step {nearest.step}: {what}; nearest is {_describe_call(nearest)}: {problems[0]}",
        step=nearest.step,
        unmatched_expected=dict(want),
        nearest=nearest.to_dict(),
        problems=problems,
        **evidence,
    )


def _in_order(
    expected: Sequence[Mapping[str, Any]],
    calls: list[ToolCall],
    rules: _Rules,
    last_step: int | None,
    evidence: dict[str, Any],
) -> CheckResult | None:
    """Each expected call at the first matching call after the one before it (the earliest fit is optimal for a
    subsequence), so the first expected call that cannot be placed is where the order breaks."""
    position = 0
    matching = []
    for index, want in enumerate(expected):
        found = next((j for j in range(position, len(calls)) if not rules.mismatches(want, calls[j])), None)
        if found is not None:
            matching.append({"expected": index, "call": found, "step": calls[found].step})
            position = found + 1
            continue
        evidence["matching"] = matching
        after = f" after step {calls[position - 1].step}" if position else ""
        later = [c for c in calls[position:] if c.name == want["name"]]
        if later:
            return _nearest_miss(
                want, later, rules, evidence, f"expected call {index + 1}, {_describe(want)}, is not matched{after}"
            )
        earlier = [c for c in calls[:position] if not rules.mismatches(want, c)]
        if earlier:
            return fail(
                NAME,
                f"step {earlier[0].step}: expected call {index + 1}, {_describe(want)}, comes too early: it was made "
                f"at step {earlier[0].step}, expected{after}",
                step=earlier[0].step,
                unmatched_expected=dict(want),
                **evidence,
            )
        return fail(
            NAME,
            f"step {last_step}: the run ended without calling {_describe(want)} (expected call {index + 1}{after})",
            step=last_step,
            unmatched_expected=dict(want),
            **evidence,
        )
    evidence["matching"] = matching
    return None


def _ordered_matches(
    expected: Sequence[Mapping[str, Any]], calls: list[ToolCall], rules: _Rules
) -> list[tuple[int, int]]:
    """The longest order-keeping matching of expected calls to calls made (an LCS under the matching rules)."""
    n, m = len(expected), len(calls)
    fits = [[not rules.mismatches(want, call) for call in calls] for want in expected]
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best[i][j] = max(best[i + 1][j], best[i][j + 1], best[i + 1][j + 1] + 1 if fits[i][j] else 0)
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if fits[i][j] and best[i][j] == best[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif best[i + 1][j] >= best[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _bipartite(expected: Sequence[Mapping[str, Any]], calls: list[ToolCall], rules: _Rules) -> dict[int, int]:
    """The unordered modes' maximum matching {expected: call}: what they judge by, and what they score."""
    adjacency = [[j for j, call in enumerate(calls) if not rules.mismatches(want, call)] for want in expected]
    return maximum_matching(adjacency, len(calls))


def call_score(matched: int, expected: int, made: int) -> dict[str, Any]:
    """Precision, recall and F1 of `matched` calls out of `made`, against `expected`; an empty side is perfect."""
    precision = matched / made if made else 1.0
    recall = matched / expected if expected else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 6),
        "recall": round(recall, 6),
        "f1": round(f1, 6),
        "matched": matched,
        "expected": expected,
        "calls": made,
    }


def _turn_failure(
    expected: Sequence[Mapping[str, Any]], calls: list[ToolCall], pairs: list[tuple[int, int]]
) -> CheckResult | None:
    """Expected calls labelled with one `turn` share a step (parallel); different labels, different steps in order."""
    steps: dict[str, list[tuple[int, ToolCall]]] = {}
    for i, j in pairs:
        label = expected[i].get("turn")
        if label is not None:
            steps.setdefault(str(label), []).append((i, calls[j]))
    for label, members in steps.items():
        made = sorted({call.step for _, call in members})
        if len(made) > 1:
            names = ", ".join(_describe_call(call) for _, call in members)
            return fail(
                NAME,
                f"step {made[1]}: the calls of turn {label!r} ({names}) were expected in one assistant turn "
                f"(parallel), made in steps {', '.join(map(str, made))}",
                step=made[1],
                turn=label,
                steps=made,
            )
    order = sorted(steps.items(), key=lambda item: min(i for i, _ in item[1]))
    for (first, a), (second, b) in itertools.pairwise(order):
        step_a, step_b = a[0][1].step, b[0][1].step
        if step_b <= step_a:
            how = "in the same assistant turn" if step_b == step_a else "before it"
            return fail(
                NAME,
                f"step {step_b}: turn {second!r} ({_describe_call(b[0][1])}) was expected in a later turn than "
                f"turn {first!r} (step {step_a}, sequential), but came {how}",
                step=step_b,
                turns=[first, second],
                steps=[step_a, step_b],
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
    if mode in ("strict", "in_order"):
        failure = (
            _strict(expected, calls, rules, last_step)
            if mode == "strict"
            else _in_order(expected, calls, rules, last_step, evidence)
        )
        pairs = _ordered_matches(expected, calls, rules)
    else:
        matched = _bipartite(expected, calls, rules)
        failure = _unordered(expected, calls, rules, mode, last_step, evidence, matched)
        pairs = sorted(matched.items())
    score = call_score(len(pairs), len(expected), len(calls))
    if failure is None:
        failure = _turn_failure(expected, calls, pairs)
    threshold = params.get("threshold")
    graded = f"score {score['f1']:.2f} (precision {score['precision']:.2f}, recall {score['recall']:.2f})"
    if threshold is not None:
        reached = score["f1"] >= float(threshold)
        verdict = f"{graded} {'reaches' if reached else 'is below'} the threshold {float(threshold):g}"
        if failure is None:
            return ok(
                NAME,
                f"{verdict}; the calls match ({mode})",
                step=None,
                score=score,
                calls=[_describe_call(call) for call in calls],
                **evidence,
            ).graded(score["f1"])
        result = failure if not reached else ok(NAME, "", step=failure.step, **failure.evidence)
        return replace(
            result, reason=f"{verdict}; {failure.reason}", evidence={**failure.evidence, "score": score}
        ).graded(score["f1"])
    if failure is not None:
        return replace(failure, evidence={**failure.evidence, "score": score}).graded(score["f1"])
    return ok(
        NAME,
        f"{len(calls)} tool call(s) match the {len(expected)} expected ({mode}, arguments {rules.args})",
        calls=[_describe_call(call) for call in calls],
        score=score,
        **evidence,
    ).graded(score["f1"])


_PATHS = {"type": "array", "items": {"type": "string", "minLength": 1}}
_EXPECTED_CALL = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "input": {"type": "object", "description": "expected arguments; leave out to match on the name alone"},
        "shape_paths": {
            **_PATHS,
            "description": "argument paths compared by JSON type only, not by value ($ for the whole input): "
            "what a simulator made up (harness bless writes them)",
        },
        "turn": {
            "type": ["string", "integer"],
            "description": "calls with one label come in one assistant turn (parallel); different labels, "
            "different turns in this order (sequential)",
        },
    },
}

CHECKS = (
    CheckSpec(
        name=NAME,
        function=trajectory_match,
        description="the run's tool calls against the expected ones: sequence mode strict|in_order|unordered|subset|"
        "superset, a score (F1 of the calls) and an optional threshold, parallel and sequential turns, "
        "argument mode exact|ignore|subset|superset, per-tool overrides, ignored argument paths",
        params_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["expected"],
            "properties": {
                "expected": {"type": "array", "items": _EXPECTED_CALL},
                "mode": {"enum": list(MODES), "default": "strict"},
                "args": {"enum": list(ARG_MODES), "default": "exact"},
                "threshold": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "description": "pass when the F1 score of the calls reaches this, instead of on an exact match",
                },
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
