"""The eval checks that judge a cassette: the cases of the suites that name it, run as `harness eval` runs them.

An export carries a cassette's checks as scores, so it looks up which suite cases use that cassette file
(by resolved path) and runs each with the eval runner: the same results record `harness eval --json`
holds, so the scores and the eval report cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.errors import GoldenError, HarnessError
from harness.evals.runner import run_case
from harness.evals.suite import Case, discover_suites, project_suites


def suite_cases(suite_paths: Sequence[str | Path] = (), *, golden_dir: str | Path | None = None) -> list[Case]:
    """The cases of the given suites, or of the project's evals/ when none are given (none when it has none)."""
    paths: list[str | Path] = list(suite_paths)
    if not paths:
        try:
            paths = list(project_suites())
        except GoldenError:  # a project with no suites: the export has no checks to add
            return []
    return [case for suite in discover_suites(paths, golden_dir=golden_dir) for case in suite.cases]


def case_records(cassette: str | Path, cases: Iterable[Case]) -> list[dict[str, Any]]:
    """The results record of every case that judges `cassette` (see harness/evals/results.schema.json)."""
    try:
        target = Path(cassette).resolve()
    except OSError as err:
        raise HarnessError(f"cannot resolve the path: {err}", file=cassette) from None
    return [run_case(case) for case in cases if _same_file(case.cassette, target)]


def _same_file(path: Path, target: Path) -> bool:
    try:
        return path.resolve() == target
    except OSError:
        return False
