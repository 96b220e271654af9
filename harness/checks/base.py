"""What every check shares: its result as data, and how a check is declared.

A check is a small pure function `(trajectory, params) -> CheckResult`. It never raises for a failing
run and never returns a bare False: a failure carries a reason that names the step ("step 2: tool_use
toolu_x has no tool_result in the next user turn") and the evidence behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.trajectory import Trajectory

__all__ = ["CheckFunction", "CheckResult", "CheckSpec", "counted", "fail", "ok", "step_label"]


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    reason: str  # one sentence a person can act on; names the step on failure
    step: int | None = None  # the step the reason is about (1-based, across the trajectory)
    evidence: dict[str, Any] = field(default_factory=dict)  # JSON-able detail: what was found, what was expected
    score: float | None = None  # partial credit in [0, 1] where a check grades (trajectory_match's F1, a judge's)

    def named(self, name: str) -> CheckResult:
        return replace(self, name=name)

    def graded(self, score: float | None) -> CheckResult:
        return replace(self, score=score)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "reason": self.reason,
            "step": self.step,
            "evidence": self.evidence,
            "score": self.score,
        }


CheckFunction = Callable[[Trajectory, Mapping[str, Any]], CheckResult]


@dataclass(frozen=True)
class CheckSpec:
    """A check as the registry and the golden schema know it."""

    name: str
    function: CheckFunction
    description: str
    params_schema: dict[str, Any]  # JSON Schema of the `params` object a golden gives it
    # Checks a schema cannot express (a regex that does not compile): (JSON path under params, problem).
    validate_params: Callable[[Mapping[str, Any]], Iterable[tuple[str, str]]] | None = None

    def golden_params_schema(self) -> dict[str, Any]:
        """`params_schema` as a golden applies it: closed where the check declares its properties and says
        nothing of others, so a misspelt parameter of any check, a new one included, is refused, not ignored."""
        schema = dict(self.params_schema)
        if "properties" in schema and "additionalProperties" not in schema and "patternProperties" not in schema:
            schema["additionalProperties"] = False
        return schema


def ok(name: str, reason: str, *, step: int | None = None, **evidence: Any) -> CheckResult:
    return CheckResult(name=name, passed=True, reason=reason, step=step, evidence=evidence)


def fail(name: str, reason: str, *, step: int | None = None, **evidence: Any) -> CheckResult:
    return CheckResult(name=name, passed=False, reason=reason, step=step, evidence=evidence)


def step_label(step: int | None) -> str:
    return f"step {step}" if step is not None else "the failed request"


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """'1 step', '2 steps', '1,200 tool calls': the count with its noun, singular or plural (reasons and reports
    read as a person writes, never "1 steps")."""
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"
