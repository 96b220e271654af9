"""The judged check `rubric` and its judge cassettes: recorded once, replayed offline with the same verdict; a
judge request that no longer matches is "needs re-judging" (exit 2), never a failed agent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cassette.format import load_cassette
from harness.checks import run_check
from harness.checks.rubric import judge_request, parse_verdict, render_run
from harness.cli import main as harness_main
from harness.evals.judge import judge_cassette_path
from harness.evals.results import validate_results
from harness.sim import Simulator
from tests.test_checks_support import REPO, conversation, text, tool_result, tool_use, turn

GOLDEN = "golden/dayflow/brief.json"
JUDGE_CASSETTE = "golden/dayflow/brief.rubric.judge.yaml"
CRITERION = (
    "every email that needs a reply is listed under Needs a reply, with its deadline; nothing promotional appears"
)


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "200")


def clone_of_dayflow(tmp_path: Path) -> Path:
    """The files a fresh clone has for Dayflow's golden: those git tracks, copied into a project of their own."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "golden/dayflow", "cassettes/dayflow/brief.yaml"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert JUDGE_CASSETTE in listed  # committed, so a clone replays it
    project = tmp_path / "clone"
    for name in listed:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, project / name)
    (project / "pyproject.toml").write_text("", encoding="utf-8")
    return project


def rubric_of(results: dict[str, Any]) -> dict[str, Any]:
    (case,) = results["cases"]
    return next(check for check in case["checks"] if check["check"] == "rubric")


def edit_rubric(golden: Path, **params: Any) -> None:
    data = json.loads(golden.read_text(encoding="utf-8"))
    for check in data["checks"]:
        if check["check"] == "rubric":
            check["params"].update(params)
    golden.write_text(json.dumps(data), encoding="utf-8")


# --- replay: recorded once, the same verdict offline ------------------------------------------------------------


def test_the_bundled_rubric_replays_offline_in_a_fresh_clone_with_no_key(tmp_path: Path) -> None:
    project = clone_of_dayflow(tmp_path)
    # Nothing to reach: no key, and a base URL where nothing listens (any request sent would fail the run).
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")} | {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "COLUMNS": "200",
    }
    verdicts = []
    for attempt in range(2):
        out = project / f"results-{attempt}.json"
        done = subprocess.run(
            [sys.executable, "-m", "harness.commands.eval", GOLDEN, "--json", str(out)],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        results = json.loads(out.read_text(encoding="utf-8"))
        validate_results(results)
        check = rubric_of(results)
        verdicts.append({key: check[key] for key in ("passed", "reason", "step", "score")} | {"judge": check["judge"]})
    assert verdicts[0] == verdicts[1]
    judged = verdicts[0]
    assert judged["passed"] and judged["score"] == 1.0 and judged["step"] == 2
    assert judged["judge"]["status"] == "judged" and judged["judge"]["source"] == "simulator"
    assert judged["reason"].startswith("the judge (claude-sonnet-4-6, simulator) says pass (score 1.00): step 2: “Q3")
    meta = load_cassette(project / JUDGE_CASSETTE).meta
    assert meta["judge"] is True and meta["source"] == "simulator" and meta["simulator_model"] == "sim-judge"
    assert meta["golden"] == GOLDEN and meta["check"] == "rubric"


# --- needs re-judging ---------------------------------------------------------------------------------------------


def test_a_changed_criterion_needs_rejudging_and_is_not_a_failed_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = clone_of_dayflow(tmp_path)
    edit_rubric(project / GOLDEN, criterion=CRITERION + "; the calendar is listed in time order")
    out = project / "r.json"
    assert harness_main(["eval", str(project / GOLDEN), "--json", str(out)]) == 2
    printed = capsys.readouterr().out
    assert "JUDGE" in printed and "needs re-judging (the criterion)" in printed and "FAIL" not in printed
    results = json.loads(out.read_text(encoding="utf-8"))
    validate_results(results)
    (case,) = results["cases"]
    assert case["status"] == "passed" and case["needs_rejudging"] == ["rubric"]  # the agent did not fail
    assert results["summary"]["failed"] == 0 and results["summary"]["checks_failed"] == 0
    assert results["summary"]["needs_rejudging"] == 1 and results["summary"]["status"] == "error"
    judge = rubric_of(results)["judge"]
    assert judge["status"] == "needs_rejudging" and judge["changed"] == ["the criterion"]
    assert any("criterion" in line or "messages" in line for line in judge["differences"])  # the cassette's diff


def test_a_changed_judge_model_or_run_is_named(tmp_path: Path) -> None:
    project = clone_of_dayflow(tmp_path)
    edit_rubric(project / GOLDEN, model="claude-opus-4-6")
    out = project / "r.json"
    assert harness_main(["eval", str(project / GOLDEN), "--json", str(out)]) == 2
    assert rubric_of(json.loads(out.read_text(encoding="utf-8")))["judge"]["changed"] == ["the judge model"]

    edit_rubric(project / GOLDEN, model="claude-sonnet-4-6", on="final_answer")
    assert harness_main(["eval", str(project / GOLDEN), "--json", str(out)]) == 2
    assert rubric_of(json.loads(out.read_text(encoding="utf-8")))["judge"]["changed"] == ["the judged run"]


# --- record and rewrite against a function model --------------------------------------------------------------------


def test_record_asks_a_function_model_once_then_replays_with_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = clone_of_dayflow(tmp_path)
    (project / JUDGE_CASSETTE).unlink()
    asked: list[dict[str, Any]] = []

    def judge(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        # The verdict as JSON text: what structured outputs return (the simulator keeps a valid answer as it is).
        answer = {
            "verdict": "fail",
            "score": 0.4,
            "reasons": [{"step": 2, "quote": "## Deadlines this week", "explanation": "a deadline is missing"}],
        }
        return {"content": [{"type": "text", "text": json.dumps(answer)}]}

    out = project / "r.json"
    with Simulator(model=judge) as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["eval", str(project / GOLDEN), "--judge", "record", "--json", str(out)]) == 1
    assert len(asked) == 1
    assert asked[0]["output_config"]["format"]["type"] == "json_schema"  # structured outputs asked for
    recorded = rubric_of(json.loads(out.read_text(encoding="utf-8")))
    assert not recorded["passed"] and recorded["step"] == 2 and recorded["score"] == 0.4
    assert "says fail (score 0.40): step 2: “## Deadlines this week” a deadline is missing" in recorded["reason"]

    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert harness_main(["eval", str(project / GOLDEN), "--json", str(out)]) == 1  # replay: no key, no network
    replayed = rubric_of(json.loads(out.read_text(encoding="utf-8")))
    assert len(asked) == 1
    assert {k: replayed[k] for k in ("passed", "reason", "step", "score")} == {
        k: recorded[k] for k in ("passed", "reason", "step", "score")
    }

    # --judge record records only what is missing; --judge rewrite asks again.
    with Simulator(model=judge) as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["eval", str(project / GOLDEN), "--judge", "record", "--json", str(out)]) == 1
        assert len(asked) == 1
        assert harness_main(["eval", str(project / GOLDEN), "--judge", "rewrite", "--json", str(out)]) == 1
        assert len(asked) == 2
    assert len(load_cassette(project / JUDGE_CASSETTE).interactions) == 1


