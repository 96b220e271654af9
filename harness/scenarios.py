"""What a scenario is, wherever it comes from: the project's `[tool.loop-harness.scenarios]` or a package's.

Internal module: the public names are in `harness`.

A scenario is a named run of an agent (`Scenario`): `run(client_for)` runs it once, building the client it
needs with `client_for(asynchronous)` (an `anthropic.Anthropic`, or an `AsyncAnthropic` for an `async def`
agent; `harness.project.run_agent` calls any shape of agent that way). `harness record` records it,
`harness chaos` replays it with a fault, bench/trials.py records trials of it: each builds its own clients
(recording, paced, faulted) and calls `run` the same way. The project's own scenarios are read from its
pyproject.toml (harness.project.ProjectScenario); a package adds a set of bundled scenarios through the
`loop_harness.scenarios` entry point group (harness/plugins.py), as the demo does: the library never imports
that package by name.

    [project.entry-points."loop_harness.scenarios"]
    demo = "harness_demo.record:DEMO"      # a harness.scenarios.ScenarioSet

A set is selected with `--NAME` (`harness record --demo`, `harness chaos --demo`); the arguments only it
understands it declares itself (`ScenarioSet.arguments`), and `harness record` adds them to its own, in a
group of their own, so a third-party set's flags show in `harness record --help` and are refused, with the
flag that selects the set, when that set is not the one chosen.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.errors import HarnessError
from harness.plugins import SCENARIOS_GROUP, broken, installed
from harness.project import ClientFor

__all__ = [
    "BundledScenario",
    "ClientFor",
    "Scenario",
    "ScenarioSet",
    "SetArgument",
    "add_set_selectors",
    "client_factory",
    "given_set_arguments",
    "scenario_set",
    "scenario_sets",
]


class Scenario(Protocol):
    """A named run of an agent: `run(client_for)` runs it once with the clients `client_for` builds
    (replaying, recording or faulted) and returns what the agent returns (anything: the commands read how the
    run went from the exchanges it made). `max_retries` is the SDK's for the clients built for it."""

    @property
    def name(self) -> str: ...

    @property
    def max_retries(self) -> int: ...

    def run(self, client_for: ClientFor) -> Any: ...


class BundledScenario(Scenario, Protocol):
    """A scenario of a set: its cassette is `cassette`, relative to the set's cassettes folder."""

    @property
    def cassette(self) -> str: ...


@dataclass(frozen=True)
class SetArgument:
    """One command-line argument only a scenario set understands: `argparse.add_argument(*flags, **options)`."""

    flags: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, *flags: str, **options: Any) -> SetArgument:
        return cls(flags, options)


@dataclass(frozen=True)
class ScenarioSet:
    """A package's scenarios, registered under `loop_harness.scenarios`.

    `record` is what `harness record --NAME` runs with the command's arguments (the set's own recording:
    the demo records against an in-process simulator); `cassettes` is where the set's recordings live, or
    None when this install has none. `title` names the set in messages ("the bundled demo"), `help` is the
    help of its `--NAME` flag, and `arguments` are the flags `harness record` accepts for it alone.
    """

    name: str
    scenarios: Sequence[BundledScenario]
    cassettes: Path | None
    record: Callable[[argparse.Namespace], int]
    title: str = ""
    help: str = ""
    arguments: Sequence[SetArgument] = ()

    @property
    def flag(self) -> str:
        return f"--{self.name}"

    @property
    def called(self) -> str:
        return self.title or f"the {self.name} scenario set"

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


def client_factory(item: Scenario, *, middleware: Sequence[Any] = (), **client_options: Any) -> ClientFor:
    """The `client_for` a scenario's `run` is given: `client_for(asynchronous)` builds an `anthropic.Anthropic`
    (an `AsyncAnthropic` when asked) with the scenario's `max_retries`, `middleware` and `client_options`."""
    import anthropic

    def client_for(asynchronous: bool) -> Any:
        factory = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return factory(max_retries=item.max_retries, middleware=list(middleware), **client_options)

    return client_for


def _not_a_set(name: str, loaded: Any) -> str | None:
    """Why the entry `name` is no usable scenario set, or None when it is one."""
    if not isinstance(loaded, ScenarioSet):
        return f"the {SCENARIOS_GROUP} entry {name!r} is a {type(loaded).__name__}, not a ScenarioSet"
    if loaded.name != name:
        return f"the {SCENARIOS_GROUP} entry {name!r} holds the scenario set {loaded.name!r}: name the entry as the set"
    return None


_WARNED: set[str] = set()


