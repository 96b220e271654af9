"""Trajectories from files: our cassettes and foreign ones, and the runs of a Message Batch by custom_id."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.trajectory.model import Trajectory

if TYPE_CHECKING:
    from harness.cassette.format import CassetteFile

__all__ = ["batch_trajectories", "load_cassette_any", "load_trajectory"]


def load_cassette_any(path: str | Path) -> CassetteFile:
    """Our cassette, or a foreign one (vcrpy, pydantic-ai, HAR) converted in memory."""
    from harness.cassette.importer import load_any_cassette  # here: its readers cost 0.2 s to import

    return load_any_cassette(path)


def load_trajectory(path: str | Path) -> Trajectory:
    """A cassette file (ours or a foreign one) as a trajectory."""
    trajectory = Trajectory.from_cassette(load_cassette_any(path))
    if not trajectory.source.get("path"):  # an import in memory has no path of its own
        trajectory.source["path"] = str(path)
    return trajectory


def batch_trajectories(source: str | Path | CassetteFile | Trajectory) -> dict[str, Trajectory]:
    """{custom_id: Trajectory} for every batch request whose result a cassette (a path, a CassetteFile or a
    Trajectory built from one) holds, in the order of the results."""
    if isinstance(source, Trajectory):
        full = source
    elif isinstance(source, str | Path):
        full = load_trajectory(source)
    else:
        full = Trajectory.from_cassette(source)
    return {run.label: full.select_runs(run.label) for run in full.runs if run.label is not None}