def test_a_threshold_reads_the_judges_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = clone_of_dayflow(tmp_path)
    (project / JUDGE_CASSETTE).unlink()
    edit_rubric(project / GOLDEN, threshold=0.3)

    def judge(request: dict[str, Any]) -> dict[str, Any]:
        made_up = {"step": 2, "quote": "Lunch with the CEO at noon", "explanation": "not in the brief"}
        return {"content": json.dumps({"verdict": "fail", "score": 0.4, "reasons": [made_up]})}

    out = project / "r.json"
    with Simulator(model=judge) as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["eval", str(project / GOLDEN), "--judge", "record", "--json", str(out)]) == 0
    check = rubric_of(json.loads(out.read_text(encoding="utf-8")))
    assert check["passed"] and check["reason"] == (
        "the judge (claude-sonnet-4-6, simulator) says fail (score 0.40, threshold 0.3): step 2: “Lunch with the CEO "
        "at noon” (not found in the run) not in the brief"
    )
    assert check["judge"]["reasons"][0]["quote_found"] is False  # a quote the judge made up reads as such


def test_a_plain_sim_auto_judge_gives_a_score_within_its_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No script, no function: sim-auto makes up the verdict from the schema. The score's bounds are in its
    # description (the API takes no numeric bounds), where the simulator, like a model, reads them.
    project = clone_of_dayflow(tmp_path)
    (project / JUDGE_CASSETTE).unlink()
    out = project / "r.json"
    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["eval", str(project / GOLDEN), "--judge", "record", "--json", str(out)]) in (0, 1)
    check = rubric_of(json.loads(out.read_text(encoding="utf-8")))
    assert check["judge"]["status"] == "judged" and 0 <= check["score"] <= 1


def test_the_scores_bounds_are_written_as_the_sdk_writes_them() -> None:
    import anthropic

    from harness.checks.rubric import VERDICT_SCHEMA

    bounded = {"type": "number", "minimum": 0, "maximum": 1, "description": "how fully the criterion holds"}
    assert VERDICT_SCHEMA["properties"]["score"] == anthropic.transform_schema(bounded)


def test_a_judge_that_cannot_answer_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = clone_of_dayflow(tmp_path)
    (project / JUDGE_CASSETTE).unlink()

    def judge(request: dict[str, Any]) -> dict[str, Any]:
        return {"content": json.dumps({"verdict": "pass", "score": 7, "reasons": []})}

    with Simulator(model=judge) as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["eval", str(project / GOLDEN), "--judge", "record"]) == 2
    out = capsys.readouterr().out
    assert out.count("the judge's score 7 is not between 0 and 1") == 1, out
    assert f"{JUDGE_CASSETTE}: check rubric: the judge's score 7" in out


