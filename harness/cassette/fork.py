"""Fork at divergence: what a forked cassette keeps, how its provenance says so, what the fork saved.

Record mode `fork` replays the recorded prefix while the run's requests match, and from the first
request that does not (the divergence) sends every request on and records it. The new file holds the
replayed prefix as it was recorded, then the re-recorded rest; recorded interactions after the
divergence are replaced by what the fork records. Its provenance block says so:

    fork:
      forked_at: '2026-11-30T11:00:00Z'
      first_divergent_request: 2        # the run's request number where it parted from the recording
      change: {kind: tool_definitions, label: tool definitions, summary: ..., changes: [...]}
      replayed_interactions: 1          # interactions #1..#1 are the previous recording's
      re_recorded_from: 2               # interactions #2.. were recorded by the fork
      re_recorded_interactions: 2
      previous: {source: ..., recorded_at: ..., endpoint: ..., sdk_version: ...}

The file's `source` is the humbler of the two sources: a file holding any simulator answer says
`simulator` (never a recording of Claude), else any imported one `imported`, else `live`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cassette.drift import Drift
from harness.cassette.match import stored_request_body
from harness.pricing import estimate_cost
from harness.run import Usage
from harness.wire.bodies import response_message

__all__ = ["ForkReport", "Spend", "fork_provenance", "spend_of"]

_SOURCE_ORDER = ("simulator", "imported", "live")  # the first that either side has names the file
_PREVIOUS_KEYS = ("source", "recorded_at", "endpoint", "sdk_version")


@dataclass(frozen=True)
class Spend:
    """Interactions, their tokens by kind and their list-price cost (None when a model has no known price)."""

    interactions: int
    usage: Usage
    cost_usd: float | None

    def to_data(self) -> dict[str, Any]:
        return {"interactions": self.interactions, "usage": self.usage.to_dict(),
                "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6)}


def spend_of(interactions: Iterable[Mapping[str, Any]]) -> Spend:
    """What the interactions cost when recorded: the usage their answers report, priced by their model."""
    count, usage, cost, priced = 0, Usage(), 0.0, True
    for interaction in interactions:
        count += 1
        message = response_message(interaction.get("response") or {}) if "response" in interaction else None
        if not isinstance(message, Mapping):
            continue
        used = Usage.from_api(message.get("usage"))
        if not used.total:
            continue
        usage += used
        request = stored_request_body(interaction.get("request") or {})
        model = message.get("model") or (request.get("model") if isinstance(request, Mapping) else None)
        price = estimate_cost(str(model), used) if model else None
        if price is None:
            priced = False
        else:
            cost += price
    return Spend(count, usage, cost if priced else None)


@dataclass(frozen=True)
class ForkReport:
    """What one fork did: where the run parted from the recording and why, and what it replayed and paid for."""

    path: Path
    first_divergent_request: int | None  # 1-based; None when the run never parted from the recording
    change: Drift | None
    replayed: Spend  # served from the previous recording: not paid again
    recorded: Spend  # sent and recorded by the fork
    replaced: int  # recorded interactions from the divergence on, which the re-recorded ones replace
    written: bool  # whether the fork wrote the cassette (it does when the run ends well)

    def to_data(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "first_divergent_request": self.first_divergent_request,
            "change": self.change.to_data() if self.change is not None else None,
            "replayed": self.replayed.to_data(),
            "recorded": self.recorded.to_data(),
            "replaced": self.replaced,
            "written": self.written,
        }


def fork_provenance(
    previous: Mapping[str, Any],
    fresh: Mapping[str, Any],
    *,
    replayed: int,
    re_recorded: int,
    first_divergent_request: int,
    change: Drift | None,
) -> dict[str, Any]:
    """The provenance block of a forked cassette: the fresh recording's, with a `fork` block that says what was
    kept and what re-recorded, and why."""
    meta = dict(fresh)
    sources = {previous.get("source"), fresh.get("source")}
    meta["source"] = next(source for source in _SOURCE_ORDER if source in sources or source == "live")
    meta["fork"] = {
        "forked_at": fresh.get("recorded_at"),
        "first_divergent_request": first_divergent_request,
        "change": change.to_data() if change is not None else None,
        "replayed_interactions": replayed,
        "re_recorded_from": replayed + 1,
        "re_recorded_interactions": re_recorded,
        "previous": {key: previous.get(key) for key in _PREVIOUS_KEYS if key in previous},
    }
    if previous.get("note") and "note" not in meta:
        meta["note"] = previous["note"]
    return meta
