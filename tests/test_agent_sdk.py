"""A Claude Agent SDK app (the SDK drives the bundled Claude Code CLI) recorded once and replayed in pytest.

The app asks "What does notes.txt say?" in a folder holding notes.txt; the simulator's `read-file` model
makes the CLI run its Read tool on the file, then answers from the result. Recorded through the
recording proxy against the simulator, it must replay through the `agent_sdk` fixture from another
working directory, with another HOME, on another day, and give the same messages.

"Another day" is real, not faked: the recording runs the CLI with TZ=Etc/GMT+12 (UTC-12) and the replay
with TZ=Etc/GMT-14 (UTC+14), 26 hours apart, so the CLI's "Today's date is ..." line differs whatever the
hour; the claude-code preset's date rule is what lets it match.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness import assert_trajectory, load_trajectory
from harness.agent_sdk import AgentSdkSession
from harness.cassette.format import load_cassette

sdk = pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed: pip install "
                          "'loop-harness[agent-sdk]' (make test installs it)")

pytest_plugins = ["pytester"]
# Inner runs go to a subprocess: an in-process run would drop from sys.modules what it imported first
# (httpcore2 among them), and later tests in this process would meet exception classes httpx2 does not map.

EARLY_TZ, LATE_TZ = "Etc/GMT+12", "Etc/GMT-14"  # POSIX signs: GMT+12 is UTC-12
NOTES = "The launch code is 4217.\n"
PROMPT = "What does notes.txt say?"

# The app, as a user's test file would hold it; the outer tests vary it through APP_* variables.
APP = '''
import asyncio, json, os
from pathlib import Path

import pytest
from claude_agent_sdk import ClaudeAgentOptions, query

from agent_sdk_app import describe


@pytest.mark.cassette("cassettes/read_notes.yaml", upstream="simulator", sim_policy="read-file",
                      match_policy=os.environ.get("APP_POLICY", "strict"))
def test_reads_notes(agent_sdk, tmp_path):
    work = tmp_path / os.environ.get("APP_WORK", "work")
    work.mkdir()
    (work / "notes.txt").write_text(os.environ.get("APP_NOTES", "The launch code is 4217.\\n"))
    home = tmp_path / os.environ.get("APP_HOME", "home")
    home.mkdir()
    options = ClaudeAgentOptions(cwd=str(work), model="claude-sonnet-5", allowed_tools=["Read"], max_turns=4,
                                 env={**agent_sdk.env, "HOME": str(home), "TZ": os.environ.get("APP_TZ", "UTC")})

    async def run():
        return [message async for message in query(prompt=os.environ.get("APP_PROMPT", "What does notes.txt say?"),
                                                   options=options)]

    seen = describe(asyncio.run(run()), work)
    Path(os.environ["APP_OUT"]).write_text(json.dumps(seen))
    assert seen[-1][0] == "result" and seen[-1][1] is False, seen
'''

# What a run gave the app, comparable across working directories: every block of every message.
DESCRIBE = '''
from claude_agent_sdk import AssistantMessage, ResultMessage, TextBlock, ToolResultBlock, ToolUseBlock, UserMessage


def describe(messages, work):
    seen = []
    for message in messages:
        if isinstance(message, (AssistantMessage, UserMessage)) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, TextBlock):
                    seen.append(["text", block.text])
                elif isinstance(block, ToolUseBlock):
                    seen.append(["tool_use", block.name, {k: str(v).replace(str(work), "<work>")
                                                          for k, v in block.input.items()}])
                elif isinstance(block, ToolResultBlock):
                    seen.append(["tool_result", str(block.content)])
        elif isinstance(message, ResultMessage):
            seen.append(["result", message.is_error, message.result])
    return seen
'''


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makepyfile(agent_sdk_app=DESCRIBE, test_app=APP)
    monkeypatch.setenv("APP_OUT", str(pytester.path / "seen.json"))
    return pytester


def _seen(project: pytest.Pytester) -> list[Any]:
    return json.loads((project.path / "seen.json").read_text())


def _record(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setenv("APP_TZ", EARLY_TZ)
    project.runpytest_subprocess("--record-mode=once", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    seen = _seen(project)
    (project.path / "seen.json").unlink()
    return seen


def _replay(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, **app: str) -> pytest.RunResult:
    monkeypatch.setenv("APP_TZ", LATE_TZ)
    monkeypatch.setenv("APP_WORK", "elsewhere")
    monkeypatch.setenv("APP_HOME", "another-home")
    for name, value in app.items():
        monkeypatch.setenv(f"APP_{name.upper()}", value)
    return project.runpytest_subprocess("-p", "no:cacheprovider")


def test_a_session_with_a_tool_call_replays_elsewhere_on_another_day(project: pytest.Pytester,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = _record(project, monkeypatch)
    assert ["tool_use", "Read", {"file_path": "<work>/notes.txt"}] in recorded
    assert ["text", "notes.txt says: The launch code is 4217."] in recorded

    cassette = load_cassette(project.path / "cassettes" / "read_notes.yaml")
    assert cassette.meta["source"] == "simulator"
    assert cassette.meta["matching"]["presets"] == ["claude-code"]  # the CLI identified itself
    text = (project.path / "cassettes" / "read_notes.yaml").read_text()
    assert str(project.path) not in text, "the recording machine's paths are stored as placeholders"
    assert "Today's date is $DATE." in text and "$CWD/notes.txt" in text

    result = _replay(project, monkeypatch)
    result.assert_outcomes(passed=1)
    assert _seen(project) == recorded


def test_a_changed_prompt_fails_with_the_first_miss_and_its_diff(project: pytest.Pytester,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _record(project, monkeypatch)
    result = _replay(project, monkeypatch, prompt="What does notes.txt say about the code?")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "the first request with no recording" in output
    assert "request #1 (POST /v1/messages) has no recording" in output
    assert ("messages[0].content[1].text changed from 'What does notes.txt say?' "
            "to 'What does notes.txt say about the code?'") in output
    # The test fails on the first miss, not on whatever error the CLI made of it after its retries.
    assert "FAILED test_app.py::test_reads_notes - Failed: the first request with no reco" in output
    assert "Command failed with exit code" not in output


def test_tool_output_drift_fails_under_strict(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _record(project, monkeypatch)
    result = _replay(project, monkeypatch, notes="The launch code is 9999.\n")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "request #2 (POST /v1/messages) has no recording" in output
    assert "9999" in output  # the diff shows the tool output that changed


def test_tool_output_drift_passes_under_sequence_with_a_warning(project: pytest.Pytester,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_POLICY", "sequence")
    recorded = _record(project, monkeypatch)
    assert load_cassette(project.path / "cassettes" / "read_notes.yaml").meta["matching"]["policy"] == "sequence"
    result = _replay(project, monkeypatch, notes="The launch code is 9999.\n")
    result.assert_outcomes(passed=1, warnings=1)
    output = result.stdout.str()
    assert "HarnessDriftWarning" in output
    assert "tool-output drift served under matching policy 'sequence'" in output
    assert "request #2 was served recording #2 although its tool output differs" in output
    seen = _seen(project)
    assert ["tool_result", "1\tThe launch code is 9999.\n2\t"] in seen  # the CLI really read the new file
    assert seen[-1] == recorded[-1]  # and the recorded answer was served


def test_a_missing_cassette_fails_the_test_naming_it(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    assert "read_notes.yaml" in result.stdout.str() and "record it first" in result.stdout.str()


def test_a_recording_with_a_refused_first_request_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "refused.yaml"
    body: dict[str, Any] = {"model": "claude-sonnet-5", "max_tokens": 64,
                            "messages": [{"role": "user", "content": "hi"}]}
    with AgentSdkSession(path, "once", upstream="simulator") as session:
        client = httpx2.Client(base_url=session.base_url, headers={"x-api-key": "sim-key"})
        assert client.post("/v1/messages", json={**body, "top_secret_option": 1}).status_code == 400
        assert client.post("/v1/messages", json=body).status_code == 200
        client.close()
    problems = session.problems()
    assert len(problems) == 1
    assert "request #1: 400 top_secret_option: Extra inputs are not permitted" in problems[0]
    assert len(load_cassette(path).interactions) == 2  # kept as it happened, and reported


def _run_app(env: dict[str, str], work: Path, prompt: str) -> None:
    options = sdk.ClaudeAgentOptions(cwd=str(work), model="claude-sonnet-5", allowed_tools=["Read", "Agent"],
                                     max_turns=6, env={**env, "HOME": str(work.parent / "home")})

    async def run() -> list[Any]:
        return [message async for message in sdk.query(prompt=prompt, options=options)]

    asyncio.run(run())


def _session_in(tmp_path: Path, prompt: str) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text(NOTES)
    (tmp_path / "home").mkdir()
    path = tmp_path / "session.yaml"
    with AgentSdkSession(path, "once", upstream="simulator", sim_policy="read-file") as session:
        _run_app(session.env, work, prompt)
    assert session.problems() == []
    return path


def test_the_trajectory_shows_the_cli_tool_call_with_its_result(tmp_path: Path) -> None:
    trajectory = load_trajectory(_session_in(tmp_path, PROMPT))
    calls = [call for step in trajectory.steps for call in step.tool_calls]
    assert [call.name for call in calls] == ["Read"]
    assert calls[0].input == {"file_path": "$CWD/notes.txt"}
    assert "The launch code is 4217." in str(calls[0].result)
    assert trajectory.final_text == "notes.txt says: The launch code is 4217."
    assert all(step.usage.output > 0 for step in trajectory.steps)
    assert all(any(block["type"] == "thinking" and block.get("thinking") for block in step.blocks)
               for step in trajectory.steps)  # adaptive thinking, as the CLI asked for it
    assert trajectory.cost_usd is not None and trajectory.cost_usd > 0


def test_a_subagents_requests_are_steps_of_their_own(tmp_path: Path) -> None:
    trajectory = load_trajectory(_session_in(tmp_path, "Use a subagent to tell me what notes.txt says."))
    names = [call.name for step in trajectory.steps for call in step.tool_calls]
    assert names.count("Agent") == 1 and names.count("Read") == 1
    agent_call = next(call for step in trajectory.steps for call in step.tool_calls if call.name == "Agent")
    assert "notes.txt says: The launch code is 4217." in str(agent_call.result)
    assert len(trajectory.steps) == 4  # main: delegate; subagent: read, answer; main: report
    in_order = sorted(trajectory.steps, key=lambda step: step.index)
    assert [step.run for step in in_order] == [1, 2, 2, 1]  # the subagent is a run of its own


def test_show_checks_and_reports_work_on_a_session(tmp_path: Path) -> None:
    path = _session_in(tmp_path, "Use a subagent to tell me what notes.txt says.")
    shown = subprocess.run([sys.executable, "-m", "harness.cli", "show", str(path)], capture_output=True, text=True,
                           env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert '→ Read({"file_path":"$CWD/notes.txt"})' in shown.stdout and "2 runs · 4 steps" in shown.stdout
    golden = {"name": "agent/read", "cassettes": [str(path)], "checks": [
        {"check": "tool_ids_matched"}, {"check": "outcome", "params": {"stop_reason": "end_turn"}},
        {"check": "trajectory_match", "params": {"expected": [{"name": "Agent"}, {"name": "Read"}]}}]}
    assert_trajectory(path, golden)
    (tmp_path / "golden.json").write_text(json.dumps(golden))
    report = tmp_path / "report.md"
    evaluated = subprocess.run([sys.executable, "-m", "harness.cli", "eval", str(tmp_path / "golden.json"),
                                "--markdown", str(report)], capture_output=True, text=True)
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    assert "3/3 checks passed" in report.read_text()


def test_the_replay_env_points_the_cli_at_loopback_only(tmp_path: Path) -> None:
    path = _session_in(tmp_path, PROMPT)
    with AgentSdkSession(path, "none") as session:
        env = session.env
    assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["ANTHROPIC_API_KEY"] == "replay-key-not-a-secret"


def _readme_example() -> str:
    page = (Path(__file__).resolve().parents[1] / "docs" / "agent-sdk.md").read_text(encoding="utf-8")
    return page.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_example_records_then_replays(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_readme=_readme_example())
    pytester.runpytest_subprocess("--record-mode=once", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert (pytester.path / "cassettes" / "agent" / "read_notes.yaml").exists()
    # Another tmp_path: another folder.
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
