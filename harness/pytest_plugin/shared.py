"""Cassettes shared by several tests: their never-played check, once per session, across xdist workers and shards.

A test's own cassette is checked after the test (harness.pytest_plugin): whatever it recorded and did not
play is stale. A cassette that several tests name (`@pytest.mark.cassette(path=...)` on each) cannot be
judged by one test, which plays only its part, nor by one xdist worker, which may run only some of those
tests. So for such a cassette each process notes which recordings its tests played; at the end of the
session (on the xdist controller, from every worker's notes) a recording none of them played fails the
session. The check is made only when every test that names the cassette ran in this session and passed: a
test deselected by -k, --lf or a shard plugin (pytest-split, pytest-shard), or one that failed or was
skipped, may be the one that plays the rest, and the summary says the cassette was not checked.

Recording such a cassette in `rewrite`, `all` or `once` is done once too. Each of its tests would otherwise
write the whole file with only its own recordings (rewrite keeps nothing old), each replacing the last; under
xdist whichever worker wrote last would win; and in `once` the first test to record would write the file, so
that every later one found it there, only replayed, and missed. So its tests write nothing: each one that
passes hands what it recorded to this module (`collect_recordings`), the xdist workers send theirs to the
controller with their notes, and at the end of the session one process writes the cassette, under its
recording lock, with every test's recordings in the tests' collection order (whichever worker ran them).

Whoever writes a cassette a marker names by path (the session's one write, or one test's own save), the file
notes which tests play which recording (harness.cassette.owners), and a save merges: it renews the recordings
of the tests that ran and passed, and keeps those of every other test, also of tests this session did not
collect (`pytest test_a.py --record-mode=rewrite` keeps test_b.py's; so do two sessions rewriting at once,
which take turns under the recording lock and each merge with what the other wrote). A request that several
tests send alike is kept as often as the one test that sends it most. A session that was interrupted (Ctrl-C)
writes none of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.errors import HarnessError
from harness.pytest_plugin.marker import marked_cassette_path

if TYPE_CHECKING:
    from harness.cassette.modes import Mode
    from harness.cassette.recorder import Cassette

_SHARED_KEY = pytest.StashKey[dict[str, dict[str, Any]]]()  # cassette path -> what this process knows of it
_REPORT_KEY = pytest.StashKey[list[str]]()
_COLLECTED_KEY = pytest.StashKey[frozenset[str]]()  # every test collected, before any deselection
_WORKER_OUTPUT = "loop_harness_shared_cassettes"
_COLLECTED_OUTPUT = "loop_harness_collected"


def _notes(config: pytest.Config) -> dict[str, dict[str, Any]]:
    return config.stash.setdefault(_SHARED_KEY, {})


def _blank(users: list[str]) -> dict[str, Any]:
    """What a process knows of a shared cassette before any of its tests ran: which tests name it."""
    return {"users": users, "passed": [], "played": [], "count": 0, "allowing": [], "replayed": False,
            "recorded": []}


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
    config.stash[_COLLECTED_KEY] = frozenset(item.nodeid for item in items)
    notes = _notes(config)
    for path, nodeids in users.items():
        if len(nodeids) > 1:
            notes[path] = _blank(nodeids)  # in collection order: the order their recordings are written in
    return (yield)


def is_shared(item: pytest.Item, path: Path) -> bool:
    return str(path) in _notes(item.config)


def note_played(item: pytest.Item, active: Any, passed: bool) -> None:
    """After a test's call: what it played of a shared cassette, and whether it passed."""
    path, counts = active.path, active.matcher.play_counts
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


# The modes in which a shared cassette is written once, for the session. `once` too: its first test to record
# would otherwise write the file, and every later test, finding it there, would only replay and miss.
_RECORDED_ONCE = ("rewrite", "all", "once")


def collect_recordings(item: pytest.Item, cassette: Cassette) -> None:
    """A shared cassette in rewrite/all/once: the test's save keeps what it recorded for the session's one write.
    Any other cassette a marker names by path: its save keeps the recordings of every other test that uses it
    (harness.cassette.owners), in this session or not, and notes which are this test's."""
    from harness.cassette.owners import Session

    note = _notes(item.config).get(str(cassette.path))
    if note is not None or _names_a_path(item):
        collected = item.config.stash.get(_COLLECTED_KEY, frozenset())
        cassette.storage.session = Session(renewing=frozenset({item.nodeid}), collected=collected, test=item.nodeid)
    if note is None or cassette.mode not in _RECORDED_ONCE:
        return

    def keep(done: Cassette) -> None:  # called by `done.save()`: the test passed (or asked to save on error)
        note["recorded"].append({
            "test": item.nodeid, "mode": done.mode, "interactions": done.capture.fresh(),
            "provenance": done.provenance, "rules": done.matcher.rules.to_data() if done.matcher.rules else None,
            "note": done.storage.note, "rewrite_request_ids": done.storage.rewrite_request_ids,
        })

    cassette.deferred = keep


