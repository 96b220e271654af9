"""Eval at scale: `harness eval` over N small cassettes, its time and peak memory, at two or more sizes.

    .venv/bin/python -m bench.eval_scale                        # 1,000 and 10,000 cassettes
    .venv/bin/python -m bench.eval_scale --counts 1000 3000 --mode in-memory

Each size is a fresh project in a temp folder: N cassettes cycled from the bundled agent cassettes (8 to
26 kB each, one to seven recorded requests; a comment line makes each file's bytes its own) and one golden
judging every one of them with three checks. Each run is a separate process (`harness eval GOLDEN --json F`,
its per-case lines sent to a file), so the peak resident memory it prints is that run's alone. Linear time
shows as the same CPU microseconds per kB of cassette at every size (CPU time of the eval process, since wall
time moves with whatever else the machine runs); bounded memory as the same peak at every size.
`--mode in-memory` runs the library's `run_suites` and writes the document whole (how `harness eval` worked
before it streamed), for comparison.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKS = [
    {"check": "tool_ids_matched"},
    {"check": "no_repeated_calls"},
    {"check": "budgets", "params": {"max_steps": 8}},
]

# Run in the child: one eval, its own peak RSS and wall time as a JSON line on the real stdout.
CHILD = """
import contextlib, json, resource, sys, time
from pathlib import Path
golden, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
real = sys.stdout
started = time.perf_counter()
with open(out + ".log", "w") as log, contextlib.redirect_stdout(log):
    if mode == "stream":
        from harness.cli import main
        code = main(["eval", golden, "--json", out])
    else:
        from harness.evals.results import exit_code, write_results
        from harness.evals.runner import run_suites
        from harness.evals.suite import discover_suites
        results = run_suites(discover_suites([golden]))
        write_results(out, results)
        code = exit_code(results)
seconds = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_SELF)
cpu = usage.ru_utime + usage.ru_stime  # the process's own CPU time: less moved by other work on the machine
real.write(json.dumps({"code": code, "seconds": seconds, "cpu": cpu, "peak_kb": usage.ru_maxrss}) + "\\n")
"""


def make_project(folder: Path, count: int) -> tuple[Path, int]:
    """A project with `count` cassettes and one golden over all of them; (the golden, the cassettes' bytes)."""
    sources = sorted((ROOT / "cassettes").rglob("*.yaml"))
    texts = [path.read_text(encoding="utf-8") for path in sources]
    (folder / "pyproject.toml").write_text("", encoding="utf-8")
    names = []
    total = 0
    for index in range(count):
        relative = f"cassettes/{index // 1000:03d}/case-{index:05d}.yaml"
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = f"# scale case {index}\n" + texts[index % len(texts)]
        path.write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
        names.append(relative)
    golden = folder / "golden" / "scale.json"
    golden.parent.mkdir()
    golden.write_text(json.dumps({"name": "scale", "cassettes": names, "checks": CHECKS}), encoding="utf-8")
    return golden, total


def measure(count: int, mode: str) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="harness-eval-scale-"))
    try:
        golden, size = make_project(folder, count)
        out = folder / "results.json"
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(golden), str(out), mode],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0 or not done.stdout.strip():
            raise SystemExit(f"the eval of {count} cassettes failed:\n{done.stderr[-2000:]}")
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        results = json.loads(out.read_text(encoding="utf-8"))
        assert results["summary"]["cases"] == count, results["summary"]
        return figures | {"bytes": size, "results_bytes": out.stat().st_size}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.eval_scale", description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument(
        "--mode",
        choices=["stream", "in-memory", "both"],
        default="stream",
        help="stream: `harness eval` as shipped; in-memory: the document built whole, as before it streamed",
    )
    args = parser.parse_args(argv)
    modes = ["stream", "in-memory"] if args.mode == "both" else [args.mode]
    print(f"{'mode':10} {'cassettes':>9} {'MB in':>7} {'wall s':>7} {'CPU s':>7} {'CPU ms/case':>11} "
          f"{'CPU µs/kB':>9} {'peak RSS MB':>11} {'results MB':>10}")
    for mode in modes:
        for count in args.counts:
            figures = measure(count, mode)
            kb = figures["bytes"] / 1024
            print(
                f"{mode:10} {count:>9,} {figures['bytes'] / 1e6:>7.1f} {figures['seconds']:>7.1f} "
                f"{figures['cpu']:>7.1f} {figures['cpu'] * 1000 / count:>11.2f} {figures['cpu'] * 1e6 / kb:>9.0f} "
                f"{figures['peak_kb'] / 1024:>11.0f} {figures['results_bytes'] / 1e6:>10.1f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
