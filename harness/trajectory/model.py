"""The trajectory of an agent run: Anthropic-native steps, derived from its exchanges.

`Trajectory.from_exchanges` is the one constructor (harness.trajectory.builder builds the runs);
`from_cassette` and `from_run` only say where the exchanges come from. A `Trajectory` holds `runs`
(harness.trajectory.parts), and steps are numbered 1..N across the whole trajectory. Checks see every
run unless a golden selects some (`select_runs`).

The same run gives the same trajectory whether read from its cassette or from its `RunResult`:
`from_cassette(c).comparable() == from_run(r).comparable()`. `comparable()` leaves out what the two
records cannot share: timings, provenance, and the attempts inside a call (the SDK retries a 529 out
of the loop's sight, while the cassette records every try).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.errors import CassetteError
from harness.pricing import Cost
from harness.run import Exchange, ToolCall, Usage
from harness.trajectory.builder import DAMAGE, build_runs, cassette_exchanges, describe_damage
from harness.trajectory.parts import Run, RunOutcome, Step

if TYPE_CHECKING:
    from harness.cassette.format import CassetteFile
    from harness.loop import RunResult

__all__ = ["TRAJECTORY_VERSION", "Trajectory"]

TRAJECTORY_VERSION = 1


@dataclass
class Trajectory:
    runs: list[Run]
    source: dict[str, Any] = field(default_factory=dict)
    skipped: list[dict[str, Any]] = field(default_factory=list)  # interactions that are not Messages API calls

    # -- construction --------------------------------------------------------------------------------------
    @classmethod
    def from_exchanges(
        cls,
        exchanges: Iterable[Exchange],
        *,
        source: Mapping[str, Any] | None = None,
        skipped: Sequence[Mapping[str, Any]] = (),
    ) -> Trajectory:
        return cls(runs=build_runs(exchanges), source=dict(source or {}), skipped=[dict(item) for item in skipped])

    @classmethod
    def from_cassette(cls, cassette: CassetteFile) -> Trajectory:
        exchanges, skipped, source = cassette_exchanges(cassette)
        try:
            trajectory = cls.from_exchanges(exchanges, source=source, skipped=skipped)
        except DAMAGE as err:
            raise CassetteError(f"its interactions do not add up to a trajectory: {describe_damage(err)}",
                                file=cassette.path) from None
        return trajectory

    @classmethod
    def from_run(cls, result: RunResult) -> Trajectory:
        """From a `harness.loop.RunResult`: the exchanges the loop recorded, read as a cassette's are.

        The loop sees one exchange per call (the SDK retries out of its sight), so each step has one
        attempt; a call that failed is the run's failed request, with its status and error type as the
        loop received them.
        """
        source = {"kind": "run", "model": result.model, "loop_outcome": result.outcome.value}
        return cls.from_exchanges(result.exchanges, source=source)

    # -- reading ---------------------------------------------------------------------------------------------
    @property
    def steps(self) -> list[Step]:
        return [step for run in self.runs for step in run.steps]

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for run in self.runs for call in run.tool_calls]

    @property
    def last_run(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    @property
    def final_text(self) -> str:
        return self.runs[-1].final_text if self.runs else ""

    @property
    def final_step(self) -> Step | None:
        """The last run's last step: the one whose text is the final answer (None when that run got none)."""
        run = self.last_run
        return run.steps[-1] if run is not None and run.steps else None

    @property
    def outcome(self) -> RunOutcome | None:
        return self.runs[-1].outcome if self.runs else None

    @property
    def usage(self) -> Usage:
        return sum((run.usage for run in self.runs), Usage())

    @property
    def model(self) -> str | None:
        """The model that answered last (the dated id), else the one last asked for."""
        for step in reversed(self.steps):
            if step.model or step.request.get("model"):
                return step.model or step.request.get("model")
        for run in reversed(self.runs):
            if run.failed_request is not None and run.failed_request.request.get("model"):
                return run.failed_request.request["model"]
        return None

    @property
    def cost(self) -> Cost | None:
        """List-price cost summed per step, by kind and by billed pass; None when any counted step ran on a
        model without a known price (harness.pricing)."""
        total = Cost(0.0)
        for step in self.steps:
            cost = step.cost
            if cost is None:
                return None
            total = total + cost
        return total

    @property
    def cost_usd(self) -> float | None:
        """List-price estimate summed per step; None when any counted step's model has no known price."""
        cost = self.cost
        return None if cost is None else round(cost.total, 6)

    def select_runs(self, which: str | int) -> Trajectory:
        """Only some runs: "all", "last", a run number (1-based) or a label (a batch request's custom_id).
        Step numbers stay as they were."""
        if which == "all":
            runs = list(self.runs)
        elif which == "last":
            runs = self.runs[-1:]
        elif isinstance(which, str) and any(run.label == which for run in self.runs):
            runs = [run for run in self.runs if run.label == which]
        elif isinstance(which, int) and 1 <= which <= len(self.runs):
            runs = [self.runs[which - 1]]
        else:
            raise ValueError(f"no run {which!r}: this trajectory has {len(self.runs)} run(s)")
        return Trajectory(runs=runs, source=dict(self.source), skipped=list(self.skipped))

    # -- JSON --------------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        outcome = self.outcome
        return {
            "trajectory_version": TRAJECTORY_VERSION,
            "source": self.source,
            "model": self.model,
            "outcome": outcome.to_dict() if outcome else None,
            "final_text": self.final_text,
            "usage": self.usage.to_dict(),
            "cost_usd": self.cost_usd,
            "cost": cost.to_dict() if (cost := self.cost) is not None else None,
            "counts": {
                "runs": len(self.runs),
                "steps": len(self.steps),
                "tool_calls": len(self.tool_calls),
                "attempts": sum(len(s.attempts) for s in self.steps)
                + sum(len(r.failed_request.attempts) for r in self.runs if r.failed_request),
            },
            "runs": [run.to_dict() for run in self.runs],
            "skipped": self.skipped,
        }

    def comparable(self) -> dict[str, Any]:
        """`to_dict()` without what two records of one run cannot share: provenance, timings, attempts."""
        data = self.to_dict()
        data.pop("source")
        data["counts"].pop("attempts")
        data.pop("skipped")
        for run in data["runs"]:
            for step in run["steps"]:
                step.pop("attempts")
                step.pop("duration_ms")
            if run["failed_request"] is not None:
                run["failed_request"] = {"delta": run["failed_request"]["delta"]}
            for key in ("status", "error_type", "error_message"):
                run["outcome"].pop(key)
        if data["outcome"] is not None:
            for key in ("status", "error_type", "error_message"):
                data["outcome"].pop(key)
        return data
