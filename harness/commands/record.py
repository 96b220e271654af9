"""`harness record [NAME...]`: record the project's scenarios; `harness record --SET`: a scenario set's.

The project's scenarios are `module:function` entries in `[tool.loop-harness.scenarios]` of its
pyproject.toml, any shape of agent: sync or `async def`, given a client built from the environment
(`anthropic.Anthropic`, or `AsyncAnthropic` for an async one) when it takes one, or building its own;
returning a RunResult, a Message, a string, anything or nothing. Each is recorded afresh to
`<cassettes>/<name>.yaml`, and what the command reports of it (steps, how it ended) is read from the
exchanges it made, never from what it returned. The environment gives a key, or ANTHROPIC_BASE_URL
pointing at `harness sim` (any loopback URL: then no key is needed, for the clients the agent builds
itself too). The cassette says what answered it (`source: simulator` or `live`). Every scenario that can
be recorded is; those that could not are summed up at the end, and the command exits 1.

`--SET` hands the run to a scenario set an installed package registered (`loop_harness.scenarios`,
harness.scenarios): `--demo` is the bundled demo's (harness_demo/record.py says what it records, and how a
prompt change becomes candidate cassettes). A set's own arguments (the demo's `--seed`,
`--system-prompt-file`, `--print-system-prompt`) are declared by the set and added here, in a group of their
own; given without the set's flag, they are refused naming it. This module knows no set by name.

`--missing` records only the scenarios (or trials) with no cassette yet, and keeps the others as they are.

`--trials N` records N runs of each scenario (`brief.trial-1.yaml` ... `brief.trial-N.yaml`).

`--concurrency C` records C cassettes at a time (threads, each recording its own cassette). The project's
scenarios share one `harness.pacing.Pacer`: every Messages API attempt waits until the rate-limit headers
of the answers so far leave room for it, so C trials against the API (or `harness sim --rpm N`) keep to
its limits instead of meeting 429s; the SDK's own retries are left as they are (see harness.pacing).
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.evals.trial_files import trial_path
from harness.pacing import Pacer
from harness.project import load_project
from harness.recording import RecordJob, client_options, record_scenario, run_jobs
from harness.report._text import counted
from harness.scenarios import Scenario, add_set_selectors, refuse_other_sets_arguments, scenario_set, scenario_sets


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="scenarios to record (default: all): the project's, or with a set's flag (--SET) the set's own "
        "(harness record --SET --list names them)",
    )
    parser.add_argument(
        "--cassettes", type=Path, default=None,
        help="cassettes folder (default: `cassettes` of [tool.loop-harness]; with a set's flag, the set's own)",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--missing", action="store_true",
                        help="record only the scenarios (or trials) that have no cassette yet; keep the others")
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
    # The installed scenario sets: --NAME for each, and the arguments each declares for itself.
    add_set_selectors(parser, with_arguments=True)


def run(args: argparse.Namespace) -> int:
    # Bad input as every command reports it: harness.cli prints "harness record: <reason>", exit 2.
    if args.trials is not None and args.trials < 1:
        raise HarnessError("--trials must be 1 or more")
    if args.concurrency < 1:
        raise HarnessError("--concurrency must be 1 or more")
    refuse_other_sets_arguments(args)
    if args.scenario_set is not None:  # a package's scenario set, registered through an entry point
        return scenario_set(args.scenario_set).record(args)
    return _run_project(args)


def _run_project(args: argparse.Namespace) -> int:
    project = load_project()
    if not project.scenarios:
        sets = "".join(f"; {each.called} is harness record {each.flag}" for each in scenario_sets())
        raise HarnessError(
            f"no scenarios to record: add them to {project.describe_config()}, as "
            f'[tool.loop-harness.scenarios] NAME = "module:function"{sets}'
        )
    if args.list:
        for name, target in project.scenarios.items():
            print(f"{name:24} {target}")
        return 0
    chosen = [project.scenario(name) for name in (args.names or project.scenarios)]
    for item in chosen:
        item.function()  # every name resolves before anything is recorded
    folder = args.cassettes if args.cassettes is not None else project.cassettes
    wanted: list[tuple[Scenario, Path]] = []
    for item in chosen:
        path = folder / item.cassette_path.relative_to(project.cassettes)
        paths = [path] if args.trials is None else [trial_path(path, k) for k in range(1, args.trials + 1)]
        # --missing: a cassette already there is kept as it is
        wanted.extend((item, cassette) for cassette in paths if not (args.missing and cassette.exists()))
    if not wanted:
        print(f"nothing to record: every scenario chosen has its cassette in {folder}")
        return 0
    options = client_options()
    pacer = Pacer()  # one for the whole run: the API's limits are the account's, whichever trial spends them
    jobs = [RecordJob(cassette, functools.partial(_record_one, item, cassette, pacer, options), item.name)
            for item, cassette in wanted]
    status = run_jobs(jobs, args.concurrency)
    stats = pacer.stats
    if len(jobs) > 1 and (stats.waited_seconds >= 0.05 or stats.rate_limited):
        print(f"paced {counted(stats.attempts, 'request')} by the rate-limit headers: waited "
              f"{stats.waited_seconds:.1f} s in all; {counted(stats.rate_limited, '429')} "
              f"({stats.unpaced} unpaced, {stats.blind} before any headers)")
    return status




def _record_one(item: Scenario, path: Path, pacer: Pacer, options: dict[str, Any]) -> str:
    return record_scenario(item, path, pacer=pacer, **options).describe()
