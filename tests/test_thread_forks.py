"""Message threads' forks in `harness show` (issue 42, item 4): runs follow `previous_message_id`, not message prefixes.

`thread.fork()` (anthropic SDK 2.x) copies a thread's history; the fork's first turn is a `thread: create` that sends
that history whole, so by prefix it reads as the next turn of the thread it was forked from, and the original's next
`continue` then looks like a run of its own. A thread goes on only by a `continue` that names its last reply.
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from harness import use_cassette
from harness.cli import main
from harness.sim import Simulator
from harness.trajectory import load_trajectory


def _record_a_fork(cassette: Path) -> None:
    with Simulator() as sim, use_cassette(cassette, mode="once"):
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        thread = client.beta.messages.thread(model="claude-sonnet-5", max_tokens=200, system="Be brief.")
        thread.send({"role": "user", "content": "First question."})
        thread.send({"role": "user", "content": "Second question."})
        fork = thread.fork()
        fork.send({"role": "user", "content": "A question only the fork asks."})
        thread.send({"role": "user", "content": "Third question, on the original thread."})
        fork.send({"role": "user", "content": "The fork goes on."})


def test_a_fork_is_a_run_of_its_own_and_the_original_thread_stays_one_run(tmp_path: Path) -> None:
    cassette = tmp_path / "forked.yaml"
    _record_a_fork(cassette)
    trajectory = load_trajectory(cassette)
    asked = [[step.delta[-1]["content"] for step in run.steps] for run in trajectory.runs]
    said = [[text if isinstance(text, str) else text[0]["text"] for text in run] for run in asked]
    assert said == [
        ["First question.", "Second question.", "Third question, on the original thread."],
        ["A question only the fork asks.", "The fork goes on."],
    ]


def test_show_lists_the_fork_as_its_own_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = tmp_path / "forked.yaml"
    _record_a_fork(cassette)
    assert main(["show", str(cassette)]) == 0
    out = capsys.readouterr().out
    original, fork = out.split("run 2", 1)
    steps = [[line.split()[1] for line in part.splitlines() if line.startswith("step ")] for part in (original, fork)]
    assert steps == [["1", "2", "4"], ["3", "5"]]  # the fork's turns (3 and 5) under their own run
    assert "Third question, on the original thread." in original and "The fork goes on." in fork
