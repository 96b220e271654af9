"""`harness proxy`: a recording reverse proxy for any HTTP client.

The proxy (RecordingProxy) lives in harness/proxy.py; this module is the command: its arguments and its run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cassette.rule_options import add_rule_arguments, rules_from_arguments
from harness.httpserver import run_until_stopped
from harness.proxy import PROXY_MODES, RecordingProxy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--upstream", required=True,
                        help="where requests go: https://api.anthropic.com, or the simulator's URL")
    parser.add_argument("--cassette", required=True, type=Path, help="the cassette file to record to")
    parser.add_argument("--mode", choices=PROXY_MODES, default="once",
                        help="once (default): record a new cassette, replay an existing one; new_episodes: replay "
                        "what matches, record the rest; all: send everything, renew what it records; rewrite: "
                        "record afresh; fork: replay the matching prefix, record from the first divergent request "
                        "(written when the proxy stops)")
    parser.add_argument("--port", type=int, default=8766, help="port on 127.0.0.1; 0 picks a free one (default 8766)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds to wait on the upstream (read timeout; default 600)")
    add_rule_arguments(parser)
    parser.add_argument("--url-file", type=Path, help="write the proxy's base URL to this file once listening")
    parser.add_argument("--quiet", action="store_true", help="log only failures and misses")
    parser.add_argument("--secret-header", action="append", default=[], metavar="NAME",
                        help="a request header whose value is a credential, removed wherever it appears "
                        "(repeatable; x-api-key, authorization and the like always are)")
    parser.add_argument("--lock-timeout", type=float, default=None, metavar="SECONDS",
                        help="give up when another recorder holds the cassette this long (default 300, "
                        "or HARNESS_LOCK_TIMEOUT)")


def run(args: argparse.Namespace) -> int:
    proxy = RecordingProxy(args.upstream, args.cassette, mode=args.mode, port=args.port, timeout=args.timeout,
                           verbose=not args.quiet, lock_timeout=args.lock_timeout,
                           secret_headers=args.secret_header,
                           normalize=rules_from_arguments(args))

    def report() -> None:
        print(f"harness proxy: stopped; {proxy.recorded} exchanges recorded to {args.cassette}, "
              f"{proxy.replayed} replayed from it", file=sys.stderr, flush=True)
        if args.mode == "fork" and proxy.cassette.existed:
            from harness.report.drift_markdown import fork_line

            print(f"harness proxy: {fork_line(proxy.cassette.fork_report().to_data())}", file=sys.stderr, flush=True)
        if proxy.save_failures:
            print(f"harness proxy: {len(proxy.save_failures)} save(s) failed during the run:\n  "
                  + "\n  ".join(proxy.save_failures), file=sys.stderr, flush=True)

    run_until_stopped(
        proxy,
        banner=f"harness proxy: listening on {{url}} -> {proxy.shown_upstream}, recording to {args.cassette} "
        f"(mode {args.mode}; set ANTHROPIC_BASE_URL={{url}})",
        url_file=args.url_file,
        on_stop=report,
    )
    return 1 if proxy.save_failures else 0
