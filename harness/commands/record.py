"""`harness record [NAME...]`: record the project's scenarios; `harness record --demo`: the bundled demo.

The project's scenarios are `module:function` entries in `[tool.loop-harness.scenarios]` of its
pyproject.toml, any shape of agent: sync or `async def`, given a client built from the environment
(`anthropic.Anthropic`, or `AsyncAnthropic` for an async one) when it takes one, or building its own;
returning a RunResult, a Message, a string, anything or nothing. Each is recorded afresh to
`<cassettes>/<name>.yaml`, and what the command reports of it (steps, how it ended) is read from the
exchanges it made, never from what it returned. The environment gives a key, or ANTHROPIC_BASE_URL
pointing at `harness sim` (any loopback URL: then no key is needed, for the clients the agent builds
itself too). The cassette says what answered it (`source: simulator` or `live`). Every scenario that can
be recorded is; those that could not are summed up at the end, and the command exits 1.

`--demo` re-records the bundled reference-agent cassettes against an in-process simulator (rehearsals,
not recordings of Claude), into the demo's own cassettes/ folder of a checkout, or `--cassettes DIR`:
it never writes into a user's project unless told where. A prompt change as candidate cassettes:

    harness record --demo dayflow-brief --print-system-prompt > prompt.txt      # the prompt as it is
    (edit prompt.txt)
    harness record --demo --system-prompt-file prompt.txt --cassettes candidates/
    harness compare cassettes/ candidates/

With no NAME every scenario is recorded, the prompt replaced in each one that sends Dayflow's (the SQL
assistant keeps its own), so the candidate folder holds every case the baseline does.

`--trials N` records N runs of each scenario (`brief.trial-1.yaml` ... `brief.trial-N.yaml`), trial K with
simulator seed `--seed` + K - 1. The simulator answers as a function of the request, so its trials
differ in their ids only; trials earn their keep against a live model, whose runs vary.

`--concurrency C` records C cassettes at a time (threads, each recording its own cassette). The project's
scenarios share one `harness.pacing.Pacer`: every Messages API attempt waits until the rate-limit headers
of the answers so far leave room for it, so C trials against the API (or `harness sim --rpm N`) keep to
its limits instead of meeting 429s; the SDK's own retries are left as they are (see harness.pacing).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError, absolute
from harness.evals.trial_files import trial_path
from harness.pacing import Pacer
from harness.project import ProjectScenario, load_project
from harness.report._text import counted

if TYPE_CHECKING:
    from harness.cassette.format import CassetteFile
    from harness.trajectory import Trajectory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="scenarios to record (default: all): the project's, or with --demo the bundled ones "
        "(harness record --demo --list names them)",
    )
    parser.add_argument("--demo", action="store_true", help="the bundled demo scenarios (Dayflow, the SQL assistant)")
    parser.add_argument(
        "--cassettes", type=Path, default=None,
        help="cassettes folder (default: `cassettes` of [tool.loop-harness]; with --demo the checkout's cassettes/)",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument(
        "--trials",
        type=int,
        default=None,
        metavar="N",
        help="record N runs of each scenario as NAME.trial-1.yaml ... NAME.trial-N.yaml",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        metavar="C",
        help="record C cassettes at a time (default 1); the project's scenarios pace themselves by the API's "
        "rate-limit headers",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="simulator seed (default 0); trial K uses seed + K - 1. It changes ids only"
    )
    parser.add_argument(
        "--system-prompt-file",
        type=Path,
        default=None,
        metavar="F",
        help="--demo: send this file's text as the system prompt (Dayflow scenarios); needs --cassettes",
    )
    parser.add_argument(
        "--print-system-prompt", action="store_true", help="--demo: print the named scenario's system prompt and exit"
    )


def run(args: argparse.Namespace) -> int:
    # Bad input as every command reports it: harness.cli prints "harness record: <reason>", exit 2.
    if args.trials is not None and args.trials < 1:
        raise HarnessError("--trials must be 1 or more")
    if args.concurrency < 1:
        raise HarnessError("--concurrency must be 1 or more")
    if args.demo:  # the one door from this command to the demo package, opened only when asked for
        from harness_demo.record import run_demo

        return run_demo(args)
    return _run_project(args)


def _run_project(args: argparse.Namespace) -> int:
    demo_only = [flag for flag, given in (("--system-prompt-file", args.system_prompt_file is not None),
                                          ("--print-system-prompt", args.print_system_prompt),
                                          ("--seed", args.seed != 0)) if given]
    if demo_only:
        raise HarnessError(f"{', '.join(demo_only)} work on the bundled demo only: add --demo")
    project = load_project()
    if not project.scenarios:
        raise HarnessError(
            f"no scenarios to record: add them to {project.describe_config()}, as "
            '[tool.loop-harness.scenarios] NAME = "module:function"; the bundled demo is harness record --demo'
        )
    if args.list:
        for name, target in project.scenarios.items():
            print(f"{name:24} {target}")
        return 0
    chosen = [project.scenario(name) for name in (args.names or project.scenarios)]
    for item in chosen:
        item.function()  # every name resolves before anything is recorded
    options = _client_options()
    folder = args.cassettes if args.cassettes is not None else project.cassettes
    pacer = Pacer()  # one for the whole run: the API's limits are the account's, whichever trial spends them
    jobs: list[RecordJob] = []
    for item in chosen:
        path = folder / item.cassette_path.relative_to(project.cassettes)
        paths = [path] if args.trials is None else [trial_path(path, k) for k in range(1, args.trials + 1)]
        for target in paths:
            jobs.append(RecordJob(target, lambda item=item, target=target: record_project_scenario(
                item, target, pacer=pacer, **options).describe(), item.name))
    status = run_jobs(jobs, args.concurrency)
    stats = pacer.stats
    if len(jobs) > 1 and (stats.waited_seconds >= 0.05 or stats.rate_limited):
        print(f"paced {counted(stats.attempts, 'request')} by the rate-limit headers: waited "
              f"{stats.waited_seconds:.1f} s in all; {counted(stats.rate_limited, '429')} "
              f"({stats.unpaced} unpaced, {stats.blind} before any headers)")
    return status


@dataclass(frozen=True)
class RecordJob:
    """One cassette to record: `record` records it and says what it holds."""

    path: Path
    record: Callable[[], str]
    name: str = ""  # the scenario's, for the summary of what could not be recorded


def run_jobs(jobs: Sequence[RecordJob], concurrency: int) -> int:
    """Record every job, `concurrency` at a time. A job that fails is reported as it fails and the others go on;
    the run ends with a summary of those that could not be recorded, and exit 1."""
    started = time.monotonic()
    printing = threading.Lock()
    failures: list[tuple[RecordJob, Exception]] = []

    def report(job: RecordJob, line: str | None, error: Exception | None) -> None:
        with printing:
            if error is None:
                print(f"recorded {job.path}: {line}", flush=True)
            else:
                failures.append((job, error))
                print(f"harness record: {absolute(job.path)}: not recorded: {_reason(error)}", file=sys.stderr,
                      flush=True)

    if concurrency == 1:
        for job in jobs:
            try:
                line = job.record()
            except Exception as err:  # one scenario's failure is data: the others still get recorded
                report(job, None, err)
            else:
                report(job, line, None)
    else:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="harness-record") as pool:
            futures = {pool.submit(job.record): job for job in jobs}
            for future in as_completed(futures):
                try:
                    line = future.result()
                except Exception as err:
                    report(futures[future], None, err)
                else:
                    report(futures[future], line, None)
        elapsed = time.monotonic() - started
        done = len(jobs) - len(failures)
        print(f"recorded {done} of {counted(len(jobs), 'cassette')} in {elapsed:.1f} s, {concurrency} at a time "
              f"({done * 60 / elapsed if elapsed > 0 else 0:.1f} a minute)")
    if not failures:
        return 0
    print(f"harness record: {len(failures)} of {counted(len(jobs), 'cassette')} not recorded:", file=sys.stderr)
    for job, error in sorted(failures, key=lambda failure: str(failure[0].path)):
        print(f"  {job.name or job.path.stem}: {_reason(error)}", file=sys.stderr)
    return 1


def _reason(error: Exception) -> str:
    """One line: a harness error says what to do in its own words; anything else is named by its type."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return text if isinstance(error, HarnessError) else f"{type(error).__name__}: {text}"


