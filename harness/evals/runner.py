"""Run eval cases: load each cassette, build its trajectory, run the golden's checks, record everything.

The output is the canonical results document (see results.py and results.schema.json): every report
(table, Markdown, JUnit, HTML, comparison) is a projection of it, so nothing is computed later that
is not recorded here. A case whose cassette cannot be read is an `error` case (bad input), not a
failure, and the other cases still run.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness.checks.registry import run_check
from harness.errors import HarnessError
from harness.evals.document import ResultsDocument
from harness.evals.judge import JUDGED_CHECKS, Judge
from harness.evals.results import ResultsWriter, run_details, step_details, suite_entry
from harness.evals.suite import Case, Suite
from harness.files import read_bytes_bounded
from harness.trajectory import Trajectory, load_cassette_any

__all__ = ["ProgressCallback", "elapsed_ms", "run_case", "run_suites"]

ProgressCallback = Callable[[Case, dict[str, Any]], None]


def elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def _cassette_record(case: Case) -> dict[str, Any]:
    record: dict[str, Any] = {
        "path": case.cassette_label,
        "absolute_path": str(case.cassette),
        "sha256": None,
        "bytes": None,
        "recorded_from": None,
        "recorded_at": None,
        "imported_from": None,
        "fingerprints": {},
        "interactions": None,
    }
    if not case.cassette_label:  # a golden that could not be used names no cassette
        return record | {"absolute_path": ""}
    try:
        raw = read_bytes_bounded(case.cassette)  # refuses a device, a pipe or a huge file before reading it
    except (OSError, HarnessError):
        return record
    record["sha256"] = hashlib.sha256(raw).hexdigest()
    record["bytes"] = len(raw)
    return record


def _trajectory_record(full: Trajectory, seen: Trajectory) -> dict[str, Any]:
    outcome = seen.outcome
    calls = seen.tool_calls
    return {
        "model": seen.model,
        "runs": len(full.runs),
        "runs_checked": [run.index for run in seen.runs],
        "steps": len(seen.steps),
        "tool_calls": len(calls),
        "tool_errors": sum(1 for call in calls if call.result and call.result.is_error),
        "attempts": sum(len(step.attempts) for step in seen.steps)
        + sum(len(run.failed_request.attempts) for run in seen.runs if run.failed_request),
        "outcome": outcome.to_dict() if outcome else None,
        "stop_reasons": [step.stop_reason for step in seen.steps],
        "tool_sequence": [
            {
                "step": call.step,
                "name": call.name,
                "server": call.server,
                "kind": call.kind,
                **({"server_name": call.server_name} if call.server_name is not None else {}),
                "is_error": bool(call.result and call.result.is_error),
            }
            for call in calls
        ],
        "final_text": seen.final_text,
        "skipped_interactions": len(full.skipped),
        "recorded_duration_ms": _recorded_duration(seen),
    }


def _recorded_duration(trajectory: Trajectory) -> float | None:
    known = [step.duration_ms for step in trajectory.steps if step.duration_ms is not None]
    return round(sum(known), 3) if known else None


def _named_by(case: Case) -> str:
    """Who asks for a case's cassette: its golden (and the place in it) and the suite that runs it."""
    try:
        place = f" at $.cassettes[{case.golden.cassettes.index(case.cassette)}]"
    except ValueError:  # the suite's `cassette:` names it, or the corpus folder was moved
        place = ""
    return f"golden {case.golden_label} names it{place}, case {case.id} of suite {case.suite}"


