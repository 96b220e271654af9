"""`data-assistant ask`: answer a question from the read-only users database.

Exit 0 when the run ends with an answer, 1 when it stops for another reason, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from harness_demo._console import Trace, add_run_arguments, client_for, report
from harness_demo.data_assistant.prompt import QUESTION


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="data-assistant", description="The data assistant reference agent (SQL self-correction)."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    ask = commands.add_parser(
        "ask",
        help="ask a question about the users database",
        description="Ask a question about the users database (read-only SQLite).",
    )
    add_run_arguments(ask)
    ask.add_argument("question", nargs="?", default=QUESTION, help=f"the question (default: {QUESTION!r})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "ask":
        parser.print_help(sys.stderr)
        return 2
    from harness.loop import DEFAULT_MODEL
    from harness_demo.data_assistant import build_registry, run_question

    trace = Trace() if args.verbose else None
    tools = trace.watch(build_registry()) if trace else build_registry()
    try:
        with client_for(args.base_url) as client:
            result = run_question(
                client,
                model=args.model or DEFAULT_MODEL,
                question=args.question,
                stream=args.stream,
                tools=tools,
                on_event=trace,
            )
    except KeyboardInterrupt:
        return 130
    return report(result, verbose=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
