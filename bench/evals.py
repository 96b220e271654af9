"""Eval speed: every check of the bundled goldens over 1,000 trajectories, per trajectory.

    .venv/bin/python -m bench.evals                 # 1,000 trajectories, 5 repeats
    .venv/bin/python -m bench.evals --count 200 --repeat 1

The trajectories are the bundled agent cases (Dayflow plain and streamed, the SQL self-correction,
the guard and fault runs), cycled to the count, each with its golden's checks (every check family
appears). Two figures per trajectory, the median of the repeats:

- checks: all of a golden's checks on a trajectory already built;
- build + checks: the trajectory built again from the parsed cassette, then the checks (what
  `harness eval` does after reading the file).

Reading and parsing the YAML is left out: bench/replay.py measures loading.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from harness.cassette.format import CassetteFile, load_cassette
from harness.checks.registry import run_check
from harness.evals.golden import Golden
from harness.evals.judge import JUDGED_CHECKS, Judge
from harness.evals.suite import load_suite
from harness.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]


def _cases() -> list[tuple[CassetteFile, Golden]]:
    suite = load_suite(ROOT / "evals" / "agents.yaml")
    return [(load_cassette(case.cassette), case.golden) for case in suite.cases]


def _time_checks(work: Sequence[tuple[Trajectory, Golden]]) -> float:
    judge = Judge()  # judged checks (rubric) replay their judge cassette, read once per repeat
    started = time.perf_counter()
    for trajectory, golden in work:
        seen = trajectory.select_runs(golden.run)
        for check in golden.checks:
            if check.check in JUDGED_CHECKS:
                result = judge.check(golden.name, golden.path, check, seen)[0]
            else:
                result = run_check(check.check, seen, check.params, label=check.id)
            if not result.passed:
                raise SystemExit(f"bench: a bundled check failed ({check.id}: {result.reason}); fix that first")
    return time.perf_counter() - started


def _time_build_and_checks(work: Sequence[tuple[CassetteFile, Golden]]) -> float:
    started = time.perf_counter()
    built = [(Trajectory.from_cassette(cassette), golden) for cassette, golden in work]
    elapsed = time.perf_counter() - started
    return elapsed + _time_checks(built)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.evals", description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000, help="trajectories per repeat (default 1,000)")
    parser.add_argument("--repeat", type=int, default=5, help="repeats; the median is reported (default 5)")
    args = parser.parse_args(argv)

    cases = _cases()
    # Distinct copies, so no measurement leans on a cache keyed by object identity.
    work = [(copy.deepcopy(cases[i % len(cases)][0]), cases[i % len(cases)][1]) for i in range(args.count)]
    built = [(Trajectory.from_cassette(cassette), golden) for cassette, golden in work]
    checks_per_run = sum(len(golden.checks) for _, golden in work)

    only_checks = [_time_checks(built) for _ in range(args.repeat)]
    with_build = [_time_build_and_checks(work) for _ in range(args.repeat)]

    families = sorted({check.check for _, golden in work for check in golden.checks})
    print(f"{args.count} trajectories from {len(cases)} bundled cases · {checks_per_run} checks per pass · "
          f"{len(families)} check kinds: {', '.join(families)}")
    print(f"{'what':<18}{'total (median)':>16}{'per trajectory':>18}{'target':>12}")
    for label, times in (("checks", only_checks), ("build + checks", with_build)):
        total = statistics.median(times)
        print(f"{label:<18}{total:>14.3f} s{total / args.count * 1e3:>15.3f} ms{'< 1 s':>12}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
