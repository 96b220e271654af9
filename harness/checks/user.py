"""Checks a project writes itself: `@harness.check` on a plain function, named in `[tool.loop-harness] checks`.

    import harness

    @harness.check(params={"limit": {"type": "integer"}})
    def few_steps(trajectory, limit=3):
        return len(trajectory.steps) <= limit, f"{len(trajectory.steps)} step(s), at most {limit}"

The function takes the trajectory, and the golden's `params` as keyword arguments; it returns a bool, a
(bool, reason) pair or a CheckResult. The decorator leaves it callable as written (a unit test may call it)
and attaches the CheckSpec the registry knows, so a golden, `assert_trajectory` and `harness eval
--list-checks` treat it exactly as a built-in check. A check that raises gives a failed result naming the
file and line it raised at: a bug in one check must not hide the others' results.

Packages keep the `loop_harness.checks` entry point group (harness.plugins); this is for a project's own files.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, overload

from harness.checks.base import CheckResult, CheckSpec
from harness.checks.registry import CHECKS
from harness.errors import HarnessError
from harness.project import load_project, project_root

__all__ = ["SPEC_ATTRIBUTE", "check", "spec_of", "use_project_checks"]

SPEC_ATTRIBUTE = "__harness_check__"
F = TypeVar("F", bound=Callable[..., Any])

# A parameter's annotation as the JSON Schema type a golden is validated against (anything else: any value).
_TYPES: dict[Any, str] = {int: "integer", float: "number", str: "string", bool: "boolean", list: "array",
                          dict: "object", "int": "integer", "float": "number", "str": "string", "bool": "boolean",
                          "list": "array", "dict": "object"}


@overload
def check(function: F, /) -> F: ...
@overload
def check(*, name: str | None = None, params: Mapping[str, Any] | None = None,
          description: str | None = None) -> Callable[[F], F]: ...


def check(function: Any = None, /, *, name: str | None = None, params: Mapping[str, Any] | None = None,
          description: str | None = None) -> Any:
    """Make a plain function a check: `@harness.check`, or `@harness.check(name=..., params=..., description=...)`.

    `params` is the JSON Schema of each parameter by name (`{"limit": {"type": "integer"}}`), or a whole object
    schema (`{"type": "object", ...}`); by default it is read from the function's keyword parameters and their
    annotations. A parameter without a default is required. `description` defaults to the docstring's first line.
    """
    def mark(target: F) -> F:
        setattr(target, SPEC_ATTRIBUTE, _spec(target, name=name, params=params, description=description))
        return target

    return mark(function) if function is not None else mark


def spec_of(function: Any) -> CheckSpec | None:
    spec = getattr(function, SPEC_ATTRIBUTE, None)
    return spec if isinstance(spec, CheckSpec) else None


def _parameters(function: Callable[..., Any]) -> list[inspect.Parameter]:
    """The function's parameters after the trajectory: the ones a golden's `params` fill."""
    return list(inspect.signature(function).parameters.values())[1:]


def _schema(function: Callable[..., Any], params: Mapping[str, Any] | None) -> dict[str, Any]:
    if params is not None and params.get("type") == "object":
        return dict(params)
    named = [p for p in _parameters(function) if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if params is None:
        properties = {p.name: ({"type": _TYPES[p.annotation]} if p.annotation in _TYPES else {}) for p in named}
    else:
        properties = {key: dict(value) for key, value in params.items()}
    required = [p.name for p in named if p.name in properties and p.default is inspect.Parameter.empty]
    return {"type": "object", "properties": properties, **({"required": required} if required else {})}


def _spec(function: Callable[..., Any], *, name: str | None, params: Mapping[str, Any] | None,
          description: str | None) -> CheckSpec:
    if not callable(function):
        raise TypeError(f"@harness.check decorates a function, not {type(function).__name__}")
    check_name = name or function.__name__
    if not list(inspect.signature(function).parameters):
        raise TypeError(f"check {check_name!r}: the function must take the trajectory as its first parameter")
    doc = (inspect.getdoc(function) or "").strip().splitlines()
    schema = _schema(function, params)

    def run(trajectory: Any, given: Mapping[str, Any]) -> CheckResult:
        try:
            returned = function(trajectory, **dict(given))
        except Exception as exc:  # the user's bug: a result naming where, never a crash mid-suite
            return _errored(check_name, function, exc)
        return _result(check_name, returned)

    return CheckSpec(name=check_name, function=run, description=description or (doc[0] if doc else check_name),
                     params_schema=schema)


def _errored(name: str, function: Callable[..., Any], exc: Exception) -> CheckResult:
    """A failed result naming the line of the user's code that raised: the deepest frame in the check's own file,
    else the deepest frame of all."""
    frames = traceback.extract_tb(exc.__traceback__)[1:]  # [0] is `run` above
    own = inspect.getsourcefile(function)
    frame = next((f for f in reversed(frames) if own and Path(f.filename) == Path(own)), frames[-1] if frames else None)
    where = f"{_shown(frame.filename)}:{frame.lineno}" if frame is not None else function.__qualname__
    return CheckResult(
        name=name, passed=False,
        reason=f"errored: check {name!r} raised at {where}: {type(exc).__name__}: {exc}",
        evidence={"exception": type(exc).__name__, "at": where},
    )


def _shown(filename: str) -> str:
    path = Path(filename)
    try:
        return str(path.resolve().relative_to(project_root()))
    except ValueError:
        return str(path)


def _result(name: str, returned: Any) -> CheckResult:
    if isinstance(returned, CheckResult):
        return returned.named(name)
    if isinstance(returned, bool):
        return CheckResult(name=name, passed=returned, reason=f"{name} {'passed' if returned else 'failed'}")
    if (isinstance(returned, tuple) and len(returned) == 2 and isinstance(returned[0], bool)
            and isinstance(returned[1], str)):
        return CheckResult(name=name, passed=returned[0], reason=returned[1] or name)
    return CheckResult(
        name=name, passed=False,
        reason=f"errored: check {name!r} returned {type(returned).__name__}; a check returns a bool, a "
               "(bool, reason) pair or a CheckResult",
        evidence={"returned": repr(returned)[:200]},
    )


# --- loading a project's checks --------------------------------------------------------------------------------

_LOADED: dict[Path, tuple[CheckSpec, ...]] = {}
_USER_NAMES: set[str] = set()  # names a project's checks took in the registry (any project of this process)


def use_project_checks(start: str | Path | None = None) -> tuple[CheckSpec, ...]:
    """Import the checks `[tool.loop-harness] checks` names in the project of `start` (default: the working
    directory) and add them to the registry, once per project. A name clashing with a built-in, a file that is
    missing or fails to import, or an entry with no `@harness.check` is an error naming pyproject.toml."""
    project = load_project(start)
    if project.root not in _LOADED:
        config = project.describe_config()
        seen: dict[str, str] = {}
        for entry in project.checks:
            for spec in _load(entry, project.root, config):
                if spec.name in CHECKS and spec.name not in _USER_NAMES:
                    raise HarnessError(f"check {spec.name!r} of {entry!r} has the name of a built-in check; give it "
                                       "another with @harness.check(name=...)", file=project.config_file,
                                       where="[tool.loop-harness] checks")
                if seen.get(spec.name, entry) != entry:
                    raise HarnessError(f"check {spec.name!r} is defined twice: in {seen[spec.name]!r} and {entry!r}",
                                       file=project.config_file, where="[tool.loop-harness] checks")
                seen[spec.name] = entry
        _LOADED[project.root] = tuple(spec for entry in project.checks for spec in _load(entry, project.root, config))
    specs = _LOADED[project.root]
    for spec in specs:
        if CHECKS.get(spec.name) is not spec:
            CHECKS[spec.name] = spec
            _USER_NAMES.add(spec.name)
    return specs


_MODULES: dict[tuple[Path, str], tuple[CheckSpec, ...]] = {}


def _load(entry: str, root: Path, config: str) -> tuple[CheckSpec, ...]:
    """The checks of one `checks` entry: every `@harness.check` function of a file, or the one `module:name`."""
    key = (root, entry)
    if key not in _MODULES:
        _MODULES[key] = _import(entry, root, config)
    return _MODULES[key]


def _import(entry: str, root: Path, config: str) -> tuple[CheckSpec, ...]:
    where = f"checks entry {entry!r} in {config}"
    if str(root) not in sys.path:  # the project's own modules import as they do in its tests
        sys.path.insert(0, str(root))
    if entry.endswith(".py") or "/" in entry or ":" not in entry:
        path = (root / entry).resolve()
        if not path.is_file():
            raise HarnessError(f"{where}: no such file {path}")
        # A name of its own per file, so two projects' checks.py (or the project's own `checks` package) never meet.
        module_name = f"_loop_harness_checks_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise HarnessError(f"{where}: cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as err:
            sys.modules.pop(module_name, None)
            raise HarnessError(f"{where}: importing it raised {_at(err)}") from None
        found = tuple(s for s in (spec_of(value) for value in vars(module).values()) if s is not None)
        if not found:
            raise HarnessError(f"{where}: {path.name} has no function decorated with @harness.check")
        return found
    module_path, _, attribute = entry.partition(":")
    try:
        imported = importlib.import_module(module_path)
    except Exception as err:
        raise HarnessError(f"{where}: importing {module_path!r} raised {_at(err)}") from None
    target = getattr(imported, attribute, None)
    found_spec = spec_of(target)
    if found_spec is None:
        what = "no attribute" if target is None else "no function decorated with @harness.check named"
        raise HarnessError(f"{where}: {module_path} has {what} {attribute!r}")
    return (found_spec,)


def _at(err: Exception) -> str:
    frames = traceback.extract_tb(err.__traceback__)
    frame = frames[-1] if frames else None
    if isinstance(err, SyntaxError) and err.filename:  # where the file is wrong, not where Python read it
        place = f" at {_shown(err.filename)}:{err.lineno}"
    else:
        place = f" at {_shown(frame.filename)}:{frame.lineno}" if frame is not None else ""
    return f"{type(err).__name__}{place}: {err}"
