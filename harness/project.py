"""The project a command works in: its root, and its configuration in pyproject.toml.

One rule for the root, used by every command, the eval suites and the pytest plugin: the nearest folder
at or above a path holding pyproject.toml or .git. A path outside any such folder belongs to the
project of the working directory, and a working directory outside any such folder is the root itself.
Paths written in configuration, goldens and suites are relative to the root, so they read the same from
any working directory.

    [tool.loop-harness]
    cassettes = "cassettes"        # where recordings live (default cassettes/)
    golden = "golden"              # golden fixtures (default golden/)
    suites = ["evals"]             # what `harness eval` runs with no PATH (default: evals/ when it
                                   # exists, else the golden folder, each golden a suite of its own)

    checks = ["checks.py"]         # the project's own checks: files of @harness.check functions, or
                                   # "module:name" (harness.checks.user)

    [tool.loop-harness.scenarios]  # `harness record NAME` runs NAME and records cassettes/NAME.yaml
    brief = "myagent.scenarios:brief"   # any agent: sync or async def, given a client or building its own

    [tool.loop-harness.matching]   # normalization rules for every cassette of the project (stored in each)
    mask = ["metadata.user_id"]    # the keys of a cassette's `harness.matching` block (docs/cassette-format.md)

Every key is optional; an unknown key or a value of the wrong type is an error naming the file and the key.
"""

from __future__ import annotations

import asyncio
import difflib
import importlib
import inspect
import os
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.files import remembered_root

__all__ = ["CONFIG_TABLE", "ClientFor", "Project", "ProjectScenario", "load_project", "project_root", "run_agent"]

ROOT_MARKERS = ("pyproject.toml", ".git")
CONFIG_TABLE = "tool.loop-harness"
_KEYS = ("cassettes", "golden", "suites", "scenarios", "matching", "checks")


def _marked_root(start: Path) -> Path | None:
    # os.path rather than pathlib: every cassette a test opens asks, and a walk up to / took 0.1 ms this way.
    folder = str(start.absolute())
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    while True:
        if any(os.path.exists(os.path.join(folder, marker)) for marker in ROOT_MARKERS):
            return Path(folder).resolve()
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def project_root(start: str | Path | None = None) -> Path:
    """The root of the project `start` (default: the working directory) belongs to. See the module doc.

    Looked up once per folder inside `harness.files.project_roots_remembered` (the pytest plugin's cassettes)."""
    if start is not None:
        found = remembered_root("project", str(Path(start).absolute()), lambda folder: _marked_root(Path(folder)))
        if found is not None:
            return found
    root = remembered_root("project or cwd", str(Path.cwd()),
                           lambda folder: _marked_root(Path(folder)) or Path(folder).resolve())
    assert root is not None  # the working directory's own folder, when no marker is above it
    return root


@dataclass(frozen=True)
class Project:
    root: Path
    config_file: Path | None  # the pyproject.toml read, when it has a [tool.loop-harness] table
    cassettes: Path
    golden: Path
    suites: tuple[Path, ...]
    scenarios: Mapping[str, str] = field(default_factory=dict)  # name -> "module:function"
    matching: Any = None  # harness.normalize.Normalization of [tool.loop-harness.matching], if any
    checks: tuple[str, ...] = ()  # files of @harness.check functions, or "module:name" (harness.checks.user)

    def describe_config(self) -> str:
        """Where settings come from, for hints: the file's [tool.loop-harness], or where to put one."""
        return f"[{CONFIG_TABLE}] in {self.config_file or self.root / 'pyproject.toml'}"

    def scenario(self, name: str) -> ProjectScenario:
        """The configured scenario `name`; an unknown name is an error listing the known ones."""
        if name not in self.scenarios:
            known = ", ".join(self.scenarios) or "none"
            raise HarnessError(f"no scenario {name!r} in {self.describe_config()} (known: {known})")
        return ProjectScenario(name, self.cassettes / f"{name}.yaml", self.scenarios[name], self.root)


ClientFor = Callable[[bool], Any]
"""Builds the client a scenario is given: `client_for(asynchronous)` is an anthropic.Anthropic, or an
AsyncAnthropic for an `async def` scenario."""


@dataclass(frozen=True)
class ProjectScenario:
    """One of the user's scenarios: `module:function`, any shape of agent (see `run_agent`).

    `harness record` runs it and records `<cassettes>/<name>.yaml`; `harness chaos` replays it with a fault.
    Both read how the run went from the exchanges it made, never from what the function returns.
    """

    name: str
    cassette_path: Path
    target: str  # "module:function"
    root: Path
    max_retries: int = 2

    def function(self) -> Callable[..., Any]:
        module_name, _, attribute = self.target.partition(":")
        if str(self.root) not in sys.path:  # the project's own modules import as they do in its tests
            sys.path.insert(0, str(self.root))
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            where = f"scenario {self.name!r}: cannot import {module_name!r} from {self.root}"
            raise HarnessError(f"{where}: {err}") from None
        function = getattr(module, attribute, None)
        if not callable(function):
            raise HarnessError(f"scenario {self.name!r}: {module_name} has no function {attribute!r}")
        return function

    def run(self, client_for: ClientFor) -> Any:
        """Run the scenario once, as it is written; what it returns (anything, or nothing) is handed back."""
        return run_agent(self.function(), client_for)