def _names_a_path(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("cassette")
    return marker is not None and bool(marker.kwargs.get("path") or marker.args)


def _merge(into: dict[str, dict[str, Any]], notes: dict[str, dict[str, Any]]) -> None:
    for path, note in notes.items():
        have = into.setdefault(path, _blank(note["users"]))
        for key in ("passed", "played", "allowing"):
            have[key] = sorted({*have[key], *note[key]})
        have["count"] = max(have["count"], note["count"])
        have["replayed"] = have["replayed"] or note["replayed"]
        have["recorded"].extend(note.get("recorded", []))


def write_recorded(path: str, note: dict[str, Any], collected: frozenset[str] = frozenset()) -> str:
    """Write a shared cassette with what every test of the session recorded in it; a line for the summary."""
    from harness.cassette.owners import Session
    from harness.cassette.recorder import Cassette
    from harness.cassette.storage import recording_turn
    from harness.normalize import Normalization

    order = {nodeid: position for position, nodeid in enumerate(note["users"])}
    runs = sorted(note["recorded"], key=lambda run: order.get(run["test"], len(order)))
    everyone = set(note["passed"]) >= set(note["users"])
    mode: Mode = "rewrite" if all(run["mode"] == "rewrite" for run in runs) else "all"
    rules = Normalization()
    provenance: dict[str, Any] = {}
    for run in runs:
        rules = rules.merged(Normalization.from_data(run["rules"], where="harness.matching"))
        provenance.update(run["provenance"])
    turn = recording_turn(path, mode)
    try:
        note_text = next((run["note"] for run in runs if run["note"]), None)
        cassette = Cassette(path, mode, normalize=rules or None, note=note_text,
                            rewrite_request_ids=any(run["rewrite_request_ids"] for run in runs))
        # The tests that ran and passed renew their recordings; those of every other test are kept, and a request
        # that several tests send alike is kept as often as the one test that sends it most (replay serves each
        # test from the whole cassette, so a second copy would never be played).
        cassette.storage.session = Session(renewing=frozenset(note["passed"]), collected=collected,
                                           keeps_unowned=not everyone)
        interactions = cassette.storage.interactions_to_save(
            [], played_order=[], fingerprint_of=cassette.matcher.fingerprint_of,
            runs=[(run["test"], run["interactions"]) for run in runs])
        recorded = {id(interaction) for run in runs for interaction in run["interactions"]}
        fresh = sum(1 for interaction in interactions if id(interaction) in recorded)
        cassette.storage.save(interactions, provenance=provenance, rules=cassette.matcher.rules, played=0,
                              divergence=None)
    finally:
        turn.release()
    line = f"{path}: written once for the session, {fresh} recordings from {len(runs)} tests"
    if not everyone and any(run["mode"] == "rewrite" for run in runs):
        left_out = len(set(note["users"]) - set(note["passed"]))
        line += (f"; kept the recordings of the {left_out} tests that did not run and pass that this session did "
                 "not renew (rewrite starts afresh only when every test that uses the cassette ran and passed)")
    return line


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist controller: fold in a worker's notes."""
    output = getattr(node, "workeroutput", None) or {}
    _merge(_notes(node.config), output.get(_WORKER_OUTPUT, {}))
    collected = node.config.stash.get(_COLLECTED_KEY, frozenset())
    node.config.stash[_COLLECTED_KEY] = collected | frozenset(output.get(_COLLECTED_OUTPUT, ()))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    notes = _notes(config)
    if hasattr(config, "workerinput"):  # an xdist worker: the controller judges, from every worker's notes
        config.workeroutput[_WORKER_OUTPUT] = notes  # type: ignore[attr-defined]
        config.workeroutput[_COLLECTED_OUTPUT] = sorted(config.stash.get(_COLLECTED_KEY, ()))  # type: ignore[attr-defined]
        return
    failures, written, unchecked = [], [], 0
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    for path, note in sorted(notes.items()):
        if note.get("recorded") and interrupted:  # a run that did not end well replaces nothing
            written.append(f"{path}: not written: the session was interrupted; the cassette is as it was")
        elif note.get("recorded"):
            try:
                written.append(write_recorded(path, note, config.stash.get(_COLLECTED_KEY, frozenset())))
            except HarnessError as err:
                failures.append(f"{path}: what its tests recorded was not written: {err}")
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
    lines = [*failures, *written]
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
