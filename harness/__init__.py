"""loop-harness: record, replay and evaluate Claude agent loops.

The public surface is small and re-exported here; each name lives in the module of its concept.
Imports are lazy so that `import harness` stays cheap for the pytest plugin and the CLI.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "run_loop": "harness.loop",
    "RunResult": "harness.loop",
    "Outcome": "harness.loop",
    "LoopConfig": "harness.loop",
    "ToolRegistry": "harness.tools",
    "Tool": "harness.tools",
    "use_cassette": "harness.cassette.recorder",
    "CassetteMismatch": "harness.cassette.recorder",
    "load_trajectory": "harness.trajectory",
    "Trajectory": "harness.trajectory",
    "Simulator": "harness.sim",
    "HarnessError": "harness.errors",
    "assert_trajectory": "harness.testing",
    "run_loop_async": "harness.loop",
    "TokenBudget": "harness.loop",
    "wait_for_batch": "harness.batches",
    "wait_for_batch_async": "harness.batches",
    "batch_trajectories": "harness.batches",
    "Normalization": "harness.cassette.normalize",
    "Substitution": "harness.cassette.normalize",
    "AgentSdkSession": "harness.agent_sdk",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
