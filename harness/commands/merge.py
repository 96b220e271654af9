"""`harness merge RESULTS... [--json F] [--markdown F] [--junit F] [--html F]`: join the results of the shards
of one run (`harness eval --shard K/N --json F` in each job of a CI matrix) into the results document one
run of the whole suite writes, and its views.

Exit 0 when every check passes, 1 when a check fails, 2 on bad input: a file that is not a shard's results,
shards of different runs, a case in two files (naming the case and both files), or missing shards (naming
them). See harness.evals.merge for which fields are the shards' own measurements.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import commands
from harness.commands import add_failures_only_argument
from harness.commands.eval import print_cases, print_summary, write_views
from harness.evals.merge import merge_results
from harness.evals.results import exit_code, read_results, write_results
from harness.report._text import counted
from harness.report.outputs import add_report_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", metavar="RESULTS", help="each shard's results file (--json of eval)")
    add_report_arguments(parser)
    add_failures_only_argument(parser)


def run(args: argparse.Namespace) -> int:
    shards = [(Path(path), read_results(path)) for path in args.results]
    merged = merge_results(shards)
    console = commands.console(highlight=False)
    console.print(f"merged {counted(len(shards), 'shard')}: {', '.join(args.results)}", soft_wrap=True)
    print_cases(merged, console, failures_only=args.failures_only)
    print_summary(merged, console)
    if args.json_path:
        write_results(args.json_path, merged)
        console.print(f"results: {args.json_path}")
    write_views(merged, args, console)
    return exit_code(merged)
