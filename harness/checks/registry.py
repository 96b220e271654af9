"""Every check by name: the one list the golden schema, the runner and `harness eval` read.

A new check is a function in its family's module plus a `CheckSpec` in that module's CHECKS; this
registry only gathers them. Check names are what golden files write under `check:`.

Checks of other packages join through the entry point group `loop_harness.checks`, each entry a
family's CHECKS (`name = "package.module:CHECKS"`, see harness.plugins): that is how the bundled demo adds
`promotions_filtered` (harness_demo/checks.py) without the library importing the demo.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.checks import answer, outcome, permissions, protocol, recovery, rubric, structured, tool_calls
from harness.checks.base import CheckResult, CheckSpec
from harness.patterns import PatternTimeout
from harness.plugins import CHECKS_GROUP, Registry
from harness.trajectory import Trajectory

__all__ = ["CHECKS", "check_names", "get_check", "run_check"]

_FAMILIES = (protocol, recovery, tool_calls, permissions, answer, structured, outcome, rubric)

CHECKS: Registry[CheckSpec] = Registry(
    ((spec.name, spec) for family in _FAMILIES for spec in family.CHECKS),
    CHECKS_GROUP,
    lambda _name, specs: ((spec.name, spec) for spec in specs),
)


def check_names() -> list[str]:
    return sorted(CHECKS)


def get_check(name: str) -> CheckSpec:
    try:
        return CHECKS[name]
    except KeyError:
        raise KeyError(f"unknown check {name!r}; known checks: {', '.join(check_names())}") from None


def run_check(
    name: str, trajectory: Trajectory, params: Mapping[str, Any] | None = None, *, label: str | None = None,
    source: str | None = None,
) -> CheckResult:
    """Run one check. A check that crashes gives a failed result saying so, never a traceback mid-suite; a user's
    pattern that runs out of time (harness.patterns) fails the check naming it and `source`, the golden."""
    spec = get_check(name)
    try:
        result = spec.function(trajectory, params or {})
    except PatternTimeout as exc:
        reason = f"{source}: {exc}" if source else str(exc)
        result = CheckResult(name=name, passed=False, reason=reason,
                             evidence={"exception": "PatternTimeout", "pattern": exc.pattern})
    except Exception as exc:  # a bug in a check must not hide the other checks' results
        result = CheckResult(
            name=name,
            passed=False,
            reason=f"the check itself crashed: {type(exc).__name__}: {exc}",
            evidence={"exception": type(exc).__name__},
        )
    return result.named(label) if label and label != result.name else result
