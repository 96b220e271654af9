"""pytest plugin: recorded agent tests as the default way to test.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

Registered by entry point, so installing loop-harness is enough. It feels like pytest-recording and
answers what its users complain about:

- `--record-mode` defaults to none: CI never records, and a test with a cassette cannot reach any
  host but loopback (blocked at socket level), so nothing silently goes live;
- a request with no recording fails the test with the diff against the nearest recorded request;
- interactions recorded but never played fail the test, so a stale cassette is found the day it
  goes stale (opt out with `@pytest.mark.cassette(allow_unused=True)`).

Loading it costs a session nothing it does not use: the recorder (and with it the anthropic SDK, httpx2
and vcrpy) is imported when a test first asks for a cassette. Beside pytest-recording, its `--record-mode`
(same values) drives both plugins, and a test may carry either marker.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import pytest

from harness.pytest_plugin.misses import bad_input_failure, miss_failure, missing_credential
from harness.pytest_plugin.stash import AGENT_SDK_KEY, CASSETTE_KEY, ENDED_KEY, FAILED_KEY, VERDICTS_KEY

# The plugin's parts, each a module registered with this one: the simulator, the options and markers, the
# clients a test is handed and the fixtures that open its recording, --drift-report and the fork summary, and
# the check of cassettes shared by several tests. This module judges each test after its call. Each comes
# before those that import it: pytest marks a plugin for assertion rewriting as it registers it, and warns
# when the module was imported already.
pytest_plugins = (
    "harness.pytest_plugin.simulator",
    "harness.pytest_plugin.options",
    "harness.pytest_plugin.clients",
    "harness.pytest_plugin.fixtures",
    "harness.pytest_plugin.drift",
    "harness.pytest_plugin.shared",
)

_DRIFTS_KEY = pytest.StashKey[list[tuple[str, str]]]()  # (policy, text) of every tolerated difference


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    # A run in mode none (CI) records nothing beyond loopback, whoever asks: the marker and harness_config are
    # held to the run's mode (options.decide_mode), and a `use_cassette(mode=...)` block a test opens itself
    # reaches loopback only, so harness sim still records and the API is refused, naming how to record.
    from harness.cassette.modes import run_that_replays
    from harness.pytest_plugin.options import record_mode

    if record_mode(session.config) != "none":
        return (yield)
    with run_that_replays("but this pytest run's record mode is 'none', so it may record against loopback only "
                          "(harness sim). To record against the API: pytest --record-mode=once (or new_episodes)."):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    active = item.stash.get(CASSETTE_KEY, None)
    session = item.stash.get(AGENT_SDK_KEY, None)
    try:
        result = yield
    except Exception as raised:
        # The Claude Code CLI turns a replay miss into its own error after retrying degraded requests: the
        # test fails on the first miss instead, with its diff. Any other failure of the test stands as it is.
        if session is not None and session.first_miss():
            raise pytest.fail.Exception(_agent_sdk_problems(item, session), pytrace=False) from None
        failure = miss_failure(item, active, raised) or bad_input_failure(item, raised)
        if failure is not None:
            raise failure from None
        no_key = missing_credential(raised)
        if no_key is not None:  # recording with no key and no simulator: the one line that says both ways out
            raise pytest.fail.Exception(str(no_key), pytrace=False) from None
        raise
    if session is not None:
        problems = _agent_sdk_problems(item, session)
        if problems:
            raise pytest.fail.Exception(problems, pytrace=False)
    if active is not None and getattr(active, "drifts", None):
        _warn_drifts(item, active.path, active.drifts)
    verdicts = item.stash.get(VERDICTS_KEY, {})
    # A miss the test swallowed fails it (the marker's on_miss says "warn" or "ignore" otherwise); under
    # --drift-report it is the report's to count instead.
    on_miss = "ignore" if item.config.getoption("--drift-report", None) else verdicts.get("on_miss", "fail")
    failure = None if on_miss == "ignore" else miss_failure(item, active, None)
    if failure is not None and on_miss == "fail":
        raise failure
    if failure is not None:
        from harness.cassette.verdict import MissWarning

        item.warn(MissWarning(str(failure)))
    from harness.pytest_plugin.shared import is_shared  # registered by pytest_plugins: imported there first

    on_unplayed = verdicts.get("on_unplayed", "fail")
    if active is not None and active.misses and verdicts.get("on_miss", "fail") != "fail":
        on_unplayed = "ignore"  # what a miss the marker allows leaves unplayed is its consequence, said already
    if active is not None and active.write_protected and on_unplayed != "ignore" and not (
            is_shared(item, active.path)):  # several tests play it: checked once, at the end (pytest_shared)
        unplayed = active.unplayed
        if unplayed:
            from harness.cassette.verdict import UnplayedWarning, unplayed_message

            message = unplayed_message(active.path, unplayed, hint=(
                "The test no longer makes these requests: re-record (--record-mode=rewrite) or mark the test "
                "@pytest.mark.cassette(allow_unused=True)."))
            if on_unplayed == "fail":
                raise pytest.fail.Exception(message)
            item.warn(UnplayedWarning(message))
    return result


def _agent_sdk_problems(item: pytest.Item, session: Any) -> str:
    """Drifts become warnings (and the terminal summary lists them); the text of what must fail the test
    (a miss, unplayed recordings, a refused recorded request), or "" when nothing must."""
    _warn_drifts(item, session.path, session.drifts)
    return "\n\n".join(session.problems())


def _warn_drifts(item: pytest.Item, path: Any, drifts: Any) -> None:
    """What the matching policy served anyway, as warnings against the test (wherever the filters stand) and
    lines for the terminal summary."""
    from harness.cassette.tolerant import HarnessDriftWarning

    for drift in drifts:
        text = f"{path}: {drift.describe()}"
        item.warn(HarnessDriftWarning(text))
        item.config.stash.setdefault(_DRIFTS_KEY, []).append((drift.policy, f"{item.nodeid}: {text}"))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    drifts = config.stash.get(_DRIFTS_KEY, [])
    sequence = [line for policy, line in drifts if policy == "sequence"]
    volatile = [line for policy, line in drifts if policy != "sequence"]
    if sequence:
        terminalreporter.section("loop-harness: tool-output drift served under matching policy 'sequence'")
        for line in sequence:
            terminalreporter.line(line)
    if volatile and config.option.verbose > 0:  # what was not compared, for a reviewer; -q keeps to the warnings
        terminalreporter.section("loop-harness: volatile values not compared")
        for line in volatile:
            terminalreporter.line(line)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[ENDED_KEY] = True
    if report.when == "call" and report.failed:
        item.stash[FAILED_KEY] = True
    active = item.stash.get(CASSETTE_KEY, None)
    if report.when == "call" and active is not None:
        from harness.pytest_plugin.shared import note_played

        note_played(item, active, passed=report.passed)
    return report
