"""The `harness` command.

Each subcommand lives in the module that owns its concept; this file only routes. A command module
exposes `add_arguments(parser)` and `run(args) -> int` (0 ok, 1 checks failed, 2 bad input or usage).
Only the chosen command's module is imported, so `harness --help` and the commands that read files
(scan, show, eval, bless, compare) never load the anthropic SDK or the eval machinery they do not use.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from harness.errors import HarnessError

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "eval": ("harness.evals.cli", "run eval suites over cassettes and golden fixtures"),
    "merge": ("harness.evals.merge_cli", "join the results of `eval --shard K/N` runs into one results document"),
    "show": ("harness.trajectory_cli", "print a cassette's trajectory step by step"),
    "compare": ("harness.report.compare_cli", "compare a baseline with a candidate, per case"),
    "bless": ("harness.evals.bless", "write or update a golden fixture from a cassette"),
    "import": ("harness.cassette.import_cli", "convert foreign cassettes (vcrpy, pydantic-ai, HAR) to ours"),
    "scan": ("harness.cassette.scan", "find secret-shaped strings in cassettes; exit 1 on any"),
    "sim": ("harness.sim.cli", "run the local Messages API simulator"),
    "record": ("harness.record_cli", "record the project's scenarios ([tool.loop-harness]); --demo: the bundled demo"),
    "chaos": ("harness.chaos", "replay a cassette with a fault injected at one step"),
    "proxy": ("harness.proxy", "recording reverse proxy for any HTTP client"),
    "serve": ("harness.serve", "replay server for any HTTP client"),
    "export": ("harness.export.cli", "export trajectories as OpenTelemetry traces or an inspect_ai eval log"),
}


def _available() -> dict[str, tuple[str, str]]:
    """Only the commands whose module exists: a half-built tree still gives a working --help."""
    found = {}
    for name, (module, text) in COMMANDS.items():
        try:
            present = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # the parent package is not there yet
            present = False
        if present:
            found[name] = (module, text)
    return found


def _chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line (the first word that is not an option), if any."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only `command`'s module is imported (every command when None, as for a full check)."""
    from harness import __version__

    parser = argparse.ArgumentParser(
        prog="harness",
        description="Record, replay and evaluate Claude agent loops. Exit 0 ok, 1 checks failed, 2 bad input.",
    )
    parser.add_argument("--version", action="version", version=f"harness (loop-harness) {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    available = _available() if command is None else COMMANDS
    for name, (module_name, text) in available.items():
        command_parser = sub.add_parser(name, help=text, description=text)
        if command is None or name == command:
            module = importlib.import_module(module_name)
            module.add_arguments(command_parser)
            command_parser.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_chosen_command(argv) or "")
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args._module.run(args))
    except HarnessError as err:
        print(f"harness {args.command}: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
