"""Start-up: what `harness --help` and the pytest plugin cost before any work is done.

    python -m bench.startup [--repeats N]

Prints the median wall time of N runs (default 7) of:
- `python -c pass`: the interpreter's own start, the floor under everything else;
- `harness --help`: the console script, as a user types it;
- `harness show` of a bundled cassette (a command that reads files: no SDK);
- an empty pytest session (one test, no cassette) without the plugin (`-p no:loop_harness`) and with it,
  pytest-recording disabled in both so the difference is this plugin's alone.

Targets (issue 13): `harness --help` under 0.3 s; the plugin adds under 0.05 s to a session with no cassette.
Timing lives here, never in tests: the tests check what makes start-up cheap (which modules load).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _median_seconds(argv: list[str], repeats: int, cwd: Path) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) of running `argv`. CPU time (user + system of the child)
    barely moves when other work shares the machine; wall time is what a user waits on an idle one."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)  # warm the caches once
    walls, cpus = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), _cpu()
        subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    harness = str(BIN / "harness")
    with tempfile.TemporaryDirectory() as folder:
        session = Path(folder)
        (session / "test_plain.py").write_text("def test_plain():\n    assert True\n")
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:recording",
                  "-p", "no:xdist", "test_plain.py"]
        rows = [
            ("python -c pass", _median_seconds([sys.executable, "-c", "pass"], args.repeats, REPO)),
            ("harness --help", _median_seconds([harness, "--help"], args.repeats, REPO)),
            ("harness show cassettes/dayflow/brief.yaml",
             _median_seconds([harness, "show", "cassettes/dayflow/brief.yaml"], args.repeats, REPO)),
            ("pytest, one test, without the plugin",
             _median_seconds([*pytest, "-p", "no:loop_harness"], args.repeats, session)),
            ("pytest, one test, with the plugin", _median_seconds(pytest, args.repeats, session)),
        ]
    width = max(len(name) for name, _ in rows)
    print(f"median of {args.repeats} runs, {sys.platform}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"  {'':{width}}    wall      CPU")
    for name, (wall, cpu) in rows:
        print(f"  {name:{width}}  {wall:6.3f} s {cpu:6.3f} s")
    wall, cpu = rows[4][1][0] - rows[3][1][0], rows[4][1][1] - rows[3][1][1]
    print(f"  {'the plugin adds':{width}}  {wall:+6.3f} s {cpu:+6.3f} s   (target < 0.050 s)")
    print(f"  {'harness --help':{width}}  {rows[1][1][0]:6.3f} s {rows[1][1][1]:6.3f} s   (target < 0.300 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
