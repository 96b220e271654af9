"""`harness compare BASELINE CANDIDATE`: a baseline against a candidate, per case; a CI gate.

BASELINE and CANDIDATE are both one of:

- results files (`harness eval --json F`), compared as they are;
- suite files (.yaml): each is run, and cases are matched by id;
- cassette folders (`cassettes/` against `candidates/`): the cases of the suites (`--suite`, default the
  project's evals/) that read a cassette under BASELINE are run on both sides with the same goldens, the
  candidate side reading the file at the same relative path under CANDIDATE (see
  harness.evals.cassette_sets). Trial files (`NAME.trial-K.yaml`) are a case's trials.

Exit 0 when no check flips to fail, 1 when one does, 2 on bad input: unreadable files, a case that could
not run, or cases present on one side only (unless --allow-different-cases, which compares the shared
ones and names the rest).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from harness import commands
from harness.commands import add_golden_dir_argument, add_suite_argument
from harness.errors import HarnessError, absolute
from harness.evals.document import ResultsDocument
from harness.evals.results import read_results
from harness.report.outputs import add_report_arguments, write_comparison_reports
from harness.report.trials import DEFAULT_K

SUITE_SUFFIXES = (".yaml", ".yml")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "baseline", metavar="BASELINE", help="results file (.json), suite file (.yaml) or cassette folder"
    )
    parser.add_argument("candidate", metavar="CANDIDATE", help="the same kind of input as BASELINE")
    parser.add_argument(
        "--allow-different-cases",
        action="store_true",
        help="compare the cases both sides hold, naming the others, instead of refusing (exit 2)",
    )
    add_suite_argument(parser, purpose="for cassette folders: the suites whose cases to run")
    add_golden_dir_argument(parser)
    parser.add_argument(
        "--k",
        type=int,
        default=DEFAULT_K,
        help=f"the k of pass@k and pass^k in reports (default {DEFAULT_K}; at most the trials)",
    )
    parser.add_argument(
        "--judge",
        choices=("replay", "record", "rewrite"),
        default="replay",
        help="for suites and cassette folders: judged checks (rubric) replay their judge cassettes (default), record "
        "the judgements missing for the candidate, or rewrite them (as `harness eval --judge`)",
    )
    parser.add_argument(
        "--gate",
        choices=("flip", "significant"),
        default="flip",
        help="what exits 1: any check flipping to fail (default), or only a flip that is more than noise over the "
        "trials (Fisher's exact test, p < 0.05; with one trial a side no flip is)",
    )
    add_report_arguments(parser)


def _kind(path: Path) -> str:
    if path.is_dir():
        return "folder"
    if not path.exists():
        raise HarnessError("no such file or folder", file=absolute(path))
    if path.suffix == ".json":
        return "results"
    if path.suffix in SUITE_SUFFIXES:
        return "suite"
    raise HarnessError("not a results file (.json), a suite file (.yaml) or a cassette folder", file=path)


def _sides(args: argparse.Namespace) -> tuple[ResultsDocument, ResultsDocument]:
    baseline, candidate = Path(args.baseline), Path(args.candidate)
    kinds = (_kind(baseline), _kind(candidate))
    if kinds[0] != kinds[1]:
        raise HarnessError(
            f"BASELINE is a {kinds[0]} and CANDIDATE a {kinds[1]}: compare two results files (.json), two suite "
            "files (.yaml) or two cassette folders"
        )
    if kinds[0] == "results":
        return read_results(baseline), read_results(candidate)
    from harness.evals.cassette_sets import anchor_folder, results_for_folder, results_for_suite_file, suites_for
    from harness.evals.judge import Judge

    judge = Judge(args.judge)
    if kinds[0] == "suite":
        return (
            results_for_suite_file(baseline, golden_dir=args.golden, judge=judge),
            results_for_suite_file(candidate, golden_dir=args.golden, judge=judge),
        )
    suites = suites_for(args.suite, args.golden)
    golden_dir = Path(args.golden).resolve() if args.golden else None
    base = anchor_folder(suites, baseline, candidate)
    return (
        results_for_folder(baseline, base=base, suites=suites, golden_dir=golden_dir, judge=judge),
        results_for_folder(candidate, base=base, suites=suites, golden_dir=golden_dir, judge=judge),
    )


def _print(comparison: Mapping[str, Any], console: Console) -> None:
    """One line per case (status, the two sides, where the runs part, deltas), then every flip to fail with its
    reason, then the summary. Plain lines, not a table: a CI log at 80 columns folds a table's cells."""
    from harness.report._text import (
        counted,
        delta_with_interval,
        divergence_short,
        side_text,
        signed,
        summary_cost_delta,
        trial_rates,
    )

    k = int(comparison["k"])
    style = {
        "regressed": "bold red",
        "error": "bold magenta",
        "improved": "green",
        "changed": "cyan",
        "unchanged": "dim",
    }
    for case in comparison["cases"]:
        sides = f"{side_text(case['baseline'], k)} → {side_text(case['candidate'], k)}"
        parts = [sides]
        divergence = divergence_short(case["divergence"])
        if divergence != "–":
            parts.append(f"diverges at {divergence}")
        parts.append(delta_with_interval(case, "tokens"))
        parts.append(delta_with_interval(case, "cost"))
        status = f"[{style[case['status']]}]{case['status']:9}[/]"
        stats = trial_rates(case)
        if stats:
            parts.append(stats)
        console.print(f"{status} {escape(case['id'])}: {escape(' · '.join(parts))}", soft_wrap=True)
        for check in case["checks"]:
            if check["flip"] == "to_pass":
                console.print(f"          {escape(check['id'])} → pass", soft_wrap=True)
    for case in comparison["cases"]:
        for check in case["checks"]:
            if check["flip"] == "to_fail":
                after = check["candidate"]
                flip = f"{escape(case['id'])} {escape(check['id'])}: {escape(after['reason'])}"
                console.print(f"[bold red]FLIP[/] {flip}", soft_wrap=True)
    summary = comparison["summary"]
    if summary.get("needs_rejudging"):
        console.print(
            f"[yellow]needs re-judging[/] (left out of the flips; `--judge record` asks the judge): "
            f"{escape(', '.join(summary['needs_rejudging']))}",
            soft_wrap=True,
        )
    if summary.get("flaky"):
        console.print(f"flaky (trials both pass and fail): {escape(', '.join(summary['flaky']))}", soft_wrap=True)
    if summary.get("regressed_within_noise"):
        gate = "do not fail" if comparison.get("gate") == "significant" else "fail (--gate significant: they would not)"
        console.print(
            f"{counted(summary['regressed_within_noise'], 'regression')} within noise (Fisher p ≥ {summary['alpha']}): "
            f"they {gate}",
            soft_wrap=True,
        )
    for side in ("baseline", "candidate"):
        missing = summary[f"only_in_{side}"]
        if missing:
            console.print(f"only in the {side} (not compared): {escape(', '.join(missing))}", soft_wrap=True)
    console.print(
        f"[bold]{counted(summary['cases'], 'case')}[/]: {summary['regressed']} regressed, "
        f"{summary['improved']} improved, {summary['changed']} changed, {summary['unchanged']} unchanged, "
        f"{summary['errored']} errored\nchecks flipped to fail {summary['checks_flipped_to_fail']}, to pass "
        f"{summary['checks_flipped_to_pass']} · Δ tokens {signed(summary['usage_delta']['total'])} · "
        f"Δ cost {summary_cost_delta(summary)}",
        soft_wrap=True,
    )


def run(args: argparse.Namespace) -> int:
    from harness.report.compare import compare_results, comparison_exit_code

    if args.k < 1:
        raise HarnessError("--k must be 1 or more")
    baseline, candidate = _sides(args)
    comparison = compare_results(
        baseline,
        candidate,
        allow_different_cases=args.allow_different_cases,
        baseline_label=args.baseline,
        candidate_label=args.candidate,
        k=args.k,
        gate=args.gate,
    )
    console = commands.console(highlight=False)
    _print(comparison, console)
    for path in write_comparison_reports(
        comparison, json_path=args.json_path, markdown=args.markdown, junit=args.junit, html=args.html
    ):
        console.print(f"wrote {path}", highlight=False)
    return comparison_exit_code(comparison)
