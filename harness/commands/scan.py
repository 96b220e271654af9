"""`harness scan PATH...`: find credentials in cassettes and fixtures; exit 1 on any (harness.cassette.scan).

A cassette or fixture that does not parse is named with its place and exits 2 (when no secret was found):
only its raw text could be searched, not what a parse decodes (base64 bodies, streams joined).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cassette.scan import scan_paths, scanned_files
from harness.errors import HarnessError, absolute
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
    problems: list[HarnessError] = []
    findings = scan_paths(args.paths, problems)
    for finding in findings:
        print(finding)
    for problem in problems:
        print(f"harness scan: {problem}; only its raw text was searched (fix the file, then scan again)",
              file=sys.stderr)
    unreadable = f"; {counted(len(problems), 'file')} could not be parsed" if problems else ""
    if findings:
        print(f"{counted(len(findings), 'secret-shaped string')} in {counted(count, 'file')} scanned{unreadable}")
        return 1
    if problems:
        print(f"no secrets found in the raw text of {counted(count, 'file')}{unreadable}")
        return 2
    print(f"no secrets found in {counted(count, 'file')}")
    return 0
