"""What a scenario is, wherever it comes from: the project's `[tool.loop-harness.scenarios]` or a package's.

A scenario is a named run of an agent against an `anthropic.Anthropic` client (`Scenario`). `harness record`
records it, `harness chaos` replays it with a fault. The project's own scenarios are read from its
pyproject.toml (harness.project.ProjectScenario); a package adds a set of bundled scenarios through the
`loop_harness.scenarios` entry point group (harness/plugins.py), as the demo does: the library never imports
that package by name.

    [project.entry-points."loop_harness.scenarios"]
    demo = "harness_demo.record:DEMO"      # a harness.scenarios.ScenarioSet
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.errors import HarnessError
from harness.plugins import SCENARIOS_GROUP, installed

__all__ = ["BundledScenario", "Scenario", "ScenarioSet", "scenario_set"]


class Scenario(Protocol):
    """A named run of an agent: `run` is called with an `anthropic.Anthropic` client (replaying, recording or
    faulted) and returns what the agent returns (the RunResult of `harness.run_loop`, for `harness chaos`)."""

    @property
    def name(self) -> str: ...

    @property
    def max_retries(self) -> int: ...  # the client's: chaos and the recorder build the client

    def run(self, client: Any) -> Any: ...


class BundledScenario(Scenario, Protocol):
    """A scenario of a set: its cassette is `cassette`, relative to the set's cassettes folder."""

    @property
    def cassette(self) -> str: ...


@dataclass(frozen=True)
class ScenarioSet:
    """A package's scenarios, registered under `loop_harness.scenarios`.

    `record` is what `harness record --NAME` runs with the command's arguments (the set's own recording:
    the demo records against an in-process simulator); `cassettes` is where the set's recordings live, or
    None when this install has none.
    """

    name: str
    scenarios: Sequence[BundledScenario]
    cassettes: Path | None
    record: Callable[[argparse.Namespace], int]

    def scenario(self, name: str) -> BundledScenario:
        for item in self.scenarios:
            if item.name == name:
                return item
        raise HarnessError(f"no scenario {name!r}; known: {self.known()}")

    def known(self) -> str:
        return ", ".join(item.name for item in self.scenarios)

    def recording(self, cassette: str | Path) -> BundledScenario | None:
        """The scenario whose cassette `cassette` is (its path ends with the scenario's), if any."""
        posix = Path(cassette).resolve().as_posix()
        return next((item for item in self.scenarios if posix.endswith("/" + item.cassette)), None)


def scenario_set(name: str) -> ScenarioSet:
    """The scenario set an installed package registered as `name`."""
    sets = dict(installed(SCENARIOS_GROUP))
    if name not in sets:
        raise HarnessError(f"no scenario set {name!r} is installed (entry point group {SCENARIOS_GROUP}; "
                           f"installed: {', '.join(sets) or 'none'})")
    found = sets[name]
    if not isinstance(found, ScenarioSet):
        raise HarnessError(f"the {SCENARIOS_GROUP} entry {name!r} is a {type(found).__name__}, not a ScenarioSet")
    return found
