"""`harness serve`: a replay server for any HTTP client.

The server (ReplayServer) lives in harness/serve.py; this module is the command: its arguments and its run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cassette.rule_options import add_rule_arguments, rules_from_arguments
from harness.httpserver import run_until_stopped
from harness.serve import STATUS_PATH, TIMINGS, ReplayServer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cassettes", nargs="+", type=Path, metavar="CASSETTE",
                        help="cassettes to serve; a request is matched against each in this order")
    parser.add_argument("--port", type=int, default=8767, help="port on 127.0.0.1; 0 picks a free one (default 8767)")
    parser.add_argument("--timing", choices=TIMINGS, default="none",
                        help="none (default): answer at once; recorded: stream events at their recorded offsets")
    parser.add_argument("--allow-repeats", action="store_true",
                        help="serve a recording again once every recording of that request was played")
    parser.add_argument("--ignore-field", action="append", default=[], metavar="DOTTED.PATH",
                        help="a request-body field left out of matching (repeatable), e.g. metadata.user_id")
    add_rule_arguments(parser)
    parser.add_argument("--url-file", type=Path, help="write the server's base URL to this file once listening")
    parser.add_argument("--quiet", action="store_true", help="log only misses")
    parser.add_argument("--drift-report", metavar="FILE",
                        help="at shutdown, write each cassette's first divergent request and its kind of change: "
                        "Markdown, JSON when FILE ends in .json, Markdown on stdout for '-'")


def run(args: argparse.Namespace) -> int:
    server = ReplayServer(args.cassettes, port=args.port, timing=args.timing, allow_repeats=args.allow_repeats,
                          ignore_fields=args.ignore_field, verbose=not args.quiet,
                          normalize=rules_from_arguments(args))
    count = sum(len(cassette.matcher.play_counts) for cassette in server.cassettes)
    run_until_stopped(
        server,
        banner=f"harness serve: listening on {{url}}, replaying {count} interactions from "
        f"{len(server.cassettes)} cassette(s) (timing {args.timing}; set ANTHROPIC_BASE_URL={{url}}; "
        f"status at {{url}}{STATUS_PATH})",
        url_file=args.url_file,
        on_stop=lambda: stop_report(server, args.drift_report),
    )
    return 1 if server.misses else 0


def stop_report(server: ReplayServer, drift_report: str | None) -> None:
    print(f"harness serve: stopped\n{server.report()}", file=sys.stderr, flush=True)
    if drift_report is None:
        return
    from harness.report.drift import drift_document
    from harness.report.drift_markdown import write_drift_report

    document = drift_document(server.drift_entries(Path.cwd()), source="harness serve")
    where = write_drift_report(drift_report, document)
    summary = document["summary"]
    print(f"harness serve: drift report ({summary['drifted']} of {summary['cassettes']} cassette(s) drifted) "
          f"written to {where}", file=sys.stderr, flush=True)
