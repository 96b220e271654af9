"""`harness record` as the source of candidates: a replaced system prompt, and the guards around it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cassette.format import load_cassette
from harness.cli import main as harness_main
from harness.errors import HarnessError
from harness.jsondata import fingerprint
from harness_demo.dayflow import SYSTEM_PROMPT
from harness_demo.scenarios import SCENARIOS, scenario


def test_the_recorded_requests_carry_the_prompt_from_the_file(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("You are a terse assistant. Keep it short.\n", encoding="utf-8")
    out = tmp_path / "candidates"
    argv = ["record", "--demo", "dayflow-brief", "--system-prompt-file", str(prompt), "--cassettes", str(out)]
    assert harness_main(argv) == 0
    cassette = load_cassette(out / "dayflow" / "brief.yaml")
    systems = {interaction["request"]["body"]["system"] for interaction in cassette.interactions}
    assert systems == {"You are a terse assistant. Keep it short."}
    assert cassette.meta["fingerprints"]["system"] == fingerprint("You are a terse assistant. Keep it short.")
    assert cassette.meta["fingerprints"]["system"] != fingerprint(SYSTEM_PROMPT)


def test_a_changed_prompt_needs_an_explicit_cassettes_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.txt").write_text("x", encoding="utf-8")
    assert harness_main(["record", "--demo", "dayflow-brief", "--system-prompt-file", "p.txt"]) == 2
    assert "--system-prompt-file needs --cassettes DIR" in capsys.readouterr().err
    assert not (tmp_path / "cassettes").exists(), "nothing recorded over the baseline"


def test_an_empty_or_missing_prompt_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.txt").write_text("  \n", encoding="utf-8")
    for name in ("empty.txt", "missing.txt"):
        argv = ["record", "--demo", "dayflow-brief", "--system-prompt-file", str(tmp_path / name),
                "--cassettes", str(tmp_path)]
        assert harness_main(argv) == 2
    err = capsys.readouterr().err
    assert "the system prompt file is empty" in err and "cannot read the system prompt" in err


def test_a_named_scenario_without_a_replaceable_prompt_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "p.txt").write_text("x", encoding="utf-8")
    argv = [
        "record",
        "--demo",
        "sql-self-correction",
        "--system-prompt-file",
        str(tmp_path / "p.txt"),
        "--cassettes",
        str(tmp_path),
    ]
    assert harness_main(argv) == 2
    assert "does not take a replacement system prompt; these do: dayflow-brief" in capsys.readouterr().err
    assert harness_main(["record", "--demo", "sql-self-correction", "--print-system-prompt"]) == 2


def test_with_system_prompt_changes_only_the_prompt() -> None:
    original = scenario("dayflow-brief-stream")
    changed = original.with_system_prompt("other")
    assert changed.system_prompt == "other" and original.system_prompt == SYSTEM_PROMPT
    assert changed.options == {**original.options, "system": "other"} and changed.cassette == original.cassette
    with pytest.raises(HarnessError):
        scenario("sql-self-correction").with_system_prompt("other")
    assert {s.name for s in SCENARIOS if s.system_prompt is None} == {"sql-self-correction"}
