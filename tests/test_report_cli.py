"""The Makefile's main job, `harness eval` with every report flag, run from a project root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main as harness_main
from harness.evals.results import validate_results
from harness.report.html import results_html
from harness.report.junit import results_junit
from harness.report.markdown import results_markdown
from tests.test_report_support import copy_bundled_project

MAKEFILE_EVAL = [
    "eval",
    "--json",
    "reports/results.json",
    "--markdown",
    "reports/results.md",
    "--junit",
    "reports/junit.xml",
    "--html",
    "reports/report.html",
]


def test_every_report_is_a_projection_of_the_written_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(copy_bundled_project(tmp_path / "clone"))
    assert harness_main(MAKEFILE_EVAL) == 0
    results = json.loads(Path("reports/results.json").read_text(encoding="utf-8"))
    validate_results(results)
    assert results["summary"]["cases"] == len(results["cases"]) > 0
    assert Path("reports/results.md").read_text(encoding="utf-8") == results_markdown(results)
    assert Path("reports/junit.xml").read_text(encoding="utf-8") == results_junit(results)
    assert Path("reports/report.html").read_text(encoding="utf-8") == results_html(results)
    assert not list(Path("reports").glob(".*.tmp")), "atomic writes leave no temporary file behind"


def test_the_report_flags_are_listed_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        harness_main(["eval", "--help"])
    shown = capsys.readouterr().out
    assert all(flag in shown for flag in ("--json", "--markdown", "--junit", "--html"))
