"""`harness compare`: flips, divergence, deltas and trials, from results files, suite files or cassette folders."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from harness.cassette.format import load_cassette
from harness.cli import main as harness_main
from harness.evals.results import step_details
from harness.report.compare import CaseSetMismatch, compare_results, tool_sequence_changes
from harness.report.divergence import first_divergence
from harness.report.trials import TrialStats
from harness.trajectory import Trajectory, load_trajectory
from harness_demo.scenarios import record_scenario, scenario
from tests.test_report_html import external_references
from tests.test_report_support import make_project, record_candidate


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_project(tmp_path_factory.mktemp("project"))
    record_candidate(root)
    return root


def compare(project: Path, *argv: str) -> tuple[int, dict[str, Any]]:
    out = project / "out" / f"compare-{abs(hash(argv))}.json"
    code = harness_main(["compare", *argv, "--json", str(out)])
    return code, json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}


def folders(project: Path, candidate: str = "candidates", *extra: str) -> list[str]:
    return [
        str(project / "cassettes"),
        str(project / candidate),
        "--suite",
        str(project / "suites" / "compare.yaml"),
        *extra,
    ]


def case_of(comparison: dict[str, Any], case_id: str) -> dict[str, Any]:
    return next(case for case in comparison["cases"] if case["id"] == case_id)


# --- cassette folders -------------------------------------------------------------------------------------------


def test_a_folder_against_itself_is_unchanged(project: Path) -> None:
    code, comparison = compare(project, *folders(project, "cassettes"))
    assert code == 0
    summary = comparison["summary"]
    assert summary["status"] == "unchanged" and summary["unchanged"] == summary["cases"] == 2
    assert all(check["flip"] is None for case in comparison["cases"] for check in case["checks"])
    assert all(case["divergence"] is None for case in comparison["cases"])


def test_a_missing_candidate_case_is_refused_naming_it(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, comparison = compare(project, *folders(project))
    assert code == 2 and comparison == {}
    err = capsys.readouterr().err
    assert "missing from the candidate: sql/self_correction/self_correction.yaml" in err
    assert "--allow-different-cases" in err


def test_dropping_the_promotions_sentence_flips_the_check_at_the_final_step(project: Path) -> None:
    code, comparison = compare(project, *folders(project, "candidates", "--allow-different-cases"))
    assert code == 1
    summary = comparison["summary"]
    assert summary["status"] == "regressed" and summary["checks_flipped_to_fail"] == 1
    assert summary["only_in_baseline"] == ["sql/self_correction/self_correction.yaml"]
    case = case_of(comparison, "dayflow/brief/brief.yaml")
    flipped = [check for check in case["checks"] if check["flip"]]
    assert [(c["id"], c["flip"]) for c in flipped] == [("promotions_filtered", "to_fail")]
    final_step = comparison["candidate"]["results"]["cases"][0]["trajectory"]["steps"]
    assert flipped[0]["candidate"]["step"] == final_step == 2
    assert "promotional item em-003" in flipped[0]["candidate"]["reason"]

    divergence = case["divergence"]
    assert divergence["step"] == 1 and divergence["where"] == "request"
    assert divergence["request"][0].startswith("system changed") and divergence["response"] == []
    assert divergence["response_step"] == 2 and "## Offers" in divergence["later_response"][0]
    assert case["tool_sequence"]["changes"] == []
    assert "+## Offers" in case["answer_diff"]


def test_token_deltas_are_the_difference_of_the_two_runs(project: Path) -> None:
    _, comparison = compare(project, *folders(project, "candidates", "--allow-different-cases"))
    before = load_trajectory(project / "cassettes" / "dayflow" / "brief.yaml")
    after = load_trajectory(project / "candidates" / "dayflow" / "brief.yaml")
    case = case_of(comparison, "dayflow/brief/brief.yaml")
    expected = {kind: getattr(after.usage, kind) - getattr(before.usage, kind) for kind in after.usage.KINDS}
    assert {kind: case["usage_delta"][kind] for kind in expected} == expected
    assert expected["input"] < 0, "the candidate's system prompt is shorter"
    assert expected["output"] > 0, "and its brief longer: it lists the offer"
    assert case["cost_delta"] == pytest.approx(after.cost_usd - before.cost_usd, abs=1e-6)


def test_the_same_run_with_other_ids_does_not_diverge(tmp_path: Path) -> None:
    record_scenario(scenario("dayflow-brief"), tmp_path / "a", seed=0)
    record_scenario(scenario("dayflow-brief"), tmp_path / "b", seed=7)
    ids = [[c.id for c in load_trajectory(tmp_path / side / "dayflow" / "brief.yaml").tool_calls] for side in "ab"]
    assert ids[0] != ids[1]

    def record(side: str) -> dict[str, Any]:
        cassette = load_cassette(tmp_path / side / "dayflow" / "brief.yaml")
        trajectory = Trajectory.from_cassette(cassette)
        return {"trajectory": {"step_details": step_details(trajectory, cassette), "run_details": []}}

    assert first_divergence(record("a"), record("b")) is None


def test_a_candidate_that_cannot_run_is_exit_2(project: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(project / "cassettes", broken)
    (broken / "dayflow" / "brief.yaml").write_text("interactions: [unclosed\n", encoding="utf-8")
    code, comparison = compare(
        project, str(project / "cassettes"), str(broken), "--suite", str(project / "suites" / "compare.yaml")
    )
    assert code == 2
    case = case_of(comparison, "dayflow/brief/brief.yaml")
    assert case["status"] == "error" and case["candidate"]["error"]["reason"]
    assert comparison["summary"]["status"] == "error"


# --- results files and suite files ------------------------------------------------------------------------------


def test_results_files_compare_like_their_cassettes_and_reversed_is_an_improvement(project: Path) -> None:
    suite = project / "suites" / "candidate.yaml"
    suite.write_text(
        "name: compare\ncases:\n  - golden: dayflow/brief.json\n"
        "    cassette: candidates/dayflow/brief.yaml\n  - golden: sql/self_correction.json\n",
        encoding="utf-8",
    )
    base, cand = project / "out" / "base.json", project / "out" / "cand.json"
    assert harness_main(["eval", str(project / "suites" / "compare.yaml"), "--json", str(base)]) == 0
    assert harness_main(["eval", str(suite), "--json", str(cand)]) == 1

    code, forward = compare(project, str(base), str(cand))
    assert code == 1
    assert [c["status"] for c in forward["cases"]] == ["regressed", "unchanged"]
    code, via_suites = compare(project, str(project / "suites" / "compare.yaml"), str(suite))
    assert code == 1
    assert [c["checks"] for c in via_suites["cases"]] == [c["checks"] for c in forward["cases"]]

    code, backward = compare(project, str(cand), str(base))
    assert code == 0 and backward["summary"]["status"] == "improved"
    flips = [(c["id"], c["flip"]) for c in backward["cases"][0]["checks"] if c["flip"]]
    assert flips == [("promotions_filtered", "to_pass")]


def test_mixed_inputs_are_refused(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = project / "out" / "for-mixed.json"
    assert harness_main(["eval", str(project / "suites" / "compare.yaml"), "--json", str(results)]) == 0
    assert harness_main(["compare", str(results), str(project / "candidates")]) == 2
    assert "BASELINE is a results and CANDIDATE a folder" in capsys.readouterr().err
    assert harness_main(["compare", str(project / "nothing.json"), str(results)]) == 2


# --- trials -----------------------------------------------------------------------------------------------------


def test_trials_are_reported_k_of_n_per_case(project: Path) -> None:
    trials = record_candidate(project, "trials", trials=3)
    # trial 2 with the original prompt: one of the three candidate runs keeps the promotion out
    record_scenario(scenario("dayflow-brief"), trials, seed=1, path=trials / "dayflow" / "brief.trial-2.yaml")
    code, comparison = compare(project, *folders(project, "trials", "--allow-different-cases", "--k", "2"))
    assert code == 1
    case = case_of(comparison, "dayflow/brief/brief.yaml")
    assert case["baseline"]["trials"] == TrialStats(1, 1).to_dict()
    assert case["candidate"]["trials"] == TrialStats(3, 1).to_dict()
    assert case["candidate"]["case_ids"] == [f"dayflow/brief/brief.trial-{n}.yaml" for n in (1, 2, 3)]
    check = next(c for c in case["checks"] if c["id"] == "promotions_filtered")
    assert (check["candidate"]["n"], check["candidate"]["c"], check["flip"]) == (3, 1, "to_fail")
    assert case["compared_trials"]["candidate"] != "dayflow/brief/brief.trial-2.yaml", "diff a trial that fails"
    markdown = project / "out" / "trials.md"
    harness_main(
        ["compare", *folders(project, "trials", "--allow-different-cases", "--k", "2"), "--markdown", str(markdown)]
    )
    assert "1/3 passed · pass@1 0.33 · pass@2 0.67 · pass^2 0.00" in markdown.read_text(encoding="utf-8")


# --- the views of a comparison ------------------------------------------------------------------------------------


def test_the_views_of_a_comparison(project: Path) -> None:
    out = project / "out"
    argv = [
        *folders(project, "candidates", "--allow-different-cases"),
        "--markdown",
        str(out / "c.md"),
        "--junit",
        str(out / "c.xml"),
        "--html",
        str(out / "c.html"),
    ]
    assert harness_main(["compare", *argv]) == 1
    markdown = (out / "c.md").read_text(encoding="utf-8")
    assert markdown.startswith("## ❌ harness compare: 1 check flipped to fail")
    assert "- ❌ `promotions_filtered` pass → fail: step 2: the final answer mentions promotional item" in markdown
    assert "- first divergence at **step 1** (request)" in markdown and "+## Offers" in markdown

    root = ET.parse(out / "c.xml").getroot()
    failures = root.findall(".//failure")
    assert root.get("failures") == "1" and len(failures) == 1
    assert failures[0].get("message").startswith("pass -> fail: step 2:")
    assert "tokens delta: input −" in root.find(".//testcase/system-out").text

    html = (out / "c.html").read_text(encoding="utf-8")
    assert external_references(html) == []
    assert "pass → fail" in html and "First divergence at <strong>step 1</strong>" in html
    assert html.count('aria-label="tokens per step by kind') == 2, "baseline and candidate, side by side"


def test_tool_sequence_changes_name_their_steps() -> None:
    before = [{"name": "query_db", "step": 1, "is_error": True}, {"name": "query_db", "step": 2, "is_error": False}]
    after = [{"name": "query_db", "step": 1, "is_error": False}, {"name": "calculator", "step": 2, "is_error": False}]
    # the failing call is gone (it no longer errs) and a calculator call follows the query
    assert tool_sequence_changes(before, after) == ["dropped: query_db (error) (step 1)", "added: calculator (step 2)"]
    swapped = [{"name": "read_tasks", "step": 1, "is_error": False}, before[1]]
    assert tool_sequence_changes(before, swapped) == ["query_db (error) (step 1) → read_tasks (step 1)"]
    assert tool_sequence_changes(before, before[:1]) == ["dropped: query_db (step 2)"]
    assert tool_sequence_changes(before[:1], before) == ["added: query_db (step 2)"]


def test_compare_results_refuses_different_case_sets_in_the_api_too() -> None:
    doc = {"cases": [{"id": "a", "status": "passed", "checks": []}]}
    other = {"cases": [{"id": "b", "status": "passed", "checks": []}]}
    with pytest.raises(CaseSetMismatch, match="missing from the candidate: a; missing from the baseline: b"):
        compare_results(doc, other)
