"""`harness import SRC... --out DIR`: foreign cassettes (vcrpy YAML, pydantic-ai, HAR, langchain .yaml.gz) to ours.

One line per file, as it is written: "imported <src> -> <dst> (N interactions, M streamed)", or on
stderr "failed <src>: <where>: <reason>". A bad file does not stop the others; exit 2 if any failed.
"""

from __future__ import annotations

import argparse
import sys

from harness.cassette.importer import IMPORTABLE_SUFFIXES, iter_imports


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="+", metavar="SRC",
                        help=f"cassette files or folders (searched recursively for {', '.join(IMPORTABLE_SUFFIXES)})")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="folder to write the imported cassettes to, keeping each source folder's layout")
    parser.add_argument("--skip-foreign-hosts", action="store_true",
                        help="leave out interactions with hosts other than the Anthropic API (image fetches, probes)")


def run(args: argparse.Namespace) -> int:
    failed = 0
    for outcome in iter_imports(args.sources, args.out, keep_foreign_hosts=not args.skip_foreign_hosts):
        if outcome.error is not None:
            failed += 1
            where = f"{outcome.error.where}: " if outcome.error.where else ""
            print(f"failed {outcome.source}: {where}{outcome.error.reason}", file=sys.stderr)
        else:
            print(f"imported {outcome.source} -> {outcome.target} "
                  f"({outcome.interactions} interactions, {outcome.streamed} streamed)")
    return 2 if failed else 0