def run_case(case: Case, *, judge: Judge | None = None) -> dict[str, Any]:
    """One case as its results record: status passed | failed | error, checks, usage, cost, timings.

    A judged check (rubric) asks `judge` (default: replay from the judge cassettes); one whose recording no longer
    matches is listed in `needs_rejudging` and decides nothing about the agent."""
    judge = judge if judge is not None else Judge()
    started = time.perf_counter()
    record: dict[str, Any] = {
        "id": case.id,
        "suite": case.suite,
        "status": "error",
        "cassette": _cassette_record(case),
        "golden": {
            "name": case.golden.name,
            "path": case.golden_label,
            "sha256": case.golden.sha256,
            "run": case.golden.run,
        },
        "trajectory": None,
        "usage": None,
        "cost_usd": None,
        "checks": [],
        "needs_rejudging": [],
        "error": None,
        "timings": {"load_ms": None, "checks_ms": None, "total_ms": None},
    }
    try:
        if case.error is not None:  # its golden could not be used (harness.evals.suite): this case errors, not the run
            raise case.error
        if not case.cassette.exists():  # said with who names it: the golden (and suite) to fix, or the file to record
            raise HarnessError(f"no such cassette; {_named_by(case)}", file=case.cassette)
        cassette = load_cassette_any(case.cassette)
        full = Trajectory.from_cassette(cassette)
        record["timings"]["load_ms"] = elapsed_ms(started)
        meta = cassette.meta or {}
        record["cassette"].update(
            recorded_from=meta.get("source"),
            recorded_at=meta.get("recorded_at"),
            imported_from=meta.get("imported_from"),
            fingerprints=dict(meta.get("fingerprints") or {}),
            interactions=len(cassette.interactions),
        )
        try:
            seen = full.select_runs(case.golden.run)
        except ValueError as err:
            raise HarnessError(str(err), file=case.golden.path, where="$.run") from None
    except HarnessError as err:
        record["error"] = {"reason": err.reason, "file": err.file, "where": err.where}
        record["timings"]["total_ms"] = elapsed_ms(started)
        return record

    record["trajectory"] = _trajectory_record(full, seen)
    # The step-by-step view the HTML report draws, from the cassette already in hand (not read twice).
    record["trajectory"] |= {"step_details": step_details(seen, cassette), "run_details": run_details(seen, cassette)}
    record["usage"] = seen.usage.to_dict()
    record["cost_usd"] = seen.cost_usd
    priced = seen.cost
    if priced is not None:  # the same cost by kind (tokens, server tool fees): what `harness show` prints
        record["cost_by_kind"] = priced.to_dict()["by_kind"]
    checks_started = time.perf_counter()
    judge_errors = []
    for check in case.golden.checks:
        check_started = time.perf_counter()
        judged = None
        if check.check in JUDGED_CHECKS:
            result, judged = judge.check(case.golden_label, case.golden.path, check, seen)
        else:
            result = run_check(check.check, seen, check.params, label=check.id, source=case.golden_label)
        entry = {
            "id": check.id,
            "check": check.check,
            "passed": result.passed,
            "reason": result.reason,
            "step": result.step,
            "score": result.score,
            "evidence": result.evidence,
            "params": check.params,
            "duration_ms": elapsed_ms(check_started),
        }
        if judged is not None:
            entry["judge"] = judged
            if judged["status"] == "needs_rejudging":
                record["needs_rejudging"].append(check.id)
            elif judged["status"] == "error":
                judge_errors.append((check, judged))
        record["checks"].append(entry)
    record["timings"]["checks_ms"] = elapsed_ms(checks_started)
    record["timings"]["total_ms"] = elapsed_ms(started)
    unanswered = {check.id for check, _ in judge_errors}
    verdicts = [item for item in record["checks"] if item["id"] not in {*record["needs_rejudging"], *unanswered}]
    # A check that failed decides the case, whatever else it holds (exit 1 whenever any check failed).
    record["status"] = "passed" if all(item["passed"] for item in verdicts) else "failed"
    if judge_errors:  # the judge could not be asked: bad input (no key, a bad endpoint), not the agent's doing
        check, judged = judge_errors[0]
        if record["status"] == "passed":
            record["status"] = "error"
        record["error"] = {"reason": f"check {check.id}: {judged['error']}", "file": judged["cassette"], "where": None}
    return record


def run_suites(
    suites: Iterable[Suite], *, golden_dir: Path | None = None, progress: ProgressCallback | None = None,
    judge: Judge | None = None,
) -> ResultsDocument:
    """Every case of `suites`, as one results document in memory (`harness eval` streams it instead)."""
    suites = list(suites)
    started = time.perf_counter()
    with ResultsWriter([suite_entry(suite) for suite in suites], golden_dir=golden_dir, keep=True) as writer:
        for suite in suites:
            for case in suite.cases:
                record = run_case(case, judge=judge)
                writer.add(record)
                if progress is not None:
                    progress(case, record)
        return writer.document(duration_ms=elapsed_ms(started))
