"""The drift report: what a change invalidates, before anything is re-recorded.

After a replay of a whole suite (`pytest --drift-report=FILE`, `harness serve --drift-report FILE`),
every cassette in use is one entry: its first divergent request, the kind of change there
(`harness.cassette.drift`) and the diff against the nearest recorded request; or the recorded
interactions the run never asked for; or nothing, when it still replays. The document groups the
drifted cassettes by kind of change, and within a kind by what changed (a tool's name, a tool_use
id, a field), so one edit's blast radius reads at a glance. With record mode fork, each entry also
says what the fork replayed (and so saved) and what it re-recorded, in interactions, tokens and cost.

The document is JSON (`drift_report_version` 1), built here; Markdown is its one view
(harness.report.drift_markdown, with `write_drift_report`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cassette.drift import KINDS, kind_label

if TYPE_CHECKING:
    from harness.cassette.recorder import Cassette, CassetteMismatch


DRIFT_REPORT_VERSION = 1
_OWN = object()  # cassette_entry's default: the cassette's own first miss


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
        "interactions": len(cassette.matcher.play_counts),
        "played": sum(1 for count in cassette.matcher.play_counts if count),
        "divergence": divergence_of(first) if first is not None else None,
        "unplayed": unplayed,
        "fork": None,
        # What the matching policy served anyway (volatile values, tool output under `sequence`): not compared.
        "tolerated": [drift.to_data() for drift in getattr(cassette, "drifts", ())],
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



__all__ = ["DRIFT_REPORT_VERSION", "cassette_entry", "divergence_of", "drift_document", "has_drift"]
