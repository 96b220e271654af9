"""`harness scan PATH...`: find credentials in cassettes and fixtures; exit 1 on any (harness.cassette.scan)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cassette.scan import scan_paths, scanned_files
from harness.errors import absolute
from harness.report._text import counted


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders to scan")


def run(args: argparse.Namespace) -> int:
    missing = [p for p in args.paths if not p.exists()]
    if missing:
        print("harness scan: no such path: " + ", ".join(absolute(p) for p in missing), file=sys.stderr)
        return 2
    count = len(list(scanned_files(args.paths)))
    if count == 0:  # a mistyped folder must not pass CI as "no secrets"
        where = ", ".join(absolute(p) for p in args.paths)
        print(f"harness scan: nothing to scan (no cassette or golden file) in {where}", file=sys.stderr)
        return 2
    findings = scan_paths(args.paths)
    for finding in findings:
        print(finding)
    if findings:
        print(f"{counted(len(findings), 'secret-shaped string')} in {counted(count, 'file')} scanned")
        return 1
    print(f"no secrets found in {counted(count, 'file')}")
    return 0
