"""The `harness` command.

`harness NAME` is the module harness/commands/NAME.py (`command_module`); this file only routes. A command
module exposes `add_arguments(parser)` and `run(args) -> int` (0 ok, 1 checks failed, 2 bad input or usage).
Only the chosen command's module is imported, so `harness --help` and the commands that read files
(scan, show, eval, bless, compare) never load the anthropic SDK or the eval machinery they do not use.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import keyword
import sys
from collections.abc import Sequence
from typing import NoReturn

from harness._version import __version__
from harness.commands import visible_output
from harness.errors import HarnessError, os_error_line

# name -> one-line help; the command `harness NAME` is the module harness/commands/NAME.py
# (a trailing underscore where NAME is a Python keyword: import_.py)
COMMANDS: dict[str, str] = {
    "init": "set up this project: the [tool.loop-harness] table, a scenario, a test, a CI workflow",
    "eval": "run eval suites over cassettes and golden fixtures",
    "merge": "join the results of `eval --shard K/N` runs into one results document",
    "show": "print a cassette's trajectory step by step",
    "compare": "compare a baseline with a candidate, per case",
    "bless": "write or update a golden fixture from a cassette",
    "import": "convert foreign cassettes (vcrpy, pydantic-ai, HAR) to ours",
    "scan": "find secret-shaped strings in cassettes; exit 1 on any",
    "sim": "run the local Messages API simulator",
    "record": "record the project's scenarios ([tool.loop-harness]); --demo: the bundled demo",
    "chaos": "replay a cassette with a fault injected at one step",
    "proxy": "recording reverse proxy for any HTTP client",
    "serve": "replay server for any HTTP client",
    "export": "export trajectories as OpenTelemetry traces or an inspect_ai eval log",
}


def command_module(name: str) -> str:
    """The module of `harness NAME`: harness.commands.NAME (NAME_ when NAME is a Python keyword)."""
    return f"harness.commands.{name}_" if keyword.iskeyword(name) else f"harness.commands.{name}"


def _chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line (the first word that is not an option), if any."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only `command`'s module is imported (every command when None, as for a full check)."""
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Record, replay and evaluate Claude agent loops. Exit 0 ok, 1 checks failed, 2 bad input.",
    )
    parser.add_argument("--version", action="version", version=f"harness (loop-harness) {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, text in COMMANDS.items():
        command_parser = sub.add_parser(name, help=text, description=text)
        if command is None or name == command:
            module = importlib.import_module(command_module(name))
            module.add_arguments(command_parser)
            command_parser.set_defaults(_module=module, _parser=command_parser)
    return parser


def _nearest(word: str, choices: Sequence[str]) -> str:
    near = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def _refuse_unrecognized(parser: argparse.ArgumentParser, extras: Sequence[str]) -> NoReturn:
    """What argparse leaves over, refused by the parser it belongs to: that command's usage, and for each
    misspelt flag the nearest of its own (`harness eval --jsno`: did you mean --json?)."""
    flags = [option for action in parser._actions for option in action.option_strings]
    hints = [f"{word}{_nearest(word.split('=', 1)[0], flags)}" if word.startswith("-") else word for word in extras]
    parser.error(f"unrecognized arguments: {' '.join(hints)}")


@visible_output
def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = _chosen_command(argv)
    try:
        parser = build_parser(chosen or "")
    except HarnessError as err:  # a command's arguments come from an installed package too (a scenario set's)
        print(f"harness {chosen}: {err}", file=sys.stderr)
        return 2
    if chosen is not None and chosen not in COMMANDS:
        parser.error(f"unknown command {chosen!r}{_nearest(chosen, list(COMMANDS))}; the commands are "
                     f"{', '.join(COMMANDS)} (harness --help)")
    args, extras = parser.parse_known_args(argv)
    if extras:
        _refuse_unrecognized(getattr(args, "_parser", parser), extras)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args._module.run(args))
    except HarnessError as err:
        print(f"harness {args.command}: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # the one place a file that cannot be written or read becomes bad input (exit 2)
        print(f"harness {args.command}: {os_error_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # what was kept is said where it is known (harness record); here only the code
        print(f"harness {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
