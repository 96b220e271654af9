"""[tool.loop-harness.matching]: a project's normalization rules apply to every cassette in it."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from harness import use_cassette
from harness.cassette.format import load_cassette
from harness.cassette.recorder import CassetteMismatch
from harness.errors import HarnessError
from harness.project import load_project
from harness.sim import Simulator


def _project(tmp_path: Path, matching: str) -> Path:
    root = tmp_path / "mine"
    root.mkdir()
    (root / "pyproject.toml").write_text(f"[project]\nname = 'mine'\n\n[tool.loop-harness.matching]\n{matching}\n")
    return root


def _ask(base_url: str, user_id: str) -> anthropic.types.Message:
    client = anthropic.Anthropic(api_key="sim-key", base_url=base_url, max_retries=0)
    return client.messages.create(model="sim-echo", max_tokens=64, metadata={"user_id": user_id},
                                  messages=[{"role": "user", "content": "hello"}])


def test_the_projects_rules_are_stored_in_its_cassettes_and_used_to_match(tmp_path: Path) -> None:
    root = _project(tmp_path, 'mask = ["metadata.user_id"]')
    path = root / "cassettes" / "hello.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        recorded = _ask(sim.base_url, "session-one")
    assert load_cassette(path).meta["matching"]["mask"] == ["metadata.user_id"]
    with use_cassette(path, mode="none"):  # another session id: masked on both sides, so it matches
        assert _ask("http://127.0.0.1:9", "session-two").content == recorded.content


def test_without_the_rule_the_same_change_is_a_miss(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'plain'\n")
    path = root / "cassettes" / "hello.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        _ask(sim.base_url, "session-one")
    with use_cassette(path, mode="none", on_miss="ignore"), pytest.raises(CassetteMismatch):
        _ask("http://127.0.0.1:9", "session-two")


def test_a_bad_rule_names_the_file_and_the_table(tmp_path: Path) -> None:
    root = _project(tmp_path, 'policy = "loose"')
    with pytest.raises(HarnessError) as error:
        load_project(root)
    assert str(root / "pyproject.toml") in str(error.value) and "[tool.loop-harness.matching]" in str(error.value)
