"""`harness import SRC... --out DIR`: foreign cassettes to ours: vcrpy (YAML, JSON, aiohttp's istr keys),
pydantic-ai, HAR, langchain .yaml.gz, one-exchange JSON, Ruby's VCR, R's vcr, go-vcr v4 and Go's httprr.

One line per file, as it is written: "imported <src> -> <dst> (N interactions, M streamed)", with how
many interactions with other hosts were left out, or on stderr "failed <src>: <where>: <reason>". A bad
file does not stop the others; exit 2 if any failed.
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
    parser.add_argument("--keep-foreign-hosts", action="store_true",
                        help="keep interactions with hosts other than the Messages API (token refreshes, metadata "
                        "fetches, image hosts), scrubbed like the rest; by default they are left out")
    # The default since foreign hosts are left out; still accepted so that existing scripts run.
    parser.add_argument("--skip-foreign-hosts", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--secret-header", action="append", default=[], metavar="NAME",
                        help="a request header whose value is a credential, removed wherever it appears "
                        "(repeatable; x-api-key, authorization, x-goog-api-key and the like always are)")
    parser.add_argument("--rewrite-request-ids", action="store_true",
                        help="replace request ids (header and error body) with req_redacted_NNNN; kept by default")


def run(args: argparse.Namespace) -> int:
    failed = 0
    outcomes = iter_imports(args.sources, args.out, keep_foreign_hosts=args.keep_foreign_hosts,
                            secret_headers=args.secret_header, rewrite_request_ids=args.rewrite_request_ids)
    for outcome in outcomes:
        if outcome.error is not None:
            failed += 1
            where = f"{outcome.error.where}: " if outcome.error.where else ""
            print(f"failed {outcome.source}: {where}{outcome.error.reason}", file=sys.stderr)
        else:
            skipped, hosts = outcome.skipped
            left_out = f"; left out {skipped} with other hosts: {hosts}" if skipped else ""
            print(f"imported {outcome.source} -> {outcome.target} "
                  f"({outcome.interactions} interactions, {outcome.streamed} streamed{left_out})")
    return 2 if failed else 0
