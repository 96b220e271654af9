"""`harness eval` (exit codes, tables, the results JSON) and `harness bless` (write, diff, confirm, merge)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as harness_main
from harness.evals.results import validate_results
from tests.test_checks_support import REPO, TOOL_ERROR_HAR, real_cassettes, record_dayflow


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    return tmp_path


def write_golden(project: Path, name: str, checks: list[dict[str, Any]], cassettes: list[str]) -> Path:
    path = project / "golden" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"name": name, "cassettes": cassettes, "checks": checks}), encoding="utf-8")
    return path


def results_of(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    validate_results(data, file=path)
    return data


# --- harness eval --------------------------------------------------------------------------------------------------


@pytest.mark.real_cassettes
def test_the_protocol_suite_passes_over_every_real_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results.json"
    assert harness_main(["eval", str(REPO / "evals" / "protocol.yaml"), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "suite protocol" in printed and "0 failed, 0 errored" in printed
    results = results_of(out)
    summary = results["summary"]
    assert summary["status"] == "passed" and summary["failed"] == summary["errored"] == 0
    assert summary["checks"] == summary["checks_passed"] > summary["cases"]
    cassettes = {case["cassette"]["absolute_path"] for case in results["cases"]}
    assert cassettes == {str(p.resolve()) for p in real_cassettes()}
    assert all(
        case["cassette"]["sha256"] and case["cassette"]["recorded_from"] == "imported" for case in results["cases"]
    )
    assert summary["usage"]["input"] == sum(case["usage"]["input"] for case in results["cases"])


def test_no_path_runs_the_bundled_suites(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    assert harness_main(["eval"]) == 0
    assert "suite protocol" in capsys.readouterr().out


@pytest.mark.real_cassettes
def test_a_failing_check_is_exit_1_with_its_reason(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    golden = write_golden(
        project, "wrong-ending", [{"check": "outcome", "params": {"stop_reason": "max_tokens"}}], [str(TOOL_ERROR_HAR)]
    )
    out = project / "r.json"
    assert harness_main(["eval", str(golden), "--json", str(out)]) == 1
    assert "step 3: run 1 ended on stop_reason end_turn, expected max_tokens" in capsys.readouterr().out
    results = results_of(out)
    assert results["summary"]["status"] == "failed"
    (case,) = results["cases"]
    assert case["status"] == "failed" and case["checks"][0]["step"] == 3
    assert case["trajectory"]["tool_sequence"][0] == {
        "step": 1,
        "name": "passphrase_test_tool",
        "server": False,
        "kind": "client",
        "is_error": True,
    }


@pytest.mark.real_cassettes
def test_a_missing_cassette_is_an_error_case_and_exit_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_golden(project, "ok", [{"check": "outcome"}], [str(TOOL_ERROR_HAR)])
    write_golden(project, "gone", [{"check": "outcome"}], ["cassettes/nowhere.yaml"])
    out = project / "r.json"
    assert harness_main(["eval", str(project / "golden"), "--json", str(out)]) == 2
    results = results_of(out)
    statuses = {case["id"]: case["status"] for case in results["cases"]}
    assert statuses == {"gone/nowhere.yaml": "error", "ok/handles-tool-execution-errors-and-retries.har": "passed"}
    error = next(case["error"] for case in results["cases"] if case["status"] == "error")
    assert error["reason"].startswith("no such cassette; golden golden/gone.json names it at $.cassettes[0]")
    assert error["file"].endswith("nowhere.yaml")
    assert "no such cassette" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("golden", "message"),
    [
        ({"name": "x", "cassettes": ["a.yaml"], "checks": [{"check": "made_up"}]}, "$.checks[0].check: unknown check"),
        (
            {"name": "x", "cassettes": ["a.yaml"], "checks": [{"check": "budgets", "params": {"max_steps": "ten"}}]},
            "$.checks[0].params.max_steps: 'ten' is not of type 'integer'",
        ),
    ],
)
def test_an_invalid_golden_is_exit_2_naming_file_and_path(
    project: Path, capsys: pytest.CaptureFixture[str], golden: dict[str, Any], message: str
) -> None:
    path = project / "golden" / "bad.json"
    path.parent.mkdir()
    path.write_text(json.dumps(golden), encoding="utf-8")
    assert harness_main(["eval", str(path)]) == 2
    printed = capsys.readouterr()  # the case errors, naming the file and the place (its line in the run's output)
    assert f"{path}: {message}" in printed.out + printed.err


def test_a_path_that_does_not_exist_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert harness_main(["eval", "/nonexistent/suite.yaml"]) == 2
    assert "/nonexistent/suite.yaml: no such suite file" in capsys.readouterr().err


@pytest.mark.real_cassettes
def test_failures_only_hides_passing_checks(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    golden = write_golden(
        project,
        "mixed",
        [{"check": "tool_ids_matched"}, {"check": "outcome", "params": {"stop_reason": "refusal"}}],
        [str(TOOL_ERROR_HAR)],
    )
    assert harness_main(["eval", str(golden), "--failures-only"]) == 1
    out = capsys.readouterr().out
    assert "outcome" in out and "tool_ids_matched" not in out


# --- harness bless ---------------------------------------------------------------------------------------------------


@pytest.fixture
def recorded(project: Path) -> Path:
    path = project / "cassettes" / "dayflow" / "brief.yaml"
    record_dayflow(path)
    return path


def test_bless_writes_a_golden_that_then_passes(
    project: Path, recorded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    assert harness_main(["bless", str(recorded), "--yes"]) == 0
    golden_path = project / "golden" / "dayflow" / "brief.json"  # mirrors cassettes/dayflow/brief.yaml
    golden = json.loads(golden_path.read_text(encoding="utf-8"))
    assert golden["name"] == "dayflow/brief" and golden["cassettes"] == ["cassettes/dayflow/brief.yaml"]
    checks = {c["check"]: c.get("params", {}) for c in golden["checks"]}
    assert checks["final_answer"]["sections"] == ["Today", "Needs a reply", "Deadlines this week"]
    assert [c["name"] for c in checks["trajectory_match"]["expected"]] == ["read_inbox", "read_calendar", "read_tasks"]
    assert checks["budgets"]["max_steps"] == 3 and checks["budgets"]["max_tokens"]["output"] > 560
    assert [i["id"] for i in checks["promotions_filtered"]["promotional"]] == ["em-003"]
    assert [i["id"] for i in checks["promotions_filtered"]["needs_reply"]] == ["em-001", "em-002"]
    capsys.readouterr()
    assert harness_main(["eval", str(golden_path)]) == 0
    assert harness_main(["bless", str(recorded)]) == 1  # nothing changed: no question asked, nothing written
    assert "nothing to bless" in capsys.readouterr().out


def test_bless_updates_run_derived_values_and_keeps_what_a_person_wrote(
    project: Path, recorded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    golden_path = project / "golden" / "brief.json"
    assert harness_main(["bless", str(recorded), "--golden", str(golden_path), "--yes"]) == 0
    golden = json.loads(golden_path.read_text(encoding="utf-8"))
    golden["description"] = "hand-written"
    answer = next(c for c in golden["checks"] if c["check"] == "final_answer")
    answer["params"]["contains"] = ["Priya"]
    answer["params"]["sections"] = ["Old section"]
    budgets = next(c for c in golden["checks"] if c["check"] == "budgets")
    budgets["params"]["max_steps"] = 99
    golden["checks"].append({"check": "no_repeated_calls", "id": "strict-loops", "params": {"max_in_a_row": 1}})
    golden_path.write_text(json.dumps(golden), encoding="utf-8")
    capsys.readouterr()

    assert harness_main(["bless", str(recorded), "--golden", str(golden_path), "--yes"]) == 0
    printed = capsys.readouterr().out
    assert "changed from" in printed and "Old section" in printed  # the deepdiff is shown
    updated = json.loads(golden_path.read_text(encoding="utf-8"))
    assert updated["description"] == "hand-written"
    answer = next(c for c in updated["checks"] if c["check"] == "final_answer")
    assert answer["params"] == {"contains": ["Priya"], "sections": ["Today", "Needs a reply", "Deadlines this week"]}
    assert next(c for c in updated["checks"] if c["check"] == "budgets")["params"]["max_steps"] == 3
    assert any(c.get("id") == "strict-loops" for c in updated["checks"])


def test_bless_asks_on_a_terminal_and_refuses_without_one(
    project: Path, recorded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    golden_path = project / "golden" / "brief.json"
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert harness_main(["bless", str(recorded), "--golden", str(golden_path)]) == 2
    assert not golden_path.exists()
    assert "pass --yes" in capsys.readouterr().out

    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("rich.console.Console.input", lambda self, prompt="": "n")
    assert harness_main(["bless", str(recorded), "--golden", str(golden_path)]) == 1
    assert not golden_path.exists()
    monkeypatch.setattr("rich.console.Console.input", lambda self, prompt="": "y")
    assert harness_main(["bless", str(recorded), "--golden", str(golden_path)]) == 0
    assert json.loads(golden_path.read_text(encoding="utf-8"))["cassettes"] == ["cassettes/dayflow/brief.yaml"]


@pytest.mark.real_cassettes
def test_bless_a_real_recording_with_a_tool_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = project / "cassettes" / "tool-error.har"
    cassette.parent.mkdir()
    shutil.copy(TOOL_ERROR_HAR, cassette)
    golden_path = project / "golden" / "tool-error.json"
    assert harness_main(["bless", str(cassette), "--golden", str(golden_path), "--yes"]) == 0
    checks = {c["check"]: c.get("params", {}) for c in json.loads(golden_path.read_text(encoding="utf-8"))["checks"]}
    assert checks["self_correction"] == {"require_error": True}
    assert checks["outcome"] == {"stop_reason": "end_turn"}
    assert "promotions_filtered" not in checks and "final_answer" not in checks  # no inbox, no headings
    capsys.readouterr()
    assert harness_main(["eval", str(golden_path)]) == 0


def test_bless_a_cassette_that_is_not_there_is_exit_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert harness_main(["bless", str(project / "none.yaml"), "--yes"]) == 2
    assert "no such" in capsys.readouterr().err


@pytest.mark.real_cassettes
def test_the_golden_flag_swaps_the_golden_folder(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = project / "evals" / "s.yaml"
    suite.parent.mkdir()
    suite.write_text("name: s\ncases:\n  - golden: g.json\n", encoding="utf-8")
    write_golden(project, "g", [{"check": "outcome"}], [str(TOOL_ERROR_HAR)])
    strict = project / "strict"
    strict.mkdir()
    (strict / "g.json").write_text(
        json.dumps(
            {
                "name": "g",
                "cassettes": [str(TOOL_ERROR_HAR)],
                "checks": [{"check": "budgets", "params": {"max_steps": 1}}],
            }
        )
    )
    assert harness_main(["eval", str(suite)]) == 0
    out = project / "r.json"
    assert harness_main(["eval", str(suite), "--golden", str(strict), "--json", str(out)]) == 1
    results = results_of(out)
    assert results["golden_dir"] == str(strict.resolve())
    assert results["cases"][0]["checks"][0]["reason"] == "step 2: 3 steps, over the limit of 1"


@pytest.mark.real_cassettes
def test_progress_is_reported_per_case(project: Path) -> None:
    from harness.evals.runner import run_suites
    from harness.evals.suite import discover_suites

    golden = write_golden(project, "g", [{"check": "outcome"}], [str(TOOL_ERROR_HAR), str(REPO / "pyproject.toml")])
    seen: list[tuple[str, str]] = []
    results = run_suites(
        discover_suites([golden]), progress=lambda case, record: seen.append((case.id, record["status"]))
    )
    assert [status for _, status in seen] == ["passed", "error"]  # a pyproject.toml is no cassette
    assert [case["id"] for case in results["cases"]] == [case_id for case_id, _ in seen]


def test_the_router_offers_eval_show_and_bless() -> None:
    from harness.cli import build_parser

    help_text = build_parser().format_help()
    assert all(name in help_text for name in ("eval", "show", "bless"))
