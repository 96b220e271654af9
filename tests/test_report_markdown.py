"""The Markdown report: a projection of the results document, written by `harness eval --markdown F`."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from harness.report.markdown import results_markdown
from tests.test_report_support import make_project, run_eval


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    project = make_project(tmp_path_factory.mktemp("project"))
    out = tmp_path_factory.mktemp("out")
    code, results = run_eval(project, out, "--markdown", str(out / "results.md"))
    assert code == 1  # a check failed (the project also holds a case that cannot run: 1 wins over 2)
    return results, (out / "results.md").read_text(encoding="utf-8")


def table_rows(markdown: str, header_start: str) -> list[list[str]]:
    """The rows of the first table whose header line starts with `header_start`, as cells."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").replace("\\|", "\x00").split("|")]
        rows.append([cell.replace("\x00", "|") for cell in cells])
    return rows


def test_the_file_is_the_projection_of_the_written_results(run: tuple[dict[str, Any], str]) -> None:
    results, written = run
    assert written == results_markdown(results)


def test_the_summary_line_gives_the_counts(run: tuple[dict[str, Any], str]) -> None:
    results, markdown = run
    summary = results["summary"]
    assert markdown.startswith("## ❌ harness eval: failed\n")  # a failed check outranks a case in error
    assert (
        f"**{summary['cases']} cases**: {summary['passed']} passed, {summary['failed']} failed, "
        f"{summary['errored']} errored"
    ) in markdown
    assert f"**{summary['checks_passed']}/{summary['checks']} checks passed**" in markdown
    assert f"input {summary['usage']['input']:,}" in markdown and f"${summary['cost_usd']:.4f}" in markdown


def test_failed_checks_are_listed_with_step_and_reason(run: tuple[dict[str, Any], str]) -> None:
    results, markdown = run
    failed = [(c["id"], k) for c in results["cases"] for k in c["checks"] if not k["passed"]]
    rows = table_rows(markdown, "| case | check | step | reason |")
    assert [(r[0].strip("`"), r[1].strip("`"), r[2], r[3]) for r in rows] == [
        (case_id, check["id"], str(check["step"]), check["reason"]) for case_id, check in failed
    ]


def test_the_suite_table_marks_every_check(run: tuple[dict[str, Any], str]) -> None:
    results, markdown = run
    rows = table_rows(markdown, "| case | check | result | step | reason |")
    marks = [row[2] for row in rows]
    checks = [check for case in results["cases"] for check in case["checks"]]
    assert marks.count("✅") == sum(check["passed"] for check in checks)
    assert marks.count("❌") == sum(not check["passed"] for check in checks)
    assert marks.count("⚠️") == results["summary"]["errored"]
    error_row = next(row for row in rows if row[2] == "⚠️")
    assert "no such cassette" in error_row[4]


def test_tokens_and_cost_per_case(run: tuple[dict[str, Any], str]) -> None:
    results, markdown = run
    rows = {row[0].strip("`"): row for row in table_rows(markdown, "| case | status | steps |")}
    sql = next(c for c in results["cases"] if c["id"].startswith("sql/"))
    row = rows[sql["id"]]
    assert row[2] == str(sql["trajectory"]["steps"]) and row[4] == f"{sql['usage']['input']:,}"
    assert row[-1] == f"${sql['cost_usd']:.4f}"


def test_a_reason_with_pipes_and_newlines_stays_in_its_cell(run: tuple[dict[str, Any], str]) -> None:
    results = copy.deepcopy(run[0])
    failing = next(check for case in results["cases"] for check in case["checks"] if not check["passed"])
    failing["reason"] = "a | b\nnext line <b>bold</b>"
    rows = table_rows(results_markdown(results), "| case | check | step | reason |")
    assert len(rows[0]) == 4
    assert rows[0][3] == "a | b next line &lt;b&gt;bold&lt;/b&gt;"


def test_trials_get_their_own_table(run: tuple[dict[str, Any], str]) -> None:
    results = copy.deepcopy(run[0])
    template = next(c for c in results["cases"] if c["id"] == "dayflow/brief/brief.yaml")
    results["cases"] = []
    for number, status in enumerate(["passed", "failed", "passed"], 1):
        trial = copy.deepcopy(template)
        trial["id"], trial["status"] = f"dayflow/brief/brief.trial-{number}.yaml", status
        results["cases"].append(trial)
    rows = table_rows(results_markdown(results), "| case | passed | pass@1 |")
    assert rows == [["`dayflow/brief/brief.yaml`", "2/3", "0.67", "1.00 (k=3)", "0.00 (k=3)"]]
    assert "### Trials" not in results_markdown(run[0]), "single runs need no trials table"
