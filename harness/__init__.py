"""loop-harness: record, replay and evaluate Claude agent loops.

The public surface is small and re-exported here; each name lives in the module of its concept.
Imports are lazy so that `import harness` stays cheap for the pytest plugin and the CLI; a type checker
reads the same names from the imports under TYPE_CHECKING (kept equal to `_EXPORTS` by a test).

These names are the public API: the README and the user's pages of docs/ import from `harness` only
(tests/test_docs.py holds them to it). Every module and package under `harness.` is internal, though not
underscore-named: its names may move between releases.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `import x as x`: an explicit re-export, as checkers read it
    from harness.agent_sdk import AgentSdkSession as AgentSdkSession
    from harness.agent_sdk.transport import TransportMismatch as TransportMismatch
    from harness.batches import wait_for_batch as wait_for_batch
    from harness.batches import wait_for_batch_async as wait_for_batch_async
    from harness.cassette.recorder import Cassette as Cassette
    from harness.cassette.recorder import CassetteMismatch as CassetteMismatch
    from harness.cassette.recorder import MissWarning as MissWarning
    from harness.cassette.recorder import UnplayedInteractions as UnplayedInteractions
    from harness.cassette.recorder import UnplayedWarning as UnplayedWarning
    from harness.cassette.recorder import use_cassette as use_cassette
    from harness.cassette.tolerant import HarnessDriftWarning as HarnessDriftWarning
    from harness.checks.base import CheckResult as CheckResult
    from harness.checks.user import check as check
    from harness.errors import HarnessError as HarnessError
    from harness.loop import LoopConfig as LoopConfig
    from harness.loop import Outcome as Outcome
    from harness.loop import RunResult as RunResult
    from harness.loop import TokenBudget as TokenBudget
    from harness.loop import run_loop as run_loop
    from harness.loop import run_loop_async as run_loop_async
    from harness.normalize import Normalization as Normalization
    from harness.normalize import Substitution as Substitution
    from harness.pacing import Pacer as Pacer
    from harness.pricing import estimate_cost as estimate_cost
    from harness.run import TOKEN_KINDS as TOKEN_KINDS
    from harness.run import Exchange as Exchange
    from harness.run import ToolCall as ToolCall
    from harness.run import Usage as Usage
    from harness.scenarios import Scenario as Scenario
    from harness.scenarios import ScenarioSet as ScenarioSet
    from harness.scenarios import SetArgument as SetArgument
    from harness.sim import SimulatedApiError as SimulatedApiError
    from harness.sim import Simulator as Simulator
    from harness.testing import assert_trajectory as assert_trajectory
    from harness.tools import Tool as Tool
    from harness.tools import ToolRegistry as ToolRegistry
    from harness.trajectory import Trajectory as Trajectory
    from harness.trajectory import batch_trajectories as batch_trajectories
    from harness.trajectory import load_trajectory as load_trajectory

from harness._version import __version__

_EXPORTS: dict[str, str] = {
    "run_loop": "harness.loop",
    "RunResult": "harness.loop",
    "Outcome": "harness.loop",
    "LoopConfig": "harness.loop",
    "ToolRegistry": "harness.tools",
    "Tool": "harness.tools",
    "use_cassette": "harness.cassette.recorder",
    "CassetteMismatch": "harness.cassette.recorder",
    "Cassette": "harness.cassette.recorder",
    "HarnessDriftWarning": "harness.cassette.tolerant",
    # what a use_cassette block says as it ends (on_miss / on_unplayed)
    "UnplayedInteractions": "harness.cassette.recorder",
    "UnplayedWarning": "harness.cassette.recorder",
    "MissWarning": "harness.cassette.recorder",
    "load_trajectory": "harness.trajectory",
    "Trajectory": "harness.trajectory",
    "Simulator": "harness.sim",
    "HarnessError": "harness.errors",
    "assert_trajectory": "harness.testing",
    "run_loop_async": "harness.loop",
    "TokenBudget": "harness.loop",
    "wait_for_batch": "harness.batches",
    "wait_for_batch_async": "harness.batches",
    "batch_trajectories": "harness.trajectory",
    "Normalization": "harness.normalize",
    "Substitution": "harness.normalize",
    "AgentSdkSession": "harness.agent_sdk",
    "TransportMismatch": "harness.agent_sdk.transport",
    # the run model and its price, as the README names them
    "Exchange": "harness.run",
    "Usage": "harness.run",
    "ToolCall": "harness.run",
    "TOKEN_KINDS": "harness.run",
    "estimate_cost": "harness.pricing",
    "Pacer": "harness.pacing",
    # a project's own checks: @harness.check on a plain function, named in [tool.loop-harness] checks
    "check": "harness.checks.user",
    "CheckResult": "harness.checks.base",
    "SimulatedApiError": "harness.sim",
    # a package's scenario set (the loop_harness.scenarios entry point group) and what it holds
    "Scenario": "harness.scenarios",
    "ScenarioSet": "harness.scenarios",
    "SetArgument": "harness.scenarios",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
