"""A `claude_agent_sdk.query()` app with an in-process SDK MCP tool and a hook, recorded at the SDK's `Transport`
seam against the simulator, and replayed with no Claude Code CLI on the machine (no PATH to it, a `cli_path`
that does not exist, and any subprocess start an error), under another HOME, cwd and time zone.

In replay the app's own tool and hook run on the recorded inputs; a tool whose answer changed is a
`TransportMismatch` with a diff of the recorded and the new answer.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.agent_sdk import AgentSdkSession
from harness.agent_sdk.transport import KIND, TransportMismatch, load_transport_cassette

sdk = pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed: pip install "
                          "'loop-harness[agent-sdk]'")

TOOL = "mcp__notes__lookup"
PROMPT = "Look up the launch code."


def model(request: dict[str, Any]) -> dict[str, Any]:
    """The simulator's turn: call the in-process tool once, then answer from its result."""
    # The CLI puts a "system" message after the user's turn: look at every message, not only the last.
    results = [block for message in request["messages"] if isinstance(message.get("content"), list)
               for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_result"]
    if results:
        content = results[0].get("content")
        text = content if isinstance(content, str) else " ".join(part.get("text", "") for part in content or [])
        return {"content": f"The lookup says: {text}"}
    return {"content": [{"type": "tool_use", "id": "toolu_sim_1", "name": TOOL, "input": {"topic": "launch"}}]}


class App:
    """The user's app: a tool answering from `answer`, a PreToolUse hook that notes what it saw."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.tool_inputs: list[dict[str, Any]] = []
        self.hook_inputs: list[tuple[str, Any]] = []

    def options(self, root: Path, tz: str, **extra: Any) -> Any:
        @sdk.tool("lookup", "Look a topic up in the notes", {"topic": str})
        async def lookup(args: dict[str, Any]) -> dict[str, Any]:
            self.tool_inputs.append(args)
            return {"content": [{"type": "text", "text": self.answer}]}

        async def pre_tool_use(data: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
            self.hook_inputs.append((data["tool_name"], data["tool_input"]))
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}

        work, home = root / "work", root / "home"
        work.mkdir(parents=True)
        home.mkdir()
        server = sdk.create_sdk_mcp_server("notes", tools=[lookup])
        return sdk.ClaudeAgentOptions(
            cwd=str(work), model="claude-sonnet-5", max_turns=4, mcp_servers={"notes": server},
            allowed_tools=[TOOL], hooks={"PreToolUse": [sdk.HookMatcher(matcher=None, hooks=[pre_tool_use])]},
            env={"HOME": str(home), "TZ": tz}, **extra)

    def run(self, session: AgentSdkSession, options: Any) -> list[Any]:
        async def collect() -> list[Any]:
            return [message async for message in sdk.query(prompt=PROMPT, options=options,
                                                           transport=session.transport(PROMPT, options))]

        return _described(asyncio.run(collect()))


def _described(messages: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for message in messages:
        if isinstance(message, sdk.AssistantMessage | sdk.UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, sdk.TextBlock):
                    seen.append(["text", block.text])
                elif isinstance(block, sdk.ToolUseBlock):
                    seen.append(["tool_use", block.name, block.input])
                elif isinstance(block, sdk.ToolResultBlock):
                    seen.append(["tool_result", str(block.content)])
        elif isinstance(message, sdk.ResultMessage):
            seen.append(["result", message.is_error, message.result])
    return seen


def _record(tmp_path: Path) -> tuple[Path, list[Any], App]:
    path = tmp_path / "cassettes" / "lookup.yaml"
    app = App("The launch code is 4217.")
    with AgentSdkSession(path, "once", level="transport", upstream="simulator", sim_model=model) as session:
        seen = app.run(session, app.options(tmp_path / "recorded", "Etc/GMT+12"))
    assert session.problems() == []
    return path, seen, app


@pytest.fixture
def no_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The CLI absent from the machine: not on PATH, no bundled binary the SDK could find, no process start."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    started: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        raise AssertionError(f"a subprocess was started in replay: {args!r}")

    import anyio

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(anyio, "open_process", refuse)
    return {"cli_path": str(tmp_path / "no-such-dir" / "claude"), "started": started}


def test_an_app_with_a_tool_and_a_hook_replays_with_no_cli(tmp_path: Path, no_cli: dict[str, Any]) -> None:
    monkey_started = no_cli["started"]
    path, recorded, recording_app = _record_without_guard(tmp_path, no_cli)
    assert ["tool_use", TOOL, {"topic": "launch"}] in recorded
    assert ["text", "The lookup says: The launch code is 4217."] in recorded
    assert recording_app.hook_inputs == [(TOOL, {"topic": "launch"})]
    cassette = load_transport_cassette(path)
    assert cassette.meta["kind"] == KIND and cassette.meta["source"] == "simulator"
    text = path.read_text()
    assert str(tmp_path) not in text and "$CWD" in text  # this machine's paths are placeholders
    subtypes = {(entry.get("frame") or {}).get("request", {}).get("subtype") for entry in cassette.frames}
    assert {"initialize", "mcp_message", "hook_callback"} <= subtypes

    app = App("The launch code is 4217.")
    with AgentSdkSession(path, "none", level="transport") as session:
        seen = app.run(session, app.options(tmp_path / "elsewhere", "Etc/GMT-14", cli_path=no_cli["cli_path"]))
    assert session.problems() == []
    assert seen == recorded
    assert app.tool_inputs == [{"topic": "launch"}]  # the app's own tool ran, on the recorded input
    assert app.hook_inputs == [(TOOL, {"topic": "launch"})]  # and its hook
    assert monkey_started == []


def test_a_changed_tool_answer_misses_with_its_diff(tmp_path: Path, no_cli: dict[str, Any]) -> None:
    path, _, _ = _record_without_guard(tmp_path, no_cli)
    app = App("The launch code is 9999.")
    with AgentSdkSession(path, "none", level="transport") as session, pytest.raises(TransportMismatch) as raised:
        app.run(session, app.options(tmp_path / "elsewhere", "Etc/GMT-14", cli_path=no_cli["cli_path"]))
    message = str(raised.value)
    assert "its answer to the CLI's control request" in message and "unlike the recording" in message
    assert "4217" in message and "9999" in message  # the diff shows the recorded and the new tool answer
    assert session.problems() == [message]
    assert app.tool_inputs == [{"topic": "launch"}]


def _record_without_guard(tmp_path: Path, no_cli: dict[str, Any]) -> tuple[Path, list[Any], App]:
    # Recording needs the CLI: undo the guard for it, then put it back for the replay.
    import os

    mp = pytest.MonkeyPatch()
    with mp.context() as patch:
        import anyio

        patch.setattr(subprocess, "Popen", _ORIGINAL_POPEN)
        patch.setattr(anyio, "open_process", _ORIGINAL_OPEN_PROCESS)
        patch.setenv("PATH", _ORIGINAL_PATH)
        result = _record(tmp_path)
    assert os.environ["PATH"] != _ORIGINAL_PATH
    return result


import os as _os  # noqa: E402

import anyio as _anyio  # noqa: E402

_ORIGINAL_POPEN = subprocess.Popen
_ORIGINAL_OPEN_PROCESS = _anyio.open_process
_ORIGINAL_PATH = _os.environ.get("PATH", "")


def test_show_trajectories_evals_and_exports_read_a_transport_cassette(tmp_path: Path) -> None:
    import json
    import sys

    from harness import assert_trajectory, load_trajectory

    path, _, _ = _record(tmp_path)
    trajectory = load_trajectory(path)
    calls = [call for step in trajectory.steps for call in step.tool_calls]
    assert [(call.name, call.input) for call in calls] == [(TOOL, {"topic": "launch"})]
    assert "The launch code is 4217." in str(calls[0].result)
    assert trajectory.final_text == "The lookup says: The launch code is 4217."
    assert len(trajectory.steps) == 2 and all(step.usage.output > 0 for step in trajectory.steps)

    run = subprocess.run
    shown = run([sys.executable, "-m", "harness.cli", "show", str(path)], capture_output=True, text=True,
                env={**_os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert f'→ {TOOL}({{"topic":"launch"}})' in shown.stdout, shown.stdout
    golden = {"name": "sdk/lookup", "cassettes": [str(path)], "checks": [
        {"check": "tool_ids_matched"}, {"check": "outcome", "params": {"stop_reason": "end_turn"}},
        {"check": "trajectory_match", "params": {"expected": [{"name": TOOL}]}}]}
    assert_trajectory(path, golden)
    (tmp_path / "golden.json").write_text(json.dumps(golden))
    report, otel = tmp_path / "report.md", tmp_path / "otel.json"
    evaluated = run([sys.executable, "-m", "harness.cli", "eval", str(tmp_path / "golden.json"), "--markdown",
                     str(report)], capture_output=True, text=True)
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    assert "3/3 checks passed" in report.read_text()
    exported = run([sys.executable, "-m", "harness.cli", "export", str(path), "--otel", str(otel)],
                   capture_output=True, text=True)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert TOOL in otel.read_text()

