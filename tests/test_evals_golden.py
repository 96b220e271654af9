"""Golden fixtures and suites: the schema, strict loading with file + JSON path errors, path resolution."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import GoldenError
from harness.evals.golden import golden_schema, load_golden, project_root, relative_to_root
from harness.evals.suite import discover_suites, load_suite
from tests.test_checks_support import REAL, REPO, real_cassettes


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def good(**changes: Any) -> dict[str, Any]:
    data = {
        "name": "case",
        "cassettes": ["cassettes/a.yaml"],
        "checks": [{"check": "tool_ids_matched"}, {"check": "outcome", "params": {"stop_reason": "end_turn"}}],
    }
    data.update(changes)
    return data


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    return tmp_path


def error_of(path: Path) -> GoldenError:
    with pytest.raises(GoldenError) as caught:
        load_golden(path)
    return caught.value


def test_the_shipped_schema_is_the_generated_one() -> None:
    shipped = json.loads((REPO / "golden" / "schema.json").read_text(encoding="utf-8"))
    assert shipped == golden_schema(), "regenerate: python -m harness.evals.golden --write-schema golden/schema.json"


SHIPPED = [
    # The protocol goldens judge the real-recordings corpus, which a clone may not have beside it.
    pytest.param(p, marks=[pytest.mark.real_cassettes] if p.parent.name == "protocol" else [],
                 id=p.relative_to(REPO / "golden").as_posix())
    for p in sorted(p for p in (REPO / "golden").rglob("*.json") if p.name != "schema.json")
]


@pytest.mark.parametrize("path", SHIPPED)
def test_every_shipped_golden_loads(path: Path) -> None:
    golden = load_golden(path)
    assert golden.checks and all(cassette.exists() for cassette in golden.cassettes)


def test_a_good_golden_loads_with_resolved_paths(project: Path) -> None:
    golden = load_golden(write(project / "golden" / "g.json", good()))
    assert golden.cassettes == [(project / "cassettes" / "a.yaml").resolve()]
    assert [c.id for c in golden.checks] == ["tool_ids_matched", "outcome"]
    assert golden.run == "all" and golden.sha256 is not None


def test_an_unknown_check_names_file_and_path(project: Path) -> None:
    path = write(project / "g.json", good(checks=[{"check": "tool_ids_matched"}, {"check": "tool_ids_matchd"}]))
    err = error_of(path)
    assert err.file == str(path) and err.where == "$.checks[1].check"
    assert "unknown check 'tool_ids_matchd'" in err.reason and "tool_ids_matched" in err.reason
    assert str(err).startswith(f"{path}: $.checks[1].check: ")


@pytest.mark.parametrize(
    ("checks", "where", "words"),
    [
        (
            [{"check": "trajectory_match", "params": {"expected": [], "mode": "sideways"}}],
            "$.checks[0].params.mode",
            "'sideways' is not one of",
        ),
        ([{"check": "budgets", "params": {"max_steps": -1}}], "$.checks[0].params.max_steps", "minimum"),
        (
            [{"check": "final_answer", "params": {"regex": ["("]}}],
            "$.checks[0].params.regex[0]",
            "not a valid regular expression",
        ),
        (
            [{"check": "outcome", "params": {"stop_reason": "end_turn", "error": True}}],
            "$.checks[0].params.error",
            "either stop_reason or error, not both",
        ),
        ([{"check": "outcome", "params": {"stop_reasons": "end_turn"}}], "$.checks[0].params", "Additional properties"),
        ([{"check": "outcome"}, {"check": "outcome"}], "$.checks[1]", "used twice"),
        ([], "$.checks", "should be non-empty"),
    ],
)
def test_bad_parameters_name_the_json_path(project: Path, checks: list[Any], where: str, words: str) -> None:
    err = error_of(write(project / "g.json", good(checks=checks)))
    assert err.where == where
    assert words in err.reason


def test_structural_errors(project: Path) -> None:
    missing_name = good()
    del missing_name["name"]
    assert error_of(write(project / "a.json", missing_name)).reason == "'name' is a required property"
    assert error_of(write(project / "b.json", good(cassettes="x.yaml"))).where == "$.cassettes"
    assert error_of(write(project / "c.json", good(run=0))).where == "$.run"
    assert error_of(write(project / "d.json", [1, 2])).where == "$"


def test_a_syntax_error_names_the_line(project: Path) -> None:
    err = error_of(write(project / "g.json", '{\n  "name": "x",\n  oops\n}'))
    assert err.where == "line 3, column 3" and err.reason.startswith("not valid JSON")


def test_a_missing_file() -> None:
    err = error_of(Path("/nonexistent/golden.json"))
    assert err.reason == "no such file"


# --- suites ---------------------------------------------------------------------------------------------------------


def test_a_suite_expands_goldens_into_cases(project: Path) -> None:
    write(project / "golden" / "g.json", good(cassettes=["cassettes/x/a.yaml", "cassettes/y/b.yaml"]))
    suite_path = write(
        project / "evals" / "s.yaml",
        "name: s\ncases:\n  - golden: g.json\n  - golden: g.json\n    cassette: cassettes/c.yaml\n    id: special\n",
    )
    suite = load_suite(suite_path)
    assert [case.id for case in suite.cases] == ["case/x/a.yaml", "case/y/b.yaml", "special"]
    assert suite.cases[2].cassette == (project / "cassettes" / "c.yaml").resolve()
    assert suite.cases[0].golden_label == "golden/g.json"


def test_suite_errors_name_file_and_path(project: Path) -> None:
    no_golden = write(project / "evals" / "a.yaml", "name: a\ncases:\n  - golden: missing.json\n")
    with pytest.raises(GoldenError) as caught:
        load_suite(no_golden)
    assert caught.value.where == "$.cases[0].golden" and caught.value.file == str(no_golden)
    bad_shape = write(project / "evals" / "b.yaml", "name: b\ncases:\n  - id: x\n    golden: g.json\n")
    with pytest.raises(GoldenError) as caught:
        load_suite(bad_shape)
    assert caught.value.where == "$.cases[0]"
    write(project / "golden" / "g.json", good())
    twice = write(project / "evals" / "c.yaml", "name: c\ncases:\n  - golden: g.json\n  - golden: g.json\n")
    with pytest.raises(GoldenError, match="appears twice"):
        load_suite(twice)


def test_the_golden_folder_can_be_swapped(project: Path) -> None:
    write(project / "other" / "g.json", good(name="from-other"))
    suite_path = write(project / "evals" / "s.yaml", "name: s\ncases:\n  - golden: g.json\n")
    assert load_suite(suite_path, golden_dir=project / "other").cases[0].golden.name == "from-other"


def test_discovering_folders_and_files(project: Path) -> None:
    write(project / "golden" / "one.json", good(name="one"))
    write(project / "golden" / "two.json", good(name="two"))
    write(project / "golden" / "schema.json", golden_schema())
    # goldens of one folder are one suite, named after it (issue 41: they were a suite each)
    (suite,) = discover_suites([project / "golden"])
    assert suite.name == "golden" and [case.suite for case in suite.cases] == ["golden", "golden"]
    assert [s.name for s in discover_suites([project / "golden" / "one.json"])] == ["one"]
    with pytest.raises(GoldenError, match="not a suite"):
        discover_suites([write(project / "notes.txt", "hi")])
    cassette = write(project / "cassettes" / "a.yaml", "harness:\n  format_version: 1\ninteractions: []\n")
    for given in (cassette, cassette.parent):  # a cassette, or a folder of them, given where a suite goes
        with pytest.raises(GoldenError, match="a cassette, not a suite: write its golden with `harness bless`"):
            discover_suites([given])


def test_project_root_and_relative_paths(project: Path) -> None:
    nested = project / "golden" / "deep"
    nested.mkdir(parents=True)
    assert project_root(nested) == project.resolve()
    assert relative_to_root(project / "cassettes" / "a.yaml", project) == "cassettes/a.yaml"
    assert relative_to_root(project.parent / "shared" / "x.yaml", project) == "../shared/x.yaml"


@pytest.mark.real_cassettes
def test_the_protocol_suite_covers_every_real_cassette() -> None:
    suite = load_suite(REPO / "evals" / "protocol.yaml")
    outcome_cases = [c for c in suite.cases if any(k.check == "outcome" for k in c.golden.checks)]
    covered = [c.cassette for c in outcome_cases]
    assert sorted(covered) == sorted(p.resolve() for p in real_cassettes())  # each exactly once
    assert all(c.cassette_label.startswith("../shared/real-cassettes/") for c in suite.cases)
    assert REAL.resolve() in covered[0].parents
