"""The `harness` commands, one module each: `harness NAME` is harness/commands/NAME.py (import_.py for
`import`, a Python keyword). Each exposes `add_arguments(parser)` and `run(args) -> int`; harness/cli.py
routes to them. A command reads its arguments and calls the library; nothing in the library imports a
command module.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

The flags several commands share are declared once below, so they read alike in every command's --help
(the report flags are harness.report.outputs.add_report_arguments). Bad input is raised as a HarnessError,
which harness/cli.py prints as `harness NAME: <reason>` with exit 2.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


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


def console(**options: Any) -> Console:
    """The terminal every command prints to, colour as the conventions say (rich imported only here).

    FORCE_COLOR set and not empty (force-color.org): colour, even into a pipe or a CI log, whatever NO_COLOR says
    (the standard's own order). Else NO_COLOR set and not empty (no-color.org): no ANSI escape at all, neither
    colour nor bold. Else colour on a terminal only.
    """
    from rich.console import Console

    if os.environ.get("FORCE_COLOR"):
        options = {"force_terminal": True, "no_color": False, **options}
    elif os.environ.get("NO_COLOR"):
        options = {"color_system": None, "no_color": True, **options}
    return Console(**options)


def on_a_terminal(console: Console) -> bool:
    """Whether output goes to a person's terminal (a progress bar is worth drawing), not where FORCE_COLOR
    merely asks for colour (a CI log)."""
    isatty = getattr(console.file, "isatty", None)
    try:
        return bool(isatty and isatty()) and not console.is_dumb_terminal
    except ValueError:  # a closed file
        return False
