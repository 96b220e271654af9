"""The guarantees page (docs/guarantees.md) stays true: every test it cites exists, and is not skipped or xfailed.

Each promise there names the test that proves it (`tests/file.py::test_name`). A renamed or deleted
test would leave a promise with no proof behind it; this fails instead.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REFERENCE = re.compile(r"(tests/[\w/]+\.py)::(\w+)")


GUARANTEES = REPO / "docs" / "guarantees.md"


def guarantees_section() -> str:
    return GUARANTEES.read_text(encoding="utf-8")


def test_every_cited_test_exists_and_is_expected_to_pass() -> None:
    references = REFERENCE.findall(guarantees_section())
    assert references, "the Guarantees section cites no test"
    for file, name in references:
        path = REPO / file
        assert path.is_file(), f"{file} (cited for {name}) does not exist"
        functions = {node.name: node for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                     if isinstance(node, ast.FunctionDef)}
        assert name in functions, f"{file}::{name} is cited in docs/guarantees.md but does not exist"
        marks = {ast.unparse(mark) for mark in functions[name].decorator_list}
        assert not any("skip" in mark or "xfail" in mark for mark in marks), f"{file}::{name} does not run"
