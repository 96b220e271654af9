"""The README's prompt-change workflow, command for command, in a copy of a clean clone.

    harness record --demo dayflow-brief --print-system-prompt \\
      | sed 's/, and skip newsletters and promotions: they never belong in the brief//' > my_prompt.txt
    harness record --demo --system-prompt-file my_prompt.txt --cassettes candidates/
    harness compare cassettes/ candidates/ --json compare.json --markdown compare.md --html compare.html

The harness commands run in-process through harness.cli.main; the sed between them runs as itself.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.cli import main as harness_main
from harness.trajectory import load_trajectory
from harness_demo.dayflow import SYSTEM_PROMPT, SYSTEM_PROMPT_NO_FILTER
from tests.test_report_support import copy_bundled_project

SED = "s/, and skip newsletters and promotions: they never belong in the brief//"


@pytest.mark.skipif(shutil.which("sed") is None, reason="the README's workflow pipes the prompt through sed")
def test_the_readme_workflow_flips_promotions_filtered_at_the_final_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    project = copy_bundled_project(tmp_path / "clone")
    monkeypatch.chdir(project)

    # 1. the prompt as it is, without the sentence about promotions
    assert harness_main(["record", "--demo", "dayflow-brief", "--print-system-prompt"]) == 0
    printed = capsys.readouterr().out
    assert printed == SYSTEM_PROMPT + "\n"
    edited = subprocess.run(["sed", SED], input=printed, capture_output=True, text=True, check=True).stdout
    Path("my_prompt.txt").write_text(edited, encoding="utf-8")
    assert edited.strip() == SYSTEM_PROMPT_NO_FILTER, "the sed leaves exactly the agent's no-filter prompt"

    # 2. candidate cassettes recorded against the simulator with that prompt
    argv = ["record", "--demo", "--system-prompt-file", "my_prompt.txt", "--cassettes", "candidates/"]
    assert harness_main(argv) == 0
    recorded = capsys.readouterr().out
    assert "candidates/dayflow/brief.yaml: 2 steps, outcome ended (system prompt from my_prompt.txt)" in recorded
    assert "candidates/sql/self_correction.yaml: 3 steps, outcome ended (its own system prompt)" in recorded

    # 3. the comparison: a CI gate that fails on the flip
    code = harness_main(
        [
            "compare",
            "cassettes/",
            "candidates/",
            "--json",
            "compare.json",
            "--markdown",
            "compare.md",
            "--html",
            "compare.html",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 1
    comparison = json.loads(Path("compare.json").read_text(encoding="utf-8"))
    brief = next(case for case in comparison["cases"] if case["id"] == "dayflow/brief/brief.yaml")
    assert brief["status"] == "regressed"
    (flip,) = [check for check in brief["checks"] if check["flip"]]
    final_step = load_trajectory("candidates/dayflow/brief.yaml").final_step.index
    assert (flip["id"], flip["flip"], flip["candidate"]["step"]) == ("promotions_filtered", "to_fail", final_step)
    assert "FLIP dayflow/brief/brief.yaml promotions_filtered: step 2:" in printed

    before = load_trajectory("cassettes/dayflow/brief.yaml").usage
    after = load_trajectory("candidates/dayflow/brief.yaml").usage
    assert brief["usage_delta"]["output"] == after.output - before.output > 0
    assert brief["usage_delta"]["input"] == after.input - before.input < 0
    assert brief["divergence"]["step"] == 1 and brief["divergence"]["request"][0].startswith("system changed")

    sql = next(case for case in comparison["cases"] if case["id"].startswith("sql/"))
    assert sql["status"] == "unchanged", "the SQL assistant kept its own prompt: the same run"
    assert comparison["summary"]["only_in_baseline"] == comparison["summary"]["only_in_candidate"] == []

    markdown = Path("compare.md").read_text(encoding="utf-8")
    assert "`promotions_filtered` pass → fail: step 2:" in markdown
    assert f"output {before.output:,} → {after.output:,} (+{after.output - before.output})" in markdown
    assert Path("compare.html").stat().st_size > 0
