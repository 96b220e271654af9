"""The layers as a checked fact: every module of harness/ and harness_demo/ has its floor in one table,
and an import may only go down a floor or stay on its own. Read from the source (ast), never by importing it.

Every import counts: at module level, inside a function (a lazy import is still a dependency) and under
TYPE_CHECKING (a type is a dependency too). There is no allow-list: a module that needs something from a
floor above moves, or the thing it needs moves down.

- `LAYERS` names each floor, bottom first, and the packages and modules on it (the longest prefix wins);
- a module on no floor, or a floor naming no module, fails the table itself;
- no import cycle among modules, even on one floor;
- the library reaches the demo only through entry points (pyproject.toml): the demo is the top floor, so any
  import of it from the library runs up; and the demo imports no command (it registers itself instead);
- `harness NAME` is the module harness/commands/NAME.py, and every module there is a command;
- no module is longer than `MAX_LINES`: one concept fits in that, so a longer module holds two and is split.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

from harness import cli
from tests.conftest import REPO

PACKAGES = ("harness", "harness_demo")
MAX_LINES = 500

# Bottom first. A floor may import itself and the floors below it, nothing above.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Used by everything: errors as data, JSON helpers, the wire (headers, bodies, SSE, multipart), files
    # (bounded reads, the symlink rule, atomic writes, safe YAML), the version, the entry-point loader, users'
    # regular expressions run with a time bound, and the egress guard (only loopback while a run may not record).
    (
        "foundations",
        (
            "harness._version",
            "harness.errors",
            "harness.jsondata",
            "harness.plugins",
            "harness.wire",
            "harness.files",
            "harness.safe_yaml",
            "harness.patterns",
            "harness.egress",
        ),
    ),
    # What a run is: exchanges, usage, tool calls; what it costs; how fast it may go; message batches.
    ("run model", ("harness.run", "harness.pricing", "harness.pacing", "harness.batches")),
    # GenAI spans of a run as it happens (the loop and the recorder emit them).
    ("telemetry", ("harness.telemetry",)),
    # The agent loop and the tools it offers the model.
    ("loop", ("harness.loop", "harness.tools")),
    # The project a command works in, and the matching rules its configuration and every cassette hold.
    ("project", ("harness.normalize", "harness.volatile", "harness.project")),
    ("cassette", ("harness.cassette",)),
    ("trajectory", ("harness.trajectory",)),
    ("checks", ("harness.checks",)),
    ("evals", ("harness.evals",)),
    ("report", ("harness.report",)),
    ("export", ("harness.export",)),
    # HTTP servers: the core, replay, the recording proxy, the simulator.
    ("servers", ("harness.httpserver", "harness.serve", "harness.proxy", "harness.sim")),
    # What runs an agent against them: scenarios, the record jobs, chaos.
    ("runs", ("harness.scenarios", "harness.recording", "harness.chaos")),
    # The integrations: the Agent SDK, pytest, assertions for tests.
    ("integrations", ("harness.agent_sdk", "harness.pytest_plugin", "harness.testing")),
    # The public surface: `import harness`.
    ("public surface", ("harness",)),
    # The commands, and the CLI that finds them.
    ("commands", ("harness.commands", "harness.cli")),
    # The bundled demo, above the library; the library finds its parts through entry points.
    ("demo", ("harness_demo",)),
)


def _name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))}


def _floor(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, floor)
    for floor, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), floor)
    return None if best is None else best[1]


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a `from` import names, relative imports resolved against `module`."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if MODULES[module].name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports(module: str, source: str) -> Iterator[str]:
    """Every module of ours that `module` (its text `source`) imports: at import time, lazily, under
    TYPE_CHECKING alike."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node)
            names = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source for alias in node.names
            ]
        else:
            continue
        for name in names:
            if name.split(".")[0] in PACKAGES:
                while name not in MODULES and "." in name:  # `import harness.x.y` of a name, not a module
                    name = name.rsplit(".", 1)[0]
                if name != module:
                    yield name


IMPORTS = {module: sorted(set(_imports(module, path.read_text(encoding="utf-8")))) for module, path in MODULES.items()}


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_every_module_has_a_floor_and_every_floor_a_module() -> None:
    assert [module for module in MODULES if _floor(module) is None] == []
    assert [
        name for floor, (name, _) in enumerate(LAYERS) if not any(_floor(module) == floor for module in MODULES)
    ] == []


def test_no_import_runs_up_a_floor() -> None:
    upward = [
        f"{module} ({LAYERS[_floor(module)][0]}) -> {target} ({LAYERS[_floor(target)][0]})"
        for module, targets in IMPORTS.items()
        for target in targets
        if _floor(target) is not None and _floor(module) is not None and _floor(target) > _floor(module)
    ]
    assert upward == []


def test_no_import_cycle() -> None:
    assert _cycles(IMPORTS) == []


def test_the_demo_imports_no_command() -> None:
    commands = _floor("harness.commands")
    assert [
        f"{module} -> {target}"
        for module, targets in IMPORTS.items()
        if module.startswith("harness_demo")
        for target in targets
        if _floor(target) == commands
    ] == []


def test_the_reader_counts_lazy_type_checking_and_relative_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from harness import cli\n"
        "def f():\n    import harness_demo.checks\n    from . import jsondata\n"
    )
    assert sorted(_imports("harness.errors", source)) == ["harness.cli", "harness.jsondata", "harness_demo.checks"]


def test_each_command_is_the_module_named_after_it() -> None:
    for name in cli.COMMANDS:
        module = cli.command_module(name)
        assert importlib.util.find_spec(module) is not None, f"harness {name}: no module {module}"
    commands = {path.stem for path in (REPO / "harness" / "commands").glob("*.py") if path.stem != "__init__"}
    assert commands == {cli.command_module(name).rsplit(".", 1)[1] for name in cli.COMMANDS}


def test_no_module_is_longer_than_one_concept() -> None:
    """One concept fits in MAX_LINES lines; a module above that is split by concept, not allowed."""
    lines = {module: len(path.read_text(encoding="utf-8").splitlines()) for module, path in MODULES.items()}
    assert {module: count for module, count in lines.items() if count > MAX_LINES} == {}


INTERNAL = "Internal package: the public names are in `harness`"


def test_every_package_under_harness_says_it_is_internal() -> None:
    packages = [
        module for module, path in MODULES.items() if path.name == "__init__.py" and module.startswith("harness.")
    ]
    assert len(packages) > 10
    assert [
        module
        for module in packages
        if INTERNAL not in (ast.get_docstring(ast.parse(MODULES[module].read_text())) or "")
    ] == []
