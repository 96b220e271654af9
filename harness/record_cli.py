"""`harness record [NAME...]`: re-record the bundled cassettes against the local simulator.

Every cassette it writes says `source: simulator` in its provenance block: these are rehearsals of
the reference agents, not recordings of Claude.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.scenarios import SCENARIOS, record_scenario, scenario


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="scenarios to record (default: all): " + ", ".join(s.name for s in SCENARIOS))
    parser.add_argument("--cassettes", type=Path, default=Path("cassettes"), help="cassettes folder")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")


def run(args: argparse.Namespace) -> int:
    if args.list:
        for item in SCENARIOS:
            print(f"{item.name:24} {item.cassette:36} {item.description}")
        return 0
    try:
        chosen = [scenario(name) for name in args.names] if args.names else list(SCENARIOS)
    except KeyError as err:
        print(f"harness record: {err.args[0]}")
        return 2
    for item in chosen:
        result = record_scenario(item, args.cassettes)
        print(f"recorded {item.path(args.cassettes)}: {result.steps} steps, outcome {result.outcome.value}")
    return 0
