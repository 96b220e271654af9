"""The symlink rule, kept by every reader: a cassette path inside the project may not lead outside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cassette.format import load_cassette
from harness.cassette.recorder import use_cassette
from harness.cli import main
from harness.errors import CassetteError
from harness.files import project_roots_remembered
from harness.project import project_root
from harness.serve import ReplayServer

pytest_plugins = ["pytester"]

def _bundled() -> Path:
    found = sorted((Path(__file__).resolve().parents[1]).glob("cassettes/**/*.yaml"))
    assert found, "the project bundles cassettes"
    return found[0]


def _project_with_a_link(tmp_path: Path) -> tuple[Path, Path]:
    """A project whose cassettes/link.yaml points at a (valid) cassette outside it."""
    root = tmp_path / "project"
    (root / "cassettes").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    outside = tmp_path / "elsewhere" / "private.yaml"
    outside.parent.mkdir()
    outside.write_bytes(_bundled().read_bytes())
    link = root / "cassettes" / "link.yaml"
    link.symlink_to(outside)
    return root, link


def test_show_refuses_a_link_out_of_the_project(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    root, _link = _project_with_a_link(tmp_path)
    monkeypatch.chdir(root)
    assert main(["show", "cassettes/link.yaml"]) == 2
    err = capsys.readouterr().err
    assert "cassettes/link.yaml" in err and "leads outside the project through a symlink" in err


def test_serve_and_use_cassette_refuse_a_link_out_of_the_project(tmp_path: Path) -> None:
    _, link = _project_with_a_link(tmp_path)
    with pytest.raises(CassetteError, match="leads outside the project"):
        ReplayServer([link])
    with pytest.raises(CassetteError, match="leads outside the project"), use_cassette(link, "none"):
        pass
    with pytest.raises(CassetteError, match="leads outside the project"):
        load_cassette(link)


def test_a_link_that_stays_inside_and_a_path_written_as_outside_are_read(tmp_path: Path) -> None:
    root, _link = _project_with_a_link(tmp_path)
    inside = root / "cassettes" / "real.yaml"
    inside.write_bytes(_bundled().read_bytes())
    (root / "cassettes" / "alias.yaml").symlink_to(inside)
    assert load_cassette(root / "cassettes" / "alias.yaml").interactions
    assert load_cassette(root / ".." / "elsewhere" / "private.yaml").interactions  # visible, so allowed


def test_the_pytest_plugin_refuses_a_link_out_of_the_project(tmp_path: Path, pytester: pytest.Pytester) -> None:
    outside = tmp_path / "elsewhere.yaml"
    outside.write_bytes(_bundled().read_bytes())
    pytester.makefile(".toml", pyproject="[project]\nname = 'p'\n")
    (pytester.path / "cassettes").mkdir()
    (pytester.path / "cassettes" / "link.yaml").symlink_to(outside)
    pytester.makepyfile(test_link='''
import pytest

@pytest.mark.cassette(path="cassettes/link.yaml")
def test_it(anthropic_client):
    pass
''')
    result = pytester.runpytest()
    assert "leads outside the project through a symlink" in result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == 0 and (outcomes.get("errors", 0) + outcomes.get("failed", 0)) == 1


def test_inside_a_memo_each_file_is_still_followed(tmp_path: Path) -> None:
    root, link = _project_with_a_link(tmp_path)
    inside = root / "cassettes" / "real.yaml"
    inside.write_bytes(_bundled().read_bytes())
    memo: dict = {}
    with project_roots_remembered(memo):
        assert load_cassette(inside).interactions
        # The folder's project is remembered from the first load; where each file leads is read on every load.
        with pytest.raises(CassetteError, match="leads outside the project"):
            load_cassette(link)
    assert memo[("marked", str(root / "cassettes"))] == root


def test_a_remembered_project_root_is_looked_up_once(tmp_path: Path) -> None:
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    memo: dict = {}
    with project_roots_remembered(memo):
        first = project_root(inner)
        (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'a'\n")
        assert project_root(inner) == first  # remembered: a marker made since is not seen inside the memo
    assert project_root(inner) == (tmp_path / "a").resolve()  # outside it, looked up again
