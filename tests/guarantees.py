"""The guarantees list and the tests it cites, read in one place (tests/test_guarantees.py, and the CI hook here).

Each promise names the test that proves it (`tests/file.py::test_name`). The list lives in docs/guarantees.md
once that file exists, else in README.md's "## Guarantees" section. Under `CI=true` a cited test that is
skipped (a missing extra, a missing corpus) or expected to fail fails the session (`CitedSkips`): CI is where
the promise is checked, so it may not pass by not running (a parametrized test holds if any of its instances ran).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
GUARANTEES_DOC = Path("docs") / "guarantees.md"
CITED = re.compile(r"(tests/[\w/]+\.py)::(\w+)")
_README_SECTION = re.compile(r"^## Guarantees\n(.*?)(?=^## |\Z)", re.MULTILINE | re.DOTALL)


def guarantees_text(root: Path = REPO) -> tuple[Path, str]:
    """The file that holds the guarantees list and the list's text ("" when there is none yet)."""
    doc = root / GUARANTEES_DOC
    if doc.is_file():
        return doc, doc.read_text(encoding="utf-8")
    readme = root / "README.md"
    match = _README_SECTION.search(readme.read_text(encoding="utf-8")) if readme.is_file() else None
    return readme, match.group(1) if match else ""


def cited_tests(root: Path = REPO) -> list[tuple[str, str]]:
    """(file, test name) for each test the guarantees list cites, in its order, each once."""
    return list(dict.fromkeys(CITED.findall(guarantees_text(root)[1])))


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


class CitedSkips:
    """A pytest plugin: a cited test none of whose instances ran (each skipped or xfailed) fails the session, named
    with its reasons. A parametrized test that runs for some parameters and skips others by design (an example
    that is not a Messages API call) still ran; one whose only parameter is "the corpus is absent" did not."""

    def __init__(self, cited: list[tuple[str, str]], source: Path) -> None:
        self.cited = {f"{file}::{name}" for file, name in cited}
        self.source = source
        self.ran: set[str] = set()  # cited tests with at least one instance that ran (passed or failed)
        self.not_run: dict[str, dict[str, str]] = {}  # cited test -> node id -> why that instance did not run

    @property
    def skipped(self) -> dict[str, str]:
        """Node id -> why, for each instance of a cited test that never ran at all."""
        return {
            nodeid: why
            for test, instances in self.not_run.items()
            if test not in self.ran
            for nodeid, why in instances.items()
        }

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        test = report.nodeid.split("[", 1)[0]
        if test not in self.cited:
            return
        if report.when == "call" and not report.skipped:
            self.ran.add(test)
        elif report.skipped and hasattr(report, "wasxfail"):
            self.not_run.setdefault(test, {})[report.nodeid] = f"expected to fail ({report.wasxfail or 'xfail'})"
        elif report.skipped:
            longrepr: Any = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
            self.not_run.setdefault(test, {})[report.nodeid] = f"skipped: {str(reason).removeprefix('Skipped: ')}"

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.skipped and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.skipped:
            return
        terminalreporter.section(f"guarantees that did not run (CI=true; cited in {self.source.name})", red=True)
        for nodeid, why in sorted(self.skipped.items()):
            terminalreporter.line(f"{nodeid}: {why}")
        terminalreporter.line(
            "A guarantee holds only where its test runs: install what it needs in .ci/run, "
            "or take the promise out of the list."
        )


def register_in_ci(config: pytest.Config) -> None:
    """Under CI=true, on the process that reports (not on an xdist worker), watch the cited tests."""
    if in_ci() and not hasattr(config, "workerinput"):
        source, _ = guarantees_text()
        config.pluginmanager.register(CitedSkips(cited_tests(), source), "loop-harness-cited-skips")
