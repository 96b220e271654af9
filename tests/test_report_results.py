"""The per-step data the results document carries for the HTML report and `harness compare`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.evals import results as results_module
from harness.evals.results import validate_results
from harness.evals.runner import run_case
from harness.evals.suite import load_suite
from harness.trajectory import load_trajectory
from harness_demo.dayflow import SYSTEM_PROMPT
from tests.test_report_support import make_project, run_eval


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="module")
def results(project: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    code, data = run_eval(project, tmp_path_factory.mktemp("out"))
    # 1: a check failed (dayflow/strict); that another case cannot run (exit 2 alone) does not hide it from CI.
    assert code == 1, "the project holds a failing case beside one that cannot run"
    return data


def case(results: dict[str, Any], case_id: str) -> dict[str, Any]:
    return next(c for c in results["cases"] if c["id"] == case_id)


def test_every_step_of_the_trajectory_is_in_the_results(results: dict[str, Any], project: Path) -> None:
    record = case(results, "sql/self_correction/self_correction.yaml")
    trajectory = load_trajectory(project / "cassettes" / "sql" / "self_correction.yaml")
    details = record["trajectory"]["step_details"]
    assert [step["index"] for step in details] == [step.index for step in trajectory.steps]
    assert [step["response"]["stop_reason"] for step in details] == record["trajectory"]["stop_reasons"]
    assert sum(step["usage"]["input"] for step in details) == record["usage"]["input"]
    first_call = details[0]["tool_calls"][0]
    assert first_call["name"] == "query_db" and "created_at" in first_call["input"]["sql"]
    assert first_call["result"]["is_error"] is True and "registration_date" in first_call["result"]["content"]
    assert details[1]["tool_calls"][0]["result"]["is_error"] is False
    assert [run["outcome"]["stop_reason"] for run in record["trajectory"]["run_details"]] == ["end_turn"]


def test_the_request_carries_the_system_prompt_text(results: dict[str, Any]) -> None:
    details = case(results, "dayflow/brief/brief.yaml")["trajectory"]["step_details"]
    assert all(step["request"]["system_text"] == SYSTEM_PROMPT for step in details)
    assert details[0]["request"]["tools"] == ["read_inbox", "read_calendar", "read_tasks"]
    assert details[0]["request"]["tools_fingerprint"].startswith("sha256:")
    # the context grows: the second request carries the three tool results
    assert details[1]["usage"]["input"] > details[0]["usage"]["input"]
    assert [m["role"] for m in details[1]["added"]] == ["assistant", "user"]


def test_a_case_that_could_not_run_has_no_trajectory(results: dict[str, Any]) -> None:
    record = case(results, "broken/not_recorded.yaml")
    assert record["status"] == "error" and record["trajectory"] is None


def test_long_strings_are_clipped_with_a_hash_of_the_whole() -> None:
    text = "x" * 5000
    clipped = results_module._clip({"a": [text]})["a"][0]
    assert clipped.startswith("x" * results_module.STEP_TEXT_LIMIT)
    assert f"{5000 - results_module.STEP_TEXT_LIMIT:,} more characters, sha256:" in clipped
    other = results_module._clip({"a": ["x" * 4999 + "y"]})["a"][0]
    assert other != clipped, "a change past the cut still shows"


def test_the_runner_fills_step_details_from_the_cassette_it_read(project: Path) -> None:
    suite = load_suite(project / "evals" / "report.yaml")
    dayflow = next(c for c in suite.cases if c.id == "dayflow/brief/brief.yaml")
    details = run_case(dayflow)["trajectory"]["step_details"]
    assert [step["response"]["stop_reason"] for step in details] == ["tool_use", "end_turn"]


def test_older_results_without_step_details_still_validate(results: dict[str, Any]) -> None:
    older = json.loads(json.dumps(results))
    for record in older["cases"]:
        if record["trajectory"]:
            record["trajectory"].pop("step_details")
            record["trajectory"].pop("run_details")
    validate_results(older)
