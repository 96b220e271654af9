"""The `harness` command.

Each subcommand lives in the module that owns its concept; this file only routes. A command module
exposes `add_arguments(parser)` and `run(args) -> int` (0 ok, 1 checks failed, 2 bad input or usage).
Modules are imported lazily so that `harness sim` does not pay for the eval machinery and the reverse.
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
    "show": ("harness.trajectory_cli", "print a cassette's trajectory step by step"),
    "compare": ("harness.report.compare_cli", "compare a baseline with a candidate, per case"),
    "bless": ("harness.evals.bless", "write or update a golden fixture from a cassette"),
    "import": ("harness.cassette.import_cli", "convert foreign cassettes (vcrpy, pydantic-ai, HAR) to ours"),
    "scan": ("harness.cassette.scan", "find secret-shaped strings in cassettes; exit 1 on any"),
    "sim": ("harness.sim.cli", "run the local Messages API simulator"),
    "record": ("harness.record_cli", "re-record the bundled cassettes against the simulator"),
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Record, replay and evaluate Claude agent loops. Exit 0 ok, 1 checks failed, 2 bad input.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, text) in _available().items():
        module = importlib.import_module(module_name)
        command_parser = sub.add_parser(name, help=text, description=text)
        module.add_arguments(command_parser)
        command_parser.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
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
