"""`harness sim`: run the simulator in the foreground until Ctrl-C, SIGTERM or --max-requests; or
`harness sim [OPTIONS] -- COMMAND...`: run COMMAND with ANTHROPIC_BASE_URL set to the simulator, then stop.

The second form is what a script wants: nothing to wait for and nothing left behind. When the simulator cannot
start (the port is taken) it exits 2 at once and COMMAND never runs; otherwise COMMAND's exit code is the
command's. With --port 0 the system picks a free port; --url-file writes the base URL once the server listens
(a file left by an earlier run is removed first), for a script that starts `harness sim --url-file F &`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from harness.errors import HarnessError
from harness.files import atomic_write_text
from harness.httpserver import run_until_stopped
from harness.sim.faults import FAULT_KINDS, Fault, parse_fault_spec
from harness.sim.policies import POLICIES
from harness.sim.ratelimit import RateLimits
from harness.sim.server import Simulator


def _fault_argument(text: str) -> tuple[int, Fault]:
    try:
        return parse_fault_spec(text)
    except HarnessError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of 1 or more, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port; 0 picks a free one (default 8765)")
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        type=_fault_argument,
        metavar="IDX:KIND",
        help="inject a fault at /v1/messages request IDX (0-based); KIND is one of "
        f"{', '.join(FAULT_KINDS)}; options as IDX:KIND:delay=2,retry_after=1,after_events=3",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for the deterministic ids (default 0)")
    parser.add_argument(
        "--policy", choices=sorted(POLICIES), help="default scripted model when the request names none"
    )
    parser.add_argument(
        "--default-model",
        metavar="NAME",
        help="the simulator model that answers Claude model ids (default: sim-auto, or the first --script); "
        "e.g. sim-auto:serial,rounds=2,until-corrected",
    )
    parser.add_argument(
        "--script",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="a scripted model in YAML, served as sim-<its name> (repeatable); checked before the server starts",
    )
    for flag, what in (("--rpm", "requests"), ("--itpm", "input tokens"), ("--otpm", "output tokens")):
        parser.add_argument(
            flag, type=_positive, default=None, metavar="N",
            help=f"enforce a limit of N {what} per minute (a token bucket, as the API's), answering 429 "
            "rate_limit_error with retry-after beyond it; the anthropic-ratelimit-* headers show its state",
        )
    parser.add_argument("--url-file", type=Path, help="write the base URL to this file once listening")
    parser.add_argument(
        "--max-requests", type=int, default=None, help="exit after answering this many /v1/messages requests"
    )
    parser.add_argument("--quiet", action="store_true", help="do not log each request to stderr")
    parser.add_argument(
        "run_command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND",
        help="run COMMAND with ANTHROPIC_BASE_URL pointing at the simulator, stop when it ends, and exit with its "
        "code (2 at once, without running it, when the simulator cannot start)",
    )
    parser.add_argument(
        "--no-threads",
        dest="threads",
        action="store_false",
        help="answer every message-threads request with thread_unsupported_request, so clients fall back "
        "to sending the whole conversation",
    )


def _answered(simulator: Simulator) -> int:
    return sum(1 for served in list(simulator.served) if served.index is not None)


def run(args: argparse.Namespace) -> int:
    faults = dict(args.fault)
    simulator = Simulator(
        host=args.host,
        port=args.port,
        faults=faults,
        seed=args.seed,
        policy=args.policy,
        verbose=not args.quiet,
        threads=args.threads,
        model=args.default_model,
        scripts=args.script,
        rate_limits=RateLimits(rpm=args.rpm, itpm=args.itpm, otpm=args.otpm),
    )
    command = args.run_command[1:] if args.run_command[:1] == ["--"] else args.run_command
    if command:
        return run_beside(simulator, command, url_file=args.url_file)
    limits = [f"{value} {unit}" for value, unit in ((args.rpm, "rpm"), (args.itpm, "itpm"), (args.otpm, "otpm"))
              if value is not None]
    if limits:
        print(f"harness sim: rate limits {', '.join(limits)} (429 beyond them)", flush=True)
    # The shared foreground loop: the URL file written atomically once listening, SIGTERM or Ctrl-C stop within
    # a second, --max-requests lets the last answers finish.
    run_until_stopped(
        simulator,
        banner=f"harness sim: listening on {{url}} (seed {args.seed}; set ANTHROPIC_BASE_URL={{url}}); Claude "
        f"model ids are answered by {simulator.policy or 'sim-auto (sim-dayflow/sim-sql for the reference agents)'}",
        url_file=args.url_file,
        on_stop=lambda: print(f"harness sim: stopped after {simulator.requests_seen} /v1/messages requests",
                              file=sys.stderr),
        done=None if args.max_requests is None else lambda: _answered(simulator) >= args.max_requests,
    )
    return 0


def run_beside(simulator: Simulator, command: list[str], *, url_file: Path | None = None) -> int:
    """COMMAND run with ANTHROPIC_BASE_URL set to the simulator, which listens first (or this raises, exit 2, and
    COMMAND never runs) and stops when COMMAND ends; COMMAND's exit code, 128 + N for a signal N."""
    if url_file is not None:
        url_file.unlink(missing_ok=True)
    simulator.start()
    try:
        if url_file is not None:
            atomic_write_text(url_file, simulator.base_url + "\n")
        env = {**os.environ, "ANTHROPIC_BASE_URL": simulator.base_url}
        try:
            child = subprocess.Popen(command, env=env)
        except OSError as err:
            raise HarnessError(f"cannot run {command[0]!r}: {err.strerror or err}") from None
        while True:
            try:
                code = child.wait()
                break
            except KeyboardInterrupt:  # the command got the same Ctrl-C: it ends as it chooses, then we stop
                continue
    finally:
        simulator.stop(1.0)
    return 128 - code if code < 0 else code
