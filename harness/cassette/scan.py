"""`harness scan PATH...`: find secret-shaped strings in cassettes and fixtures; exit 1 on any.

It reads the raw text, not the parsed YAML, so a secret hidden in a comment or a folded scalar is
found too. Placeholders written by the redactor (`[REDACTED]`, `req_redacted_0001`) do not count.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.cassette.redact import find_secrets
from harness.errors import absolute
from harness.report._text import counted

SCANNED_SUFFIXES = (".yaml", ".yml", ".json", ".har", ".txt", ".md")


@dataclass(frozen=True)
class Finding:
    file: Path
    line: int
    kind: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.kind}: {self.excerpt}"


def _files(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SCANNED_SUFFIXES)
        elif path.is_file():
            yield path


def _mask(secret: str) -> str:
    # Never print the secret itself in CI logs: enough to find it, not enough to use it.
    return secret[:10] + "…" if len(secret) > 10 else secret[:3] + "…"


def scan_text(text: str, file: Path) -> list[Finding]:
    findings = []
    for kind, offset, matched in find_secrets(text):
        line = text.count("\n", 0, offset) + 1
        findings.append(Finding(file, line, kind, _mask(matched)))
    return findings


def scan_paths(paths: Iterable[Path]) -> list[Finding]:
    findings: list[Finding] = []
    for file in _files(paths):
        text = file.read_bytes().decode("utf-8", errors="replace")
        findings.extend(scan_text(text, file))
    return findings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders to scan")


def run(args: argparse.Namespace) -> int:
    missing = [p for p in args.paths if not p.exists()]
    if missing:
        print("harness scan: no such path: " + ", ".join(absolute(p) for p in missing), file=sys.stderr)
        return 2
    count = len(list(_files(args.paths)))
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
