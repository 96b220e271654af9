"""pytest --drift-report=FILE: replay the whole suite and report what a change invalidates.

Registered by `harness.pytest_plugin` (its `pytest_plugins`), apart from it so that the plugin stays
one screen. With `--drift-report`, each test's cassette is looked at after the test: its first
divergent request and the kind of change (`harness.report.drift`), or the recorded interactions the
run never asked for. At the end of the session one report covers every cassette: FILE ending in
`.json` gets the JSON document, `-` the Markdown on the terminal, any other FILE the Markdown.

The suite replays (record mode none, the default) or forks (`--record-mode=fork`: the report then says,
per cassette, what the fork replayed and re-recorded, in interactions, tokens and cost). In mode none a
drift fails the session (exit 1) even where a test swallowed the miss; a suite with no drift says so
and exits as its tests do. Under pytest-xdist each worker hands its entries to the controller on the
test reports, and the controller writes the one report.

With `--record-mode=fork` and no report asked for, the terminal summary still lists what each fork did.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from harness.pytest_plugin.options import record_mode
from harness.pytest_plugin.stash import CASSETTE_KEY

_ENTRY = "harness_drift"  # the attribute of a teardown report that carries the entry (serialized by xdist)
_REPORT_MODES = ("none", "fork")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("loop-harness")
    group.addoption(
        "--drift-report",
        action="store",
        default=None,
        metavar="FILE",
        help="replay the suite and report every cassette's first divergent request and its kind of change: "
        "Markdown to FILE, JSON when FILE ends in .json, Markdown on the terminal for '-'",
    )


class DriftCollector:
    """Gathers one entry per test with a cassette; writes the report when the session ends."""

    def __init__(self, config: pytest.Config, target: str | None, mode: str) -> None:
        self.config = config
        self.target = target
        self.mode = mode
        self.entries: list[dict[str, Any]] = []
        self.document: dict[str, Any] | None = None
        self.written_to: str | None = None

    @property
    def _is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.when == "teardown":  # after the cassette fixture has closed (and saved) the cassette
            cassette = item.stash.get(CASSETTE_KEY, None)
            if cassette is not None and hasattr(cassette, "misses"):
                from harness.report.drift import cassette_entry

                setattr(report, _ENTRY, cassette_entry(
                    cassette, tests=[item.nodeid], allow_unused=bool(getattr(cassette, "allow_unused", False)),
                    root=self.config.rootpath))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = getattr(report, _ENTRY, None)
        if entry is not None and not self._is_worker:
            self.entries.append(entry)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self._is_worker:
            return
        from harness.report.drift import drift_document, has_drift
        from harness.report.drift_markdown import write_drift_report

        self.document = drift_document(self.entries, mode=self.mode, source="pytest")
        if self.target is not None and self.target != "-":
            self.written_to = write_drift_report(self.target, self.document)
        if self.target is not None and self.mode == "none" and has_drift(self.document) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a miss the code under test swallowed is drift too

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.document is None:
            return
        from harness.report.drift_markdown import drift_markdown, fork_line

        if self.target == "-":
            terminalreporter.section("loop-harness drift report")
            terminalreporter.write(drift_markdown(self.document))
            return
        summary = self.document["summary"]
        if self.target is not None:
            terminalreporter.write_line(
                f"loop-harness drift report: {summary['drifted']} of {summary['cassettes']} cassette(s) drifted, "
                f"{summary['ends_early']} end early, {summary['replays']} replay; written to {self.written_to}")
        if self.mode == "fork":
            forks = [entry["fork"] for entry in self.document["cassettes"] if entry.get("fork")]
            if forks:
                terminalreporter.section("loop-harness forks")
                for fork in forks:
                    terminalreporter.write_line(fork_line(fork))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test whose code swallowed a miss (the reference loop turns API errors into an outcome) still
    shows the miss, with its kind of change, under the failure."""
    report = yield
    cassette = item.stash.get(CASSETTE_KEY, None)
    misses = getattr(cassette, "misses", None)
    if report.when == "call" and report.failed and misses:
        from harness.cassette.recorder import CassetteMismatch

        first_line = str(misses[0]).split("\n", 1)[0]
        shown = call.excinfo is not None and (isinstance(call.excinfo.value, CassetteMismatch)
                                              or first_line in str(call.excinfo.value))  # the one-screen miss
        if not shown:
            report.sections.append(("loop-harness: a request had no recording", str(misses[0])))
    return report


def pytest_configure(config: pytest.Config) -> None:
    target = config.getoption("--drift-report")
    if target is not None:
        explicit = config.getoption("--record-mode")
        if explicit is None:
            config.option.record_mode = "none"  # the report replays, whatever the config file's default
        elif explicit not in _REPORT_MODES:
            raise pytest.UsageError(f"--drift-report replays the suite: use it with --record-mode none or fork, "
                                    f"not {explicit!r}")
    mode = record_mode(config)
    if target is None and mode != "fork":
        return
    config.pluginmanager.register(DriftCollector(config, target, mode), "loop-harness-drift")
