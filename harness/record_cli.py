"""`harness record [NAME...]`: re-record the bundled cassettes against the local simulator.

Every cassette it writes says `source: simulator` in its provenance block: these are rehearsals of
the reference agents, not recordings of Claude.

A prompt change as candidate cassettes, for `harness compare`:

    harness record dayflow-brief --print-system-prompt > prompt.txt      # the prompt as it is
    (edit prompt.txt)
    harness record --system-prompt-file prompt.txt --cassettes candidates/
    harness compare cassettes/ candidates/

With no NAME every scenario is recorded, the prompt replaced in each one that sends Dayflow's (the SQL
assistant keeps its own), so the candidate folder holds every case the baseline does.

`--trials N` records N runs of each scenario (`brief.trial-1.yaml` ... `brief.trial-N.yaml`), trial K with
simulator seed `--seed` + K - 1. The simulator answers as a function of the request, so its trials
differ in their ids only; trials earn their keep against a live model, whose runs vary.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.errors import HarnessError
from harness.report.trials import trial_path
from harness.scenarios import SCENARIOS, Scenario, record_scenario, scenario

DEFAULT_CASSETTES = Path("cassettes")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="scenarios to record (default: all): " + ", ".join(s.name for s in SCENARIOS),
    )
    parser.add_argument(
        "--cassettes", type=Path, default=None, help=f"cassettes folder (default: {DEFAULT_CASSETTES}/)"
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
        "--seed", type=int, default=0, help="simulator seed (default 0); trial K uses seed + K - 1. It changes ids only"
    )
    parser.add_argument(
        "--system-prompt-file",
        type=Path,
        default=None,
        metavar="F",
        help="send this file's text as the system prompt (Dayflow scenarios); needs --cassettes",
    )
    parser.add_argument(
        "--print-system-prompt", action="store_true", help="print the named scenario's system prompt and exit"
    )


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


def run(args: argparse.Namespace) -> int:
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
                "harness record: --print-system-prompt needs one scenario that has a system prompt, e.g. dayflow-brief",
                file=sys.stderr,
            )
            return 2
        print(chosen[0].system_prompt)
        return 0
    if args.trials is not None and args.trials < 1:
        print("harness record: --trials must be 1 or more", file=sys.stderr)
        return 2
    if args.system_prompt_file is not None and args.cassettes is None:
        # Recording a changed prompt over the bundled cassettes would replace the baseline it is compared with.
        print(
            "harness record: --system-prompt-file needs --cassettes DIR (e.g. candidates/); give "
            f"--cassettes {DEFAULT_CASSETTES} to replace the bundled recordings on purpose",
            file=sys.stderr,
        )
        return 2
    root = args.cassettes if args.cassettes is not None else DEFAULT_CASSETTES
    for item in chosen:
        if args.trials is None:
            runs = [(item.path(root), args.seed)]
        else:
            runs = [(trial_path(item.path(root), k), args.seed + k - 1) for k in range(1, args.trials + 1)]
        for path, seed in runs:
            result = record_scenario(item, root, seed=seed, path=path)
            print(f"recorded {path}: {result.steps} steps, outcome {result.outcome.value}{_note(item, args)}")
    return 0


def _note(item: Scenario, args: argparse.Namespace) -> str:
    if args.system_prompt_file is None:
        return ""
    return f" (system prompt from {args.system_prompt_file})" if item.system_prompt else " (its own system prompt)"
