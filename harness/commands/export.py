"""`harness export CASSETTE... --otel FILE | --otlp-endpoint URL | --inspect FILE`: trajectories for the
tools people already look in: any OTLP trace viewer (through a collector) and `inspect view`.

--otel FILE writes OTLP/JSON (one ExportTraceServiceRequest per cassette, one per line: what a
Collector's file exporter writes and its otlpjsonfile receiver reads); --otlp-endpoint URL sends OTLP
over HTTP (a bare http://host:4318 gets /v1/traces); --inspect FILE writes an inspect_ai eval log (.eval
or .json) with the checks of the suite cases that name each cassette as scores. Message content goes
into spans only with --include-content (the inspect log always holds the transcript: it is the point
of it). Each format needs its extra: loop-harness[otel], loop-harness[inspect]; without it, exit 2 and
the pip command to run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.commands import add_golden_dir_argument, add_suite_argument
from harness.errors import HarnessError
from harness.trajectory import Trajectory, load_trajectory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cassettes", nargs="+", metavar="CASSETTE",
                        help="cassettes (ours, or vcrpy / pydantic-ai / HAR)")
    parser.add_argument("--otel", metavar="FILE", help="write OTLP/JSON traces here (one line per cassette)")
    parser.add_argument("--otlp-endpoint", metavar="URL", help="send OTLP/HTTP traces to this collector")
    parser.add_argument("--include-content", action="store_true",
                        help="put prompts, answers and tool arguments/results into the spans (off: they can be "
                             "sensitive)")
    parser.add_argument("--inspect", metavar="FILE", help="write an inspect_ai eval log here (.eval or .json)")
    add_suite_argument(parser, purpose="suites whose checks score the cassettes in --inspect")
    add_golden_dir_argument(parser)


def run(args: argparse.Namespace) -> int:
    if not (args.otel or args.otlp_endpoint or args.inspect):
        raise HarnessError("say where to export: --otel FILE, --otlp-endpoint URL or --inspect FILE")
    if args.otel or args.otlp_endpoint:
        from harness.export.otel import require_otel, traces_url

        require_otel()
        if args.otlp_endpoint:
            traces_url(args.otlp_endpoint)  # a bad URL is bad input before any work is done
    if args.inspect:
        from harness.export.inspect_log import require_inspect

        require_inspect()
    trajectories = [load_trajectory(path) for path in args.cassettes]
    if args.otel:
        from harness.export.otel import write_otlp_json

        count = write_otlp_json(args.otel, trajectories, include_content=args.include_content)
        print(f"{_traces(trajectories)} trace(s), {count} span(s): {args.otel}")
    if args.otlp_endpoint:
        from harness.export.otel import send_otlp

        count = send_otlp(args.otlp_endpoint, trajectories, include_content=args.include_content)
        print(f"{_traces(trajectories)} trace(s), {count} span(s) sent to {args.otlp_endpoint}")
    if args.inspect:
        _write_inspect(args, trajectories)
    return 0


def _traces(trajectories: list[Trajectory]) -> int:
    return sum(len(t.runs) for t in trajectories)


def _write_inspect(args: argparse.Namespace, trajectories: list[Trajectory]) -> None:
    from harness.export.checks import case_records, suite_cases
    from harness.export.inspect_log import CassetteSample, write_inspect_log

    cases = suite_cases(args.suite, golden_dir=args.golden)
    exported = []
    for path, trajectory in zip(args.cassettes, trajectories, strict=True):
        records = case_records(path, cases)
        if not records:
            print(f"harness export: {path}: no suite case names this cassette; its sample has no scores",
                  file=sys.stderr)
        exported.append(CassetteSample(trajectory=trajectory, label=str(Path(path)), records=records))
    target = write_inspect_log(args.inspect, exported)
    scored = sum(1 for case in exported if case.records)
    print(f"{len(exported)} sample(s), {scored} with checks as scores: {target}")
