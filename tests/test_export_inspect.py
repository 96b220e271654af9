"""`harness export --inspect`: an inspect_ai eval log, read back with inspect_ai's own reader."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai.log", reason="needs loop-harness[inspect]")

from inspect_ai.log import EvalLog, read_eval_log

from harness.cli import main
from harness.evals.runner import run_case
from harness.evals.suite import discover_suites, project_suites
from harness.trajectory import load_trajectory
from tests.conftest import REAL_CASSETTES, REPO

DAYFLOW = REPO / "cassettes" / "dayflow" / "brief.yaml"
OVERLOADED = REPO / "cassettes" / "faults" / "overloaded_then_ok.yaml"
EXHAUSTED = REPO / "cassettes" / "faults" / "server_error_exhausted.yaml"
REAL = [
    "openllmetry/test_messages/test_anthropic_message_streaming_legacy.yaml",
    "llm-anthropic/test_stream_events_thinking.yaml",
    "mirascope/input/cassettes/test_call_with_tool_error/anthropic_claude_sonnet_4_0.yaml",
    "openinference/openinference-instrumentation-anthropic/tests/openinference/anthropic/cassettes/"
    "test_instrumentor/test_anthropic_instrumentation_multiple_tool_calling.yaml",
    "openllmetry/test_prompt_caching/test_anthropic_prompt_caching_legacy.yaml",
    "mirascope/input/cassettes/test_authentication_error/anthropic_claude_sonnet_4_0.yaml",
    "llm-anthropic/test_web_search.yaml",
]


def _export(tmp_path: Path, *cassettes: Path, extra: tuple[str, ...] = (), name: str = "log.eval") -> EvalLog:
    out = tmp_path / name
    assert main(["export", *map(str, cassettes), "--inspect", str(out), *extra]) == 0
    return read_eval_log(str(out))


def _bundled_checks(cassette: Path) -> list[dict[str, Any]]:
    """What `harness eval` finds for this cassette: the checks of the bundled cases that name it."""
    suites = discover_suites(project_suites(Path(__file__).resolve().parents[1]))
    return [check for suite in suites for case in suite.cases if case.cassette.resolve() == cassette.resolve()
            for check in run_case(case)["checks"]]


def _events(log: EvalLog, kind: str, sample: int = 0) -> list[Any]:
    assert log.samples is not None
    return [event for event in log.samples[sample].events if event.event == kind]


def test_dayflow_loads_with_its_checks_as_scores(tmp_path: Path) -> None:
    log = _export(tmp_path, DAYFLOW)
    assert log.status == "success" and log.samples is not None and len(log.samples) == 1
    [sample] = log.samples
    assert sample.id == str(DAYFLOW)

    checks = _bundled_checks(DAYFLOW)
    assert checks and sample.scores is not None
    assert {name: score.value for name, score in sample.scores.items()} == {
        check["id"]: "C" if check["passed"] else "I" for check in checks
    }
    assert {name: score.explanation for name, score in sample.scores.items()} == {c["id"]: c["reason"] for c in checks}
    assert log.results is not None
    assert {s.name: s.metrics["accuracy"].value for s in log.results.scores} == {
        c["id"]: 1.0 if c["passed"] else 0.0 for c in checks
    }

    trajectory = load_trajectory(DAYFLOW)
    models = _events(log, "model")
    assert len(models) == len(trajectory.steps)
    for event, step in zip(models, trajectory.steps, strict=True):
        assert event.output.usage.input_tokens == step.usage.input
        assert event.output.usage.output_tokens == step.usage.output
        assert event.output.stop_reason == {"tool_use": "tool_calls", "end_turn": "stop"}[step.stop_reason]
        assert event.model == f"anthropic/{step.request['model']}"
        assert event.input[0].text == trajectory.steps[0].delta[0]["content"]
    # inspect gives each tool_result a message of its own, in the order of the calls
    assert [m.tool_call_id for m in models[-1].input if m.role == "tool"] == [c.id for c in trajectory.tool_calls]
    assert models[-1].output.completion == trajectory.final_text
    tools = _events(log, "tool")
    assert [(t.id, t.function, t.arguments) for t in tools] == [(c.id, c.name, c.input) for c in trajectory.tool_calls]
    assert all(t.result == c.result.content for t, c in zip(tools, trajectory.tool_calls, strict=True) if c.result)
    assert len(_events(log, "score")) == len(checks)

    [usage] = sample.model_usage.values()
    assert (usage.input_tokens, usage.output_tokens) == (trajectory.usage.input, trajectory.usage.output)
    assert sample.output.completion == trajectory.final_text


def test_a_failing_check_is_an_incorrect_score(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "cassettes").mkdir(parents=True)
    (project / "golden").mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    cassette = project / "cassettes" / "brief.yaml"
    shutil.copy(DAYFLOW, cassette)
    golden = {"name": "wrong-ending", "cassettes": ["cassettes/brief.yaml"],
              "checks": [{"check": "outcome", "params": {"stop_reason": "max_tokens"}}, {"check": "tool_ids_matched"}]}
    (project / "golden" / "wrong.json").write_text(json.dumps(golden))
    log = _export(tmp_path, cassette, extra=("--suite", str(project / "golden" / "wrong.json")))
    assert log.samples is not None and log.samples[0].scores is not None
    scores = log.samples[0].scores
    assert scores["outcome"].value == "I" and "max_tokens" in (scores["outcome"].explanation or "")
    assert scores["tool_ids_matched"].value == "C"


def test_retries_and_errors_are_model_events_with_errors(tmp_path: Path) -> None:
    log = _export(tmp_path, OVERLOADED, EXHAUSTED)
    failed, answered, _ = _events(log, "model", 0)  # step 1 tried twice, then step 2
    assert failed.error and "overloaded_error" in failed.error
    assert answered.error is None and answered.retries == 1
    exhausted = _events(log, "model", 1)
    assert exhausted and all(event.error for event in exhausted)
    assert log.samples is not None and log.samples[1].output.error


def test_a_cassette_no_suite_names_gets_no_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "elsewhere.yaml"
    shutil.copy(DAYFLOW, copy)
    log = _export(tmp_path, copy, name="log.json")  # the JSON log format, by the suffix
    assert log.samples is not None and log.samples[0].scores is None
    assert "no suite case names this cassette" in capsys.readouterr().err
    assert len(_events(log, "model")) == 2


@pytest.mark.parametrize("name", REAL, ids=lambda n: Path(n).stem[:40])
def test_real_recordings(tmp_path: Path, name: str) -> None:
    if not REAL_CASSETTES.is_dir():
        pytest.skip(f"the real-recordings corpus is not here ({REAL_CASSETTES})")
    cassette = REAL_CASSETTES / name
    log = _export(tmp_path, cassette)
    trajectory = load_trajectory(cassette)
    tries = sum(len(s.attempts) for s in trajectory.steps)
    tries += sum(len(r.failed_request.attempts) for r in trajectory.runs if r.failed_request)
    models = _events(log, "model")
    assert len(models) == tries
    answered = [event for event in models if event.error is None]
    assert sum(e.output.usage.output_tokens for e in answered if e.output.usage) == trajectory.usage.output
    assert sum((e.output.usage.input_tokens_cache_read or 0) for e in answered if e.output.usage) == (
        trajectory.usage.cache_read
    )
    assert len(_events(log, "tool")) == len(trajectory.tool_calls)  # every kind: client, server and MCP calls
    # the protocol suite judges every real recording: its checks come along as scores
    checks = _bundled_checks(cassette)
    assert log.samples is not None
    assert sorted((log.samples[0].scores or {}).keys()) == sorted(c["id"] for c in checks)


def test_without_the_extra_the_command_names_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    assert main(["export", str(DAYFLOW), "--inspect", str(tmp_path / "log.eval")]) == 2
    assert "pip install 'loop-harness[inspect]'" in capsys.readouterr().err


def test_a_log_needs_an_inspect_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(DAYFLOW), "--inspect", str(tmp_path / "log.txt")]) == 2
    assert ".eval or a .json" in capsys.readouterr().err
