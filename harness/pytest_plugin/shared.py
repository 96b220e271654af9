"""Cassettes shared by several tests: their never-played check, once per session, across xdist workers and shards.

A test's own cassette is checked after the test (harness.pytest_plugin): whatever it recorded and did not
play is stale. A cassette that several tests name (`@pytest.mark.cassette(path=...)` on each) cannot be
judged by one test, which plays only its part, nor by one xdist worker, which may run only some of those
tests. So for such a cassette each process notes which recordings its tests played; at the end of the
session (on the xdist controller, from every worker's notes) a recording none of them played fails the
session. The check is made only when every test that names the cassette ran in this session and passed: a
test deselected by -k, --lf or a shard plugin (pytest-split, pytest-shard), or one that failed or was
skipped, may be the one that plays the rest, and the summary says the cassette was not checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.pytest_plugin.marker import marked_cassette_path

_SHARED_KEY = pytest.StashKey[dict[str, dict[str, Any]]]()  # cassette path -> what this process knows of it
_REPORT_KEY = pytest.StashKey[list[str]]()
_WORKER_OUTPUT = "loop_harness_shared_cassettes"


def _notes(config: pytest.Config) -> dict[str, dict[str, Any]]:
    return config.stash.setdefault(_SHARED_KEY, {})


def _blank(users: list[str]) -> dict[str, Any]:
    """What a process knows of a shared cassette before any of its tests ran: which tests name it."""
    return {"users": users, "passed": [], "played": [], "count": 0, "allowing": [], "replayed": False}


def _path_of(item: pytest.Item) -> str | None:
    path = marked_cassette_path(item)
    return str(path) if path is not None else None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    # Before any plugin deselects: which tests name which cassette, in the whole collection.
    users: dict[str, list[str]] = {}
    for item in items:
        path = _path_of(item)
        if path is not None:
            users.setdefault(path, []).append(item.nodeid)
    notes = _notes(config)
    for path, nodeids in users.items():
        if len(nodeids) > 1:
            notes[path] = _blank(sorted(nodeids))
    return (yield)


def is_shared(item: pytest.Item, path: Path) -> bool:
    return str(path) in _notes(item.config)


def note_played(item: pytest.Item, active: Any, passed: bool) -> None:
    """After a test's call: what it played of a shared cassette, and whether it passed."""
    path, counts = getattr(active, "path", None), getattr(active, "play_counts", None)
    note = _notes(item.config).get(str(path)) if path is not None and counts is not None else None
    if note is None:
        return
    note["played"] = sorted({*note["played"], *(p for p, count in enumerate(counts) if count)})
    note["count"] = max(note["count"], len(counts))
    if getattr(active, "allow_unused", False):
        note["allowing"].append(item.nodeid)
    note["replayed"] = note["replayed"] or bool(active.write_protected)
    if passed:
        note["passed"].append(item.nodeid)


def _merge(into: dict[str, dict[str, Any]], notes: dict[str, dict[str, Any]]) -> None:
    for path, note in notes.items():
        have = into.setdefault(path, _blank(note["users"]))
        for key in ("passed", "played", "allowing"):
            have[key] = sorted({*have[key], *note[key]})
        have["count"] = max(have["count"], note["count"])
        have["replayed"] = have["replayed"] or note["replayed"]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist controller: fold in a worker's notes."""
    output = getattr(node, "workeroutput", None) or {}
    _merge(_notes(node.config), output.get(_WORKER_OUTPUT, {}))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    notes = _notes(config)
    if hasattr(config, "workerinput"):  # an xdist worker: the controller judges, from every worker's notes
        config.workeroutput[_WORKER_OUTPUT] = notes  # type: ignore[attr-defined]
        return
    failures, unchecked = [], 0
    for path, note in sorted(notes.items()):
        if not note["replayed"] or set(note["allowing"]) == set(note["users"]):
            continue  # recorded in this session, or every test that uses it allows recordings it does not play
        if set(note["passed"]) != set(note["users"]):
            unchecked += 1
            continue
        unplayed = [p for p in range(note["count"]) if p not in set(note["played"])]
        if unplayed:
            numbers = ", ".join(f"#{p + 1}" for p in unplayed[:10])
            failures.append(f"{path}: {len(unplayed)} recorded "
                            f"{'interaction was' if len(unplayed) == 1 else 'interactions were'} never played "
                            f"({numbers}) by the {len(note['users'])} tests that use this cassette. Re-record "
                            "(--record-mode=rewrite) or mark them @pytest.mark.cassette(allow_unused=True).")
    lines = list(failures)
    if unchecked:
        lines.append(f"{unchecked} cassette(s) shared by several tests not checked for never-played interactions: "
                     "some of their tests did not run and pass in this session (deselected, another shard, "
                     "failed or skipped).")
    config.stash[_REPORT_KEY] = lines
    if failures and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lines = config.stash.get(_REPORT_KEY, [])
    if lines:
        terminalreporter.section("loop-harness: cassettes shared by several tests")
        for line in lines:
            terminalreporter.line(line)