def run_agent(function: Callable[..., Any], client_for: ClientFor) -> Any:
    """Call an agent the way it is written: sync or `async def` (run to completion on a loop of its own), given a
    client when it takes one (a required positional parameter: `client_for(asynchronous)` builds it, and it is
    closed afterwards), or called with nothing when it builds its own."""
    takes_client = _takes_a_client(function)
    if inspect.iscoroutinefunction(function):
        async def main() -> Any:
            client = client_for(True) if takes_client else None
            try:
                return await (function(client) if takes_client else function())
            finally:
                if client is not None:
                    await client.close()

        return asyncio.run(main())
    client = client_for(False) if takes_client else None
    try:
        returned = function(client) if takes_client else function()
        if inspect.isawaitable(returned):  # a plain function that hands back a coroutine: run it too
            returned = asyncio.run(_awaited(returned))
        return returned
    finally:
        if client is not None:
            client.close()


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _takes_a_client(function: Callable[..., Any]) -> bool:
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: give it the client, as before
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return bool(parameters) and parameters[0].kind in positional and parameters[0].default is inspect.Parameter.empty


def _string(value: Any, key: str, file: Path) -> str:
    if not isinstance(value, str) or not value:
        raise HarnessError(f"{key} must be a non-empty string, got {value!r}", file=file, where=f"[{CONFIG_TABLE}]")
    return value


def _table(file: Path) -> Mapping[str, Any] | None:
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise HarnessError(f"not UTF-8 text (byte {err.start})", file=file) from None
    except tomllib.TOMLDecodeError as err:
        raise HarnessError(f"not valid TOML: {err}", file=file) from None
    table = data.get("tool", {}).get("loop-harness")
    if table is not None and not isinstance(table, Mapping):
        raise HarnessError("must be a table", file=file, where=f"[{CONFIG_TABLE}]")
    return table


@cache
def _load(root: Path) -> Project:
    file = root / "pyproject.toml"
    table = _table(file) if file.is_file() else None
    table = table or {}
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        near = [f"{key} (did you mean {match[0]}?)" if (match := difflib.get_close_matches(key, list(_KEYS), n=1))
                else key for key in unknown]
        raise HarnessError(f"unknown key(s) {', '.join(near)}; known: {', '.join(_KEYS)}", file=file,
                           where=f"[{CONFIG_TABLE}]")
    golden = root / _string(table.get("golden", "golden"), "golden", file)
    suites = table.get("suites") or ["evals" if (root / "evals").exists() or not golden.exists() else str(golden)]
    if isinstance(suites, str):
        suites = [suites]
    if not isinstance(suites, list):
        raise HarnessError(f"suites must be a path or a list of paths, got {suites!r}", file=file,
                           where=f"[{CONFIG_TABLE}]")
    scenarios = table.get("scenarios", {})
    if not isinstance(scenarios, Mapping):
        raise HarnessError("scenarios must be a table of name = \"module:function\"", file=file,
                           where=f"[{CONFIG_TABLE}.scenarios]")
    for name, target in scenarios.items():
        if not isinstance(target, str) or target.count(":") != 1 or not all(target.split(":")):
            raise HarnessError(f"scenario {name!r} must be \"module:function\", got {target!r}", file=file,
                               where=f"[{CONFIG_TABLE}.scenarios]")
    checks = table.get("checks", [])
    if isinstance(checks, str):
        checks = [checks]
    if not isinstance(checks, list) or not all(isinstance(item, str) and item for item in checks):
        raise HarnessError(f"checks must be a list of files or \"module:name\" entries, got {checks!r}", file=file,
                           where=f"[{CONFIG_TABLE}]")
    matching = None
    if "matching" in table:
        from harness.normalize import Normalization  # cheap: no SDK, no HTTP

        try:
            matching = Normalization.from_data(table["matching"], where=f"[{CONFIG_TABLE}.matching]")
        except HarnessError as err:  # name the file too: the rule's own message names the key
            raise HarnessError(str(err), file=file) from None
    return Project(
        root=root,
        config_file=file if table else None,
        cassettes=root / _string(table.get("cassettes", "cassettes"), "cassettes", file),
        golden=golden,
        suites=tuple(root / _string(item, "suites", file) for item in suites),
        scenarios=dict(scenarios),
        matching=matching,
        checks=tuple(checks),
    )


def load_project(start: str | Path | None = None) -> Project:
    """The project `start` (default: the working directory) belongs to, with its configuration read."""
    return _load(project_root(start))
