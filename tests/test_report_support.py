"""Shared setup for the report, compare, trials and browser tests: a small project recorded against the
simulator into a temporary folder (pyproject.toml, cassettes/, golden/, evals/), and its eval run.

The project holds a passing case, a failing one and one that cannot run, so every view has something
of each kind to show.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from harness.cli import main as harness_main
from harness.evals.results import validate_results
from harness_demo.scenarios import record_scenario, scenario
from tests.test_checks_support import dayflow_golden_checks

REPO = Path(__file__).resolve().parents[1]
FILTER_SENTENCE = ", and skip newsletters and promotions: they never belong in the brief"


def dayflow_checks() -> list[dict[str, Any]]:
    # self_correction has nothing to judge in a run without tool errors.
    return [check for check in dayflow_golden_checks() if check["check"] != "self_correction"]


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def make_project(root: Path, *, scenarios: tuple[str, ...] = ("dayflow-brief", "sql-self-correction")) -> Path:
    """A project at `root`: the scenarios recorded under cassettes/, goldens, the suite evals/report.yaml (with a
    failing case and one that cannot run) and suites/compare.yaml (Dayflow and SQL, both passing)."""
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    for name in scenarios:
        record_scenario(scenario(name), root / "cassettes")
    write_json(
        root / "golden" / "dayflow" / "brief.json",
        {"name": "dayflow/brief", "cassettes": ["cassettes/dayflow/brief.yaml"], "checks": dayflow_checks()},
    )
    write_json(
        root / "golden" / "dayflow" / "strict.json",
        {
            "name": "dayflow/strict",
            "cassettes": ["cassettes/dayflow/brief.yaml"],
            "checks": [
                {"check": "tool_ids_matched"},
                {"check": "final_answer", "id": "no-priya", "params": {"not_contains": ["Priya"]}},
            ],
        },
    )
    write_json(
        root / "golden" / "sql" / "self_correction.json",
        {
            "name": "sql/self_correction",
            "cassettes": ["cassettes/sql/self_correction.yaml"],
            "checks": [
                {"check": "tool_ids_matched"},
                {"check": "self_correction"},
                {"check": "outcome", "params": {"stop_reason": "end_turn"}},
            ],
        },
    )
    write_json(
        root / "golden" / "broken.json",
        {
            "name": "broken",
            "cassettes": ["cassettes/not_recorded.yaml"],
            "checks": [{"check": "tool_ids_matched"}],
        },
    )
    (root / "evals").mkdir(exist_ok=True)
    (root / "evals" / "report.yaml").write_text(
        "name: report\ncases:\n  - golden: dayflow/brief.json\n  - golden: dayflow/strict.json\n"
        "  - golden: sql/self_correction.json\n  - golden: broken.json\n",
        encoding="utf-8",
    )
    (root / "suites").mkdir(exist_ok=True)
    (root / "suites" / "compare.yaml").write_text(
        "name: compare\ncases:\n  - golden: dayflow/brief.json\n  - golden: sql/self_correction.json\n",
        encoding="utf-8",
    )
    return root


def copy_bundled_project(root: Path) -> Path:
    """The repository's own cassettes, goldens and agents suite, as a clean clone has them."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    shutil.copytree(REPO / "cassettes", root / "cassettes")
    shutil.copytree(REPO / "golden", root / "golden")
    (root / "evals").mkdir()
    shutil.copy(REPO / "evals" / "agents.yaml", root / "evals" / "agents.yaml")
    return root


def run_eval(project: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """`harness eval evals/report.yaml --json out/results.json ...` in `project`: the exit code and the results."""
    out.mkdir(parents=True, exist_ok=True)
    code = harness_main(["eval", str(project / "evals" / "report.yaml"), "--json", str(out / "results.json"), *extra])
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    validate_results(data)
    return code, data


def record_candidate(project: Path, folder: str = "candidates", *, trials: int | None = None) -> Path:
    """Dayflow recorded with the promotions sentence dropped from its system prompt, under `folder`."""
    from harness_demo.dayflow import SYSTEM_PROMPT

    assert FILTER_SENTENCE in SYSTEM_PROMPT, "the prompt changed: update FILTER_SENTENCE"
    prompt = project / "no_filter.txt"
    prompt.write_text(SYSTEM_PROMPT.replace(FILTER_SENTENCE, ""), encoding="utf-8")
    argv = ["record", "--demo", "dayflow-brief", "--system-prompt-file", str(prompt),
            "--cassettes", str(project / folder)]
    if trials:
        argv += ["--trials", str(trials)]
    assert harness_main(argv) == 0
    return project / folder
