"""Baseline against candidate: two results documents in, one comparison document out.

Cases are matched by id, trials grouped (`harness.report.trials`): a case recorded N times is one
case with N trials on its side. Per case the comparison records

- each check's pass count on both sides, k of n, and its flip: `to_fail` when the candidate passes it
  less often than the baseline, `to_pass` when more often (with one trial each: pass -> fail, fail -> pass);
- the first step where the two trajectories part, and what changed there in the request and in the
  response, plus the first step whose response differs when that comes later (harness.report.divergence:
  ids the simulator or the API makes up are renamed by order of appearance first, so only real changes count);
- the tool sequence of both sides and its edits; tokens by kind, cost and steps, mean per trial, and
  the deltas; a unified diff of the final answers.

With several trials a side, each side's pass rate has its Wilson interval, the difference its Newcombe interval
and Fisher's exact p-value (harness.report.significance), per case and per check; a case whose trials both pass and
fail is `flaky`; the token and cost deltas get Welch intervals. `gate` (flip | significant) says whether a flip
within noise fails CI.

Divergence, tool sequences and answer diffs compare one trial of each side (`compared_trials`): the first
that fails a check which flipped against it (the trial that shows the change), else the first.

The document (`comparison_version` 1) embeds both results documents, so every view of it (Markdown,
JUnit, HTML) is a projection that needs nothing else. Exit code: 2 when a compared case could not run
on a side, else 1 when any check flips to fail, else 0. Cases present on one side only are refused
(`CaseSetMismatch`, exit 2) unless the caller allows them; then they are listed and left out.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from harness.errors import HarnessError
from harness.evals.document import ResultsDocument
from harness.files import atomic_write_text
from harness.report.divergence import first_divergence
from harness.report.significance import ALPHA, mean_difference, rate_record, wilson
from harness.report.trials import DEFAULT_K, TrialStats, case_stats, check_stats, group_cases
from harness.run import USAGE_FIELDS as _KINDS

__all__ = [
    "COMPARISON_VERSION",
    "GATES",
    "CaseSetMismatch",
    "compare_results",
    "comparison_exit_code",
    "write_comparison",
]

COMPARISON_VERSION = 1
# What fails CI (`harness compare --gate`): any check flipping to fail, or only a flip that is more than noise
# (Fisher's exact test over the trials, p < ALPHA; with one trial a side no flip is).
GATES = ("flip", "significant")
_ANSWER_DIFF_LINES = 200
_NAMED_LIMIT = 20  # case ids named in an error message


class CaseSetMismatch(HarnessError):
    """The two sides hold different cases and the caller did not allow it."""


# --- one case, both sides ------------------------------------------------------------------------------------


def _check_side(trials: Sequence[Mapping[str, Any]], check_id: str, stats: TrialStats) -> dict[str, Any]:
    runs = [check for case in trials for check in case["checks"] if check["id"] == check_id]
    shown = next((check for check in runs if not check["passed"]), runs[0])
    return {
        "n": stats.n,
        "c": stats.c,
        "passed": stats.c == stats.n,
        "reason": shown["reason"],
        "step": shown["step"],
        "check": shown["check"],
    }


def _checks(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    b_stats, c_stats = check_stats(before), check_stats(after)
    out = []
    for check_id in dict.fromkeys([*b_stats, *c_stats]):
        b, c = b_stats.get(check_id), c_stats.get(check_id)
        flip = None
        if b is not None and c is not None:
            if c.c * b.n < b.c * c.n:
                flip = "to_fail"
            elif c.c * b.n > b.c * c.n:
                flip = "to_pass"
        entry = {
            "id": check_id,
            "baseline": _check_side(before, check_id, b) if b else None,
            "candidate": _check_side(after, check_id, c) if c else None,
            "flip": flip,
        }
        if b is not None and c is not None and b.n and c.n:
            entry["significance"] = rate_record((b.c, b.n), (c.c, c.n))
        out.append(entry)
    return out


def _mean_usage(trials: Sequence[Mapping[str, Any]]) -> dict[str, float] | None:
    usages = [case["usage"] for case in trials if case.get("usage")]
    if not usages:
        return None
    return {kind: _tidy(sum(usage.get(kind, 0) for usage in usages) / len(usages)) for kind in _KINDS}


def _mean_cost(trials: Sequence[Mapping[str, Any]]) -> float | None:
    ran = [case for case in trials if case.get("trajectory") is not None]
    costs = [cost for case in ran if (cost := case.get("cost_usd")) is not None]
    if not ran or len(costs) != len(ran):
        return None
    return round(sum(costs) / len(costs), 6)


def _mean_steps(trials: Sequence[Mapping[str, Any]]) -> float | None:
    steps = [case["trajectory"]["steps"] for case in trials if case.get("trajectory")]
    return _tidy(sum(steps) / len(steps)) if steps else None


def _tidy(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 1)


def _tool_items(case: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((case.get("trajectory") or {}).get("tool_sequence") or [])


def _tool_label(item: Mapping[str, Any]) -> str:
    # An MCP tool with its server ("docs/search"): two servers may offer tools of one name.
    name = f"{item['server_name']}/{item['name']}" if item.get("server_name") else item["name"]
    return f"{name}{' (error)' if item.get('is_error') else ''}"


def tool_sequence_changes(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> list[str]:
    """Edits that turn the baseline's tool calls into the candidate's, each naming its steps."""
    a = [_tool_label(item) for item in before]
    b = [_tool_label(item) for item in after]
    lines = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        old = ", ".join(f"{a[i]} (step {before[i]['step']})" for i in range(i1, i2))
        new = ", ".join(f"{b[j]} (step {after[j]['step']})" for j in range(j1, j2))
        if op == "replace":
            lines.append(f"{old} → {new}")
        elif op == "delete":
            lines.append(f"dropped: {old}")
        elif op == "insert":
            lines.append(f"added: {new}")
    return lines


def _answer_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    old = ((before.get("trajectory") or {}).get("final_text") or "").splitlines()
    new = ((after.get("trajectory") or {}).get("final_text") or "").splitlines()
    lines = list(difflib.unified_diff(old, new, "baseline", "candidate", lineterm="", n=2))
    if len(lines) > _ANSWER_DIFF_LINES:
        lines = [*lines[:_ANSWER_DIFF_LINES], f"… {len(lines) - _ANSWER_DIFF_LINES} more lines"]
    return lines


def _per_trial(trials: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[float] | None]:
    """Each trial's total tokens, and its cost (None when any trial has no known price)."""
    ran = [case for case in trials if case.get("trajectory") is not None]
    tokens = [float((case.get("usage") or {}).get("total", 0)) for case in ran]
    costs = [float(cost) for case in ran if (cost := case.get("cost_usd")) is not None]
    return tokens, None if len(costs) != len(ran) else costs


