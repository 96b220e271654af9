"""`harness chaos`: replay a cassette with a fault injected at one request.

The fault injection (inject, run_chaos) lives in harness/chaos.py; this module is the command: its
arguments and its run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.chaos import FAULTS, outcome_word, run_chaos
from harness.errors import HarnessError
from harness.report._text import counted
from harness.scenarios import add_set_selectors


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cassette", type=Path, metavar="CASSETTE",
                        help="the cassette of one of the project's scenarios ([tool.loop-harness.scenarios])")
    parser.add_argument("--at", type=int, required=True, metavar="N",
                        help="the request to fail: 0 is the run's first request; retries count")
    parser.add_argument("--fault", required=True, choices=list(FAULTS),
                        help="; ".join(f"{kind}: {text}" for kind, text in FAULTS.items()))
    parser.add_argument("--scenario", metavar="NAME", help="the scenario to run (default: the one whose cassette "
                        "path this is)")
    # --NAME for each installed scenario set (--demo: the bundled demo's): the cassette is one of that set's.
    add_set_selectors(parser, help_for=lambda each: f"the cassette is one of {each.called}'s")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")


def run(args: argparse.Namespace) -> int:
    """Exit 0 when the run ended with a typed outcome (whatever it was), 1 when the agent crashed, 2 on bad input."""
    if args.at < 0:
        raise HarnessError(f"--at {args.at}: a request index is 0 or more")
    try:
        outcome = run_chaos(args.cassette, at=args.at, fault=args.fault, scenario=args.scenario,
                            scenario_set=args.scenario_set)
    except HarnessError:
        raise
    except Exception as crash:  # what chaos is for: an agent that raises instead of ending its run
        print(f"harness chaos: the agent crashed under {args.fault} at request {args.at}: "
              f"{type(crash).__name__}: {crash}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2))
        return 0
    result, recorded = outcome.result, outcome.recorded  # each run read from its own exchanges
    fired = "; ".join(fault.describe() for fault in outcome.fired) or "nothing (the fault never struck)"
    ending = result.outcome.describe() if result.outcome is not None else "no Messages API call"
    print(f"harness chaos: {outcome.scenario} from {outcome.cassette}: {fired}")
    print(f"recorded:   {outcome_word(recorded)} after {counted(len(recorded.steps), 'step')}, "
          f"{counted(outcome.recorded_requests, 'request')}")
    print(f"with fault: {outcome_word(result)} after {counted(len(result.steps), 'step')}, "
          f"{counted(outcome.requests, 'request')}: {ending}")
    retried = "the SDK retried the faulted request" if outcome.retried else "the faulted request was not retried"
    if outcome.same_as_recorded:
        print(f"{retried}; the run ended as recorded")
    else:
        print(f"{retried}; the run ended differently: outcome {outcome_word(result)}, with the "
              f"{counted(len(result.steps), 'step')} and {counted(len(result.tool_calls), 'tool call')} done before "
              "it ended")
    return 0
