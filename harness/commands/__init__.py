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
import functools
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.segment import Segment


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

    Whatever a command prints of a cassette, a golden or a model's answer passes through here, and leaves with
    every control character shown rather than acted on (harness.report._text.visible): a recorded answer
    holding an escape sequence cannot write the clipboard (OSC 52), retitle the window or clear the screen.
    Only the console's own styling (colour, bold) reaches the terminal as escapes.

    FORCE_COLOR set and not empty (force-color.org): colour, even into a pipe or a CI log, whatever NO_COLOR says
    (the standard's own order). Else NO_COLOR set and not empty (no-color.org): no ANSI escape at all, neither
    colour nor bold. Else colour on a terminal only.
    """
    if os.environ.get("FORCE_COLOR"):
        options = {"force_terminal": True, "no_color": False, **options}
    elif os.environ.get("NO_COLOR"):
        options = {"color_system": None, "no_color": True, **options}
    plain = plain_text(options.get("file") or (sys.stderr if options.get("stderr") else sys.stdout))
    made = _safe_console_class()(**options)
    made.plain_text = plain  # type: ignore[attr-defined]  # SafeConsole's own flag
    return made


def plain_text(stream: Any) -> bool:
    """Whether output is plain text for a pipe, a file or a CI log (not a terminal, or `CI` set): unwrapped, and
    with no trailing spaces (Rich pads each line of a panel or a table to the width)."""
    if os.environ.get("CI"):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return not (isatty and isatty())
    except ValueError:  # a closed file
        return True


class VisibleStream:
    """sys.stdout or sys.stderr while a command runs (`visible_output`): what a plain `print` writes leaves with
    every control character shown (harness.report._text.visible). The console writes to the stream itself
    (rich follows `rich_proxied_file`), its text already made visible segment by segment, its styling kept."""

    def __init__(self, stream: Any) -> None:
        self.rich_proxied_file = stream

    def write(self, text: str) -> int:
        from harness.report._text import visible

        self.rich_proxied_file.write(visible(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, buffer: the stream's own
        return getattr(self.rich_proxied_file, name)


def visible_output(run: Callable[..., int]) -> Callable[..., int]:
    """Decorates the CLI's entry point: every command's output, printed or through `console()`, shows control
    characters instead of sending them (a cassette's OSC 52 clipboard write, a window title, a clear screen)."""

    @functools.wraps(run)
    def wrapped(*args: Any, **kwargs: Any) -> int:
        streams = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = VisibleStream(sys.stdout), VisibleStream(sys.stderr)
        try:
            return run(*args, **kwargs)
        finally:
            sys.stdout, sys.stderr = streams

    return wrapped


# Spaces at the end of a line, before any closing style codes (FORCE_COLOR in a CI log still pads).
_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.M)


@functools.cache
def _safe_console_class() -> type[Console]:
    from rich.console import Console
    from rich.segment import Segment
    from rich.text import Text

    from harness.report._text import visible

    class SafeConsole(Console):
        """A Console whose text segments are made visible as they are written: every renderable (markup, a
        table's cells, a Text) ends in segments, so none can carry a control character; control segments
        (the console's own cursor moves) are kept."""

        plain_text = False  # set by console(): lines of text unfolded, and no padding at the ends of lines

        def print(self, *objects: Any, soft_wrap: bool | None = None, **options: Any) -> None:
            # A pipe or a CI log: a line of text is as long as what it says, never folded at 80 columns
            # mid-phrase. A panel or a table still lays out at the width: unfolded, it would crop its cells.
            if soft_wrap is None and self.plain_text:
                soft_wrap = all(isinstance(item, str | Text) for item in objects)
            super().print(*objects, soft_wrap=soft_wrap, **options)

        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            text = super()._render_buffer(
                segment if segment.control else Segment(visible(segment.text), segment.style, segment.control)
                for segment in buffer)
            return _TRAILING.sub(r"\1", text) if self.plain_text else text

    return SafeConsole


def on_a_terminal(console: Console) -> bool:
    """Whether output goes to a person's terminal (a progress bar is worth drawing), not where FORCE_COLOR
    merely asks for colour (a CI log)."""
    isatty = getattr(console.file, "isatty", None)
    try:
        return bool(isatty and isatty()) and not console.is_dumb_terminal
    except ValueError:  # a closed file
        return False
