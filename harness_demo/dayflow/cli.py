"""`dayflow brief`: write the morning brief from the fixtures, live, recorded or replayed.

Exit 0 when the run ends with an answer, 1 when it stops for another reason (step limit, error...),
2 for bad usage or an unusable cassette.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Sequence
from typing import Literal

from harness.errors import HarnessError
from harness_demo._console import Trace, add_run_arguments, client_for, report

# --mode -> use_cassette mode: record what is missing once, or replay strictly without network.
CASSETTE_MODES: dict[str, Literal["once", "none"]] = {"record": "once", "replay": "none"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dayflow", description="Dayflow, the morning-brief reference agent.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    brief = commands.add_parser(
        "brief",
        help="write today's morning brief",
        description="Write today's morning brief (Monday 2026-09-07) from the inbox, calendar and task fixtures.",
    )
    add_run_arguments(brief)
    brief.add_argument(
        "--mode",
        choices=["live", "record", "replay"],
        default="live",
        help="live: call the API; record: record to --cassette (replaying what it already "
        "has); replay: answer from --cassette only, no network",
    )
    brief.add_argument("--cassette", default=None, help="cassette file for --mode record or replay")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "brief":
        parser.print_help(sys.stderr)
        return 2
    if args.mode != "live" and not args.cassette:
        parser.error(f"--mode {args.mode} needs --cassette FILE")
    try:
        return _brief(args)
    except HarnessError as err:
        print(f"dayflow brief: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _brief(args: argparse.Namespace) -> int:
    from harness import CassetteMismatch
    from harness.loop import DEFAULT_MODEL
    from harness_demo.dayflow import build_registry, run_brief

    trace = Trace() if args.verbose else None
    tools = trace.watch(build_registry()) if trace else build_registry()
    try:
        with _cassette(args.mode, args.cassette), client_for(args.base_url, offline=args.mode == "replay") as client:
            result = run_brief(client, model=args.model or DEFAULT_MODEL, stream=args.stream, tools=tools,
                               on_event=trace)
    except CassetteMismatch as miss:  # the loop ended its run on a miss; the cassette raises it as the block ends
        print(f"dayflow brief: {miss}", file=sys.stderr)
        return 1
    return report(result, verbose=args.verbose)


@contextlib.contextmanager
def _cassette(mode: str, path: str | None) -> Iterator[None]:
    if mode == "live" or path is None:
        yield
        return
    from harness import use_cassette  # only record and replay need the cassette machinery

    with use_cassette(path, mode=CASSETTE_MODES[mode]):
        yield


if __name__ == "__main__":
    sys.exit(main())
