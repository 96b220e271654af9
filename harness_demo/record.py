"""`harness record --demo`: re-record the bundled demo's cassettes against an in-process simulator.

The demo registers this module's `DEMO` (a harness.scenarios.ScenarioSet) under the loop_harness.scenarios
entry point group; `harness record --demo` hands the run to its `record`, `run_demo`, with the command's
arguments and the ones `DEMO` declares for itself (`--seed`, `--system-prompt-file`, `--print-system-prompt`:
the library's command knows none of them). Rehearsals, not recordings of Claude, written into the demo's own
cassettes/ folder of a checkout, or `--cassettes DIR`: never into a user's project unless told where.

A prompt change as candidate cassettes:

    harness record --demo dayflow-brief --print-system-prompt > prompt.txt      # the prompt as it is
    (edit prompt.txt)
    harness record --demo --system-prompt-file prompt.txt --cassettes candidates/
    harness compare cassettes/ candidates/

With no NAME every scenario is recorded, the prompt replaced in each one that sends Dayflow's (the SQL
assistant keeps its own), so the candidate folder holds every case the baseline does.

`--trials N` records trial K with simulator seed `--seed` + K - 1. The simulator answers as a function of the
request, so its trials differ in their ids only; trials earn their keep against a live model, whose runs vary.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from harness.errors import HarnessError
from harness.evals.trial_files import trial_path
from harness.recording import RecordJob, run_jobs
from harness.report._text import counted
from harness.scenarios import ScenarioSet, SetArgument
from harness_demo.scenarios import SCENARIOS, Scenario, record_scenario, scenario

# The demo's recordings live in a checkout of loop-harness, beside the package; an install has none.
DEMO_CASSETTES = Path(__file__).resolve().parents[1] / "cassettes"


def _chosen(args: argparse.Namespace) -> list[Scenario]:
    try:
        chosen = [scenario(name) for name in args.names] if args.names else list(SCENARIOS)
    except KeyError as err:
        raise HarnessError(err.args[0]) from None
    if args.system_prompt_file is not None:
        try:
            prompt = args.system_prompt_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as err:
            raise HarnessError(f"cannot read the system prompt: {err}", file=args.system_prompt_file) from None
        if not prompt:
            raise HarnessError("the system prompt file is empty", file=args.system_prompt_file)
        # Named scenarios must take the prompt; with none named, the whole set is recorded (a complete
        # candidate for `harness compare`) and the scenarios of other agents keep their own prompts.
        chosen = [
            item.with_system_prompt(prompt) if args.names or item.default_system_prompt else item for item in chosen
        ]
    return chosen


def run_demo(args: argparse.Namespace) -> int:
    if args.list:
        for item in SCENARIOS:
            print(f"{item.name:24} {item.cassette:36} {item.description}")
        return 0
    try:
        chosen = _chosen(args)
    except HarnessError as err:
        print(f"harness record: {err}", file=sys.stderr)
        return 2
    if args.print_system_prompt:
        if len(chosen) != 1 or chosen[0].system_prompt is None:
            print(
                "harness record: --print-system-prompt needs one scenario that has a system prompt, "
                "e.g. harness record --demo dayflow-brief --print-system-prompt",
                file=sys.stderr,
            )
            return 2
        print(chosen[0].system_prompt)
        return 0
    if args.system_prompt_file is not None and args.cassettes is None:
        # Recording a changed prompt over the bundled cassettes would replace the baseline it is compared with.
        print(
            "harness record: --system-prompt-file needs --cassettes DIR (e.g. candidates/); give "
            f"--cassettes {DEMO_CASSETTES} to replace the bundled recordings on purpose",
            file=sys.stderr,
        )
        return 2
    if args.cassettes is None and not DEMO_CASSETTES.is_dir():
        print(f"harness record: the demo's cassettes folder ({DEMO_CASSETTES}) is not in this install; "
              "give --cassettes DIR", file=sys.stderr)
        return 2
    root = args.cassettes if args.cassettes is not None else DEMO_CASSETTES
    jobs: list[RecordJob] = []
    for item in chosen:
        if args.trials is None:
            runs = [(item.path(root), args.seed)]
        else:
            runs = [(trial_path(item.path(root), k), args.seed + k - 1) for k in range(1, args.trials + 1)]
        for path, seed in runs:
            jobs.append(RecordJob(path, functools.partial(_demo_line, item, root, seed, path, args)))
    return run_jobs(jobs, args.concurrency)


def _demo_line(item: Scenario, root: Path, seed: int, path: Path, args: argparse.Namespace) -> str:
    from harness.chaos import outcome_word
    from harness.trajectory import load_trajectory

    record_scenario(item, root, seed=seed, path=path)
    run = load_trajectory(path)  # how the run went, read from the exchanges it recorded
    return f"{counted(len(run.steps), 'step')}, outcome {outcome_word(run)}{_note(item, args)}"


def _note(item: Scenario, args: argparse.Namespace) -> str:
    if args.system_prompt_file is None:
        return ""
    return f" (system prompt from {args.system_prompt_file})" if item.system_prompt else " (its own system prompt)"


# The demo's scenarios as the library sees them: `harness record --demo` and `harness chaos --demo` find
# this through the loop_harness.scenarios entry point (pyproject.toml), never by importing this package.
DEMO = ScenarioSet(
    "demo",
    SCENARIOS,
    DEMO_CASSETTES if DEMO_CASSETTES.is_dir() else None,
    run_demo,
    title="the bundled demo",
    help="the bundled demo scenarios (Dayflow, the SQL assistant)",
    arguments=(
        SetArgument.of(
            "--system-prompt-file", type=Path, default=None, metavar="F",
            help="send this file's text as the system prompt (Dayflow scenarios); needs --cassettes",
        ),
        SetArgument.of("--print-system-prompt", action="store_true",
                       help="print the named scenario's system prompt and exit"),
        SetArgument.of("--seed", type=int, default=0,
                       help="simulator seed (default 0); trial K uses seed + K - 1. It changes ids only"),
    ),
)
