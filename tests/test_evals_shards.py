"""`harness eval --shard K/N` and `harness merge`: balanced shares, one document again, refusals naming files;
the streamed results document; one-way imports between evals and reports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as harness_main
from harness.evals.merge import PER_RUN_FIELDS, without_per_run_fields
from harness.evals.results import validate_results
from harness.evals.runner import run_suites
from harness.evals.shard import deal
from harness.evals.suite import discover_suites
from harness.report.html import results_html
from harness.report.junit import results_junit
from harness.report.markdown import results_markdown
from tests.test_checks_support import REPO


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose one golden judges the bundled cassettes: most pass, one fails a check, one cannot run."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    shutil.copytree(REPO / "cassettes", tmp_path / "cassettes")
    cassettes = sorted(str(path.relative_to(tmp_path)) for path in (tmp_path / "cassettes").rglob("*.yaml"))
    golden = {
        "name": "mixed",
        "cassettes": [*cassettes, "cassettes/nowhere.yaml"],
        "checks": [{"check": "tool_ids_matched"}, {"check": "budgets", "params": {"max_steps": 3}}],
    }
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "mixed.json").write_text(json.dumps(golden), encoding="utf-8")
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "mixed.yaml").write_text("name: mixed\ncases:\n  - golden: mixed.json\n", encoding="utf-8")
    (tmp_path / "evals" / "again.yaml").write_text(
        "name: again\ncases:\n  - golden: mixed.json\n    cassette: cassettes/guards/repeat.yaml\n    id: again\n",
        encoding="utf-8",
    )
    return tmp_path


EXIT = {"passed": 0, "failed": 1, "error": 2}


def read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    validate_results(data, file=path)
    return data


def run_shards(project: Path, total: int, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    monkeypatch.chdir(project)
    paths = []
    for index in range(1, total + 1):
        path = project / f"shard-{index}.json"
        code = harness_main(["eval", "--shard", f"{index}/{total}", "--json", str(path)])
        assert code == EXIT[read(path)["summary"]["status"]]  # each shard's exit is its own cases'
        paths.append(path)
    return paths


def test_three_shards_merged_are_the_document_of_one_run(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = run_shards(project, 3, monkeypatch)
    # A check failed (beside a case that could not run): exit 1, the one code for a failed check (issue 38).
    assert harness_main(["eval", "--json", str(project / "one.json")]) == 1
    merged = project / "merged.json"
    # Any order on the command line; exit 1 as the one run's.
    assert harness_main(["merge", *map(str, reversed(shards)), "--json", str(merged)]) == 1
    one, joined = read(project / "one.json"), read(merged)
    assert "shard" not in joined
    assert without_per_run_fields(joined) == without_per_run_fields(one)
    assert {case["status"] for case in one["cases"]} == {"passed", "failed", "error"}  # all kinds went through
    assert [case["id"] for case in joined["cases"]] == [case["id"] for case in one["cases"]]
    # The per-run fields are the shards' own: the latest start, the summed durations, each case's timings.
    pieces = [read(path) for path in shards]
    assert joined["created_at"] == max(piece["created_at"] for piece in pieces)
    assert joined["summary"]["duration_ms"] == pytest.approx(sum(p["summary"]["duration_ms"] for p in pieces))
    timings = {case["id"]: case["timings"] for piece in pieces for case in piece["cases"]}
    assert all(case["timings"] == timings[case["id"]] for case in joined["cases"])
    assert PER_RUN_FIELDS == ("created_at", "summary.duration_ms", "cases[*].timings", "cases[*].checks[*].duration_ms")


def test_shards_share_the_cases_once_each_balanced_by_recorded_interactions(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces = [read(path) for path in run_shards(project, 3, monkeypatch)]
    ids = [case["id"] for piece in pieces for case in piece["cases"]]
    plan = pieces[0]["shard"]["plan"]
    assert sorted(ids) == sorted(plan) and len(set(ids)) == len(plan)
    assert len({piece["shard"]["suite_id"] for piece in pieces}) == 1
    weights = [piece["shard"]["weight"] for piece in pieces]
    interactions = {case["id"]: case["cassette"]["interactions"] or 1 for piece in pieces for case in piece["cases"]}
    assert max(weights) - min(weights) <= max(interactions.values())  # no shard is a whole case heavier
    # Each shard's document is a results document of its own: suites keep their order, with its cases only.
    for piece in pieces:
        assert [suite["name"] for suite in piece["suites"]] == ["again", "mixed"]
        assert sum(len(suite["cases"]) for suite in piece["suites"]) == piece["summary"]["cases"]
    # The same deal every time: a second run of shard 2 runs the same cases.
    again = project / "again.json"
    assert harness_main(["eval", "--shard", "2/3", "--json", str(again)]) == EXIT[pieces[1]["summary"]["status"]]
    assert [case["id"] for case in read(again)["cases"]] == [case["id"] for case in pieces[1]["cases"]]


def test_the_deal_is_heaviest_first_to_the_lightest_shard() -> None:
    assert deal([5, 1, 1, 1, 1, 1], 2) == [0, 1, 1, 1, 1, 1]
    assert deal([1, 1, 1, 1], 3) == [0, 1, 2, 0]
    assert deal([], 3) == []
    loads = [0, 0, 0]
    weights = [7, 3, 9, 2, 2, 8, 1, 4]
    for weight, shard in zip(weights, deal(weights, 3), strict=True):
        loads[shard] += weight
    assert max(loads) - min(loads) <= max(weights)


def test_merge_refuses_an_overlap_naming_the_case_and_both_files(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, third = run_shards(project, 3, monkeypatch)
    copy = project / "copy-of-2.json"
    shutil.copy(second, copy)
    capsys.readouterr()
    assert harness_main(["merge", str(first), str(second), str(third), str(copy)]) == 2
    err = capsys.readouterr().err
    case_id = read(second)["cases"][0]["id"]
    assert f"case {case_id!r} is in two shards' results: {second} and {copy}" in err


def test_merge_names_the_missing_shards(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _, third = run_shards(project, 3, monkeypatch)
    capsys.readouterr()
    assert harness_main(["merge", str(third), str(first), "--json", str(project / "m.json")]) == 2
    err = capsys.readouterr().err
    assert "missing shard 2/3:" in err and "of the run's 14 cases are in none of the 2 files given" in err
    assert not (project / "m.json").exists()


def test_merge_refuses_shards_of_another_run_and_results_that_are_no_shard(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _, third = run_shards(project, 3, monkeypatch)
    assert harness_main(["eval", "--json", str(project / "one.json")]) == 1
    capsys.readouterr()
    assert harness_main(["merge", str(project / "one.json")]) == 2
    assert "one.json: not a shard's results: write them with `harness eval --shard K/N --json F`" in (
        capsys.readouterr().err
    )
    # A cassette changed between two jobs of the matrix: another run, refused before anything is merged.
    with (project / "cassettes" / "guards" / "refusal.yaml").open("a", encoding="utf-8") as handle:
        handle.write("# edited\n")
    other = project / "other-2.json"
    assert harness_main(["eval", "--shard", "2/3", "--json", str(other)]) == EXIT[read(other)["summary"]["status"]]
    capsys.readouterr()
    assert harness_main(["merge", str(first), str(other), str(third)]) == 2
    assert "is not of the run of" in capsys.readouterr().err
    assert harness_main(["merge", str(first), str(project / "two-of-four.json")]) == 2  # no such file
    assert "two-of-four.json: cannot read it" in capsys.readouterr().err


@pytest.mark.parametrize("shard", ["0/3", "4/3", "2", "a/b", "1/0"])
def test_a_bad_shard_is_exit_2(
    shard: str, project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    assert harness_main(["eval", "--shard", shard]) == 2
    assert "--shard" in capsys.readouterr().err


def test_more_shards_than_cases_leaves_empty_shards_that_still_merge(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    paths = []
    for index in range(1, 16):
        path = project / f"s{index}.json"
        assert harness_main(["eval", "evals/again.yaml", "--shard", f"{index}/15", "--json", str(path)]) in (0, 1)
        paths.append(str(path))
    assert [read(Path(path))["summary"]["cases"] for path in paths] == [1] + [0] * 14
    assert harness_main(["merge", *paths, "--json", str(project / "m.json")]) in (0, 1)
    assert read(project / "m.json")["summary"]["cases"] == 1
    assert harness_main(["merge", *paths, paths[-1]]) == 2
    assert "shard 15/15 is given twice" in capsys.readouterr().err


def test_merge_writes_every_view_of_the_merged_document(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = run_shards(project, 2, monkeypatch)
    views = {flag: project / f"merged.{ext}" for flag, ext in (("markdown", "md"), ("junit", "xml"), ("html", "html"))}
    args = [arg for flag, path in views.items() for arg in (f"--{flag}", str(path))]
    merged = project / "merged.json"
    assert harness_main(["merge", *map(str, shards), "--json", str(merged), *args]) == 1
    out = capsys.readouterr().out
    assert "merged 2 shards" in out and "14 cases: " in out
    document = read(merged)
    assert views["markdown"].read_text(encoding="utf-8") == results_markdown(document)
    assert views["junit"].read_text(encoding="utf-8") == results_junit(document)
    assert views["html"].read_text(encoding="utf-8") == results_html(document)
    assert "guards/repeat" in views["markdown"].read_text(encoding="utf-8")


def test_the_streamed_document_equals_the_one_built_in_memory(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    assert harness_main(["eval", "--json", "streamed.json"]) == 1
    out = capsys.readouterr().out
    assert "━" not in out  # 14 cases but no terminal: no progress bar in a log
    in_memory = run_suites(discover_suites([project / "evals"]))
    assert without_per_run_fields(read(project / "streamed.json")) == without_per_run_fields(
        json.loads(json.dumps(in_memory))
    )


# One-way imports (evals never import report; no cycle): tests/test_layers.py checks the whole package.


def test_the_eval_scale_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/eval_scale.py at a toy size: it prints figures and asserts nothing about time."""
    from bench import eval_scale

    assert eval_scale.main(["--counts", "3", "--mode", "both"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert "peak RSS MB" in rows[0]
    assert [row.split()[:2] for row in rows[1:]] == [["stream", "3"], ["in-memory", "3"]]
