"""`harness eval [PATH...] [--golden DIR] [--json F] [--markdown F] [--junit F] [--html F]`: run suites,
print one line per case, write the results JSON and its views (each a projection of the JSON, written atomically).

PATH is a suite file (.yaml), a golden file (.json) or a folder of either; with none, the project's
suites (evals/, or `suites` in [tool.loop-harness]; the golden folder when there is no evals/). A suite
whose `requires:` folder is absent is skipped with one line saying what is missing. Output is one line
per case, failures and errors expanded with their reasons, then the summary: made for CI logs.
Exit 0 when every check passes, 1 when a check fails, 2 on bad input (an invalid
suite or golden, an unknown check, a cassette that cannot be read).

`--shard K/N` runs the K-th of N balanced shares of the cases (harness.evals.shard), for a CI matrix;
`harness merge` (harness/commands/merge.py) joins the shards' results. The results document is streamed to
its file as cases finish (harness.evals.results.ResultsWriter), so memory does not grow with the run; the
Markdown, JUnit and HTML views are rendered from that file afterwards. A progress bar is drawn on a
terminal only, never into a CI log or a pipe.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness import commands
from harness.commands import add_failures_only_argument, add_golden_dir_argument
from harness.errors import HarnessError
from harness.evals.document import ResultsDocument
from harness.evals.judge import JUDGE_MODES, Judge
from harness.evals.results import ResultsWriter, exit_code, suite_entry
from harness.evals.runner import elapsed_ms, run_case
from harness.evals.shard import Shard, shard_suites
from harness.evals.suite import Suite, discover_suites, project_suites, unique_suites
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
    add_golden_dir_argument(parser)
    parser.add_argument("--json", metavar="F", dest="json_path", help="write the canonical results JSON here")
    add_report_arguments(parser, json_flag=False)
    add_failures_only_argument(parser)
    parser.add_argument(
        "--judge",
        choices=JUDGE_MODES,
        default="replay",
        help="judged checks (rubric): replay the judge cassettes (default; no key, no network), record what is "
        "missing (ANTHROPIC_API_KEY, or ANTHROPIC_BASE_URL such as `harness sim --script judge.yaml`), or rewrite "
        "every judgement",
    )
    parser.add_argument(
        "--list-checks",
        action="store_true",
        help="list every check a golden may name (the library's, installed packages', the project's own "
        "`checks` in [tool.loop-harness]) with its parameters, and exit",
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        help="run the K-th of N deterministic shares of the cases, balanced by recorded interactions; "
        "join the shards' --json results with `harness merge`",
    )


def _suites(args: argparse.Namespace) -> list[Suite]:
    paths = list(args.paths) or project_suites()
    return unique_suites(discover_suites(paths, golden_dir=args.golden, keep_broken=True))


STATUS_WORDS = {"passed": ("pass", "green"), "failed": ("FAIL", "bold red"), "error": ("ERROR", "bold magenta")}


def _said_by_the_error(check: Mapping[str, Any], error_reason: str) -> bool:
    """A judged check whose judge could not answer is what made the case an error: the error line already says it,
    with the judge cassette's name, so the check's own line would say it a second time."""
    judged = check.get("judge") or {}
    return judged.get("status") == "error" and error_reason == f"check {check['id']}: {judged.get('error')}"


def _case_lines(case: Mapping[str, Any], *, failures_only: bool) -> list[str]:
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
    error_reason = ""
    if case["status"] == "error":
        error = case["error"] or {}
        error_reason = str(error.get("reason", ""))
        where = "".join(f"{part}: " for part in (error.get("file"), error.get("where")) if part)
        lines.append(f"        {escape(where + error_reason)}")
    rejudge = set(case.get("needs_rejudging") or ())
    if rejudge and case["status"] == "passed":
        lines[0] = f"  [bold yellow]{'JUDGE':5}[/] {escape(case['id'])}{tally} [yellow]needs re-judging[/]"
    for check in checks:
        if check["id"] in rejudge:
            lines.append(f"        [yellow]{escape(check['id'])}: {escape(check['reason'])}[/]")
        elif not check["passed"]:
            if _said_by_the_error(check, error_reason):
                continue
            step = f" (step {check['step']})" if check["step"] is not None else ""
            lines.append(f"        {escape(check['id'])}{step}: {escape(check['reason'])}")
    return lines


def print_cases(results: Mapping[str, Any], console: Console, *, failures_only: bool) -> None:
    """Each suite of a whole results document and its cases' lines (what `harness merge` prints)."""
    by_suite: dict[str, list[Mapping[str, Any]]] = {}
    for case in results["cases"]:
        by_suite.setdefault(case["suite"], []).append(case)
    for suite in results["suites"]:
        cases = by_suite.get(suite["name"], [])
        console.print(f"[bold]suite {escape(suite['name'])}[/] ({counted(len(cases), 'case')})", soft_wrap=True)
        for case in cases:
            for line in _case_lines(case, failures_only=failures_only):
                console.print(line, soft_wrap=True, highlight=False)