def _client_options() -> dict[str, Any]:
    """Checks that there is something to record against: a key, or a base URL (the simulator needs no key:
    the cassette gives a client with none a placeholder, which it sends to loopback only)."""
    if any(os.environ.get(name) for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")):
        return {}
    raise HarnessError(
        "nothing to record against: set ANTHROPIC_API_KEY to record Claude, or start the local simulator "
        "(harness sim --port 8765 &) and set ANTHROPIC_BASE_URL=http://127.0.0.1:8765"
    )


@dataclass(frozen=True)
class Recorded:
    """One recorded run of a scenario: where it went, what the scenario returned, and the run's own exchanges."""

    path: Path
    returned: Any  # whatever the scenario returned: a RunResult, a Message, a string, None...
    run: CassetteFile  # the run as the cassette holds it: every exchange, in order

    @property
    def trajectory(self) -> Trajectory:
        from harness.trajectory import Trajectory

        return Trajectory.from_cassette(self.run)

    @property
    def ended(self) -> bool:
        """Whether the run ended on a finished answer (end_turn or a stop sequence), read from its exchanges."""
        from harness.chaos import outcome_word

        return outcome_word(self.trajectory) == "ended"

    def describe(self) -> str:
        if not self.run.interactions:
            return f"nothing recorded: the scenario made no API call (no file at {absolute(self.path)})"
        trajectory = self.trajectory
        if not trajectory.runs:
            return f"{counted(len(self.run.interactions), 'interaction')}, none of them a Messages API call"
        from harness.chaos import outcome_word

        return f"{counted(len(trajectory.steps), 'step')}, outcome {outcome_word(trajectory)}"


def record_project_scenario(item: ProjectScenario, path: Path, *, pacer: Pacer | None = None,
                            **client_options: Any) -> Recorded:
    """Run one of the project's scenarios and record it afresh to `path`. The client it is given (when it takes
    one) comes from the environment; with `pacer`, every Messages API attempt of that client waits for it."""
    import anthropic

    from harness.cassette.recorder import use_cassette

    middleware = [pacer.middleware()] if pacer is not None else []

    def client_for(asynchronous: bool) -> Any:
        factory = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return factory(max_retries=item.max_retries, middleware=middleware, **client_options)

    with use_cassette(path, mode="rewrite") as cassette:
        returned = item.run(client_for)
    return Recorded(path, returned, cassette.this_run())
