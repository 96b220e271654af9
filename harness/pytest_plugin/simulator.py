"""The simulator: recording with no key.

`--simulator=auto|NAME|FILE` answers every client fixture's calls from one in-process simulator for the
session; the `simulator` fixture starts one for a single test (options from @pytest.mark.simulator).
Either way the cassette says `source: simulator` and which simulator model answered.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.sim import Simulator

__all__ = ["check_simulator_option", "simulator", "simulator_url"]

_SESSION_SIMULATOR = pytest.StashKey[Any]()


def _simulator_options(value: str) -> dict[str, Any]:
    """`auto[:options]` or a simulator model name -> model=...; anything else is a script file."""
    from harness.sim.models import MODEL_PREFIX

    if value == "auto" or value.startswith(("auto:", MODEL_PREFIX)):
        return {"model": value if value.startswith(MODEL_PREFIX) else MODEL_PREFIX + value}
    return {"scripts": [value]}


def check_simulator_option(config: pytest.Config) -> None:
    """--simulator's value checked at configure time (its model name or script), its simulator kept for the
    session; a bad one is a usage error."""
    value = config.getoption("--simulator", None)
    if not value:
        return
    from harness.errors import HarnessError
    from harness.sim import Simulator

    options = _simulator_options(value)
    if "scripts" in options and not Path(value).is_absolute():
        options["scripts"] = [str(Path(config.invocation_params.dir) / value)]
    if "scripts" in options and not Path(options["scripts"][0]).exists():
        # A mistyped model name (`atuo`) is no script file either: name the model it was probably meant to be.
        from harness.sim import POLICIES

        near = difflib.get_close_matches(value.removeprefix("sim-"), ["auto", *POLICIES], n=1)
        if near:
            raise pytest.UsageError(f"--simulator={value}: no simulator model nor script file of that name "
                                    f"(did you mean {near[0]}?)")
    try:
        config.stash[_SESSION_SIMULATOR] = Simulator(**options)  # checks the model name or script now
    except HarnessError as err:
        raise pytest.UsageError(f"--simulator={value}: {err}") from None


def pytest_unconfigure(config: pytest.Config) -> None:
    simulator = config.stash.get(_SESSION_SIMULATOR, None)
    if simulator is not None:
        simulator.stop()


def simulator_url(request: pytest.FixtureRequest) -> str | None:
    """The base URL of this test's simulator (the `simulator` fixture), else of --simulator's, else None."""
    if "simulator" in request.fixturenames:
        return request.getfixturevalue("simulator").base_url
    session = request.config.stash.get(_SESSION_SIMULATOR, None)
    return session.start().base_url if session is not None else None


@pytest.fixture
def simulator(request: pytest.FixtureRequest) -> Iterator[Simulator]:
    """A Messages API simulator on loopback for this test; `anthropic_client` talks to it. Options from
    `@pytest.mark.simulator(model=callable_or_name, scripts=[...], faults={...})`."""
    from harness.sim import Simulator

    marker = request.node.get_closest_marker("simulator")
    with Simulator(**(dict(marker.kwargs) if marker else {})) as running:
        yield running
