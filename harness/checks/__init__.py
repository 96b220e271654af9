"""Eval checks: small pure functions `(trajectory, params) -> CheckResult`, one module per family.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

- protocol: tool_ids_matched
- recovery: self_correction
- tool_calls: trajectory_match (maximum bipartite matching in `matching`)
- answer: final_answer
- structured: output_schema (structured outputs)
- outcome: outcome, budgets, no_repeated_calls

Other packages add checks through the entry point group `loop_harness.checks` (see `registry`); the
bundled demo's `promotions_filtered` joins that way.
"""

from __future__ import annotations

from harness.checks.base import CheckResult, CheckSpec
from harness.checks.registry import CHECKS, check_names, get_check, run_check

__all__ = ["CHECKS", "CheckResult", "CheckSpec", "check_names", "get_check", "run_check"]
