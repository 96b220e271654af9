"""The guarantees list stays true: every test it cites exists, and is not skipped or xfailed.

Each promise there names the test that proves it (`tests/file.py::test_name`). A renamed or deleted
test would leave a promise with no proof behind it; this fails instead. The list is read where
tests/guarantees.py says (docs/guarantees.md, else README.md's "Guarantees" section), and under CI=true a
cited test that skips at run time fails the session (tests/guarantees.py's hook).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.guarantees import REPO, cited_tests, guarantees_text


def test_every_cited_test_exists_and_is_expected_to_pass() -> None:
    references = cited_tests()
    assert references, f"the guarantees list ({guarantees_text()[0]}) cites no test"
    for file, name in references:
        path = REPO / file
        assert path.is_file(), f"{file} (cited for {name}) does not exist"
        functions = {node.name: node for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                     if isinstance(node, ast.FunctionDef)}
        assert name in functions, f"{file}::{name} is cited in the guarantees list but does not exist"
        marks = {ast.unparse(mark) for mark in functions[name].decorator_list}
        assert not any("skip" in mark or "xfail" in mark for mark in marks), f"{file}::{name} does not run"


def test_the_list_is_read_from_docs_guarantees_md_once_it_exists(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# x\n\n## Guarantees\n\n- one: tests/test_a.py::test_one\n\n## Next\n"
                                        "- not a guarantee: tests/test_a.py::test_other\n")
    assert cited_tests(tmp_path) == [("tests/test_a.py", "test_one")]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guarantees.md").write_text("# Guarantees\n\n- two: tests/test_b.py::test_two\n")
    assert guarantees_text(tmp_path)[0] == tmp_path / "docs" / "guarantees.md"
    assert cited_tests(tmp_path) == [("tests/test_b.py", "test_two")]


CITED_THAT_SKIPS_WITHOUT_THE_CORPUS = ("tests/test_fuzz.py::"
                                       "test_the_fuzz_budget_over_the_real_cassettes_finds_no_traceback")


def test_under_ci_a_cited_test_that_skips_fails_the_session(tmp_path: Path) -> None:
    assert tuple(CITED_THAT_SKIPS_WITHOUT_THE_CORPUS.split("::")) in cited_tests()

    def run(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                               CITED_THAT_SKIPS_WITHOUT_THE_CORPUS], cwd=REPO, capture_output=True, text=True,
                              env={**os.environ, "HARNESS_REAL_CASSETTES": str(tmp_path / "no-corpus"), **env})

    outside_ci = run(CI="")
    assert outside_ci.returncode == 0 and "1 skipped" in outside_ci.stdout, outside_ci.stdout
    in_ci = run(CI="true")
    assert in_ci.returncode == 1, in_ci.stdout
    assert "guarantees that did not run" in in_ci.stdout
    assert f"{CITED_THAT_SKIPS_WITHOUT_THE_CORPUS}: skipped: the real-cassette corpus" in in_ci.stdout


def test_a_parametrized_cited_test_holds_when_any_instance_ran(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from tests.guarantees import CitedSkips

    def report(nodeid: str, when: str, skipped: bool) -> Any:
        return SimpleNamespace(nodeid=nodeid, when=when, skipped=skipped, longrepr=("f.py", 1, "Skipped: by design"))

    hook = CitedSkips([("tests/test_a.py", "test_some"), ("tests/test_a.py", "test_none")], tmp_path / "g.md")
    for event in (report("tests/test_a.py::test_some[x]", "setup", True),  # skipped by design for x
                  report("tests/test_a.py::test_some[y]", "call", False),  # ran for y
                  report("tests/test_a.py::test_none[corpus-absent]", "setup", True)):
        hook.pytest_runtest_logreport(event)
    assert hook.skipped == {"tests/test_a.py::test_none[corpus-absent]": "skipped: by design"}
