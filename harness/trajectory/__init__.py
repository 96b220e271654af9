"""The trajectory of an agent run: Anthropic-native steps, derived from its exchanges.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

- `parts`: the pieces (`Run`, `Step`, `Attempt`, `FailedRequest`, `RunOutcome`);
- `calls`: the tool calls of every kind (client, server, MCP) and the results that answer them;
- `builder`: the runs a list of exchanges makes (which request continues which conversation);
- `model`: `Trajectory`, its readings and its JSON form (harness/trajectory.schema.json);
- `loaders`: trajectories from cassette files, ours or foreign, and a batch's runs by custom_id.

Exchange, ToolCall, ToolResult, Usage and canonical_json are harness.run's, named here too so that
existing `from harness.trajectory import ...` lines keep working.
"""

from __future__ import annotations

from harness.run import Exchange, ToolCall, ToolResult, Usage, canonical_json
from harness.trajectory.loaders import batch_trajectories, load_cassette_any, load_trajectory
from harness.trajectory.model import TRAJECTORY_VERSION, Trajectory
from harness.trajectory.parts import Attempt, FailedRequest, Run, RunOutcome, Step

__all__ = [
    "TRAJECTORY_VERSION",
    "Attempt",
    "Exchange",
    "FailedRequest",
    "Run",
    "RunOutcome",
    "Step",
    "ToolCall",
    "ToolResult",
    "Trajectory",
    "Usage",
    "batch_trajectories",
    "canonical_json",
    "load_cassette_any",
    "load_trajectory",
]
