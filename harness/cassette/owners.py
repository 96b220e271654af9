"""Which test's recordings are which, in a cassette that several tests share: so that one recorder's save merges.

The pytest plugin records, in the cassette's `harness:` block, `recorded_by`: for each interaction, the node ids
of the tests that play it (a request several tests send alike is stored once and owned by each). A session that
re-records some of those tests then replaces only their recordings: the recordings of a test it did not collect
(`pytest test_a.py` leaves test_b.py's alone), or deselected, or that failed, are kept; those of a test its file
no longer has are dropped. Without it each save held only what its own session recorded, whoever saved last.

`merge` is the one place that decides what such a save keeps, for a test's own save and for the session's one
write of a cassette shared within it (harness.pytest_plugin.shared) alike; `Session` is what the plugin knows.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

OWNERS_KEY = "recorded_by"  # in the cassette's harness block: a list of node-id lists, one per interaction

Interaction = dict[str, Any]
Fingerprint = Callable[[dict[str, Any]], bytes]


@dataclass(frozen=True)
class Session:
    """What the pytest session knows when it saves: the tests whose recordings this save renews (they ran and
    passed), every test it collected (before any deselection) and the files they are in."""

    renewing: frozenset[str]
    collected: frozenset[str] = field(default_factory=frozenset)
    test: str = ""  # a test's own save: the test whose recordings they are
    keeps_unowned: bool = False  # rewrite keeps old recordings of no known owner (not every test that uses it ran)

    @property
    def files(self) -> frozenset[str]:
        return frozenset(_file_of(nodeid) for nodeid in self.collected)

    def still_owns(self, nodeid: str, *, renewed_too: bool) -> bool:
        """Whether an old owner keeps its recordings: it still exists as far as this session can tell (its file
        was not collected, or that file still has it) and, when `renewed_too`, it is not one this save renews."""
        if renewed_too and nodeid in self.renewing:
            return False
        return nodeid in self.collected or _file_of(nodeid) not in self.files


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def stored_owners(meta: dict[str, Any], count: int) -> list[list[str]] | None:
    """The owners of each of `count` interactions, as the cassette stores them; None when it stores none usable
    (recorded outside pytest, or before owners were recorded, or edited by hand out of step)."""
    owners = meta.get(OWNERS_KEY)
    if (not isinstance(owners, list) or len(owners) != count
            or not all(isinstance(each, list) and all(isinstance(n, str) for n in each) for each in owners)):
        return None
    return [list(each) for each in owners]


def merge(old: Sequence[Interaction], old_owners: list[list[str]] | None, runs: Sequence[tuple[str, list[Interaction]]],
          *, session: Session, replaces: bool, renewed_by: Fingerprint | None,
          fingerprint_of: Fingerprint) -> tuple[list[Interaction], list[list[str]]]:
    """The interactions a save of `runs` (test node id, its new recordings, in order) writes, and their owners.

    `replaces` (rewrite): an old recording stays only while a test the session does not renew still owns it (one
    with no known owner goes, as rewrite always did). Otherwise every old one stays, less those `renewed_by` a new
    answered one (mode all), whose other owners move to it. A new recording that an earlier run, or (when
    `renewed_by` or `replaces`: every request of the run was sent, none replayed) a kept old one, already holds
    as often is not added again: its test joins that one's owners.
    """
    owners_of = old_owners if old_owners is not None else [[] for _ in old]
    renewed = ({renewed_by(i["request"]) for _, fresh in runs for i in fresh if "error" not in i}
               if renewed_by is not None else set())
    kept: list[Interaction] = []
    owners: list[list[str]] = []
    carried: dict[bytes, list[str]] = defaultdict(list)  # owners of renewed recordings, for their renewal
    for interaction, who in zip(old, owners_of, strict=True):
        remaining = [nodeid for nodeid in who if session.still_owns(nodeid, renewed_too=replaces)]
        if replaces and not remaining and (who or not session.keeps_unowned):
            continue
        if renewed and renewed_by is not None and (fingerprint := renewed_by(interaction["request"])) in renewed:
            carried[fingerprint].extend(remaining)
            continue
        kept.append(interaction)
        owners.append(remaining)
    held: defaultdict[bytes, list[int]] = defaultdict(list)  # fingerprint -> positions in `kept`, in order
    # In new_episodes and once a run's new recordings are its misses: an old one alike was played already.
    for position, interaction in enumerate(kept if replaces or renewed_by is not None else ()):
        held[fingerprint_of(interaction["request"])].append(position)
    for nodeid, fresh in runs:
        sent: Counter[bytes] = Counter()
        for interaction in fresh:
            fingerprint = fingerprint_of(interaction["request"])
            sent[fingerprint] += 1
            if sent[fingerprint] <= len(held[fingerprint]):  # replay serves this test from that one
                position = held[fingerprint][sent[fingerprint] - 1]
                if nodeid and nodeid not in owners[position]:
                    owners[position].append(nodeid)
                continue
            held[fingerprint].append(len(kept))
            kept.append(interaction)
            joined = [nodeid] if nodeid else []
            joined += [n for n in carried.pop(fingerprint, []) if n not in joined]
            owners.append(joined)
    return kept, owners
