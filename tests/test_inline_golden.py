"""One schema for goldens, inline or on disk: `assert_trajectory` validates its dict exactly as `harness eval`
validates a golden file, from the checks' own parameter specs (issue 26)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import assert_trajectory
from harness.checks.base import CheckSpec, ok
from harness.checks.registry import CHECKS
from harness.cli import main as harness_main
from harness.errors import GoldenError
from tests.conftest import REPO

CASSETTE = REPO / "cassettes" / "guards" / "max_tokens.yaml"


def file_error(tmp_path: Path, checks: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> str:
    """What `harness eval` prints for a golden file holding `checks` (it must exit 2)."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    golden = tmp_path / "golden" / "g.json"
    golden.parent.mkdir(exist_ok=True)
    golden.write_text(json.dumps({"name": "g", "cassettes": [str(CASSETTE)], "checks": checks}), encoding="utf-8")
    capsys.readouterr()
    assert harness_main(["eval", str(golden)]) == 2
    printed = capsys.readouterr()  # the case errors, naming the file and the place (its line in the run's output)
    return printed.out + printed.err


def inline_error(expected: Any) -> GoldenError:
    with pytest.raises(GoldenError) as raised:
        assert_trajectory(CASSETTE, expected)
    return raised.value


def test_a_misspelt_parameter_fails_with_the_golden_files_path_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = file_error(tmp_path, [{"check": "outcome", "params": {"stop_reasn": "max_tokens"}}], capsys)
    err = inline_error({"outcome": {"stop_reasn": "max_tokens"}})
    assert f"$.checks[0].params: {err.reason}" in printed  # the same reason, at the same place of a golden file
    assert err.where == "$.outcome (in a golden file: $.checks[0].params)"
    assert "'stop_reasn' was unexpected" in err.reason and "did you mean 'stop_reason'?" in err.reason
    document = inline_error({"checks": [{"check": "outcome", "params": {"stop_reasn": "max_tokens"}}]})
    assert document.where == "$.checks[0].params" and document.reason == err.reason


def test_an_unknown_check_is_the_same_error_never_a_key_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = file_error(tmp_path, [{"check": "outcom"}], capsys)
    for expected, where in (({"outcom": {}}, "$.outcom"), (["outcom"], "$[0]"), ([{"check": "outcom"}], "$[0].check")):
        err = inline_error(expected)
        assert not isinstance(err, KeyError)
        assert err.where == f"{where} (in a golden file: $.checks[0].check)"
        assert f"$.checks[0].check: {err.reason}" in printed
        assert "did you mean 'outcome'?" in err.reason


def test_a_bad_value_deep_in_the_params_names_its_place() -> None:
    err = inline_error({"trajectory_match": {"expected": [{"nme": "read_inbox"}]}})
    assert err.where == "$.trajectory_match.expected[0] (in a golden file: $.checks[0].params.expected[0])"
    assert "valid: name, input" in err.reason
    err = inline_error(["outcome", {"check": "budgets", "params": {"max_steps": "ten"}}])
    assert err.where.startswith("$[1].params.max_steps") and err.reason == "'ten' is not of type 'integer'"


def test_good_inline_checks_still_run() -> None:
    results = assert_trajectory(CASSETTE, {"outcome": {"stop_reason": "max_tokens"}, "tool_ids_matched": None})
    assert [result.name for result in results] == ["outcome", "tool_ids_matched"]
    with pytest.raises(AssertionError, match="expected end_turn"):
        assert_trajectory(CASSETTE, ["outcome"])


def test_a_new_check_is_covered_by_declaring_its_params(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = CheckSpec(
        name="allowed_tools",
        function=lambda trajectory, params: ok("allowed_tools", "fine"),
        description="a check another package adds",
        params_schema={"type": "object", "properties": {"allow": {"type": "array"}}},
    )
    monkeypatch.setitem(CHECKS, "allowed_tools", spec)
    assert assert_trajectory(CASSETTE, {"allowed_tools": {"allow": ["read_inbox"]}})[0].passed
    err = inline_error({"allowed_tools": {"alow": ["read_inbox"]}})
    assert "did you mean 'allow'?" in err.reason
    assert f"$.checks[0].params: {err.reason}" in file_error(
        tmp_path, [{"check": "allowed_tools", "params": {"alow": []}}], capsys
    )


def test_under_pytest_a_typo_is_one_screen(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_typo=f"""
from harness import assert_trajectory

def test_it():
    assert_trajectory({str(CASSETTE)!r}, {{"outcome": {{"stop_reasn": "max_tokens"}}}})
"""
    )
    result = pytester.runpytest("test_typo.py")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "did you mean 'stop_reason'?" in output
    assert "harness/evals/golden.py" not in output and "harness/testing.py" not in output


pytest_plugins = ["pytester"]