def print_summary(results: Mapping[str, Any], console: Console) -> None:
    summary = results["summary"]
    usage = summary["usage"]
    cost = f"${summary['cost_usd']:.4f}" + ("" if summary["cost_known"] else " (some models unpriced)")
    console.print(
        f"[bold]{counted(summary['cases'], 'case')}[/]: {summary['passed']} passed, {summary['failed']} failed, "
        f"{summary['errored']} errored · {summary['checks_passed']}/{counted(summary['checks'], 'check')} passed"
        + (f" · {summary['needs_rejudging']} need re-judging (harness eval --judge record)"
           if summary.get("needs_rejudging") else "")
        + "\n"
        f"tokens in {usage['input']:,} / out {usage['output']:,} / cache write {usage['cache_write']:,} / "
        f"cache read {usage['cache_read']:,} · {cost}",
        soft_wrap=True,
    )


@contextlib.contextmanager
def _progress(console: Console, total: int) -> Iterator[Callable[[str], None]]:
    """A bar on a terminal (transient: gone when the run ends); nothing in a CI log or a pipe."""
    if total < PROGRESS_FROM or not commands.on_a_terminal(console):
        yield lambda case_id: None
        return
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("eval", total=total)
        yield lambda case_id: progress.update(task, advance=1, description=case_id[-40:])


def write_views(results: ResultsDocument, args: argparse.Namespace, console: Console) -> None:
    """The asked-for views (--markdown, --junit, --html), each a projection of the results document."""
    for path in write_results_reports(results, markdown=args.markdown, junit=args.junit, html=args.html):
        console.print(f"report: {path}")


def _shard_of(suites: list[Suite], text: str | None) -> tuple[list[Suite], dict[str, Any] | None]:
    if text is None:
        return suites, None
    return shard_suites(suites, Shard.parse(text))


def list_checks() -> int:
    """One line per check (name: description), then its parameters: what a golden's `check:` may name."""
    from harness.checks.registry import CHECKS, check_names
    from harness.checks.user import use_project_checks

    use_project_checks()
    for name in check_names():
        spec = CHECKS[name]
        print(f"{name}: {spec.description}")
        properties = spec.params_schema.get("properties") or {}
        required = set(spec.params_schema.get("required") or ())
        for param, schema in properties.items():
            kind = schema.get("type", "any") if isinstance(schema, Mapping) else "any"
            kind = " or ".join(kind) if isinstance(kind, list) else kind
            print(f"  {param} ({kind}{', required' if param in required else ''})")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.list_checks:
        return list_checks()
    all_suites = _suites(args)
    ran = [suite for suite in all_suites if not suite.skipped]
    if not any(suite.cases for suite in ran):
        skipped = "; ".join(f"suite {suite.name} skipped: {suite.skipped}" for suite in all_suites if suite.skipped)
        raise HarnessError(f"nothing to evaluate: {skipped}" if skipped else "the suites hold no cases")
    suites, shard = _shard_of(ran, args.shard)
    total = sum(len(suite.cases) for suite in suites)
    console = commands.console(highlight=False)
    if shard is not None:
        console.print(
            f"[bold]shard {shard['index']}/{shard['total']}[/]: {total:,} of the run's "
            f"{counted(len(shard['plan']), 'case')} ({counted(shard['weight'], 'recorded interaction')})",
            soft_wrap=True,
        )
    golden_dir = Path(args.golden).resolve() if args.golden else None
    judge = Judge(args.judge)
    started = time.perf_counter()
    # The document is streamed: each case is written to a spool as it finishes and dropped, so a run of any
    # size holds one case at a time; the totals are kept as they come.
    documents = bool(args.json_path or args.markdown or args.junit or args.html)
    entries = [suite_entry(suite) for suite in suites]
    with ResultsWriter(entries, golden_dir=golden_dir, shard=shard, spool=documents) as writer:
        with _progress(console, total) as advance:
            for suite in suites:
                console.print(
                    f"[bold]suite {escape(suite.name)}[/] ({counted(len(suite.cases), 'case')})", soft_wrap=True
                )
                for case in suite.cases:
                    record = run_case(case, judge=judge)
                    writer.add(record)
                    for line in _case_lines(record, failures_only=args.failures_only):
                        console.print(line, soft_wrap=True, highlight=False)
                    advance(case.id)
        for suite in all_suites:
            if suite.skipped:
                console.print(f"[bold]suite {escape(suite.name)}[/] skipped: {escape(suite.skipped)}", soft_wrap=True)
        head = writer.head(duration_ms=elapsed_ms(started))
        print_summary(head, console)
        with tempfile.TemporaryDirectory(prefix="harness-eval-") as scratch:
            target = Path(args.json_path) if args.json_path else Path(scratch) / "results.json"
            if documents:
                writer.write(target, head)
            if args.json_path:
                console.print(f"results: {args.json_path}")
            if args.markdown or args.junit or args.html:
                # The views need the whole document: read back from the file just written (no need to validate).
                write_views(json.loads(target.read_text(encoding="utf-8")), args, console)
    return exit_code(head)


if __name__ == "__main__":  # `python -m harness.commands.eval ...` is `harness eval ...`
    from harness.cli import main

    raise SystemExit(main(["eval", *sys.argv[1:]]))
