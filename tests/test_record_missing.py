"""`harness record --missing` records only the scenarios with no cassette; a scenario being recorded shows a
progress line per step on a terminal, and nothing of it in a pipe (issue 41, item 4)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from harness.cli import main as harness_main
from harness.recording import progress_line
from harness.sim import Simulator
from tests.user_projects import weather_project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = weather_project(tmp_path / "missing", monkeypatch, "missing_weather_agent")
    (root / "pyproject.toml").write_text('[tool.loop-harness.scenarios]\nweather = "missing_weather_agent:weather"\n'
                                         'again = "missing_weather_agent:weather"\n', encoding="utf-8")
    return root


def test_missing_records_only_the_scenarios_without_a_cassette(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = project / "cassettes" / "weather.yaml"
    kept.parent.mkdir()
    kept.write_text("a cassette recorded before, not to be touched\n", encoding="utf-8")
    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["record", "--missing"]) == 0
    out = capsys.readouterr().out
    assert "again.yaml" in out and "weather.yaml" not in out
    assert kept.read_text(encoding="utf-8") == "a cassette recorded before, not to be touched\n"
    assert (project / "cassettes" / "again.yaml").exists()
    monkeypatch.delenv("ANTHROPIC_BASE_URL")  # nothing left to record: no key or simulator needed to say so
    assert harness_main(["record", "--missing"]) == 0
    assert "nothing to record" in capsys.readouterr().out


def _interaction(stop_reason: str, tools: list[str]) -> dict:
    content = [{"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": {}} for n, name in enumerate(tools)]
    body = {"type": "message", "role": "assistant", "content": content or [{"type": "text", "text": "done"}],
            "stop_reason": stop_reason}
    return {"request": {"method": "POST", "path": "/v1/messages"}, "response": {"status": 200, "body": body}}


def test_a_progress_line_says_the_step_how_it_stopped_and_its_tool_calls() -> None:
    assert progress_line("weather", 1, _interaction("tool_use", ["get_weather"])) == (
        "weather: step 1, tool_use, 1 tool call (get_weather)")
    assert progress_line("weather", 2, _interaction("end_turn", [])) == "weather: step 2, end_turn, 0 tool calls"
    other = _interaction("end_turn", [])
    other["request"]["path"] = "/v1/messages/count_tokens"
    assert progress_line("weather", 3, other) is None  # not a step of the loop


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [True, False])
def test_progress_lines_go_to_a_terminal_only(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], terminal: bool
) -> None:
    stderr = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["record", "weather"]) == 0
    shown = stderr.getvalue()
    if terminal:
        assert "weather: step 1, tool_use, 1 tool call (get_weather)" in shown
        assert "weather: step 2, end_turn, 0 tool calls" in shown
    else:
        assert "step 1" not in shown and "tool call" not in shown
