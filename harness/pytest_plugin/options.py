"""The plugin's options: --record-mode, --cassette-dir, --simulator, their ini keys, and its markers.

pytest-recording defines the same --record-mode (same values); when it is installed, one option drives both
plugins, and `fork` is added to its choices through pytest's public API (`Parser.getgroup(...).options`,
`Argument.attrs()`). A bad value in the config file is a usage error before any test runs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os

import pytest

from harness.cassette.modes import MODES, Mode, asks_more, is_mode, strictest
from harness.pytest_plugin.simulator import check_simulator_option

__all__ = ["RecordModeWarning", "decide_mode", "record_mode"]

_PYTEST_RECORDING = "recording"  # pytest-recording's plugin name (its pytest11 entry point)


def _pytest_recording_will_add_record_mode(pluginmanager: pytest.PytestPluginManager) -> bool:
    """pytest-recording defines the same --record-mode (same values); two definitions stop pytest at start.
    When it is installed and will load after us, leave the option to it and read its value."""
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") or pluginmanager.is_blocked(_PYTEST_RECORDING):
        return False
    return importlib.util.find_spec("pytest_recording") is not None


# pytest-recording's --record-mode knows only vcrpy's modes; when it owns the option, `fork` is added to its
# choices (after whichever of the two plugins registers last), so one option still drives both.
_PARSERS: list[pytest.Parser] = []


def _allow_fork(parser: pytest.Parser, group: str) -> None:
    for option in parser.getgroup(group).options:
        # Argument.attrs() is what the option is built from (pytest 8) or its argparse action's own (pytest 9).
        choices = option.attrs().get("choices") if "--record-mode" in option.names() else None
        if choices is not None and "fork" not in choices:
            option.attrs()["choices"] = [*choices, "fork"]


def pytest_plugin_registered(plugin: object, plugin_name: str, manager: pytest.PytestPluginManager) -> None:
    if plugin_name == _PYTEST_RECORDING:  # its pytest_addoption has run: its --record-mode exists now
        for parser in _PARSERS:
            _allow_fork(parser, _PYTEST_RECORDING)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("loop-harness", "record and replay Claude agent loops")
    if not _pytest_recording_will_add_record_mode(pluginmanager):
        # ValueError: pytest-recording loaded first and defined it; one option drives both.
        with contextlib.suppress(ValueError):
            group.addoption(
                "--record-mode",
                action="store",
                default=None,
                choices=MODES,
                help="none (default: replay only, network blocked), once, new_episodes, all, rewrite, "
                "fork (replay the matching prefix, record from the first divergent request)",
            )
    _PARSERS.append(parser)
    if pluginmanager.has_plugin(_PYTEST_RECORDING):  # it loaded first and owns the option
        _allow_fork(parser, _PYTEST_RECORDING)
    group.addoption("--cassette-dir", action="store", default=None, help="where default cassette paths live")
    group.addoption(
        "--simulator",
        action="store",
        default=None,
        metavar="auto|FILE",
        help="answer the clients' calls from an in-process simulator instead of the API (record with no key): "
        "auto (sim-auto; options as auto:serial,rounds=2,until-corrected), another simulator model name, "
        "or a YAML model script",
    )
    parser.addini("record_mode", "default record mode when --record-mode is not given", default="none")
    parser.addini(
        "cassette_dir",
        "folder for default cassette paths, relative to the rootdir (default: `cassettes` "
        "of [tool.loop-harness], else cassettes/)",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cassette(path=None, **options): record or replay this test's Messages API calls; options are exactly "
        "harness.use_cassette's keywords, plus allow_unused, and faults={request_index: '429'|'529'|'500'|"
        "'timeout'|'disconnect'|'cut-stream'|'sse-error'} to replay the run with faults injected (an agent_sdk "
        "test: AgentSdkSession's keywords plus match_policy). A misspelt one fails the test at setup.",
    )
    config.addinivalue_line(
        "markers",
        "simulator(**options): options for the `simulator` fixture's Simulator (model=callable or name, "
        "scripts=[FILE], faults={index: kind}, seed=N).",
    )
    record_mode(config)  # a bad value in the config file is a usage error before any test runs
    check_simulator_option(config)


def record_mode(config: pytest.Config) -> Mode:
    mode = config.getoption("record_mode", default=None) or config.getini("record_mode") or "none"
    if not is_mode(mode):
        raise pytest.UsageError(f"record_mode = {mode!r} in the config file; use one of {', '.join(MODES)}")
    return mode


class RecordModeWarning(UserWarning):
    """A test's marker or harness_config asked for a record mode the run does not allow; the run's was used."""


def decide_mode(item: pytest.Item, asked: object, source: str) -> str:
    """The one place that decides a test's record mode: the strictest of the run's and what `source` (the marker,
    harness_config) asks for. Recording is opt-in per run; a test asking for more is told so in one line."""
    run = record_mode(item.config)
    if asked is None:
        return run
    asked = str(asked)
    if asks_more(run, asked):
        item.warn(RecordModeWarning(
            f"{source} asks for mode={asked!r}, but this run's record mode is {run!r}: the test runs in mode {run!r}. "
            f"Recording is chosen per run: pytest --record-mode={asked}"))
    return strictest(run, asked)
