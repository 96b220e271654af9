"""`harness eval [PATH...] [--golden DIR] [--json F] [--markdown F] [--junit F] [--html F]`: run suites,
print one line per case, write the results JSON and its views (each a projection of the JSON, written atomically).

PATH is a suite file (.yaml), a golden file (.json) or a folder of either; with none, the project's
suites (evals/, or `suites` in [tool.loop-harness]; the golden folder when there is no evals/). A suite
whose `requires:` folder is absent is skipped with one line saying what is missing. Output is one line
per case, failures and errors expanded with their reasons, then the summary: made for CI logs.
Exit 0 when every check passes, 1 when a check fails, 2 on bad input (an invalid
suite or golden, an unknown check, a cassette that cannot be read).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness.errors import HarnessError
from harness.evals.results import exit_code, write_results
from harness.evals.runner import run_suites
from harness.evals.suite import Suite, discover_suites, project_suites
from harness.report._text import counted
from harness.report.outputs import add_report_arguments, write_results_reports

PROGRESS_FROM = 10  # cases; shorter runs finish before a bar is worth drawing


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="suite files (.yaml), golden files (.json) or folders; default: the project's evals/ (or `suites` in "
        "[tool.loop-harness])",
    )
    parser.add_argument(
        "--golden",
        metavar="DIR",
        help="folder the suites' golden paths are relative to (default: golden/ in the project root)",
    )
    parser.add_argument("--json", metavar="F", dest="json_path", help="write the canonical results JSON here")
    add_report_arguments(parser, json_flag=False)
    parser.add_argument("--failures-only", action="store_true", help="list only the cases that did not pass")


def _suites(args: argparse.Namespace) -> list[Suite]:
    paths = list(args.paths)
    if not paths:
        paths = project_suites()
    suites = discover_suites(paths, golden_dir=args.golden)
    seen: dict[str, str] = {}
    for suite in suites:
        for case in suite.cases:
            if case.id in seen:
                raise HarnessError(
                    f"case {case.id!r} is in two suites ({seen[case.id]} and {suite.path}); "
                    "case ids must be unique in one run",
                    file=suite.path,
                )
            seen[case.id] = str(suite.path)
    return suites


STATUS_WORDS = {"passed": ("pass", "green"), "failed": ("FAIL", "bold red"), "error": ("ERROR", "bold magenta")}


def _case_lines(case: dict[str, Any], *, failures_only: bool) -> list[str]:
    """One line per case; a failed case adds a line per check that did not pass, an errored one its reason.

    Plain lines rather than a table: a CI log or `make` pipes at 80 columns, where a table folds ids and
    reasons over many rows. A long line is printed whole (soft wrap), so it can be searched and copied.
    """
    word, style = STATUS_WORDS[case["status"]]
    if failures_only and case["status"] == "passed":
        return []
    checks = case.get("checks") or []
    passed = sum(1 for check in checks if check["passed"])
    tally = f" [dim]({passed}/{len(checks)} checks)[/]" if checks else ""
    lines = [f"  [{style}]{word:5}[/] {escape(case['id'])}{tally}"]
    if case["status"] == "error":
        error = case["error"] or {}
        where = f"{error.get('where')}: " if error.get("where") else ""
        lines.append(f"        {escape(where + str(error.get('reason', '')))}")
    for check in checks:
        if not check["passed"]:
            step = f" (step {check['step']})" if check["step"] is not None else ""
            lines.append(f"        {escape(check['id'])}{step}: {escape(check['reason'])}")
    return lines


def _report(results: dict[str, Any], suites: list[Suite], console: Console, *, failures_only: bool) -> None:
    for suite in results["suites"]:
        cases = [case for case in results["cases"] if case["suite"] == suite["name"]]
        console.print(f"[bold]suite {escape(suite['name'])}[/] ({counted(len(cases), 'case')})", soft_wrap=True)
        for case in cases:
            for line in _case_lines(case, failures_only=failures_only):
                console.print(line, soft_wrap=True, highlight=False)
    for suite in suites:
        if suite.skipped:
            console.print(f"[bold]suite {escape(suite.name)}[/] skipped: {escape(suite.skipped)}", soft_wrap=True)


def _summary(results: dict[str, Any], console: Console) -> None:
    summary = results["summary"]
    usage = summary["usage"]
    cost = f"${summary['cost_usd']:.4f}" + ("" if summary["cost_known"] else " (some models unpriced)")
    console.print(
        f"[bold]{counted(summary['cases'], 'case')}[/]: {summary['passed']} passed, {summary['failed']} failed, "
        f"{summary['errored']} errored · {summary['checks_passed']}/{counted(summary['checks'], 'check')} passed\n"
        f"tokens in {usage['input']:,} / out {usage['output']:,} / cache write {usage['cache_write']:,} / "
        f"cache read {usage['cache_read']:,} · {cost}",
        soft_wrap=True,
    )


def run(args: argparse.Namespace) -> int:
    all_suites = _suites(args)
    suites = [suite for suite in all_suites if not suite.skipped]
    total = sum(len(suite.cases) for suite in suites)
    if total == 0:
        skipped = "; ".join(f"suite {suite.name} skipped: {suite.skipped}" for suite in all_suites if suite.skipped)
        raise HarnessError(f"nothing to evaluate: {skipped}" if skipped else "the suites hold no cases")
    console = Console(highlight=False)
    golden_dir = Path(args.golden).resolve() if args.golden else None
    if total >= PROGRESS_FROM and console.is_terminal:
        columns = (
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task("eval", total=total)
            results = run_suites(
                suites,
                golden_dir=golden_dir,
                progress=lambda case, record: progress.update(task, advance=1, description=case.id[-40:]),
            )
    else:
        results = run_suites(suites, golden_dir=golden_dir)
    _report(results, all_suites, console, failures_only=args.failures_only)
    _summary(results, console)
    if args.json_path:
        write_results(args.json_path, results)
        console.print(f"results: {args.json_path}")
    for path in write_results_reports(results, markdown=args.markdown, junit=args.junit, html=args.html):
        console.print(f"report: {path}")
    return exit_code(results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness eval")
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except HarnessError as err:
        print(f"harness eval: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
