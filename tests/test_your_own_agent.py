"""The README's "Test your own agent", run word for word in a fresh project, so that the section cannot rot.

The files are the section's code blocks (each names itself on its first line); the shell blocks run in
bash, one after the other, in a folder outside this repository, with the installed `harness` and `pytest`
first on PATH and no key in the environment. The only change: the simulator listens on a free port
(`--port 0`) rather than 8765, so parallel test runs do not collide.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO

SECTION = "## Test your own agent"


def readme_section() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def blocks() -> list[tuple[str, str]]:
    return re.findall(r"```(\w+)\n(.*?)```", readme_section(), re.S)


def run_shell(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = script.replace("--port 8765", "--port 0")
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_readme_section_works_word_for_word_in_a_project_of_ones_own(tmp_path: Path) -> None:
    project = tmp_path / "my-project"
    project.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("ANTHROPIC_", "PYTEST_", "HARNESS_")) and key != "PYTHONPATH"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "80"  # as a CI log pipes it
    shell: list[str] = []
    for language, body in blocks():
        if language in ("python", "toml"):
            name = body.splitlines()[0].lstrip("#").strip()
            (project / name).write_text(body, encoding="utf-8")
        else:
            shell.append(body)
    assert len(shell) == 4, "record, replay, bless and eval, the prompt change: the steps the test follows"
    record, replay, bless_and_eval, prompt_change = shell[0], shell[1], shell[2], shell[3]

    done = run_shell(record, project, env)
    assert done.returncode == 0, done.stderr
    meta = yaml.safe_load((project / "cassettes" / "weather.yaml").read_text(encoding="utf-8"))["harness"]
    assert meta["source"] == "simulator"

    done = run_shell(replay, project, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout

    done = run_shell(bless_and_eval, project, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "golden" / "weather.json").is_file()
    assert "1 case: 1 passed, 0 failed, 0 errored" in done.stdout
    assert "suite golden (1 case)" in done.stdout and "  pass  weather (" in done.stdout  # named once, one suite
    assert all(len(line) <= 100 for line in done.stdout.splitlines() if "pass " in line)

    chaos = re.search(r"`(harness chaos cassettes/weather\.yaml [^`]*)`", readme_section())
    assert chaos is not None
    done = run_shell(chaos.group(1), project, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "529 at request 0" in done.stdout and "the SDK retried the faulted request" in done.stdout

    done = run_shell(prompt_change, project, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "weather: passed → passed · diverges at step 1 (request)" in done.stdout  # the case named once
    assert (project / "candidates" / "weather.yaml").is_file()

    # The sentence after the block: pytest now fails on the changed prompt, in one screen, with the word diff.
    done = run_shell(replay, project, env)
    assert done.returncode == 1
    assert "{+, then answer in one sentence+}" in done.stdout
    assert "--record-mode=rewrite" in done.stdout
    assert "httpx2" not in done.stdout and "_base_client" not in done.stdout
    assert len(done.stdout.splitlines()) < 30
    assert not list(project.glob("cassettes/dayflow*")), "the demo never writes into a user's project"