def _side(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    errors = [case for case in trials if case["status"] == "error"]
    stats = case_stats(trials)
    return {
        "case_ids": [case["id"] for case in trials],
        "trials": stats.to_dict(),
        "pass_rate": wilson(stats.c, stats.n).to_dict() if stats.n else None,
        "flaky": 0 < stats.c < stats.n,  # its trials both pass and fail
        "errored": len(errors),
        "error": errors[0]["error"] if errors else None,
        "steps": _mean_steps(trials),
        "usage": _mean_usage(trials),
        "cost_usd": _mean_cost(trials),
    }


def _representative(trials: Sequence[Mapping[str, Any]], checks: Sequence[Mapping[str, Any]], flip: str) -> Mapping:
    """The trial to diff: the first that fails a check flipping `flip` on the other side (the trial that shows the
    change), else the first."""
    flipped = {check["id"] for check in checks if check["flip"] == flip}
    for case in trials:
        if any(check["id"] in flipped and not check["passed"] for check in case["checks"]):
            return case
    return trials[0]


def _judged_checks_only(trials: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The trials without their checks that need re-judging: a stale judgement is neither a pass nor a fail."""
    out: list[Mapping[str, Any]] = []
    for case in trials:
        stale = set(case.get("needs_rejudging") or ())
        out.append({**case, "checks": [c for c in case["checks"] if c["id"] not in stale]} if stale else case)
    return out


def compare_case(case_id: str, before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> dict:
    """One case (a group of trials on each side) compared."""
    stale = sorted({check for case in [*before, *after] for check in case.get("needs_rejudging") or ()})
    before, after = _judged_checks_only(before), _judged_checks_only(after)
    baseline, candidate = _side(before), _side(after)
    checks = _checks(before, after)
    first_b, first_c = _representative(before, checks, "to_pass"), _representative(after, checks, "to_fail")
    ran = first_b.get("trajectory") is not None and first_c.get("trajectory") is not None
    divergence = first_divergence(first_b, first_c) if ran else None
    tools_b, tools_c = _tool_items(first_b), _tool_items(first_c)
    usage_delta = None
    if baseline["usage"] is not None and candidate["usage"] is not None:
        usage_delta = {kind: _tidy(round(candidate["usage"][kind] - baseline["usage"][kind], 1)) for kind in _KINDS}
    cost_delta = None
    if baseline["cost_usd"] is not None and candidate["cost_usd"] is not None:
        cost_delta = round(candidate["cost_usd"] - baseline["cost_usd"], 6)
    flips = {check["flip"] for check in checks}
    b_stats, c_stats = case_stats(before), case_stats(after)
    significance = rate_record((b_stats.c, b_stats.n), (c_stats.c, c_stats.n)) if b_stats.n and c_stats.n else None
    (tokens_b, costs_b), (tokens_c, costs_c) = _per_trial(before), _per_trial(after)
    tokens_interval = mean_difference(tokens_b, tokens_c)
    cost_interval = mean_difference(costs_b, costs_c) if costs_b is not None and costs_c is not None else None
    noisy = [check for check in checks if check["flip"] == "to_fail" and not check.get("significance", {}).get(
        "significant", False)]
    if baseline["errored"] or candidate["errored"]:
        status = "error"
    elif "to_fail" in flips:
        status = "regressed"
    elif "to_pass" in flips:
        status = "improved"
    elif (divergence and divergence["where"] != "unknown") or (usage_delta and any(usage_delta.values())):
        status = "changed"
    else:
        status = "unchanged"
    return {
        "id": case_id,
        "suite": first_c.get("suite") or first_b.get("suite"),
        "compared_trials": {"baseline": first_b["id"], "candidate": first_c["id"]},
        "status": status,
        "baseline": baseline,
        "candidate": candidate,
        "checks": checks,
        "divergence": divergence,
        "tool_sequence": {
            "baseline": [_tool_label(item) for item in tools_b],
            "candidate": [_tool_label(item) for item in tools_c],
            "changes": tool_sequence_changes(tools_b, tools_c),
        },
        "usage_delta": usage_delta,
        "cost_delta": cost_delta,
        "significance": significance,
        "needs_rejudging": stale,
        "flaky": baseline["flaky"] or candidate["flaky"],
        # A regression every flipped check of which is within noise: with --gate significant it does not fail CI.
        "within_noise": status == "regressed" and len(noisy) == len([c for c in checks if c["flip"] == "to_fail"]),
        "delta_intervals": {
            "tokens": tokens_interval.to_dict(1) if tokens_interval else None,
            "cost_usd": cost_interval.to_dict() if cost_interval else None,
        },
        "answer_diff": _answer_diff(first_b, first_c) if ran else [],
    }


# --- the document ----------------------------------------------------------------------------------------------


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_NAMED_LIMIT])
    return shown + (f" and {len(ids) - _NAMED_LIMIT} more" if len(ids) > _NAMED_LIMIT else "")


def _sum_deltas(cases: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], float, bool]:
    """Token deltas summed by kind; the cost delta summed over the cases priced on both sides, and whether all were."""
    usage = {kind: 0.0 for kind in _KINDS}
    for case in cases:
        for kind in _KINDS:
            usage[kind] += (case["usage_delta"] or {}).get(kind, 0)
    known = [case["cost_delta"] for case in cases if case["cost_delta"] is not None]
    return (
        {kind: _tidy(round(value, 1)) for kind, value in usage.items()},
        round(sum(known), 6),
        len(known) == len(cases),
    )


def compare_results(
    baseline: ResultsDocument,
    candidate: ResultsDocument,
    *,
    allow_different_cases: bool = False,
    baseline_label: str | None = None,
    candidate_label: str | None = None,
    k: int = DEFAULT_K,
    gate: str = "flip",
) -> dict[str, Any]:
    """The comparison document of two results documents (see the module docstring)."""
    from harness._version import __version__

    if gate not in GATES:
        raise HarnessError(f"unknown gate {gate!r}; one of {', '.join(GATES)}")
    before, after = group_cases(baseline["cases"]), group_cases(candidate["cases"])
    only_before = [case_id for case_id in before if case_id not in after]
    only_after = [case_id for case_id in after if case_id not in before]
    if (only_before or only_after) and not allow_different_cases:
        parts = []
        if only_before:
            parts.append(f"missing from the candidate: {_named(only_before)}")
        if only_after:
            parts.append(f"missing from the baseline: {_named(only_after)}")
        raise CaseSetMismatch(
            "the two sides hold different cases (" + "; ".join(parts) + "); pass --allow-different-cases "
            "to compare the cases they share"
        )
    cases = [compare_case(case_id, trials, after[case_id]) for case_id, trials in before.items() if case_id in after]
    statuses = [case["status"] for case in cases]
    flips = [check["flip"] for case in cases for check in case["checks"]]
    usage_delta, cost_delta, cost_known = _sum_deltas(cases)
    if "error" in statuses:
        status = "error"
    elif "regressed" in statuses:
        status = "regressed"
    elif "improved" in statuses:
        status = "improved"
    elif "changed" in statuses:
        status = "changed"
    else:
        status = "unchanged"
    summary = {
        "status": status,
        "cases": len(cases),
        **{name: statuses.count(name) for name in ("regressed", "improved", "changed", "unchanged")},
        "errored": statuses.count("error"),
        "checks_flipped_to_fail": flips.count("to_fail"),
        "checks_flipped_to_pass": flips.count("to_pass"),
        "only_in_baseline": only_before,
        "only_in_candidate": only_after,
        "usage_delta": usage_delta,
        "cost_delta": cost_delta,
        "cost_delta_known": cost_known,
        "flaky": [case["id"] for case in cases if case["flaky"]],
        "needs_rejudging": [case["id"] for case in cases if case["needs_rejudging"]],
        "regressed_within_noise": sum(1 for case in cases if case["within_noise"]),
        "alpha": ALPHA,
    }
    return {
        "comparison_version": COMPARISON_VERSION,
        "tool": {"name": "loop-harness", "version": __version__},
        "created_at": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "k": k,
        "gate": gate,
        "baseline": {"label": baseline_label, "results": dict(baseline)},
        "candidate": {"label": candidate_label, "results": dict(candidate)},
        "summary": summary,
        "cases": cases,
    }


def comparison_exit_code(comparison: Mapping[str, Any], gate: str | None = None) -> int:
    """1 when a check flipped to fail (with gate `significant`: a flip that is more than noise), whatever else the
    comparison holds, as `harness eval` exits 1 whenever a check failed; else 2 when a compared case could not run
    on a side or a judged check needs re-judging (its verdict is unknown, so the comparison is not done); else 0.
    The gate is the document's (`compare_results(gate=...)`) unless given."""
    gate = gate or comparison.get("gate", "flip")
    summary = comparison["summary"]
    beyond_noise = summary["regressed"] > summary.get("regressed_within_noise", 0)
    if summary["regressed"] and (gate != "significant" or beyond_noise):
        return 1
    return 2 if summary["status"] == "error" or summary.get("needs_rejudging") else 0


def write_comparison(path: Any, comparison: Mapping[str, Any]) -> None:
    atomic_write_text(path, json.dumps(comparison, indent=2, ensure_ascii=False, default=str) + "\n")
