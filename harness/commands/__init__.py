"""The `harness` commands, one module each: `harness NAME` is harness/commands/NAME.py (import_.py for
`import`, a Python keyword). Each exposes `add_arguments(parser)` and `run(args) -> int`; harness/cli.py
routes to them. A command reads its arguments and calls the library; nothing in the library imports a
command module.

The flags several commands share are declared once below, so they read alike in every command's --help
(the report flags are harness.report.outputs.add_report_arguments). Bad input is raised as a HarnessError,
which harness/cli.py prints as `harness NAME: <reason>` with exit 2.
"""

from __future__ import annotations

import argparse


def add_golden_dir_argument(parser: argparse.ArgumentParser) -> None:
    """`--golden DIR`, for the commands that read suites (eval, compare, export)."""
    parser.add_argument(
        "--golden",
        metavar="DIR",
        help="folder the suites' golden paths are relative to (default: golden/ in the project root)",
    )


def add_suite_argument(parser: argparse.ArgumentParser, *, purpose: str) -> None:
    """`--suite PATH`, repeatable; a command given none reads the project's suites."""
    parser.add_argument(
        "--suite",
        action="append",
        default=[],
        metavar="PATH",
        help=f"{purpose} (repeatable; default: the project's evals/)",
    )


def add_failures_only_argument(parser: argparse.ArgumentParser) -> None:
    """`--failures-only`, for the commands that print a results document's cases (eval, merge)."""
    parser.add_argument("--failures-only", action="store_true", help="list only the cases that did not pass")
