"""A new project's first ten minutes, end to end, in a folder outside this repository with no key: `harness init`,
one record against the simulator, `pytest -q` and `harness eval` pass, with a check of the project's own in a plain
checks.py, which fails `harness eval` (exit 1, naming it) once its condition is broken."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

CHECKS_PY = '''\
import harness


@harness.check(params={"most": {"type": "integer"}})
def short_answer(trajectory, most=60):
    """The final answer takes at most `most` words."""
    words = len(trajectory.final_text.split())
    return words <= most, f"{words} word(s), at most {most}"
'''


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_init_record_replay_and_eval_with_a_check_of_ones_own(tmp_path: Path) -> None:
    project = tmp_path / "new-project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "new-project"\nversion = "0"\n', encoding="utf-8")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("ANTHROPIC_", "PYTEST_", "HARNESS_"))}
    env["PYTHONPATH"] = str(REPO)  # this checkout's harness, whatever the environment installed
    harness = [sys.executable, "-m", "harness.cli"]

    done = _run([*harness, "init"], project, env)
    assert done.returncode == 0, done.stderr
    assert "pytest -q --record-mode=once --simulator=auto" in done.stdout

    done = _run([sys.executable, "-m", "pytest", "-q", "--record-mode=once", "--simulator=auto"], project, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "cassettes" / "first.yaml").is_file()
    done = _run([sys.executable, "-m", "pytest", "-q"], project, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout

    (project / "checks.py").write_text(CHECKS_PY, encoding="utf-8")
    text = (project / "pyproject.toml").read_text(encoding="utf-8")
    (project / "pyproject.toml").write_text(  # the table init wrote gets one key
        text.replace('golden = "golden"\n', 'golden = "golden"\nchecks = ["checks.py"]\n'), encoding="utf-8")
    done = _run([*harness, "bless", "cassettes/first.yaml", "--yes"], project, env)
    assert done.returncode == 0, done.stdout + done.stderr
    golden = project / "golden" / "first.json"
    data = json.loads(golden.read_text(encoding="utf-8"))
    data["checks"].append({"check": "short_answer", "params": {"most": 60}})
    golden.write_text(json.dumps(data, indent=2), encoding="utf-8")

    done = _run([*harness, "eval"], project, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 0 failed" in done.stdout

    data["checks"][-1]["params"]["most"] = 1  # the condition broken: no answer is one word long
    golden.write_text(json.dumps(data, indent=2), encoding="utf-8")
    done = _run([*harness, "eval"], project, env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "short_answer" in done.stdout and "at most 1" in done.stdout
