"""The report flags (--json, --markdown, --junit, --html) and writing each view of a document atomically."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.evals.document import ResultsDocument
from harness.files import atomic_write_text

__all__ = ["add_report_arguments", "write_comparison_reports", "write_results_reports"]

Renderer = Callable[[Mapping[str, Any]], str]


def add_report_arguments(parser: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
    if json_flag:
        parser.add_argument("--json", metavar="F", dest="json_path", help="write the canonical JSON document here")
    parser.add_argument("--markdown", metavar="F", help="write a Markdown report (a GitHub step summary, a PR comment)")
    parser.add_argument("--junit", metavar="F", help="write JUnit XML: one testcase per case and check")
    parser.add_argument("--html", metavar="F", help="write a self-contained HTML report (nothing fetched when opened)")


def _json(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"


def _renderers(kind: str) -> dict[str, Renderer]:
    """The views of a "results" or a "comparison" document, by flag. Imported late: each pulls jinja2 etc."""
    from harness.report import html, junit, markdown

    return {"json": _json, "markdown": getattr(markdown, f"{kind}_markdown"),
            "junit": getattr(junit, f"{kind}_junit"), "html": getattr(html, f"{kind}_html")}


def _write(document: Mapping[str, Any], kind: str, targets: Mapping[str, str | Path | None]) -> list[Path]:
    renderers = _renderers(kind)
    written = []
    for flag, target in targets.items():
        if target:
            atomic_write_text(target, renderers[flag](document))
            written.append(Path(target))
    return written


def write_results_reports(
    results: ResultsDocument,
    *,
    json_path: str | Path | None = None,
    markdown: str | Path | None = None,
    junit: str | Path | None = None,
    html: str | Path | None = None,
) -> list[Path]:
    """Write each asked-for view of a results document; the paths written, in flag order."""
    return _write(results, "results", {"json": json_path, "markdown": markdown, "junit": junit, "html": html})


def write_comparison_reports(
    comparison: Mapping[str, Any],
    *,
    json_path: str | Path | None = None,
    markdown: str | Path | None = None,
    junit: str | Path | None = None,
    html: str | Path | None = None,
) -> list[Path]:
    """Write each asked-for view of a comparison document; the paths written, in flag order."""
    return _write(comparison, "comparison", {"json": json_path, "markdown": markdown, "junit": junit, "html": html})
