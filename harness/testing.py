"""`assert_trajectory`: check a recorded or live run against a golden, in a test, with a readable failure.

    @pytest.mark.cassette(path="cassettes/dayflow/brief.yaml")
    def test_brief(anthropic_client):
        result = run_brief(anthropic_client, model="claude-sonnet-5")
        assert_trajectory(result, "golden/dayflow/brief.json")

The same checks `harness eval` runs, so a test and the eval suite never disagree on what "passes" means.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.checks.base import CheckResult
from harness.checks.registry import run_check
from harness.errors import GoldenError
from harness.evals.golden import Golden, GoldenCheck, load_golden, parse_golden
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


INLINE = "assert_trajectory's expected checks"
_CHECK_PLACE = re.compile(r"^\$\.checks\[(\d+)\](\.check|\.params)?")


def _as_golden(expected: Mapping[str, Any] | Sequence[Any]) -> tuple[dict[str, Any], Callable[[str], str]]:
    """An inline expectation as the golden document it stands for, and how a place in that document reads in
    what the caller wrote: `{"outcome": {...}}` is `$.checks[0].params` of a golden, `$.outcome` inline."""
    if isinstance(expected, Mapping) and "checks" in expected:  # a golden document given inline: the same places
        return {"name": "inline", "cassettes": ["(the run under test)"], **expected}, lambda where: where
    if isinstance(expected, Mapping):
        names = list(expected)
        checks: list[Any] = [{"check": name} if params is None else {"check": name, "params": params}
                             for name, params in expected.items()]

        def place(index: int, part: str | None) -> str:
            return f"$.{names[index]}"
    else:
        items = list(expected)
        checks = [{"check": item} if isinstance(item, str) else item for item in items]

        def place(index: int, part: str | None) -> str:
            return f"$[{index}]" + (part or "" if not isinstance(items[index], str) else "")

    def written(where: str) -> str:
        match = _CHECK_PLACE.match(where)
        if match is None:
            return where
        return place(int(match[1]), match[2]) + where[match.end():]

    return {"name": "inline", "cassettes": ["(the run under test)"], "checks": checks}, written


def _golden(expected: Expected) -> Golden | None:
    return _loaded(expected) if isinstance(expected, Golden | str | Path) else None


def _loaded(expected: Golden | str | Path) -> Golden:
    return expected if isinstance(expected, Golden) else load_golden(expected)


def _checks(expected: Expected) -> tuple[list[GoldenCheck], str | int]:
    """The checks to run, validated exactly as `harness eval` validates a golden file (one schema, from the
    checks' own parameter specs); a problem is a GoldenError naming the place in what was written."""
    if isinstance(expected, Golden | str | Path):  # a golden file, loaded as `harness eval` loads it
        golden = _loaded(expected)
        return golden.checks, golden.run
    document, written = _as_golden(expected)
    try:
        golden = parse_golden(document, root=Path.cwd())
    except GoldenError as err:
        where = err.where or "$"
        shown = written(where)
        place = shown if shown == where else f"{shown} (in a golden file: {where})"
        raise GoldenError(err.reason, file=INLINE, where=place) from None
    return golden.checks, golden.run


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
    try:
        golden = _golden(expected)
        checks, run = (golden.checks, golden.run) if golden is not None else _checks(expected)
    except GoldenError as err:  # bad input, not a failed check: one line, raised here so the traceback stops here
        raise GoldenError(err.reason, file=err.file, where=err.where) from None
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
