"""`harness init` in an existing project: writes the table, a scenario stub, a test and a CI workflow; never
overwrites (a file that exists, or a symlink, is named and left); a second run writes nothing and says so."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from harness.cli import main

FILES = ("scenarios.py", "test_loop_harness.py", ".github/workflows/loop-harness.yml")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\nversion = "0"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_init_writes_the_table_the_stub_the_test_and_the_workflow_then_the_next_command(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    data = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    assert data["project"]["name"] == "mine"  # what was there stays
    assert data["tool"]["loop-harness"]["scenarios"] == {"first": "scenarios:first"}
    for name in FILES:
        assert (project / name).is_file(), name
        assert f"wrote {name}" in out
    assert "@pytest.mark.cassette" in (project / "test_loop_harness.py").read_text(encoding="utf-8")
    assert "pytest -q --record-mode=once --simulator=auto" in out


def test_a_second_run_writes_nothing_and_says_so(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init"]) == 0
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert "nothing to write: this project is set up already" in out and "wrote" not in out
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


def test_a_file_that_exists_or_a_symlink_is_named_and_left(project: Path, capsys: pytest.CaptureFixture[str],
                                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    (project / "scenarios.py").write_text("# mine\n", encoding="utf-8")
    outside = tmp_path_factory.mktemp("outside") / "target.py"
    (project / "test_loop_harness.py").symlink_to(outside)  # dangling: writing through it would land outside
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert "left scenarios.py (it exists)" in out
    assert "left test_loop_harness.py (it exists, a symlink)" in out
    assert (project / "scenarios.py").read_text(encoding="utf-8") == "# mine\n"
    assert not outside.exists()
    assert "wrote .github/workflows/loop-harness.yml" in out


def test_agent_names_the_function_the_stub_calls(project: Path) -> None:
    assert main(["init", "--agent", "my_agent:weather"]) == 0
    stub = (project / "scenarios.py").read_text(encoding="utf-8")
    assert "import my_agent" in stub and "return my_agent.weather(client)" in stub
    compile(stub, "scenarios.py", "exec")


def test_a_bad_agent_is_exit_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--agent", "my-agent:1x"]) == 2
    assert "--agent must be MODULE or MODULE:FUNCTION" in capsys.readouterr().err
    assert not (project / "scenarios.py").exists()
