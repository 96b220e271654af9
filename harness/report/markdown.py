"""Markdown views of a results document and of a comparison, fit for a GitHub step summary or a PR comment.

Both lead with one line that says whether to worry, then the failures with their reasons and steps,
then the tables. Suites that passed whole fold into <details>, so a long suite does not bury a failure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.evals.document import ResultsDocument
from harness.report._text import (
    ICONS,
    KIND_LABELS,
    KINDS,
    check_step,
    cost,
    cost_parts,
    delta_with_interval,
    divergence_short,
    error_text,
    one_line,
    side_text,
    signed,
    summary_cost_delta,
    tokens,
    trial_rates,
)
from harness.report.trials import DEFAULT_K, trial_stats

__all__ = ["comparison_markdown", "results_markdown"]


def cell(text: Any) -> str:
    """Text for a table cell: one line, pipes escaped, no raw HTML."""
    return one_line(str(text)).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def code(text: Any) -> str:
    value = one_line(str(text), 200).replace("|", "\\|")
    return f"`{value}`" if "`" not in value else f"``{value}``"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _summary_line(summary: Mapping[str, Any]) -> str:
    usage = summary["usage"]
    spent = cost(summary["cost_usd"]) + ("" if summary["cost_known"] else " (some models unpriced)")
    return (
        f"**{summary['cases']} cases**: {summary['passed']} passed, {summary['failed']} failed, "
        f"{summary['errored']} errored · **{summary['checks_passed']}/{summary['checks']} checks passed** · "
        + (f"**{summary['needs_rejudging']} need re-judging** · " if summary.get("needs_rejudging") else "")
        + "tokens: " + ", ".join(f"{KIND_LABELS[k]} {tokens(usage[k])}" for k in KINDS) + f" · cost {spent}"
    )


def _rejudging(check: Mapping[str, Any]) -> bool:
    return (check.get("judge") or {}).get("status") == "needs_rejudging"


def _failures(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = [
        [code(case["id"]), code(check["id"]), check_step(check), cell(check["reason"])]
        for case in cases
        for check in case["checks"]
        if not check["passed"] and not _rejudging(check)
    ]
    if not rows:
        return []
    return ["### ❌ Failed checks", "", *table(["case", "check", "step", "reason"], rows), ""]


def _needs_rejudging(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    """Judged checks whose recorded judgement no longer matches: apart from the failures (not the agent's doing)."""
    rows = [
        [code(case["id"]), code(check["id"]), cell(", ".join(check["judge"]["changed"])),
         code(check["judge"]["cassette"])]
        for case in cases
        for check in case["checks"]
        if _rejudging(check)
    ]
    if not rows:
        return []
    return [
        "### ⚖️ Needs re-judging (not a failure of the agent)",
        "",
        *table(["case", "check", "what changed", "judge cassette"], rows),
        "",
        "Re-judge with `harness eval --judge record` (a key, or ANTHROPIC_BASE_URL of a judge such as `harness sim`).",
        "",
    ]


def _judged(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every judged check with the judge's verdict, score and reasons, and who judged (a model, or the simulator)."""
    rows = []
    for case in cases:
        for check in case["checks"]:
            judge = check.get("judge")
            if not judge or judge["status"] != "judged":
                continue
            said = "; ".join(
                (f"step {r['step']}: " if r.get("step") else "") + f"“{r['quote']}” {r['explanation']}"
                for r in judge.get("reasons") or []
            )
            rows.append(
                [
                    code(case["id"]),
                    code(check["id"]),
                    f"{ICONS['passed' if check['passed'] else 'failed']} {judge.get('verdict')}",
                    f"{judge['score']:.2f}" if judge.get("score") is not None else "–",
                    cell(f"{judge['model']} ({judge.get('source') or 'unknown source'})"),
                    cell(said or "–"),
                ]
            )
    if not rows:
        return []
    return ["### ⚖️ Judged checks", "", *table(["case", "check", "verdict", "score", "judge", "reasons"], rows), ""]


def _errors(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = [[code(case["id"]), cell(error_text(case["error"]))] for case in cases if case["status"] == "error"]
    if not rows:
        return []
    return ["### ⚠️ Cases that could not run", "", *table(["case", "reason"], rows), ""]


def _trials(cases: Sequence[Mapping[str, Any]], k: int) -> list[str]:
    groups = trial_stats(cases)
    if not groups:
        return []
    rows = []
    for group, stats in groups.items():
        shown = stats.shown_k(k)
        rows.append(
            [
                code(group),
                f"{stats.c}/{stats.n}",
                f"{stats.pass_at(1):.2f}",
                f"{stats.pass_at(shown):.2f} (k={shown})",
                f"{stats.pass_hat(shown):.2f} (k={shown})",
            ]
        )
    return [
        "### Trials",
        "",
        "pass@k: at least one of k trials passes; pass^k: all k pass (unbiased estimates).",
        "",
        *table(["case", "passed", "pass@1", "pass@k", "pass^k"], rows),
        "",
    ]


def _suite(suite: Mapping[str, Any], cases: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = []
    for case in cases:
        if case["status"] == "error":
            rows.append([code(case["id"]), "–", ICONS["error"], "", cell(error_text(case["error"]))])
            continue
        for position, check in enumerate(case["checks"]):
            label = code(case["id"]) if position == 0 else ""
            rows.append(
                [
                    label,
                    code(check["id"]),
                    ICONS["passed" if check["passed"] else "failed"],
                    check_step(check),
                    cell(check["reason"]),
                ]
            )
    total = len(cases)
    head = (
        f"suite {code(suite['name'])}: {total} cases, {suite['passed']} passed, {suite['failed']} failed, "
        f"{suite['errored']} errored"
    )
    body = table(["case", "check", "result", "step", "reason"], rows)
    if suite["failed"] or suite["errored"]:
        return [f"### ❌ {head}", "", *body, ""]
    return ["<details>", f"<summary>✅ {head}</summary>", "", *body, "", "</details>", ""]


def _usage_table(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = []
    for case in cases:
        usage = case.get("usage") or {}
        digest = case.get("trajectory") or {}
        rows.append(
            [
                code(case["id"]),
                ICONS[case["status"]],
                tokens(digest.get("steps")),
                tokens(digest.get("tool_calls")),
                *(tokens(usage.get(kind)) for kind in KINDS),
                " · ".join(cost_parts(case.get("cost_by_kind") or {})) or "–",
                cost(case.get("cost_usd")) if digest else "–",
            ]
        )
    headers = ["case", "status", "steps", "tool calls", *(KIND_LABELS[k] for k in KINDS), "cost by kind", "cost"]
    return ["<details>", "<summary>Tokens and cost per case</summary>", "", *table(headers, rows), "", "</details>", ""]


def results_markdown(results: ResultsDocument, *, k: int = DEFAULT_K) -> str:
    """The Markdown report of a results document."""
    summary = results["summary"]
    cases = results["cases"]
    lines = [f"## {ICONS[summary['status']]} harness eval: {summary['status']}", "", _summary_line(summary), ""]
    lines += _failures(cases)
    lines += _needs_rejudging(cases)
    lines += _errors(cases)
    lines += _judged(cases)
    lines += _trials(cases, k)
    for suite in results["suites"]:
        lines += _suite(suite, [case for case in cases if case["suite"] == suite["name"]])
    lines += _usage_table(cases)
    return "\n".join(lines).rstrip() + "\n"


# --- comparisons ------------------------------------------------------------------------------------------------

_COMPARE_ICONS = {"regressed": "❌", "error": "⚠️", "improved": "✅", "changed": "🔀", "unchanged": "➖"}


def _check_count(side: Mapping[str, Any] | None) -> str:
    if side is None:
        return "–"
    if side["n"] == 1:
        return "pass" if side["passed"] else "fail"
    return f"{side['c']}/{side['n']}"


def _flip_lines(case: Mapping[str, Any]) -> list[str]:
    lines = []
    for check in case["checks"]:
        before, after = check["baseline"], check["candidate"]
        if check["flip"] == "to_fail":
            where = f" at step {after['step']}" if after["step"] is not None else ""
            if str(after["reason"]).startswith("step "):
                where = ""  # the reason names its step
            lines.append(
                f"- ❌ {code(check['id'])} {_check_count(before)} → {_check_count(after)}{where}: "
                f"{cell(after['reason'])}"
            )
        elif check["flip"] == "to_pass":
            lines.append(
                f"- ✅ {code(check['id'])} {_check_count(before)} → {_check_count(after)}: {cell(after['reason'])}"
            )
        elif before is None or after is None:
            side = "candidate" if before is None else "baseline"
            lines.append(f"- ➖ {code(check['id'])} only in the {side}")
    return lines


def _divergence_lines(case: Mapping[str, Any]) -> list[str]:
    found = case["divergence"]
    if found is None:
        return ["- trajectories: the same at every step"]
    if found["where"] == "unknown":
        return [f"- trajectories: {cell(found.get('note', 'not compared'))}"]
    lines = [f"- first divergence at **{found['label']}** ({found['where']})"]
    if found.get("note"):
        lines.append(f"  - {cell(found['note'])}")
    lines += [f"  - request: {cell(line)}" for line in found["request"]]
    lines += [f"  - response: {cell(line)}" for line in found["response"]]
    if found.get("response_label"):
        lines.append(f"- responses first differ at **{found['response_label']}**")
        lines += [f"  - response: {cell(line)}" for line in found.get("later_response", [])]
    return lines


def _usage_delta_line(case: Mapping[str, Any]) -> str:
    before, after, delta = case["baseline"]["usage"], case["candidate"]["usage"], case["usage_delta"]
    if delta is None:
        return "- tokens: not known on both sides"
    parts = [
        f"{KIND_LABELS[kind]} {tokens(before[kind])} → {tokens(after[kind])} ({signed(delta[kind])})"
        for kind in (*KINDS, "total")
        if before[kind] or after[kind]
    ]
    mean = " (mean per trial)" if max(case["baseline"]["trials"]["n"], case["candidate"]["trials"]["n"]) > 1 else ""
    money = ""
    if case["cost_delta"] is not None:
        money = (
            f"; cost {cost(case['baseline']['cost_usd'])} → {cost(case['candidate']['cost_usd'])} "
            f"({signed(case['cost_delta'], money=True)})"
        )
    intervals = [
        delta_with_interval(case, what)
        for what in ("tokens", "cost")
        if (case.get("delta_intervals") or {}).get("tokens" if what == "tokens" else "cost_usd")
    ]
    spread = f" · 95% intervals: {', '.join(intervals)}" if intervals else ""
    return f"- tokens{mean}: " + ", ".join(parts or ["none"]) + money + spread


def _case_section(case: Mapping[str, Any], k: int) -> list[str]:
    icon = _COMPARE_ICONS[case["status"]]
    lines = [
        f"#### {icon} {code(case['id'])}: {case['status']}",
        "",
        f"- baseline: {side_text(case['baseline'], k)} · candidate: {side_text(case['candidate'], k)}",
    ]
    rates = trial_rates(case)
    if rates:
        lines.append(f"- trials: {cell(rates)}")
    for side in ("baseline", "candidate"):
        if case[side]["error"]:
            lines.append(f"- ⚠️ {side} could not run: {cell(error_text(case[side]['error']))}")
    lines += _flip_lines(case)
    if max(case["baseline"]["trials"]["n"], case["candidate"]["trials"]["n"]) > 1:
        compared = case["compared_trials"]
        lines.append(
            f"- trials diffed below: baseline {code(compared['baseline'])}, candidate {code(compared['candidate'])}"
        )
    lines += _divergence_lines(case)
    tools = case["tool_sequence"]
    if tools["changes"]:
        lines.append("- tool sequence: " + "; ".join(cell(change) for change in tools["changes"]))
    else:
        lines.append("- tool sequence: unchanged (" + (", ".join(tools["baseline"]) or "no tool calls") + ")")
    lines.append(_usage_delta_line(case))
    if case["answer_diff"]:
        lines += [
            "",
            "<details><summary>final answer, baseline → candidate</summary>",
            "",
            "```diff",
            *(line.replace("```", "ˋˋˋ") for line in case["answer_diff"]),
            "```",
            "",
            "</details>",
        ]
    return [*lines, ""]


def comparison_markdown(comparison: Mapping[str, Any]) -> str:
    """The Markdown report of a comparison document."""
    summary = comparison["summary"]
    k = int(comparison.get("k") or DEFAULT_K)
    flipped = summary["checks_flipped_to_fail"]
    title = {
        "regressed": f"{flipped} check{'s' if flipped != 1 else ''} flipped to fail",
        "error": "a case could not run",
        "improved": "no regressions, some checks now pass",
        "changed": "no check flipped; the runs changed",
        "unchanged": "no change",
    }[summary["status"]]
    labels = (comparison["baseline"].get("label") or "baseline", comparison["candidate"].get("label") or "candidate")
    lines = [
        f"## {_COMPARE_ICONS[summary['status']]} harness compare: {title}",
        "",
        f"baseline {code(labels[0])} vs candidate {code(labels[1])} · **{summary['cases']} cases compared**: "
        f"{summary['regressed']} regressed, {summary['improved']} improved, {summary['changed']} changed, "
        f"{summary['unchanged']} unchanged, {summary['errored']} errored · checks flipped: "
        f"{summary['checks_flipped_to_fail']} to fail, {summary['checks_flipped_to_pass']} to pass · "
        f"Δ tokens {signed(summary['usage_delta']['total'])} · Δ cost {summary_cost_delta(summary)}",
        "",
    ]
    for side, ids in (("baseline", summary["only_in_baseline"]), ("candidate", summary["only_in_candidate"])):
        if ids:
            lines += [f"Only in the {side} (not compared): " + ", ".join(code(i) for i in ids), ""]
    if summary.get("flaky"):
        lines += ["Flaky (trials both pass and fail): " + ", ".join(code(i) for i in summary["flaky"]), ""]
    if summary.get("regressed_within_noise"):
        gate = comparison.get("gate", "flip")
        effect = "do not fail CI (gate significant)" if gate == "significant" else "still fail CI (gate flip)"
        lines += [
            f"{summary['regressed_within_noise']} regression(s) within noise (Fisher's exact p ≥ {summary['alpha']}): "
            f"they {effect}.",
            "",
        ]
    rows = []
    for case in comparison["cases"]:
        flips = ", ".join(
            f"{c['id']} {_check_count(c['baseline'])}→{_check_count(c['candidate'])}"
            for c in case["checks"]
            if c["flip"]
        )
        step = divergence_short(case["divergence"])
        rows.append(
            [
                code(case["id"]),
                f"{_COMPARE_ICONS[case['status']]} {case['status']}",
                cell(side_text(case["baseline"], k)),
                cell(side_text(case["candidate"], k)),
                cell(flips or "–"),
                step,
                signed((case["usage_delta"] or {}).get("total")),
                signed(case["cost_delta"], money=True),
            ]
        )
    lines += table(["case", "status", "baseline", "candidate", "flips", "first divergence", "Δ tokens", "Δ cost"], rows)
    lines.append("")
    for case in comparison["cases"]:
        if case["status"] != "unchanged":
            lines += _case_section(case, k)
    return "\n".join(lines).rstrip() + "\n"
