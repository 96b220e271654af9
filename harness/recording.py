"""Recording cassettes in bulk: the jobs `harness record` runs, one at a time or several at once.

A `RecordJob` is one cassette to record and a function that records it and says what it holds; `run_jobs` runs
them, `concurrency` at a time, reports each as it ends and sums up what could not be recorded.
`record_scenario` records one run of any scenario (the `harness.scenarios.Scenario` protocol: the project's or
a set's) with clients from the environment (`client_options` checks there is something to record against) or
the options given; a run none of whose requests was answered (a dead or wrong base URL) is refused, and
nothing is written. Used by `harness record`, by a package's scenario set recording its own (the demo's, against
an in-process simulator), and by bench/trials.py.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError, absolute
from harness.pacing import Pacer
from harness.report._text import counted

if TYPE_CHECKING:
    from harness.cassette.format import CassetteFile
    from harness.scenarios import Scenario
    from harness.trajectory import Trajectory


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
                print(
                    f"harness record: {absolute(job.path)}: not recorded: {_reason(error)}", file=sys.stderr, flush=True
                )

    if concurrency == 1:
        for number, job in enumerate(jobs):
            try:
                line = job.record()
            except KeyboardInterrupt:  # an interrupted run is never saved: say so for it and those not started
                return _interrupted(jobs[number:])
            except Exception as err:  # one scenario's failure is data: the others still get recorded
                report(job, None, err)
            else:
                report(job, line, None)
    else:
        unstarted: list[RecordJob] = []
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="harness-record") as pool:
            futures = {pool.submit(job.record): job for job in jobs}
            pending = set(futures)
            while pending:
                try:
                    for future in as_completed(pending):
                        pending.discard(future)
                        try:
                            line = future.result()
                        except Exception as err:
                            report(futures[future], None, err)
                        else:
                            report(futures[future], line, None)
                except KeyboardInterrupt:
                    # A thread cannot be interrupted: those recording finish (saved whole); the rest never start.
                    unstarted += [futures[future] for future in list(pending) if future.cancel()]
                    pending -= {future for future in pending if future.cancelled()}
                    print(f"harness record: interrupted: {counted(len(pending), 'recording')} under way finish first",
                          file=sys.stderr, flush=True)
        if unstarted:
            return _interrupted(unstarted)
        elapsed = time.monotonic() - started
        done = len(jobs) - len(failures)
        print(
            f"recorded {done} of {counted(len(jobs), 'cassette')} in {elapsed:.1f} s, {concurrency} at a time "
            f"({done * 60 / elapsed if elapsed > 0 else 0:.1f} a minute)"
        )
    if not failures:
        return 0
    print(f"harness record: {len(failures)} of {counted(len(jobs), 'cassette')} not recorded:", file=sys.stderr)
    for job, error in sorted(failures, key=lambda failure: str(failure[0].path)):
        print(f"  {job.name or job.path.stem}: {_reason(error)}", file=sys.stderr)
    return 1


def _interrupted(jobs: Sequence[RecordJob]) -> int:
    """What Ctrl-C left of each job it stopped (a run cut short is never saved), and 130, the shell's code."""
    for job in jobs:
        try:
            shown = job.path.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            shown = job.path
        kept = "left as it was" if job.path.exists() else "not written"
        print(f"harness record: interrupted: {shown} {kept}", file=sys.stderr, flush=True)
    return 130


def _reason(error: Exception) -> str:
    """One line: a harness error says what to do in its own words; anything else is named by its type."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return text if isinstance(error, HarnessError) else f"{type(error).__name__}: {text}"


def client_options() -> dict[str, Any]:
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

    @cached_property  # built once: `ended`, `describe` and the caller all read it (frozen: the run never changes)
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


def record_scenario(item: Scenario, path: Path, *, pacer: Pacer | None = None, faults_asked: bool = False,
                    **client_options: Any) -> Recorded:
    """Run a scenario and record it afresh to `path`. The clients it builds come from the environment and
    `client_options`; with `pacer`, every Messages API attempt of those clients waits for it. A run that got no
    answer but errors is refused (nothing written), unless `faults_asked`: the errors are the ones the caller
    asked a simulator for (a scenario whose point is the fault, such as retries running out)."""
    from harness.cassette.recorder import use_cassette
    from harness.cassette.storage import answered, unanswered_reason
    from harness.scenarios import client_factory

    middleware = [pacer.middleware()] if pacer is not None else []
    existed = path.exists()
    with use_cassette(path, mode="rewrite") as cassette:
        if sys.stderr.isatty():  # a long scenario shows each step as it goes; a pipe or a CI log gets none of it
            cassette.capture.listener = progress_printer(getattr(item, "name", path.stem))
        returned = item.run(client_factory(item, middleware=middleware, **client_options))
        if cassette.new_interactions and not faults_asked and not answered(cassette.new_interactions):
            # Raised inside the block, so nothing is written: a run never answered is no recording of the agent
            # (an agent that catches its client's errors, as run_loop does, returns as if all were well).
            kept = "the previous recording is kept" if existed else "nothing written"
            raise HarnessError(f"{unanswered_reason(cassette.new_interactions)}; {kept}")
    return Recorded(path, returned, cassette.this_run())


def progress_line(name: str, step: int, interaction: dict[str, Any]) -> str | None:
    """The line one recorded Messages API exchange earns: the step, how it stopped, its tool calls; None for an
    exchange that is no Messages API call (a count_tokens, a batch)."""
    from harness.wire.bodies import response_message

    if not str(interaction.get("request", {}).get("path", "")).endswith("/v1/messages"):
        return None
    if "response" not in interaction:
        return f"{name}: step {step}, no answer ({interaction.get('error', {}).get('type', 'connection error')})"
    message = response_message(interaction["response"]) or {}
    if message.get("type") != "message":
        return f"{name}: step {step}, HTTP {interaction['response'].get('status')}"
    tools = [block.get("name", "?") for block in message.get("content") or []
             if isinstance(block, dict) and block.get("type") == "tool_use"]
    named = f" ({', '.join(tools)})" if tools else ""
    return f"{name}: step {step}, {message.get('stop_reason')}, {counted(len(tools), 'tool call')}{named}"


def progress_printer(name: str) -> Callable[[dict[str, Any]], None]:
    """A capture listener printing `progress_line` to stderr for each step of scenario `name`."""
    steps = 0

    def listener(interaction: dict[str, Any]) -> None:
        nonlocal steps
        line = progress_line(name, steps + 1, interaction)
        if line is not None:
            steps += 1
            print(line, file=sys.stderr, flush=True)

    return listener