def test_recording_with_nowhere_to_ask_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = clone_of_dayflow(tmp_path)
    edit_rubric(project / GOLDEN, criterion="something new")
    assert harness_main(["eval", str(project / GOLDEN), "--judge", "record"]) == 2
    assert "recording a judgement needs ANTHROPIC_API_KEY" in capsys.readouterr().out


# --- the request and the answer ----------------------------------------------------------------------------------


def long_run(steps: int) -> Any:
    turns = []
    for index in range(steps):
        call = tool_use("read_page", {"page": index}, id=f"toolu_{index}")
        turns.append(turn(call, results=[tool_result(f"toolu_{index}", "x" * 3000)]))
    return conversation(*turns, turn(text("All pages read.")))


def test_the_run_is_windowed_within_its_budget_keeping_both_ends() -> None:
    rendered = render_run(long_run(40), "both", max_chars=20_000)
    assert len(rendered) < 20_500
    assert "step 1: tool call read_page" in rendered and "All pages read." in rendered
    assert "step(s) left out to keep the run within" in rendered
    assert "toolu_" not in rendered  # ids a recording makes up are not part of the question


def test_judge_request_asks_for_the_verdict_shape_and_reads_plain_json() -> None:
    request = judge_request(long_run(1), {"criterion": "reads every page", "on": "trajectory"})
    assert request["output_config"]["format"]["schema"]["required"] == ["verdict", "score", "reasons"]
    assert request["messages"][0]["content"][0]["text"] == "Criterion:\nreads every page"
    verdict = parse_verdict(
        {"content": [{"type": "text", "text": 'Here: {"verdict": "pass", "score": 1, "reasons": []}'}]}
    )
    assert verdict["verdict"] == "pass"
    # A plain JSON text answer from an endpoint without structured outputs may come fenced.
    fenced = '```json\n{"verdict": "fail", "score": 0.5, "reasons": []}\n```'
    assert parse_verdict({"content": [{"type": "text", "text": fenced}]})["score"] == 0.5
    with pytest.raises(ValueError, match=r"not the verdict shape at \$\.verdict"):
        parse_verdict({"content": [{"type": "text", "text": '{"verdict": "maybe", "score": 1, "reasons": []}'}]})


def test_rubric_through_the_registry_alone_says_it_needs_the_judge() -> None:
    result = run_check("rubric", long_run(1), {"criterion": "x"})
    assert not result.passed and "judged by a model" in result.reason


def test_the_judge_cassette_sits_beside_the_golden() -> None:
    assert judge_cassette_path(REPO / GOLDEN, "rubric") == REPO / JUDGE_CASSETTE


# --- reports -------------------------------------------------------------------------------------------------------


def test_reports_show_judged_checks_with_the_judges_reasons(tmp_path: Path) -> None:
    project = clone_of_dayflow(tmp_path)
    views = {kind: project / f"r.{kind}" for kind in ("markdown", "html", "junit")}
    flags = [f"--{kind}={path}" for kind, path in views.items()]
    assert harness_main(["eval", str(project / GOLDEN), *flags]) == 0
    markdown = views["markdown"].read_text(encoding="utf-8")
    assert "### ⚖️ Judged checks" in markdown and "claude-sonnet-4-6 (simulator)" in markdown
    assert "step 2: “Q3 vendor review" in markdown
    assert "judge claude-sonnet-4-6 (simulator) · score 1.00" in views["html"].read_text(encoding="utf-8")
    assert "the judge (claude-sonnet-4-6, simulator) says pass" in views["junit"].read_text(encoding="utf-8")

    edit_rubric(project / GOLDEN, criterion="the brief is polite")
    assert harness_main(["eval", str(project / GOLDEN), *flags]) == 2
    markdown = views["markdown"].read_text(encoding="utf-8")
    assert "### ⚖️ Needs re-judging (not a failure of the agent)" in markdown and "Failed checks" not in markdown
    assert "Needs re-judging (not a failure of the agent)" in views["html"].read_text(encoding="utf-8")
    junit = views["junit"].read_text(encoding="utf-8")
    assert "<skipped" in junit and 'failures="0"' in junit


def test_compare_leaves_a_stale_judgement_out_of_the_flips(tmp_path: Path) -> None:
    from harness.report.compare import compare_results, comparison_exit_code

    project = clone_of_dayflow(tmp_path)
    before, after = project / "before.json", project / "after.json"
    assert harness_main(["eval", str(project / GOLDEN), "--json", str(before)]) == 0
    edit_rubric(project / GOLDEN, criterion="the brief is polite")
    assert harness_main(["eval", str(project / GOLDEN), "--json", str(after)]) == 2
    comparison = compare_results(*(json.loads(p.read_text(encoding="utf-8")) for p in (before, after)))
    (case,) = comparison["cases"]
    assert case["needs_rejudging"] == ["rubric"] and comparison["summary"]["needs_rejudging"] == [case["id"]]
    assert all(check["flip"] is None for check in case["checks"]) and case["status"] != "regressed"
    assert "rubric" not in [check["id"] for check in case["checks"] if check["candidate"]]
    assert comparison_exit_code(comparison) == 2
