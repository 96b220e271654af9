"""Self-contained HTML views of a results document and of a comparison.

One file, opened from disk, that fetches nothing: CSS inline, charts inline SVG drawn in Python
(harness.report.svg), no script at all, and a Content-Security-Policy that forbids every fetch in case
a recorded text carries a URL. Jinja2 renders it with autoescape on; the only markup not escaped is
the SVG this package drew itself (its labels escaped as it was drawn).

What a person looks at: the summary, the failed checks with their step, cost per case, and for each
case its trajectory step by step (what each request added, the response blocks, tool calls with
their arguments and results, is_error, stop reasons, retries) under a chart of tokens per step by kind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any

import jinja2

from harness.evals.document import ResultsDocument
from harness.report import _text, svg
from harness.report.trials import DEFAULT_K, trial_stats

__all__ = ["comparison_html", "results_html"]


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _anchor(prefix: str, index: int) -> str:
    return f"{prefix}-{index}"


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harness.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # The templates say numbers, steps and errors as every other report does (harness.report._text).
    env.filters.update(
        tokens=_text.tokens,
        cost=_text.cost,
        cost_parts=_text.cost_parts,
        signed=_text.signed,
        pretty=_pretty,
        check_step=_text.check_step,
        error_text=_text.error_text,
        divergence_short=_text.divergence_short,
        summary_cost_delta=_text.summary_cost_delta,
    )
    # Text marks, not emoji: a machine without an emoji font would draw a box.
    env.globals.update(
        ICONS={"passed": "✓", "failed": "✗", "error": "!"},
        KINDS=_text.KINDS,
        KIND_LABELS=_text.KIND_LABELS,
        STACK=svg.STACK,
        KIND_COLORS=svg.KIND_COLORS,
    )
    return env


def _render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)


# --- one case's trajectory ----------------------------------------------------------------------------------


def _added_view(step: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What a request added, for reading: new user text, tool results; the echoed assistant turn as one line."""
    items: list[dict[str, Any]] = []
    for message in step.get("added") or []:
        role = message.get("role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        if role == "assistant":
            items.append({"kind": "echo", "text": "the previous response, sent back as the assistant turn"})
            continue
        for block in blocks:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                items.append({"kind": "text", "role": role, "text": block.get("text", "")})
            elif kind == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    inner = "".join(str(p.get("text", f"[{p.get('type')}]")) for p in inner if isinstance(p, Mapping))
                items.append(
                    {
                        "kind": "tool_result",
                        "id": block.get("tool_use_id"),
                        "is_error": bool(block.get("is_error")),
                        "text": "" if inner is None else str(inner),
                    }
                )
            else:
                items.append({"kind": "other", "type": kind, "text": _pretty(block)})
    return items


def _step_view(step: Mapping[str, Any], anchor: str, previous_system: str | None) -> dict[str, Any]:
    request = step["request"]
    system_text = request.get("system_text")
    return {
        **step,
        "anchor": f"{anchor}-step-{step['index']}",
        "added_view": _added_view(step),
        "system_changed": request.get("system") != previous_system,
        "system_shown": system_text if system_text is not None else request.get("system"),
        "retries": [a for a in step.get("attempts") or [] if not a.get("ok")],
        "context": sum(int(step["usage"].get(kind, 0)) for kind in ("input", "cache_write", "cache_read")),
    }


def _case_view(case: Mapping[str, Any], anchor: str, scale_max: float | None = None) -> dict[str, Any]:
    digest = case.get("trajectory") or {}
    details = digest.get("step_details")
    steps = []
    previous = None
    for step in details or []:
        steps.append(_step_view(step, anchor, previous))
        previous = step["request"].get("system")
    checks = [
        {**check, "step_anchor": f"{anchor}-step-{check['step']}" if check.get("step") and details else None}
        for check in case["checks"]
    ]
    return {
        "case": case,
        "anchor": anchor,
        "digest": digest,
        "steps": steps,
        "has_details": details is not None,
        "checks": checks,
        "failed": [c for c in checks if not c["passed"] and (c.get("judge") or {}).get("status") != "needs_rejudging"],
        "rejudge": [c for c in checks if (c.get("judge") or {}).get("status") == "needs_rejudging"],
        "chart": svg.step_token_bars(
            details or [], scale_max=scale_max, title=f"tokens per step by kind: {case['id']}"
        ),
        "runs": digest.get("run_details") or [],
    }


# --- results -------------------------------------------------------------------------------------------------


def results_html(results: ResultsDocument, *, k: int = DEFAULT_K) -> str:
    """The HTML report of a results document."""
    cases = results["cases"]
    views = [_case_view(case, _anchor("case", index)) for index, case in enumerate(cases, 1)]
    trials = [{"id": group, "stats": stats, "k": stats.shown_k(k)} for group, stats in trial_stats(cases).items()]
    cost_chart = svg.cost_bars(
        [(case["id"], [case.get("cost_usd")]) for case in cases if case.get("trajectory")],
        anchors=[v["anchor"] for v in views if v["case"].get("trajectory")],
    )
    return _render(
        "results.html.j2",
        results=results,
        summary=results["summary"],
        views=views,
        suites=results["suites"],
        failures=[(view, check) for view in views for check in view["failed"]],
        errors=[view for view in views if view["case"]["status"] == "error"],
        rejudge=[(view, check) for view in views for check in view["rejudge"]],
        trials=trials,
        cost_chart=cost_chart,
    )


# --- comparisons ------------------------------------------------------------------------------------------------


def _records_by_id(results: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {case["id"]: case for case in results["cases"]}


def _max_step_tokens(*cases: Mapping[str, Any] | None) -> float:
    totals = [
        sum(int(step["usage"].get(kind, 0)) for kind in svg.STACK)
        for case in cases
        if case
        for step in ((case.get("trajectory") or {}).get("step_details") or [])
    ]
    return max(totals, default=0)


def comparison_html(comparison: Mapping[str, Any]) -> str:
    """The HTML report of a comparison document: flips, divergence, deltas, both trajectories."""
    k = int(comparison.get("k") or DEFAULT_K)
    before = _records_by_id(comparison["baseline"]["results"])
    after = _records_by_id(comparison["candidate"]["results"])
    views = []
    for index, case in enumerate(comparison["cases"], 1):
        anchor = _anchor("case", index)
        first_b = before.get(case["compared_trials"]["baseline"])
        first_c = after.get(case["compared_trials"]["candidate"])
        scale = _max_step_tokens(first_b, first_c)
        views.append(
            {
                "case": case,
                "anchor": anchor,
                "baseline_text": _text.side_text(case["baseline"], k),
                "candidate_text": _text.side_text(case["candidate"], k),
                "rates_text": _text.trial_rates(case),
                "deltas_text": " · ".join(_text.delta_with_interval(case, what) for what in ("tokens", "cost")),
                "baseline": _case_view(first_b, f"{anchor}-b", scale) if first_b else None,
                "candidate": _case_view(first_c, f"{anchor}-c", scale) if first_c else None,
            }
        )
    rows = [(case["id"], [case["baseline"]["cost_usd"], case["candidate"]["cost_usd"]]) for case in comparison["cases"]]
    cost_chart = svg.cost_bars(
        rows,
        series=("baseline", "candidate"),
        colors=(svg.SIDE_COLORS["baseline"], svg.SIDE_COLORS["candidate"]),
        title="cost per case, baseline and candidate (USD, mean per trial)",
        anchors=[view["anchor"] for view in views],
    )
    return _render("compare.html.j2", comparison=comparison, summary=comparison["summary"], views=views,
                   cost_chart=cost_chart, k=k)
