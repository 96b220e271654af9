"""Output off a terminal is plain text: no folding at 80 columns, no trailing spaces (a pipe, a file, or `CI`);
counts read as a person writes them ("1 step", not "1 steps"); a blessed golden's case is named once, and the
goldens of one folder are one suite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.checks.registry import run_check
from harness.cli import main
from harness.commands import plain_text
from harness.evals.suite import discover_suites
from harness.run import Exchange
from harness.trajectory import Trajectory
from tests.conftest import REPO

SQL = REPO / "cassettes" / "sql" / "self_correction.yaml"
MODEL = "claude-sonnet-4-5"


def test_show_in_a_pipe_is_neither_folded_nor_padded(capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["show", str(SQL)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line != line.rstrip()] == []
    assert any("query_db(" in line and "created_at) = '2026'" in line for line in lines), "folded mid-call"


class _Tty:
    def isatty(self) -> bool:
        return True


def test_a_terminal_is_plain_only_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert not plain_text(_Tty())
    monkeypatch.setenv("CI", "true")
    assert plain_text(_Tty())


def _exchange(index: int, content: list[dict[str, object]], stop: str, sent: list[dict[str, object]]) -> Exchange:
    return Exchange(
        request={"model": MODEL, "max_tokens": 100, "messages": sent},
        message={"id": f"msg_{index}", "type": "message", "role": "assistant", "model": MODEL, "content": content,
                 "stop_reason": stop, "usage": {"input_tokens": 1, "output_tokens": 1}},
    )


def test_counts_of_one_are_singular() -> None:
    ask = {"role": "user", "content": "weather?"}
    call = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
    answer = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}
    one_step = Trajectory.from_exchanges([_exchange(1, [{"type": "text", "text": "hi"}], "end_turn", [ask])])
    assert run_check("budgets", one_step, {"max_steps": 5}).reason.startswith("1 step, 0 tool calls, 2 tokens")
    assert run_check("budgets", one_step, {"max_steps": 0}).reason == "step 1: 1 step, over the limit of 0"
    two_steps = Trajectory.from_exchanges([
        _exchange(1, [call], "tool_use", [ask]),
        _exchange(2, [{"type": "text", "text": "sunny"}], "end_turn",
                  [ask, {"role": "assistant", "content": [call]}, answer]),
    ])
    reason = run_check("tool_ids_matched", two_steps).reason
    assert reason == "the one tool_use id sent back was answered by the next user turn"
    assert "1 tool call," in run_check("budgets", two_steps, {"max_steps": 5}).reason


def test_a_blessed_golden_is_named_once_and_a_folder_of_goldens_is_one_suite(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    for name in ("weather", "traffic"):
        shutil.copy(SQL, (tmp_path / "cassettes").mkdir(exist_ok=True) or tmp_path / "cassettes" / f"{name}.yaml")
        golden = tmp_path / "golden" / f"{name}.json"
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(json.dumps({"name": name, "cassettes": [f"cassettes/{name}.yaml"],
                                      "checks": [{"check": "tool_ids_matched"}]}), encoding="utf-8")
    (suite,) = discover_suites([tmp_path / "golden"])
    assert suite.name == "golden"
    assert sorted(case.id for case in suite.cases) == ["traffic", "weather"]
