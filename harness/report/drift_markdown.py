"""The drift report as Markdown, and `write_drift_report`, which picks JSON or Markdown by the target.

A view of the document harness.report.drift builds: a path ending in `.json` gets the JSON, `-` the Markdown on a
stream, any other path the Markdown.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from harness.cassette.drift import kind_label
from harness.files import atomic_write_text
from harness.report._text import cost, tokens
from harness.report.drift import has_drift

_DIFF_LINES = 12


def _code(text: Any) -> str:
    value = " ".join(str(text).split())
    return f"`{value}`" if "`" not in value else f"``{value}``"


def _summary_line(document: Mapping[str, Any]) -> str:
    summary = document["summary"]
    if not has_drift(document):
        return f"No drift: all {summary['cassettes']} cassette(s) replay as recorded."
    kinds = ", ".join(f"{kind_label(kind)}: {count}" for kind, count in summary["by_kind"].items())
    parts = [f"{summary['drifted']} of {summary['cassettes']} cassette(s) drifted" + (f" ({kinds})" if kinds else "")]
    if summary["ends_early"]:
        parts.append(f"{summary['ends_early']} end(s) before the recording does")
    parts.append(f"{summary['replays']} still replay")
    return "; ".join(parts) + "."


def _spend_text(spend: Mapping[str, Any]) -> str:
    return (
        f"{spend['interactions']} interaction(s), {tokens(spend['usage']['total'])} tokens, {cost(spend['cost_usd'])}"
    )


def _fork_spend(fork: Mapping[str, Any]) -> str:
    replaced = fork["replaced"]
    return (
        f"replayed {_spend_text(fork['replayed'])} (saved); re-recorded {_spend_text(fork['recorded'])}"
        + (f", in place of {replaced} recorded" if replaced else "")
        + ("" if fork["written"] else "; not written: the run did not end well")
    )


def fork_line(fork: Mapping[str, Any]) -> str:
    """What one fork did, in one line (a `ForkReport.to_data()`): for the terminal and the proxy's log."""
    if fork["first_divergent_request"] is None:
        return f"{fork['path']}: no divergence; replayed {_spend_text(fork['replayed'])}; nothing re-recorded"
    why = fork["change"]["summary"] if fork.get("change") else "no recording left"
    return f"{fork['path']}: forked at request #{fork['first_divergent_request']} ({why}); {_fork_spend(fork)}"


def _entry_lines(entry: Mapping[str, Any], kind: str) -> list[str]:
    divergence = entry["divergence"]
    lines = [f"### {_code(entry['path'])}", ""]
    nearest = divergence["nearest_recorded"]
    where = f"- First divergent request: #{divergence['request']} ({divergence['method']} {divergence['path']})"
    where += f", nearest recorded #{nearest}" if nearest is not None else ""
    lines.append(where + f"; {entry['played']} of {entry['interactions']} recorded interaction(s) replayed before it.")
    mine = [c for c in divergence["changes"] if c["kind"] == kind]
    if mine:
        lines.append(
            "- "
            + kind_label(kind)
            + ": "
            + "; ".join(f"{_code(c['subject'])} {c['what']}" if c["subject"] else c["what"] for c in mine)
        )
    others = [k for k in divergence["kinds"] if k != kind]
    if others:
        lines.append("- Also: " + ", ".join(kind_label(k) for k in others) + ".")
    if entry["tests"]:
        lines.append("- Tests: " + ", ".join(_code(test) for test in entry["tests"]))
    if entry.get("fork"):
        lines.append("- Fork: " + _fork_spend(entry["fork"]) + ".")
    diff = divergence["diff"][:_DIFF_LINES]
    if diff:
        lines += ["", "```", *diff, "```"]
    return [*lines, ""]


def _subjects(entries: Sequence[Mapping[str, Any]], kind: str) -> list[str]:
    """ "`read_calendar` description changed: 2 cassettes": what changed, and how many cassettes it reaches."""
    counts: dict[str, int] = {}
    for entry in entries:
        for text in dict.fromkeys(
            f"{_code(c['subject'])} {c['what']}" if c["subject"] else c["what"]
            for c in entry["divergence"]["changes"]
            if c["kind"] == kind
        ):
            counts[text] = counts.get(text, 0) + 1
    return [f"- {text}: {count} cassette(s)" for text, count in counts.items()]


def drift_markdown(document: Mapping[str, Any]) -> str:
    lines = ["# Drift report", "", _summary_line(document), ""]
    fork = document["summary"].get("fork")
    if fork:
        saved, paid = fork["replayed"], fork["recorded"]
        lines += [
            f"Fork: {saved['interactions']} interaction(s) replayed ({tokens(saved['tokens'])} tokens, "
            f"{cost(saved['cost_usd'])} not paid again); {paid['interactions']} re-recorded "
            f"({tokens(paid['tokens'])} tokens, {cost(paid['cost_usd'])}).",
            "",
        ]
    cassettes = document["cassettes"]
    by_path = {entry["path"]: entry for entry in cassettes}
    for group in document["groups"]:
        entries = [by_path[path] for path in group["cassettes"]]
        lines += [f"## {group['label']}: {len(entries)} cassette(s)", "", *_subjects(entries, group["kind"]), ""]
        for entry in entries:
            lines += _entry_lines(entry, group["kind"])
    early = [entry for entry in cassettes if entry["status"] == "ends_early"]
    if early:
        lines += [f"## Ends before the recording does: {len(early)} cassette(s)", ""]
        for entry in early:
            numbers = ", ".join(f"#{n}" for n in entry["unplayed"][:10])
            more = f" and {len(entry['unplayed']) - 10} more" if len(entry["unplayed"]) > 10 else ""
            tests = f" ({', '.join(_code(t) for t in entry['tests'])})" if entry["tests"] else ""
            lines.append(f"- {_code(entry['path'])}{tests}: recorded interaction(s) {numbers}{more} never asked for")
        lines.append("")
    tolerated = [entry for entry in cassettes if entry.get("tolerated")]
    if tolerated:
        lines += [f"## Not compared (volatile values, tolerated tool output): {len(tolerated)} cassette(s)", ""]
        for entry in tolerated:
            lines.append(f"- {_code(entry['path'])}:")
            for drift in entry["tolerated"]:
                where = f"request #{drift['request']} (recording #{drift['recording']}, policy {drift['policy']})"
                items = [f"{value['where']}: {value['shape']} {_code(value['recorded'])} -> {_code(value['now'])}"
                         for value in drift.get("volatile", [])] or list(drift["differences"])
                lines += [f"  - {where}", *(f"    - {item}" for item in items[:_DIFF_LINES])]
        lines.append("")
    still = [entry for entry in cassettes if entry["status"] == "replays"]
    if still:
        lines += [f"## Still replay: {len(still)} cassette(s)", ""]
        for entry in still:
            line = f"- {_code(entry['path'])} ({entry['played']} of {entry['interactions']} interaction(s) played)"
            if entry.get("fork"):
                line += f"; fork replayed {_spend_text(entry['fork']['replayed'])}"
            lines.append(line)
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def write_drift_report(target: str | Path, document: Mapping[str, Any], *, stream: TextIO | None = None) -> str:
    """Write the report to `target` (`-`: Markdown to `stream`, default stdout); returns where it went."""
    if str(target) == "-":
        (stream or sys.stdout).write(drift_markdown(document))
        return "the terminal"
    path = Path(target)
    if path.suffix.lower() == ".json":
        atomic_write_text(path, json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        atomic_write_text(path, drift_markdown(document))
    return str(path)


__all__ = ["drift_markdown", "fork_line", "write_drift_report"]
