"""The README's "Test your own agent", run word for word in a fresh project, so that the section cannot rot.

The files are the section's code blocks (each names itself on its first line); the shell blocks run in
bash, one after the other, in a folder outside this repository, with the installed `harness` and `pytest`
first on PATH and no key in the environment. The only change: the simulator listens on a free port
(`--port 0`) rather than 8765, so parallel test runs do not collide.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
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


def a_project_of_ones_own(tmp_path: Path) -> tuple[Path, dict[str, str], list[str]]:
    """The section's files written in a fresh folder; the environment its shell blocks run in; those blocks."""
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
    return project, env, shell


def test_the_readme_section_works_word_for_word_in_a_project_of_ones_own(tmp_path: Path) -> None:
    project, env, shell = a_project_of_ones_own(tmp_path)
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



@contextlib.contextmanager
def listening(port: int) -> Iterator[list[bytes]]:
    """Something else on loopback `port` (0: any free one), keeping the first bytes of every connection it takes.
    Where `port` is already someone else's, it is taken all the same: nothing to hold."""
    seen: list[bytes] = []
    server = socket.socket()
    try:
        server.bind(("127.0.0.1", port))
    except OSError:
        server.close()
        yield seen
        return
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(1)
                with contextlib.suppress(OSError):
                    seen.append(connection.recv(4096))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        seen.append(str(server.getsockname()[1]).encode())
        yield seen
    finally:
        stop.set()
        thread.join(5)
        server.close()


def test_the_record_step_fails_fast_when_port_8765_is_taken(tmp_path: Path) -> None:
    """The record step exactly as written (port 8765), with the port taken: the simulator says so, exit 2 at once,
    nothing recorded, and the command it would have run never starts (it used to wait forever for a URL file)."""
    project, env, shell = a_project_of_ones_own(tmp_path)
    with listening(8765):
        done = subprocess.run(["bash", "-c", shell[0]], cwd=project, env=env, capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot listen on 127.0.0.1:8765" in done.stderr and "Traceback" not in done.stderr
    assert not (project / "cassettes").exists()


def test_a_url_file_left_by_an_earlier_run_is_never_recorded_against(tmp_path: Path) -> None:
    """A `sim.url` left by a killed run names whatever listens there now: the record step never reads it, and
    `harness sim --url-file` removes it before it even tries the port, so a script waiting on it waits for this
    run's URL or for nothing."""
    project, env, shell = a_project_of_ones_own(tmp_path)
    with listening(0) as bystander:
        stale = project / "sim.url"
        stale.write_text(f"http://127.0.0.1:{bystander[0].decode()}\n", encoding="utf-8")
        done = run_shell(shell[0], project, env)
        assert done.returncode == 0, done.stderr
        meta = yaml.safe_load((project / "cassettes" / "weather.yaml").read_text(encoding="utf-8"))["harness"]
        assert meta["source"] == "simulator" and bystander[1:] == [], "the stale URL was called"
        with listening(0) as taken:
            done = subprocess.run(["harness", "sim", "--port", taken[0].decode(), "--url-file", "sim.url"],
                                  cwd=project, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and "cannot listen" in done.stderr
        assert not stale.exists(), "a stale URL file outlived a simulator that never listened"
