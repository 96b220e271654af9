"""The drift report: what a change invalidates, before anything is re-recorded.

After a replay of a whole suite (`pytest --drift-report=FILE`, `harness serve --drift-report FILE`),
every cassette in use is one entry: its first divergent request, the kind of change there
(`harness.cassette.drift`) and the diff against the nearest recorded request; or the recorded
interactions the run never asked for; or nothing, when it still replays. The document groups the
drifted cassettes by kind of change, and within a kind by what changed (a tool's name, a tool_use
id, a field), so one edit's blast radius reads at a glance. With record mode fork, each entry also
says what the fork replayed (and so saved) and what it re-recorded, in interactions, tokens and cost.

The document is JSON (`drift_report_version` 1); Markdown is its one view. `write_drift_report`
picks by the target: a path ending in `.json` gets the JSON, `-` the Markdown on a stream, any other
path the Markdown.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from harness.cassette.drift import KINDS, kind_label
from harness.files import atomic_write_text
from harness.report._text import cost, tokens

if TYPE_CHECKING:
    from harness.cassette.recorder import Cassette, CassetteMismatch

__all__ = [
    "DRIFT_REPORT_VERSION",
    "cassette_entry",
    "divergence_of",
    "drift_document",
    "drift_markdown",
    "fork_line",
    "has_drift",
    "write_drift_report",
]

DRIFT_REPORT_VERSION = 1
_OWN = object()  # cassette_entry's default: the cassette's own first miss
_DIFF_LINES = 12


def divergence_of(miss: CassetteMismatch) -> dict[str, Any]:
    """A miss as the report keeps it: where, the kind of change, and the diff (recorded -> now)."""
    change = miss.change.to_data() if miss.change is not None else {
        "kind": "other", "kinds": ["other"], "label": kind_label("other"), "summary": miss.reason, "changes": []}
    return {
        "request": miss.position + 1,
        "method": miss.method,
        "path": miss.path,
        "nearest_recorded": None if miss.nearest_position is None else miss.nearest_position + 1,
        **change,
        "diff": list(miss.differences),
    }


def cassette_entry(cassette: Cassette, *, tests: Sequence[str] = (), allow_unused: bool = False,
                   miss: Any = _OWN,
                   root: Path | None = None) -> dict[str, Any]:
    """One cassette after its run: drifted (with its first divergent request), ends_early or replays.

    `miss` is the first divergent request (or None) when the caller knows better than the cassette (the replay
    server, whose cassettes also see the requests another cassette answers); by default the cassette's first
    miss, or in mode fork the request it forked at. Paths under `root` (the project) are shown relative to it.
    """
    if miss is _OWN:
        first = cassette.divergence if cassette.mode == "fork" else next(iter(cassette.misses), None)
    else:
        first = miss
    unplayed = [] if allow_unused else [position + 1 for position in cassette.unplayed]
    if cassette.mode == "fork":
        unplayed = []  # the fork drops what the run no longer asks for; it is no drift of its own
    status = "drifted" if first is not None else "ends_early" if unplayed else "replays"
    entry: dict[str, Any] = {
        "path": _shown(cassette.path, root),
        "tests": list(tests),
        "status": status,
        "interactions": len(cassette.play_counts),
        "played": sum(1 for count in cassette.play_counts if count),
        "divergence": divergence_of(first) if first is not None else None,
        "unplayed": unplayed,
        "fork": None,
    }
    if cassette.mode == "fork" and cassette.existed:
        entry["fork"] = {**cassette.fork_report().to_data(), "path": entry["path"]}
    return entry


def _shown(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            pass
    return str(path)


def _merge(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per cassette path (several tests may replay one cassette): the first drift found wins."""
    by_path: dict[str, dict[str, Any]] = {}
    rank = {"drifted": 2, "ends_early": 1, "replays": 0}
    for entry in entries:
        seen = by_path.get(entry["path"])
        if seen is None:
            by_path[entry["path"]] = {**entry, "tests": list(entry["tests"])}
            continue
        tests = seen["tests"] + [test for test in entry["tests"] if test not in seen["tests"]]
        if rank[entry["status"]] > rank[seen["status"]]:
            seen = by_path[entry["path"]] = {**entry}
        seen["tests"] = tests
    return sorted(by_path.values(), key=lambda entry: entry["path"])


