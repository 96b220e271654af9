"""The bundled cassettes are current: each scenario replays offline from its cassette, and the run it gives
is the run the cassette holds. A change to a prompt, a tool schema or the loop that alters a request
fails here with the diff; `harness record --demo NAME` re-records it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.cassette.format import load_cassette
from harness.trajectory import Trajectory, load_trajectory
from harness_demo.scenarios import SCENARIOS, replay_scenario

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes"


@pytest.mark.parametrize("item", SCENARIOS, ids=lambda s: s.name)
def test_bundled_cassette_replays_to_the_run_it_holds(item: Any) -> None:
    path = item.path(CASSETTES)
    meta = load_cassette(path).meta
    assert meta["source"] == "simulator" and meta["endpoint"] == "127.0.0.1"
    result = replay_scenario(item, CASSETTES)
    assert Trajectory.from_run(result).comparable() == load_trajectory(path).comparable()


def test_every_bundled_cassette_belongs_to_a_scenario() -> None:
    on_disk = {p.relative_to(CASSETTES).as_posix() for p in CASSETTES.rglob("*.yaml")}
    assert on_disk == {item.cassette for item in SCENARIOS}
