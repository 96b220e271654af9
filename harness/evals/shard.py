"""`harness eval --shard K/N`: a deterministic, balanced share of a run's cases, for CI matrices.

Every shard works out the same plan from the same inputs, with no coordination:

- each case weighs the interactions its cassette records (every recorded request: a step, or a retry of
  one), counted from the file's text without parsing it, so weighing all cases costs a read of each file
  and not a load (a file that cannot be read weighs 1);
- cases are dealt heaviest first, each to the shard with the least weight so far (ties: the earlier case in
  run order, the lower shard): shards take similar time, and the deal depends on nothing but the plan;
- within a shard, cases keep the run's order.

The plan's identity (`suite_id`) is a fingerprint of every case of the run in order: suite, id, cassette
and golden paths and the sha256 of both files. Each shard's results carry it, with K/N and the run's case
ids in order (`shard` in the results document), so `harness merge` can refuse shards of different runs
(another commit, another corpus) and name the shards that are missing.
"""

from __future__ import annotations

import hashlib
import heapq
import re
from dataclasses import dataclass, replace
from typing import Any

from harness.errors import HarnessError
from harness.evals.suite import Case, Suite
from harness.files import read_bytes_bounded
from harness.jsondata import fingerprint

__all__ = ["Shard", "deal", "shard_suites"]

# A recorded request: `- request:` in our YAML and in vcrpy's, `"request": {` in HAR and JSON forms.
_REQUEST = re.compile(rb'^[ \t]*-?[ \t]*"?request"?[ \t]*:', re.MULTILINE)


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as written on the command line
    total: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not match:
            raise HarnessError(f"--shard {text!r}: write K/N, e.g. 2/3 for the second of three shards")
        index, total = int(match.group(1)), int(match.group(2))
        if not 1 <= index <= total:
            raise HarnessError(f"--shard {text}: K must be between 1 and N ({total})")
        return cls(index, total)

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def _read(case: Case) -> tuple[int, str | None]:
    """(weight, sha256 of the cassette's bytes); (1, None) when it cannot be read (the case then errors)."""
    try:
        raw = read_bytes_bounded(case.cassette)
    except (OSError, HarnessError):
        return 1, None
    return max(1, len(_REQUEST.findall(raw))), hashlib.sha256(raw).hexdigest()


def deal(weights: list[int], total: int) -> list[int]:
    """The shard (0-based) of each weight: heaviest first, to the shard with the least so far."""
    order = sorted(range(len(weights)), key=lambda i: (-weights[i], i))
    loads = [(0, shard) for shard in range(total)]
    assigned = [0] * len(weights)
    for i in order:
        load, shard = heapq.heappop(loads)
        assigned[i] = shard
        heapq.heappush(loads, (load + weights[i], shard))
    return assigned


def shard_suites(suites: list[Suite], shard: Shard) -> tuple[list[Suite], dict[str, Any]]:
    """This shard's share of `suites` (every suite kept, with only its cases here), and the `shard` block of
    its results: K, N, the plan's identity and every case id of the run in order."""
    cases = [case for suite in suites for case in suite.cases]
    read = [_read(case) for case in cases]
    assigned = deal([weight for weight, _ in read], shard.total)
    mine = {case.id for case, at in zip(cases, assigned, strict=True) if at == shard.index - 1}
    identity = fingerprint(
        [
            [case.suite, case.id, case.cassette_label, sha, case.golden_label, case.golden.sha256]
            for case, (_, sha) in zip(cases, read, strict=True)
        ]
    )
    block = {
        "index": shard.index,
        "total": shard.total,
        "suite_id": identity,
        "weight": sum(weight for case, (weight, _) in zip(cases, read, strict=True) if case.id in mine),
        "plan": [case.id for case in cases],
    }
    share = [replace(suite, cases=[case for case in suite.cases if case.id in mine]) for suite in suites]
    return share, block
