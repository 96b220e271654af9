"""The Claude Code CLIs installed here, one per claude-agent-sdk release, and a session that shows what they vary.

The installed SDK bundles the newest CLI (the dev extra pins it); `make cli-versions` installs the bundled CLI
of older releases into `.venv/cli-versions/<version>` (pip --target, the binary only), as CI does. A release
whose folder is absent is skipped, saying so: a user's clone need not hold 370 MB per release.

`session_model` is the simulated model of the session the tests record: in one turn it calls four tools
that the CLI runs concurrently (so their results come back in any order), one of which prints more than the
CLI sends inline (so the CLI saves it under its per-session folder, named by the session id and a name it draws
per call, and sends that path); then it answers from the results, sorted by tool_use_id so the answer does not
depend on the order they came in. This module is also copied into the pytester projects that use it.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
VERSIONS_DIR = REPO / ".venv" / "cli-versions"
OLDEST = "0.2.184"  # the oldest release whose CLI the harness promises to replay (issue 37)
PROMPT = "What do the notes say?"
NOTES = "The launch code is 4217.\n"
TOOLS = ["Read", "Glob", "Grep", "Bash"]
_CWD = re.compile(r"Primary working directory: (\S[^\n\"\\]*)")


def bundled_cli(package_dir: Path) -> Path:
    return package_dir / "_bundled" / "claude"


def installed_clis() -> list[tuple[str, Path | None]]:
    """(release, the CLI binary or None when not installed): the oldest promised, the installed SDK's, and
    any other release installed under .venv/cli-versions."""
    found: dict[str, Path | None] = {OLDEST: None}
    if VERSIONS_DIR.is_dir():
        for folder in sorted(VERSIONS_DIR.iterdir()):
            cli = bundled_cli(folder / "claude_agent_sdk")
            if cli.is_file():
                found[folder.name] = cli
    try:
        import claude_agent_sdk
    except ImportError:
        return sorted(found.items())
    found[claude_agent_sdk.__version__] = bundled_cli(Path(claude_agent_sdk.__file__).parent)
    return sorted(found.items())


def machine(root: Path, commits: Sequence[str] = (), *, lived_in: bool = False) -> tuple[Path, Path]:
    """A working folder holding notes.txt (a git repository with these commits on a branch named after the
    last, when given), and a HOME the CLI has never seen, or (lived_in) one of a user who has set the CLI up:
    instructions of their own and an agent of their own in ~/.claude, which the CLI states in its requests."""
    work, home = root / "work_dir", root / "home"
    work.mkdir(parents=True)
    home.mkdir()
    if lived_in:
        (home / ".claude" / "agents").mkdir(parents=True)
        (home / ".claude" / "CLAUDE.md").write_text("Always answer in French.\n")
        (home / ".claude" / "agents" / "reviewer.md").write_text(
            "---\nname: reviewer\ndescription: Reviews code for the user\n---\nYou review code.\n")
    (work / "notes.txt").write_text(NOTES)
    if commits:
        git = ["git", "-c", "user.name=Ann", "-c", "user.email=ann@example.com", "-C", str(work)]
        subprocess.run([*git, "init", "-q", "-b", commits[-1].replace(" ", "-")], check=True)
        for number, message in enumerate(commits):
            (work / "CHANGES.md").write_text("".join(f"- {line}\n" for line in commits[: number + 1]))
            subprocess.run([*git, "add", "."], check=True)
            subprocess.run([*git, "commit", "-q", "-m", message], check=True)
        (work / "draft.md").write_text("not committed\n")
    return work, home


def session_model(request: dict[str, Any]) -> dict[str, Any]:
    results = [block for message in request["messages"] if isinstance(message["content"], list)
               for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_result"]
    if results:
        ordered = sorted(results, key=lambda block: block["tool_use_id"])
        return {"content": "The notes say: " + " | ".join(_first_line(block.get("content")) for block in ordered)}
    found = _CWD.search(json.dumps(request.get("system")) + json.dumps(request["messages"]))
    if found is None:  # a side request of the CLI's (a title, a summary): not the session's turn
        return {"content": "Notes."}
    cwd = found.group(1)
    return {"content": [
        {"type": "text", "text": "Looking at the notes four ways."},
        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": cwd + "/notes.txt"}},
        {"type": "tool_use", "id": "toolu_2", "name": "Glob", "input": {"pattern": "notes*"}},
        {"type": "tool_use", "id": "toolu_3", "name": "Grep", "input": {"pattern": "launch", "path": cwd}},
        {"type": "tool_use", "id": "toolu_4", "name": "Bash",
         "input": {"command": "seq 1 40000", "description": "Count far"}},
    ]}


def _first_line(content: Any) -> str:
    text = content if isinstance(content, str) else " ".join(
        str(part.get("text", "")) for part in content or [] if isinstance(part, dict))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "(empty)"