def scenario_sets() -> tuple[ScenarioSet, ...]:
    """Every usable scenario set the installed packages registered, in entry point order. An entry that is not
    one is left out and named on stderr (once): it must not break `harness record` for the project's own
    scenarios; `scenario_set(name)` refuses it with the same reason."""
    found = []
    for name, loaded in installed(SCENARIOS_GROUP):
        reason = _not_a_set(name, loaded)
        if reason is None:
            found.append(loaded)
        elif name not in _WARNED:
            _WARNED.add(name)
            print(f"harness: {reason}; left out", file=sys.stderr)
    return tuple(found)


def scenario_set(name: str) -> ScenarioSet:
    """The scenario set an installed package registered as `name`."""
    sets = dict(installed(SCENARIOS_GROUP))
    if name not in sets:
        why = broken(SCENARIOS_GROUP).get(name)
        if why is not None:
            raise HarnessError(f"the scenario set {name!r} ({SCENARIOS_GROUP}): {why}")
        raise HarnessError(
            f"no scenario set {name!r} is installed (entry point group {SCENARIOS_GROUP}; "
            f"installed: {', '.join(sets) or 'none'})"
        )
    reason = _not_a_set(name, sets[name])
    if reason is not None:
        raise HarnessError(reason)
    return sets[name]  # _not_a_set checked it is a ScenarioSet


def add_set_selectors(
    parser: argparse.ArgumentParser,
    *,
    help_for: Callable[[ScenarioSet], str] | None = None,
    with_arguments: bool = False,
) -> None:
    """Add `--NAME` for every installed scenario set (at most one chosen: `args.scenario_set` is its name, or
    None), and with `with_arguments` each set's own arguments in a group named after it. `set_arguments`
    (see `given_set_arguments`) then tells which of those were given."""
    sets = scenario_sets()
    selectors = parser.add_mutually_exclusive_group()
    declared: dict[str, list[tuple[str, str, Any]]] = {}
    shared: dict[tuple[str, ...], tuple[str, Mapping[str, Any], tuple[str, str, Any]]] = {}  # flags -> first owner
    for each in sets:
        selectors.add_argument(
            each.flag,
            dest="scenario_set",
            action="store_const",
            const=each.name,
            help=help_for(each) if help_for else each.help or f"the scenarios of {each.called}",
        )
        if not with_arguments or not each.arguments:
            continue
        group = parser.add_argument_group(f"{each.flag} only", f"arguments of {each.called}")
        for argument in each.arguments:
            earlier = shared.get(argument.flags)
            if earlier is not None and earlier[1] == argument.options:  # the same argument: the sets share it
                declared.setdefault(each.name, []).append(earlier[2])
                continue
            other = next((owner for flags, (owner, _, _) in shared.items() if set(flags) & set(argument.flags)), None)
            if other is not None:
                raise HarnessError(
                    f"the scenario sets {other!r} and {each.name!r} ({SCENARIOS_GROUP}) both declare "
                    f"{' '.join(argument.flags)}, differently: uninstall one, or have them declare it alike"
                )
            try:
                action = group.add_argument(*argument.flags, **argument.options)
            except (argparse.ArgumentError, TypeError, ValueError) as err:
                raise HarnessError(
                    f"the scenario set {each.name!r} ({SCENARIOS_GROUP}) declares an argument "
                    f"{' '.join(argument.flags)} the command cannot take: {err}"
                ) from None
            entry = (action.option_strings[0], action.dest, action.default)
            shared[argument.flags] = (each.name, argument.options, entry)
            declared.setdefault(each.name, []).append(entry)
    parser.set_defaults(scenario_set=None, _set_arguments=declared)


def given_set_arguments(args: argparse.Namespace) -> dict[str, list[str]]:
    """Set name -> the flags of its own arguments given on the command line (a value other than the default)."""
    given: dict[str, list[str]] = {}
    for name, arguments in getattr(args, "_set_arguments", {}).items():
        flags = [flag for flag, dest, default in arguments if getattr(args, dest, default) != default]
        if flags:
            given[name] = flags
    return given


def refuse_other_sets_arguments(args: argparse.Namespace) -> None:
    """A set's own arguments work with that set only: refuse, naming the set to add, any given for a set other
    than the chosen one (`args.scenario_set`, None for the project's scenarios). An argument two sets share
    belongs to both."""
    chosen = args.scenario_set
    own = {flag for flag, _, _ in getattr(args, "_set_arguments", {}).get(chosen, ())} if chosen else set()
    for name, flags in given_set_arguments(args).items():
        foreign = [flag for flag in flags if flag not in own]
        if name != chosen and foreign:
            other = scenario_set(name)
            raise HarnessError(f"{', '.join(foreign)} work on {other.called} only: add {other.flag}")
