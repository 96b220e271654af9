"""`assert_trajectory`: check a recorded or live run against a golden, in a test, with a readable failure.

    @pytest.mark.cassette(path="cassettes/dayflow/brief.yaml")
    def test_brief(anthropic_client):
        result = run_brief(anthropic_client, model="claude-sonnet-5")
        assert_trajectory(result, "golden/dayflow/brief.json")

The same checks `harness eval` runs, so a test and the eval suite never disagree on what "passes" means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.checks.base import CheckResult
from harness.checks.registry import get_check, run_check
from harness.evals.golden import Golden, GoldenCheck, load_golden, validate_golden
from harness.trajectory import Trajectory, load_trajectory

Expected = str | Path | Golden | Mapping[str, Any] | Sequence[Any]


def _trajectory(subject: Any) -> tuple[Trajectory, str]:
    if isinstance(subject, Trajectory):
        return subject, "the trajectory"
    if isinstance(subject, str | Path):
        return load_trajectory(subject), str(subject)
    if hasattr(subject, "this_run"):  # an active Cassette (the fixture, or use_cassette's): the run in memory
        return Trajectory.from_cassette(subject.this_run()), f"{subject.path} (this run)"
    if hasattr(subject, "calls") and hasattr(subject, "outcome"):  # a RunResult of harness.run_loop
        return Trajectory.from_run(subject), "the run"
    raise TypeError(f"assert_trajectory: cannot make a trajectory of {type(subject).__name__}; give a cassette "
                    "path, an active cassette, a RunResult or a Trajectory")


def _golden(expected: Expected) -> Golden | None:
    if isinstance(expected, Golden):
        return expected
    if isinstance(expected, str | Path):
        return load_golden(expected)
    return None


def _checks(expected: Expected) -> tuple[list[GoldenCheck], str | int]:
    golden = _golden(expected)
    if golden is not None:
        return golden.checks, golden.run
    if isinstance(expected, Mapping):
        if "checks" in expected:  # a golden document given inline
            validate_golden(expected)
            return _checks(list(expected["checks"]))
        items = [{"check": name, "params": params or {}} for name, params in expected.items()]
        return _checks(items)
    checks = []
    for item in expected:
        item = {"check": item} if isinstance(item, str) else dict(item)
        get_check(item["check"])  # an unknown name fails here, naming the known ones
        checks.append(GoldenCheck(check=item["check"], id=item.get("id", item["check"]),
                                  params=dict(item.get("params") or {})))
    return checks, "all"


def _run(check: GoldenCheck, seen: Trajectory, golden: Golden | None) -> CheckResult:
    """A check on the run; a judged one (rubric) replays its judgement from the judge cassette beside a golden file."""
    from harness.evals.judge import JUDGED_CHECKS, Judge

    if check.check in JUDGED_CHECKS and golden is not None and golden.path is not None:
        return Judge().check(str(golden.path), golden.path, check, seen)[0]
    return run_check(check.check, seen, check.params, label=check.id)


def assert_trajectory(subject: Any, expected: Expected) -> list[CheckResult]:
    """Run the expected checks on `subject`'s trajectory; raise AssertionError listing every failure.

    `subject`: a cassette path, the active cassette (the `cassette` fixture: the run that just happened, from
    memory, so it works on a first recording and in new_episodes), a RunResult or a Trajectory.
    `expected`: a golden file path or Golden, an inline golden {"checks": [...]}, a mapping
    {check name: params}, or a list of check names / {"check", "params"} items. Returns the results.
    """
    __tracebackhide__ = True
    trajectory, label = _trajectory(subject)
    golden = _golden(expected)
    checks, run = (golden.checks, golden.run) if golden is not None else _checks(expected)
    seen = trajectory.select_runs(run)
    results = [_run(check, seen, golden) for check in checks]
    failed = [result for result in results if not result.passed]
    if failed:
        lines = [f"{len(failed)} of {len(results)} check(s) failed on {label}:"]
        for result in failed:
            where = f" (step {result.step})" if result.step is not None else ""
            lines.append(f"  {result.name}{where}: {result.reason}")
        raise AssertionError("\n".join(lines))
    return results
