"""Which cassette a test plays: the path its `@pytest.mark.cassette` names, or the default one.

Read by the plugin (harness.pytest_plugin), which opens the cassette, and by harness.pytest_shared, which
checks a cassette several tests share once a session: one rule for both, in a module neither depends on.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

_CASSETTES_FOLDER_KEY = pytest.StashKey[Path]()


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


def default_cassette_path(item: pytest.Item) -> Path:
    """<cassettes>/<test module>/<test name>.yaml (parametrized ids made file-safe)."""
    folder = _cassettes_folder(item.config)
    module = Path(str(item.path)).stem
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", item.name).strip("-")
    return folder / module / f"{name}.yaml"


def marked_cassette_path(item: pytest.Item) -> Path | None:
    """The absolute path of the cassette a test's marker names (its default path when it names none), or None."""
    marker = item.get_closest_marker("cassette")
    if marker is None:
        return None
    path = marker.kwargs.get("path") or (marker.args[0] if marker.args else None)
    cassette_path = Path(path) if path else default_cassette_path(item)
    return cassette_path if cassette_path.is_absolute() else item.config.rootpath / cassette_path
