"""The layout as a checked fact: imports read from the source (ast), never by importing it.

- no import cycle among harness/ modules (counting imports inside functions: a lazy import is still a
  dependency; TYPE_CHECKING imports are not);
- data flows one way, cassette -> trajectory -> checks -> evals (results) -> report: a module of one
  stage imports only its own stage and the ones before it;
- the library never imports the demo (harness_demo/) at import time; only the two commands whose
  `--demo` flag runs it open it, inside the function that runs it;
- `harness NAME` is the module harness/commands/NAME.py, and every module there is a command.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

from harness import cli
from tests.conftest import REPO

LIBRARY = REPO / "harness"
DEMO = "harness_demo"
STAGES = ("harness.cassette", "harness.trajectory", "harness.checks", "harness.evals", "harness.report")

# The commands whose --demo flag runs the bundled demo reach it from inside the function that runs it.
DEMO_DOORS = {"harness.commands.record", "harness.chaos"}


def _name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for path in sorted(LIBRARY.rglob("*.py"))}


def _imports(path: Path) -> Iterator[tuple[str, bool]]:
    """(module imported, at import time?) for each runtime import in `path`; TYPE_CHECKING blocks left out."""

    def walk(node: ast.AST, at_import_time: bool) -> Iterator[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from walk(ast.Module(body=child.orelse, type_ignores=[]), at_import_time)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, False)
            elif isinstance(child, ast.Import):
                yield from ((alias.name, at_import_time) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                for alias in child.names:
                    submodule = f"{child.module}.{alias.name}"
                    yield (submodule if submodule in MODULES else child.module), at_import_time
            else:
                yield from walk(child, at_import_time)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), True)


IMPORTS = {name: list(_imports(path)) for name, path in MODULES.items()}


def _stage(module: str) -> int | None:
    for index, stage in enumerate(STAGES):
        if module == stage or module.startswith(stage + "."):
            return index
    return None


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
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


def test_the_harness_package_has_no_import_cycle() -> None:
    graph = {name: {target for target, _ in imports if target in MODULES and target != name}
             for name, imports in IMPORTS.items()}
    assert _cycles(graph) == []


def test_stages_import_only_themselves_and_the_stages_before_them() -> None:
    upstream = sorted(
        (name, target)
        for name, imports in IMPORTS.items()
        for target, _ in imports
        if (source := _stage(name)) is not None and (stage := _stage(target)) is not None and stage > source
    )
    assert upstream == []


def test_the_library_never_imports_the_demo_at_import_time() -> None:
    found = {(name, at_import_time) for name, imports in IMPORTS.items()
             for target, at_import_time in imports if target == DEMO or target.startswith(DEMO + ".")}
    assert {name for name, at_import_time in found if at_import_time} == set()
    assert {name for name, _ in found} <= DEMO_DOORS


def test_each_command_is_the_module_named_after_it() -> None:
    for name in cli.COMMANDS:
        module = cli.command_module(name)
        assert importlib.util.find_spec(module) is not None, f"harness {name}: no module {module}"
    commands = {path.stem for path in (LIBRARY / "commands").glob("*.py") if path.stem != "__init__"}
    assert commands == {cli.command_module(name).rsplit(".", 1)[1] for name in cli.COMMANDS}
