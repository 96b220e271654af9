"""The issue's done-when, end to end: an agent whose tools return uuids, timestamps, today's date, temp paths and
random nonces, and run concurrently (tests/volatile_agent.py), records once against the simulator and replays in
new processes, a year later and in another time zone, to the recorded answer, with no rule written by hand; a
changed tool output that is not volatile misses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness import Simulator
from harness.cassette.format import load_cassette
from tests.conftest import REPO

AGENT = str(REPO / "tests" / "volatile_agent.py")


def _agent(cassette: Path, mode: str, *, base_url: str | None = None, days: float = 0, **env: str) -> Any:
    command = [sys.executable, "-c", "import sys, tests.shifted_clock as c; c.run(float(sys.argv[1]), *sys.argv[2:])",
               str(days), AGENT, str(cassette), mode, *([base_url] if base_url else [])]
    environment = {**os.environ, "PYTHONPATH": str(REPO), **env}
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        environment.pop(name, None)
    return subprocess.run(command, capture_output=True, text=True, cwd=cassette.parent, env=environment, timeout=120)


def test_an_agent_with_volatile_concurrent_tools_replays_later_elsewhere_with_no_rule(tmp_path: Path) -> None:
    cassette = tmp_path / "agent.yaml"
    with Simulator() as sim:
        recording = _agent(cassette, "once", base_url=sim.base_url, AGENT_SEED="1", TZ="UTC")
    assert recording.returncode == 0, recording.stderr
    recorded = json.loads(recording.stdout)
    assert "ticket_id" in recorded["answer"] and "Paris" in recorded["answer"]  # the answer quotes the tools
    stored = load_cassette(cassette)
    assert "matching" not in stored.meta and len(stored.interactions) == 2  # no rule, written or stored
    # The answer as the cassette holds it: what the run said, its `token` redacted by the recorder.
    answer = stored.interactions[-1]["response"]["body"]["content"][0]["text"]
    ticket = json.loads(answer.split("new_ticket returned: ", 1)[1].split("\n", 1)[0])["ticket_id"]
    assert ticket in recorded["answer"]

    orders = []
    for days, zone, seed in ((0, "UTC", "2"), (400, "Asia/Tokyo", "3"), (1000, "America/Sao_Paulo", "4")):
        replay = _agent(cassette, "none", days=days, TZ=zone, AGENT_SEED=seed)
        assert replay.returncode == 0, f"{days} days on, TZ={zone}:\n{replay.stderr}"
        replayed = json.loads(replay.stdout)
        assert replayed["answer"] == answer  # the recorded answer, with the recorded values in it
        orders.append(replayed["order"])
    assert any(order != recorded["order"] for order in orders), "the tools finished in another order at least once"

    changed = _agent(cassette, "none", AGENT_CITY="Lyon", TZ="UTC")
    assert changed.returncode != 0
    assert "tool_result content" in changed.stderr and "'Paris'" not in changed.stdout
    assert '[-Paris-]{+Lyon+}' in changed.stderr or "Paris" in changed.stderr
