"""The canonical results document of an eval run, its JSON Schema, and how it is written and judged.

One JSON document per `harness eval` (schema: results.schema.json, `results_version` 1):

- `summary`: status (passed | failed | error), case and check counts, usage by kind, cost;
- `suites`: each suite with its case ids and counts;
- `cases`: for each case its status, the cassette (path, sha256, provenance, fingerprints), the golden
  (path, sha256, run selection), a trajectory digest (model, steps, stop reasons, tool sequence,
  outcome, final text), usage by kind and cost, every check (id, check, passed, reason, step,
  evidence, params, duration) and timings; or the error that kept it from running.

Markdown, JUnit, HTML and baseline-vs-candidate comparisons are projections of this document and
must not need anything else. Durations are wall-clock measurements of this process, for reading,
never for pass/fail.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema

from harness.cassette.format import atomic_write_text, json_path
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.evals.suite import Suite

__all__ = ["RESULTS_VERSION", "build_results", "exit_code", "results_schema", "validate_results", "write_results"]

RESULTS_VERSION = 1
_KINDS = ("input", "output", "cache_write", "cache_read", "total")


@cache
def results_schema() -> dict[str, Any]:
    text = resources.files("harness.evals").joinpath("results.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _status(records: Sequence[Mapping[str, Any]]) -> str:
    statuses = {record["status"] for record in records}
    if "error" in statuses:
        return "error"
    if "failed" in statuses:
        return "failed"
    return "passed"


def _counts(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    return {
        "cases": len(records),
        "passed": sum(1 for r in records if r["status"] == "passed"),
        "failed": sum(1 for r in records if r["status"] == "failed"),
        "errored": sum(1 for r in records if r["status"] == "error"),
    }


def build_results(
    suites: Iterable[Suite],
    records: Sequence[Mapping[str, Any]],
    *,
    golden_dir: Path | None = None,
    duration_ms: float | None = None,
) -> dict[str, Any]:
    from harness import __version__

    suites = list(suites)
    checks = [check for record in records for check in record["checks"]]
    usage = {kind: sum((record.get("usage") or {}).get(kind, 0) for record in records) for kind in _KINDS}
    costs = [record.get("cost_usd") for record in records if record.get("trajectory") is not None]
    cost_known = all(cost is not None for cost in costs)
    summary = {
        "status": _status(records),
        **_counts(records),
        "checks": len(checks),
        "checks_passed": sum(1 for check in checks if check["passed"]),
        "checks_failed": sum(1 for check in checks if not check["passed"]),
        "usage": usage,
        "cost_usd": round(sum(cost for cost in costs if cost is not None), 6),
        "cost_known": cost_known,
        "duration_ms": duration_ms,
    }
    by_suite = []
    for suite in suites:
        mine = [record for record in records if record["suite"] == suite.name]
        tally = _counts(mine)
        tally.pop("cases")  # the suite lists its case ids instead
        by_suite.append(
            {
                "name": suite.name,
                "path": str(suite.path) if suite.path else None,
                "description": suite.description,
                "root": str(suite.root) if suite.root else None,
                "cases": [record["id"] for record in mine],
                **tally,
            }
        )
    return {
        "results_version": RESULTS_VERSION,
        "tool": {"name": "loop-harness", "version": __version__},
        "created_at": _now(),
        "golden_dir": str(golden_dir) if golden_dir else None,
        "summary": summary,
        "suites": by_suite,
        "cases": list(records),
    }


def validate_results(results: Any, *, file: str | Path | None = None) -> None:
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(results_schema()).iter_errors(results))
    if error is not None:
        raise HarnessError(f"not a results document: {error.message}", file=file, where=json_path(error.absolute_path))


def write_results(path: str | Path, results: Mapping[str, Any]) -> Path:
    path = Path(path)
    atomic_write_text(path, json.dumps(results, indent=2, ensure_ascii=False, default=str) + "\n")
    return path


def exit_code(results: Mapping[str, Any]) -> int:
    """0 all passed, 1 a check failed, 2 a case could not run (bad input)."""
    return {"passed": 0, "failed": 1, "error": 2}[results["summary"]["status"]]
