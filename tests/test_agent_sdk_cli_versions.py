"""The Claude Code CLI of each claude-agent-sdk release installed here: recorded on one machine, replayed on
another, fresh one, through the replay server (the class behind `harness serve`) and through the pytest fixture.

The recording side is a user's machine (instructions and an agent of their own in ~/.claude); the replaying side
gets a HOME the CLI has never seen, another working folder (of another length) and a time zone 26 hours
away, so another date. The session (tests/cli_versions.py) runs four tools at once, so their results come back
in any order, and one of them prints more than the CLI sends inline, so the CLI sends the path it saved it to:
under its config folder, the project's folder, a folder named by the session id and a name drawn per call.
`make cli-versions` installs the older releases' CLIs (CI does); a release not installed here is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.agent_sdk import AgentSdkSession
from harness.cassette.format import load_cassette
from tests import cli_versions
from tests.cli_versions import PROMPT, TOOLS, installed_clis, machine, session_model

sdk = pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed: pip install "
                          "'loop-harness[agent-sdk]' (make test installs it)")

pytest_plugins = ["pytester"]
EARLY_TZ, LATE_TZ = "Etc/GMT+12", "Etc/GMT-14"  # POSIX signs: GMT+12 is UTC-12


def _cli(version: str, found: Path | None) -> Path:
    if found is None:
        pytest.skip(f"the CLI of claude-agent-sdk {version} is not installed here: `make cli-versions` installs it "
                    f"into .venv/cli-versions/{version}")
    return found


CLIS = pytest.mark.parametrize(("version", "found"), installed_clis(), ids=[v for v, _ in installed_clis()])


def _claude_p(cli: Path, session: AgentSdkSession, root: Path, tz: str, prompt: str = PROMPT,
              commits: Sequence[str] = ("start",), lived_in: bool = False) -> str:
    work, home = machine(root, commits, lived_in=lived_in)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "TZ": tz, **session.env}
    done = subprocess.run([str(cli), "-p", prompt, "--model", "claude-sonnet-5", "--allowedTools", ",".join(TOOLS)],
                          cwd=work, env=env, capture_output=True, text=True, timeout=300)
    return done.stdout.strip() if done.returncode == 0 else f"exit {done.returncode}: {done.stdout}{done.stderr}"


@CLIS
def test_a_cli_session_replays_on_another_fresh_machine(tmp_path: Path, version: str, found: Path | None) -> None:
    cli = _cli(version, found)
    path = tmp_path / "session.yaml"
    with AgentSdkSession(path, "once", upstream="simulator", sim_model=session_model) as session:
        recorded = _claude_p(cli, session, tmp_path / "a", EARLY_TZ, lived_in=True)  # the user's own machine
    assert session.problems() == []
    assert recorded.startswith("The notes say: ") and "4217" in recorded, recorded
    text = path.read_text()
    assert "$CLAUDE_CONFIG_DIR/projects/$PROJECT_SLUG/$SESSION_ID/" in text  # the CLI's saved tool output
    assert str(tmp_path) not in text
    bodies = json.dumps([interaction["request"]["body"] for interaction in load_cassette(path).interactions])
    assert "Current branch:" not in bodies and "\\n\\n$GIT_STATUS\\n" in bodies  # the checkout's snapshot

    with AgentSdkSession(path, "none") as session:
        replayed = _claude_p(cli, session, tmp_path / "machine_b_in_a_longer_folder", LATE_TZ,
                             commits=("start", "add the cassette"))  # another branch, status and history
    assert session.problems() == []  # no miss, and every recorded request played
    assert replayed == recorded

    with AgentSdkSession(path, "none") as session:
        changed = _claude_p(cli, session, tmp_path / "c", LATE_TZ, prompt="What do the notes say about Mars?")
    assert changed != recorded
    problems = session.problems()
    assert problems and "request #1 (POST /v1/messages) has no recording" in problems[0]
    assert "{+about Mars+}" in problems[0] or "about Mars?'" in problems[0], problems[0]


# -- through the pytest fixture: a user's test, the SDK's query() driving the CLI of each release ---------------

APP = '''
import asyncio, os
from pathlib import Path

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

from cli_versions import PROMPT, TOOLS, machine, session_model


@pytest.mark.cassette("cassettes/notes.yaml", upstream="simulator", sim_model=session_model)
def test_notes(agent_sdk, tmp_path):
    work, home = machine(tmp_path / os.environ["APP_ROOT"], lived_in=os.environ["APP_ROOT"] == "a")
    options = ClaudeAgentOptions(cwd=str(work), model="claude-sonnet-5", allowed_tools=TOOLS, max_turns=4,
                                 cli_path=os.environ["APP_CLI"],
                                 env={**agent_sdk.env, "HOME": str(home), "TZ": os.environ["APP_TZ"]})

    async def run():
        return [message async for message in query(prompt=PROMPT, options=options)]

    results = [message for message in asyncio.run(run()) if isinstance(message, ResultMessage)]
    assert results and not results[-1].is_error, results
    Path(os.environ["APP_OUT"]).write_text(results[-1].result)
'''


@CLIS
def test_the_fixture_replays_a_cli_session_on_another_fresh_machine(pytester: pytest.Pytester,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    version: str, found: Path | None) -> None:
    cli = _cli(version, found)
    pytester.makepyfile(cli_versions=Path(cli_versions.__file__).read_text(), test_app=APP)
    out = pytester.path / "answer.txt"
    monkeypatch.setenv("APP_CLI", str(cli))
    monkeypatch.setenv("APP_OUT", str(out))

    def run(root: str, tz: str, *args: str) -> Any:
        monkeypatch.setenv("APP_ROOT", root)
        monkeypatch.setenv("APP_TZ", tz)
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)

    run("a", EARLY_TZ, "--record-mode=once").assert_outcomes(passed=1)
    recorded = out.read_text()
    assert recorded.startswith("The notes say: ") and "4217" in recorded
    out.unlink()
    result = run("machine_b_in_a_longer_folder", LATE_TZ)
    result.assert_outcomes(passed=1)
    assert out.read_text() == recorded


def test_each_cli_release_is_one_parameter() -> None:
    # The oldest promised release is always a parameter (skipped where absent), and the installed SDK's too.
    versions = [version for version, _ in installed_clis()]
    assert cli_versions.OLDEST in versions and sdk.__version__ in versions
    assert len(versions) == len(set(versions))


# -- what two fresh machines' requests differ in, as the CLI of 0.2.184 sent them, without running it ----------

def _saved_output_request(root: str, session: str, name: str) -> dict[str, Any]:
    # Request #2 of the session above, cut to the parts that differ between two machines (paths shortened).
    saved = f"{root}/home/.claude/projects/{root.replace('/', '-').replace('_', '-')}-work-dir/{session}"
    user_id = json.dumps({"device_id": "d0", "account_uuid": "", "session_id": session}, separators=(",", ":"))
    return {"metadata": {"user_id": user_id},
            "system": f"Primary working directory: {root}/work_dir\n",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Notes?"}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_4", "content":
                          f"<persisted-output>\nOutput too large (223.5KB). Full output saved to: "
                          f"{saved}/tool-results/{name}.txt\n\nPreview (first 2KB):\n1\n2\n"}]}]}


def test_the_session_folder_and_the_file_the_cli_saved_there_are_the_sessions_own() -> None:
    from harness.normalize import preset

    rules = preset("claude-code")
    first = _saved_output_request("/tmp/a", "42ef546a-90d8-4444-843e-bb560bba8361", "bbmgccmnn")
    second = _saved_output_request("/tmp/machine_b", "be5a4048-0993-49c9-a625-e0f7e2d08333", "b51eltg9j")
    normalized = [rules.for_request(body).request(body) for body in (first, second)]
    assert normalized[0] == normalized[1]
    shown = normalized[0]["messages"][1]["content"][0]["content"]
    assert "saved to: $CLAUDE_CONFIG_DIR/projects/$PROJECT_SLUG/$SESSION_ID/$SESSION_FILE\n" in shown, shown


def _git_context(branch: str, status: str, commits: str) -> dict[str, Any]:
    # The context the CLI of 0.2.184 attaches in a git repository, as it sent it.
    return {"messages": [{"role": "user", "content": [{"type": "text", "text": (
        "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# gitStatus\n"
        "This is the git status at the start of the conversation. Note that this status is a snapshot in time, "
        f"and will not update during the conversation.\n\nCurrent branch: {branch}\n\nMain branch (you will "
        f"usually use this for PRs): main\n\nStatus:\n{status}\n\nRecent commits:\n{commits}\n\nClaude Code "
        "attached this context automatically; it isn't part of the user's message.\n</system-reminder>")},
        {"type": "text", "text": "Notes?"}]}]}


def test_the_git_snapshot_the_cli_attaches_is_the_checkouts_own() -> None:
    from harness.normalize import preset

    rules = preset("claude-code")
    recorded = _git_context("main", "?? draft.md", "8a96b39 start")
    in_ci = _git_context("HEAD", "(clean)", "51c0e2a add the cassette\n8a96b39 start")
    normalized = [rules.for_request(body).request(body) for body in (recorded, in_ci)]
    assert normalized[0] == normalized[1]
    assert "snapshot in time, and will not update during the conversation.\n\n$GIT_STATUS\n\nClaude Code" in \
        normalized[0]["messages"][0]["content"][0]["text"]
    assert normalized[0]["messages"][0]["content"][1]["text"] == "Notes?"


def test_the_cli_gets_a_fresh_config_folder_of_the_sessions_own(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    with AgentSdkSession(path, "once", upstream="simulator") as session:
        folder = Path(session.env["CLAUDE_CONFIG_DIR"])
        assert folder.is_dir() and not any(folder.iterdir())
    assert not folder.exists()  # removed with the session
    with AgentSdkSession(path, "once", upstream="simulator", fresh_config=False) as session:
        assert "CLAUDE_CONFIG_DIR" not in session.env  # the user's own ~/.claude