def _spend_total(entries: Sequence[Mapping[str, Any]], side: str) -> dict[str, Any]:
    forks = [entry["fork"][side] for entry in entries if entry.get("fork")]
    costs = [spend["cost_usd"] for spend in forks]
    return {
        "interactions": sum(spend["interactions"] for spend in forks),
        "tokens": sum(spend["usage"]["total"] for spend in forks),
        "cost_usd": None if any(value is None for value in costs) else round(sum(costs), 6),
    }


def drift_document(entries: Iterable[Mapping[str, Any]], *, mode: str = "none",
                   source: str = "pytest") -> dict[str, Any]:
    """The report of a whole run: every cassette's entry, drifted ones grouped by kind of change."""
    from harness._version import __version__

    cassettes = _merge(entries)
    drifted = [entry for entry in cassettes if entry["status"] == "drifted"]
    by_kind: dict[str, list[str]] = {}
    for kind in KINDS:
        paths = [entry["path"] for entry in drifted if kind in entry["divergence"]["kinds"]]
        if paths:
            by_kind[kind] = paths
    summary: dict[str, Any] = {
        "cassettes": len(cassettes),
        "drifted": len(drifted),
        "ends_early": sum(1 for entry in cassettes if entry["status"] == "ends_early"),
        "replays": sum(1 for entry in cassettes if entry["status"] == "replays"),
        "by_kind": {kind: len(paths) for kind, paths in by_kind.items()},
    }
    if any(entry.get("fork") for entry in cassettes):
        summary["fork"] = {"replayed": _spend_total(cassettes, "replayed"),
                           "recorded": _spend_total(cassettes, "recorded")}
    return {
        "drift_report_version": DRIFT_REPORT_VERSION,
        "tool": {"name": "loop-harness", "version": __version__},
        "created_at": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "source": source,
        "mode": mode,
        "summary": summary,
        "groups": [{"kind": kind, "label": kind_label(kind), "cassettes": paths} for kind, paths in by_kind.items()],
        "cassettes": cassettes,
    }


def has_drift(document: Mapping[str, Any]) -> bool:
    summary = document["summary"]
    return bool(summary["drifted"] or summary["ends_early"])


# -- Markdown ----------------------------------------------------------------------------------------------


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
    return (f"{spend['interactions']} interaction(s), {tokens(spend['usage']['total'])} tokens, "
            f"{cost(spend['cost_usd'])}")


def _fork_spend(fork: Mapping[str, Any]) -> str:
    replaced = fork["replaced"]
    return (f"replayed {_spend_text(fork['replayed'])} (saved); re-recorded {_spend_text(fork['recorded'])}"
            + (f", in place of {replaced} recorded" if replaced else "")
            + ("" if fork["written"] else "; not written: the run did not end well"))


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
        lines.append("- " + kind_label(kind) + ": " + "; ".join(
            f"{_code(c['subject'])} {c['what']}" if c["subject"] else c["what"] for c in mine))
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
    """"`read_calendar` description changed: 2 cassettes": what changed, and how many cassettes it reaches."""
    counts: dict[str, int] = {}
    for entry in entries:
        for text in dict.fromkeys(
            f"{_code(c['subject'])} {c['what']}" if c["subject"] else c["what"]
            for c in entry["divergence"]["changes"] if c["kind"] == kind
        ):
            counts[text] = counts.get(text, 0) + 1
    return [f"- {text}: {count} cassette(s)" for text, count in counts.items()]


def drift_markdown(document: Mapping[str, Any]) -> str:
    lines = ["# Drift report", "", _summary_line(document), ""]
    fork = document["summary"].get("fork")
    if fork:
        saved, paid = fork["replayed"], fork["recorded"]
        lines += [f"Fork: {saved['interactions']} interaction(s) replayed ({tokens(saved['tokens'])} tokens, "
                  f"{cost(saved['cost_usd'])} not paid again); {paid['interactions']} re-recorded "
                  f"({tokens(paid['tokens'])} tokens, {cost(paid['cost_usd'])}).", ""]
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
