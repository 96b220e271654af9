"""Fresh machines: a Claude Code session recorded under one fresh HOME, cwd and time zone replays under another.

As a user's CI runs it: each side gets a HOME the CLI has never seen (so it writes a new ~/.claude.json with a new
identity), another working directory and a time zone 26 hours away. Recorded through the recording proxy (the
class behind `harness proxy`) against the simulator's `read-file` model, replayed through the replay server
(behind `harness serve`). Both the raw CLI (`claude -p`, whose default system prompt names the per-project
memory folder, `~/.claude/projects/<cwd with / turned to ->/memory/`) and a `claude_agent_sdk.query()` app
with the Claude Code system prompt preset.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.agent_sdk import AgentSdkSession
from harness.cassette.format import load_cassette

sdk = pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed: pip install "
                          "'loop-harness[agent-sdk]'")

CLI = Path(sdk.__file__).parent / "_bundled" / "claude"
EARLY_TZ, LATE_TZ = "Etc/GMT+12", "Etc/GMT-14"
PROMPT = "What does notes.txt say?"
ANSWER = "notes.txt says: The launch code is 4217."


def _machine(root: Path) -> tuple[Path, Path]:
    work, home = root / "work_dir", root / "home"  # "_": the project folder's name turns it to "-" as well
    work.mkdir(parents=True)
    home.mkdir()
    (work / "notes.txt").write_text("The launch code is 4217.\n")
    return work, home


def _raw_cli(session: AgentSdkSession, root: Path, tz: str) -> str:
    work, home = _machine(root)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "TZ": tz, **session.env}
    done = subprocess.run([str(CLI), "-p", PROMPT, "--model", "claude-sonnet-5", "--allowedTools", "Read"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def _sdk_app(session: AgentSdkSession, root: Path, tz: str) -> str:
    work, home = _machine(root)
    options = sdk.ClaudeAgentOptions(cwd=str(work), model="claude-sonnet-5", allowed_tools=["Read"], max_turns=4,
                                     system_prompt={"type": "preset", "preset": "claude_code"},
                                     env={**session.env, "HOME": str(home), "TZ": tz})

    async def run() -> list[Any]:
        return [message async for message in sdk.query(prompt=PROMPT, options=options)]

    results = [message for message in asyncio.run(run()) if isinstance(message, sdk.ResultMessage)]
    assert results and not results[-1].is_error, results
    return str(results[-1].result)


@pytest.mark.parametrize("app", [_raw_cli, _sdk_app], ids=["claude-p", "query"])
def test_recorded_on_one_fresh_machine_replays_on_another(tmp_path: Path, app: Any) -> None:
    path = tmp_path / "session.yaml"
    with AgentSdkSession(path, "once", upstream="simulator", sim_policy="read-file") as session:
        recorded = app(session, tmp_path / "machine_a", EARLY_TZ)
    assert session.problems() == []
    assert recorded == ANSWER
    text = path.read_text()
    assert "/memory/" in text and "$CLAUDE_CONFIG_DIR/projects/$PROJECT_SLUG/memory/" in text
    assert str(tmp_path) not in text and tmp_path.name not in text  # not even inside the project folder's name
    assert load_cassette(path).meta["matching"]["presets"] == ["claude-code"]

    with AgentSdkSession(path, "none") as session:
        replayed = app(session, tmp_path / "machine_b", LATE_TZ)
    assert session.problems() == []  # no miss, and every recorded request played
    assert replayed == recorded
