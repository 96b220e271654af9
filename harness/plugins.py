"""What installed packages add to the library through entry points: checks, simulator models, scenarios.

An entry point group names objects in other packages (`[project.entry-points."loop_harness.checks"]`);
the library never imports those packages by name. The bundled demo joins this way, as a user's package
would. Entries load on first use, not at import: an added module imports the library that lists it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from functools import cache
from importlib.metadata import entry_points
from typing import Any, TypeVar

V = TypeVar("V")

CHECKS_GROUP = "loop_harness.checks"  # each entry: a family's CHECKS, a sequence of harness.checks.CheckSpec
SIM_MODELS_GROUP = "loop_harness.sim_models"  # each entry: a harness.sim.policies.AddedPolicy, named by the entry
SCENARIOS_GROUP = "loop_harness.scenarios"  # each entry: a harness.scenarios.ScenarioSet, named by the entry


@cache
def installed(group: str) -> tuple[tuple[str, Any], ...]:
    """(entry name, loaded object) of every entry point in `group`, loaded once per process.

    An entry that cannot be loaded (its package is broken or half installed) is left out and named on stderr,
    once: one broken package must not break every command, most of which never use it. `broken(group)` says
    why, for the command that does ask for it by name.
    """
    loaded = []
    for entry in entry_points(group=group):
        try:
            loaded.append((entry.name, entry.load()))
        except Exception as err:  # whatever importing someone else's package raises
            reason = f"{entry.value} cannot be loaded: {type(err).__name__}: {err}"
            _BROKEN.setdefault(group, {})[entry.name] = reason
            print(f"harness: the {group} entry {entry.name!r} is left out: {reason}", file=sys.stderr)
    return tuple(loaded)


_BROKEN: dict[str, dict[str, str]] = {}


def broken(group: str) -> dict[str, str]:
    """Entry name -> why it could not be loaded, for the entries of `group` that `installed` left out."""
    installed(group)
    return dict(_BROKEN.get(group, {}))


class Registry(MutableMapping[str, V]):
    """Built-in entries plus the ones installed packages add to `group`, read on first use.

    `added(name, loaded)` turns one entry point's object into (key, value) pairs. A built-in keeps its
    key when an added entry claims it too; `added_first` lists the added entries before the built-ins.
    Setting a key replaces that entry for this process (as a test does to swap one out).
    """

    def __init__(self, builtins: Iterable[tuple[str, V]], group: str,
                 added: Callable[[str, Any], Iterable[tuple[str, V]]], *, added_first: bool = False) -> None:
        self._builtins = dict(builtins)
        self._group, self._added, self._added_first = group, added, added_first
        self._all: dict[str, V] | None = None

    def _entries(self) -> dict[str, V]:
        if self._all is None:
            extra = {key: value for name, loaded in installed(self._group) for key, value in self._added(name, loaded)
                     if key not in self._builtins}
            self._all = {**extra, **self._builtins} if self._added_first else {**self._builtins, **extra}
        return self._all

    def __getitem__(self, key: str) -> V:
        return self._entries()[key]

    def __setitem__(self, key: str, value: V) -> None:
        self._entries()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._entries()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())
