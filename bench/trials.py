"""Concurrent trials against a simulator rate limit: trials per minute versus the limit, and the 429s met.

A project with one scenario (a two-request tool loop: one tool call, then the answer) is recorded N times,
C at a time, against an in-process simulator enforcing `--rpm` requests per minute, the way
`harness record --trials N --concurrency C` records it (the same `record_scenario`, one shared
pacer). The simulator's bucket starts spent, as after a first minute at the limit, so the figure is the
steady rate rather than the first minute's burst (the bucket's capacity is a whole minute's worth, as the
API's). The limit for trials is rpm / 2. Beside it, the control: the same trials with no pacer, left to
the SDK's retries (retry-after, two retries).

    .venv/bin/python -m bench.trials                          # rpm 120, 30 trials, 8 at a time
    .venv/bin/python -m bench.trials --rpm 120 --trials 20 --concurrency 4 --no-control
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from harness.pacing import Pacer
from harness.project import load_project
from harness.recording import record_scenario
from harness.report.trials import trial_path
from harness.sim import RateLimits, Simulator
from tests.user_projects import AGENT  # the README's agent, as the tests copy it into a project

REQUESTS_PER_TRIAL = 2
SPEND = {"model": "sim-echo", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]}


@dataclass(frozen=True)
class Figures:
    trials: int
    recorded: int  # trials whose run ended well (outcome ended)
    seconds: float
    requests: int
    rate_limited: int  # 429s the simulator sent
    unpaced: int | None  # of those, what the pacer should have known (None: no pacer)

    @property
    def trials_per_minute(self) -> float:
        return self.recorded * 60 / self.seconds


def run(project: Path, *, rpm: int, trials: int, concurrency: int, paced: bool) -> Figures:
    os.chdir(project)
    item = load_project().scenario("weather")
    folder = project / ("paced" if paced else "unpaced")
    pacer = Pacer() if paced else None
    with Simulator(rate_limits=RateLimits(rpm=rpm)) as sim:
        assert sim.resources.limiter is not None
        for _ in range(rpm):  # the bucket starts spent: the steady rate, not the first minute's burst
            sim.resources.limiter.admit(SPEND)
        options = {"api_key": "sim-key-not-a-secret", "base_url": sim.base_url}

        def one(k: int) -> bool:
            # An unpaced trial may run out of retries: the loop then ends with outcome error, not recorded well.
            recorded = record_scenario(item, trial_path(folder / "weather.yaml", k), pacer=pacer, **options)
            return recorded.ended

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            done = list(pool.map(one, range(1, trials + 1)))
        seconds = time.monotonic() - started
        answered = [served for served in sim.served if served.index is not None]
    return Figures(trials, sum(done), seconds, len(answered), sum(1 for s in answered if s.status == 429),
                   pacer.stats.unpaced if pacer else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rpm", type=int, default=120)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--no-control", action="store_true", help="skip the unpaced control run")
    args = parser.parse_args(argv)
    limit = args.rpm / REQUESTS_PER_TRIAL
    here = Path.cwd()
    rows: list[tuple[str, Figures]] = []
    with tempfile.TemporaryDirectory(prefix="bench-trials-") as folder:
        project = Path(folder)
        scenarios = '[tool.loop-harness.scenarios]\nweather = "bench_trials_agent:weather"\n'
        (project / "pyproject.toml").write_text(scenarios)
        (project / "bench_trials_agent.py").write_text(AGENT)
        for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
            os.environ.pop(key, None)
        try:
            rows.append(("paced", run(project, rpm=args.rpm, trials=args.trials, concurrency=args.concurrency,
                                      paced=True)))
            if not args.no_control:
                rows.append(("unpaced (SDK retries only)", run(project, rpm=args.rpm, trials=args.trials,
                                                               concurrency=args.concurrency, paced=False)))
        finally:
            os.chdir(here)
    print(f"simulator limit {args.rpm} requests/min = {limit:g} trials/min of {REQUESTS_PER_TRIAL} requests; "
          f"{args.trials} trials, {args.concurrency} at a time, the bucket spent at the start")
    print(f"{'run':<28} | recorded | seconds | trials/min | of limit | requests | 429s | unpaced 429s")
    for name, figures in rows:
        unpaced = "-" if figures.unpaced is None else str(figures.unpaced)
        print(f"{name:<28} | {figures.recorded:>4}/{figures.trials:<3} | {figures.seconds:>7.1f} | "
              f"{figures.trials_per_minute:>10.1f} | {figures.trials_per_minute / limit:>7.0%} | "
              f"{figures.requests:>8} | {figures.rate_limited:>4} | {unpaced:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
