"""`harness eval [PATH...] [--golden DIR] [--json F] [--markdown F] [--junit F] [--html F]`: run suites,
print a table, write the results JSON and its views (each a projection of the JSON, written atomically).

PATH is a suite file (.yaml), a golden file (.json) or a folder of either; with none, the bundled
suites under evals/. Exit 0 when every check passes, 1 when a check fails, 2 on bad input (an invalid
suite or golden, an unknown check, a cassette that cannot be read).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from harness.errors import HarnessError
from harness.evals.results import exit_code, write_results
from harness.evals.runner import run_suites
from harness.evals.suite import Suite, bundled_suite_dir, discover_suites
from harness.report.outputs import add_report_arguments, write_results_reports

PROGRESS_FROM = 10  # cases; shorter runs finish before a bar is worth drawing


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="suite files (.yaml), golden files (.json) or folders; default: the bundled evals/",
    )
    parser.add_argument(
        "--golden",
        metavar="DIR",
        help="folder the suites' golden paths are relative to (default: golden/ in the project root)",
    )
    parser.add_argument("--json", metavar="F", dest="json_path", help="write the canonical results JSON here")
    add_report_arguments(parser, json_flag=False)
    parser.add_argument("--failures-only", action="store_true", help="list only the checks that did not pass")


def _suites(args: argparse.Namespace) -> list[Suite]:
    paths = list(args.paths)
    if not paths:
        bundled = bundled_suite_dir()
        if bundled is None:
            raise HarnessError("no PATH given and no evals/ folder found in this project")
        paths = [bundled]
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


def _status_text(status: str) -> Text:
    style = {"passed": "green", "failed": "bold red", "error": "bold magenta"}[status]
    return Text({"passed": "pass", "failed": "FAIL", "error": "ERROR"}[status], style=style)


def _tables(results: dict[str, Any], console: Console, *, failures_only: bool) -> None:
    for suite in results["suites"]:
        cases = [case for case in results["cases"] if case["suite"] == suite["name"]]
        table = Table(title=f"suite {suite['name']}", title_justify="left", show_lines=False, expand=False)
        table.add_column("case", overflow="fold", max_width=48)
        table.add_column("check", no_wrap=True)
        table.add_column("result", no_wrap=True)
        table.add_column("step", justify="right")
        table.add_column("reason", overflow="fold")
        for case in cases:
            if case["status"] == "error":
                error = case["error"] or {}
                where = f"{error.get('where')}: " if error.get("where") else ""
                table.add_row(case["id"], "-", _status_text("error"), "", f"{where}{error.get('reason', '')}")
                continue
            shown = [c for c in case["checks"] if not (failures_only and c["passed"])]
            for position, check in enumerate(shown):
                label = case["id"] if position == 0 else ""
                step = "" if check["step"] is None else str(check["step"])
                table.add_row(
                    label, check["id"], _status_text("passed" if check["passed"] else "failed"), step, check["reason"]
                )
        if table.row_count:
            console.print(table)


def _summary(results: dict[str, Any], console: Console) -> None:
    summary = results["summary"]
    usage = summary["usage"]
    cost = f"${summary['cost_usd']:.4f}" + ("" if summary["cost_known"] else " (some models unpriced)")
    console.print(
        f"[bold]{summary['cases']} case(s)[/]: {summary['passed']} passed, {summary['failed']} failed, "
        f"{summary['errored']} errored · {summary['checks_passed']}/{summary['checks']} checks passed · "
        f"tokens in {usage['input']:,} / out {usage['output']:,} / cache write {usage['cache_write']:,} / "
        f"cache read {usage['cache_read']:,} · {cost}"
    )


def run(args: argparse.Namespace) -> int:
    suites = _suites(args)
    total = sum(len(suite.cases) for suite in suites)
    if total == 0:
        raise HarnessError("the suites hold no cases")
    console = Console()
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
    _tables(results, console, failures_only=args.failures_only)
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
