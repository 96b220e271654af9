"""A project's own checks: `@harness.check` on a plain function in a file `[tool.loop-harness] checks` names.

Validated, listed and run exactly as a built-in check: in a golden, in `assert_trajectory`, in `harness eval
--list-checks`; a check that raises is a failed result naming its file and line, never a crash.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness
from harness.checks.registry import CHECKS
from harness.errors import HarnessError
from harness.evals.golden import GoldenError, parse_golden
from harness.trajectory import Trajectory

CHECKS_PY = '''\
import harness


@harness.check(params={"limit": {"type": "integer", "description": "most steps allowed"}})
def few_steps(trajectory, limit=3):
    """The run takes at most `limit` steps."""
    return len(trajectory.steps) <= limit, f"{len(trajectory.steps)} step(s), at most {limit}"


@harness.check
def says_hello(trajectory):
    return "hello" in trajectory.final_text


@harness.check
def broken(trajectory):
    return 1 / 0
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "pyproject.toml").write_text('[tool.loop-harness]\nchecks = ["checks.py"]\n', encoding="utf-8")
    (tmp_path / "checks.py").write_text(CHECKS_PY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in ("few_steps", "says_hello", "broken"):
        CHECKS.pop(name, None)


def _trajectory(text: str = "hello there", steps: int = 1) -> Trajectory:
    from harness.run import Exchange

    exchanges = []
    for index in range(steps):
        last = index == steps - 1
        content = ([{"type": "text", "text": text}] if last else
                   [{"type": "tool_use", "id": f"toolu_{index}", "name": "look", "input": {}}])
        messages = [{"role": "user", "content": "hi"}]
        exchanges.append(Exchange(
            request={"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages},
            message={"id": f"msg_{index}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                      "content": content, "stop_reason": "end_turn" if last else "tool_use",
                      "usage": {"input_tokens": 1, "output_tokens": 1}},
        ))
    return Trajectory.from_exchanges(exchanges)


def test_a_decorated_function_stays_callable_as_written() -> None:
    @harness.check
    def short(trajectory: Trajectory) -> bool:
        return True

    from harness.checks.user import spec_of

    assert short(_trajectory()) is True
    spec = spec_of(short)
    assert spec is not None and spec.name == "short"


def test_assert_trajectory_runs_a_project_check_with_its_params(project: Path) -> None:
    results = harness.assert_trajectory(_trajectory(), [{"check": "few_steps", "params": {"limit": 2}},
                                                        "says_hello"])
    assert [r.passed for r in results] == [True, True]
    assert results[0].reason == "1 step(s), at most 2"
    with pytest.raises(AssertionError, match="says_hello failed"):
        harness.assert_trajectory(_trajectory(text="bye"), ["says_hello"])


def test_a_golden_validates_a_project_checks_params_against_its_schema(project: Path) -> None:
    golden = {"name": "g", "cassettes": ["c.yaml"], "checks": [{"check": "few_steps", "params": {"limit": "x"}}]}
    with pytest.raises(GoldenError, match=r"\$\.checks\[0\]\.params\.limit"):
        parse_golden(golden, path=project / "golden" / "g.json")
    golden["checks"] = [{"check": "few_steps", "params": {"limt": 2}}]
    with pytest.raises(GoldenError, match="did you mean 'limit'"):
        parse_golden(golden, path=project / "golden" / "g.json")


def test_a_check_that_raises_is_a_failed_result_naming_its_file_and_line(project: Path) -> None:
    from harness.checks.registry import run_check
    from harness.checks.user import use_project_checks

    use_project_checks(project)
    result = run_check("broken", _trajectory())
    assert not result.passed
    assert "checks.py:" + str(CHECKS_PY.splitlines().index("    return 1 / 0") + 1) in result.reason
    assert "ZeroDivisionError" in result.reason


def test_eval_list_checks_lists_the_projects_checks_beside_the_built_ins(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["eval", "--list-checks"]) == 0
    out = capsys.readouterr().out
    assert "few_steps: The run takes at most `limit` steps." in out
    assert "  limit (integer)" in out
    assert "tool_ids_matched:" in out


@pytest.mark.parametrize(("entry", "body", "message"), [
    ("missing.py", None, "no such file"),
    ("checks.py", "import harness\n\ndef plain(t):\n    return True\n", "no function decorated with @harness.check"),
    ("checks.py", "import harness\n\nraise RuntimeError('boom')\n", r"checks\.py:3: boom"),
    ("checks.py", "import harness\n\n@harness.check\ndef outcome(t):\n    return True\n", "name of a built-in"),
    ("nosuchmodule:thing", None, "importing 'nosuchmodule' raised"),
])
def test_a_bad_checks_entry_is_an_error_naming_pyproject_and_the_entry(
        tmp_path: Path, entry: str, body: str | None, message: str) -> None:
    from harness.checks.user import use_project_checks

    (tmp_path / "pyproject.toml").write_text(f'[tool.loop-harness]\nchecks = ["{entry}"]\n', encoding="utf-8")
    if body is not None:
        (tmp_path / "checks.py").write_text(textwrap.dedent(body), encoding="utf-8")
    with pytest.raises(HarnessError, match=message) as caught:
        use_project_checks(tmp_path)
    assert "pyproject.toml" in str(caught.value) and entry in str(caught.value)


def test_module_colon_name_names_one_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.checks.user import use_project_checks

    (tmp_path / "pyproject.toml").write_text('[tool.loop-harness]\nchecks = ["mychecks_mod:short_answer"]\n',
                                             encoding="utf-8")
    (tmp_path / "mychecks_mod.py").write_text(
        "import harness\n\n@harness.check\ndef short_answer(trajectory, most: int = 80):\n"
        "    return len(trajectory.final_text) <= most\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        specs = use_project_checks(tmp_path)
        assert [spec.name for spec in specs] == ["short_answer"]
        assert specs[0].params_schema["properties"] == {"most": {"type": "integer"}}
    finally:
        CHECKS.pop("short_answer", None)
