"""Which cassette a test plays, and with which options: what its `@pytest.mark.cassette` says.

Read by the plugin (harness.pytest_plugin), which opens the cassette, and by harness.pytest_plugin.shared, which
checks a cassette several tests share once a session: one rule for both, in a module neither depends on.

The marker is `use_cassette`: it takes exactly the keywords of what opens the cassette (`use_cassette` for the
`cassette` fixture, `AgentSdkSession` for `agent_sdk`), read from their signatures, plus the marker's own
(`MARKER_OWN`). A misspelt keyword fails the test at setup, naming it and the valid names, rather than being
dropped (a dropped `secret_headers=` would write a credential in clear).
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "MARKER_OWN",
    "cassette_name",
    "cassette_path_of",
    "default_cassette_path",
    "keywords_of",
    "marked_cassette_path",
    "marker_keywords",
    "unknown_options",
]

_CASSETTES_FOLDER_KEY = pytest.StashKey[Path]()

# The marker's own keywords, per fixture that reads it (beside the keywords of what it opens).
MARKER_OWN: dict[str, dict[str, str]] = {
    "cassette": {
        "allow_unused": "recorded interactions the test never plays do not fail it",
        "faults": "{request_index: kind}: replay with faults injected (record mode none)",
    },
    "agent_sdk": {
        "match_policy": "'strict' or 'sequence' (tool_result drift served in order, as warnings)",
    },
}


def keywords_of(*callables: Callable[..., Any]) -> list[str]:
    """The keyword arguments the callables take, in signature order (a class: its constructor's)."""
    names: list[str] = []
    for function in callables:
        for parameter in inspect.signature(function).parameters.values():
            if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
                names.append(parameter.name)
    return list(dict.fromkeys(names))


def unknown_options(given: Iterable[str], valid: Iterable[str], *, what: str) -> str | None:
    """One screen naming each unknown keyword (with the nearest valid one) and every valid name; None if all known."""
    valid = list(valid)
    unknown = [name for name in given if name not in valid]
    if not unknown:
        return None
    parts = []
    for name in unknown:
        near = difflib.get_close_matches(name, valid, n=1)
        parts.append(f"{name!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    plural = "options" if len(unknown) > 1 else "option"
    return f"{what}: unknown {plural} {', '.join(parts)}. Valid: {', '.join(valid)}."


def marker_keywords(marker: Any) -> dict[str, Any]:
    """The marker's keywords, its one positional argument (the path) as `path`."""
    options = dict(marker.kwargs)
    if len(marker.args) > 1:
        raise ValueError(f"@pytest.mark.cassette takes one positional argument (the path), got {len(marker.args)}")
    if marker.args:
        if "path" in options:
            raise ValueError("@pytest.mark.cassette got the path twice (positional and path=)")
        options["path"] = marker.args[0]
    return options


def _cassettes_folder(config: pytest.Config) -> Path:
    """Where default cassette paths live: the option, the ini, else the project's `cassettes` (once a session)."""
    folder = config.stash.get(_CASSETTES_FOLDER_KEY, None)
    if folder is None:
        chosen = config.getoption("--cassette-dir") or config.getini("cassette_dir")
        if chosen:
            folder = Path(chosen) if Path(chosen).is_absolute() else config.rootpath / chosen
        else:  # the project's cassettes folder: `cassettes` of [tool.loop-harness], as every command reads it
            from harness.project import load_project

            folder = load_project(config.rootpath).cassettes
        config.stash[_CASSETTES_FOLDER_KEY] = folder
    return folder


# A file name holds 255 bytes; the names made beside a cassette (its temp file while saved, NAME.parts/, trials)
# add a few dozen. A test name longer than this is cut, and a hash of the whole name keeps it unique and stable.
LONGEST_NAME = 200
_KEPT_OF_A_LONG_NAME = 120


def cassette_name(test_name: str) -> str:
    """A test's name as a cassette's file name (no suffix): file-safe, and at most LONGEST_NAME characters (all
    ASCII). A longer one (a long parametrize id) is its first 120 characters, `-`, then 16 hex digits of the
    SHA-256 of the whole file-safe name: the same test always gets the same file, two tests never share one."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", test_name).strip("-")
    if len(name) <= LONGEST_NAME:
        return name
    return f"{name[:_KEPT_OF_A_LONG_NAME]}-{hashlib.sha256(name.encode()).hexdigest()[:16]}"


def default_cassette_path(item: pytest.Item) -> Path:
    """<cassettes>/<test module>/<test name>.yaml (parametrized ids made file-safe; see `cassette_name`)."""
    folder = _cassettes_folder(item.config)
    module = Path(str(item.path)).stem
    return folder / module / f"{cassette_name(item.name)}.yaml"


def cassette_path_of(item: pytest.Item, path: Any) -> Path:
    """The absolute path of a test's cassette: `path` (relative to the rootdir), else its default path."""
    cassette_path = Path(path) if path else default_cassette_path(item)
    return cassette_path if cassette_path.is_absolute() else item.config.rootpath / cassette_path


def marked_cassette_path(item: pytest.Item) -> Path | None:
    """The absolute path of the cassette a test's marker names (its default path when it names none), or None."""
    marker = item.get_closest_marker("cassette")
    if marker is None:
        return None
    path = marker.kwargs.get("path") or (marker.args[0] if marker.args else None)
    return cassette_path_of(item, path)
