"""What covering every HTTP client costs a cassette (harness/cassette/other_clients.py, issue 37).

    python -m bench.other_clients [--repeats N]

Each figure in a fresh process, so that what it imported is what a user's process would have imported:
- opening and closing a replay `use_cassette` (a one-request cassette recorded against the in-process simulator),
  and of that the patches of the other libraries (`other_clients.intercepted`), in a process that imported only
  the SDK and in one that imported httpx 0.x and requests too (litellm's case: vcrpy's patches go on);
- the CPU time of importing vcrpy's patch module in each of those processes.

Timing lives here, never in tests: tests/test_other_clients.py checks that a replay through the SDK alone loads
no vcrpy.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import timeit
from pathlib import Path
if {others}:
    import httpx, requests
from harness import use_cassette
from harness.cassette import other_clients

path = Path({path!r})
def open_close():
    with use_cassette(path, mode="none", on_unplayed="ignore"):
        pass
def patches():
    with other_clients.intercepted():
        pass
open_close()
n = 300
whole = min(timeit.repeat(open_close, number=n, repeat={repeats})) / n
part = min(timeit.repeat(patches, number=n, repeat={repeats})) / n
print(f"{{whole * 1e3:.3f}} {{part * 1e3:.3f}}")
"""

# vcrpy's patch module imports every library it patches: what it costs depends on what was imported before it.
IMPORT = """
import time
import harness.cassette.recorder
if {others}:
    import httpx, requests
started = time.process_time()
import vcr.patch
print(f"{{time.process_time() - started:.3f}}")
"""

RECORD = """
import anthropic
from harness import use_cassette
from harness.sim import Simulator
with Simulator() as sim, use_cassette({path!r}, mode="once"):
    anthropic.Anthropic(base_url=sim.base_url, api_key="k" * 40).messages.create(
        model="claude-sonnet-5", max_tokens=8, messages=[{{"role": "user", "content": "hi"}}])
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "one.yaml")
        subprocess.run([sys.executable, "-c", RECORD.format(path=path)], check=True)
        for label, others in (("the SDK alone", False), ("with httpx 0.x and requests", True)):
            done = subprocess.run([sys.executable, "-c", CHILD.format(others=others, path=path, repeats=args.repeats)],
                                  check=True, capture_output=True, text=True)
            whole, part = done.stdout.split()
            vcrpy = subprocess.run([sys.executable, "-c", IMPORT.format(others=others)], check=True,
                                   capture_output=True, text=True).stdout.strip()
            print(f"{label:>28}: use_cassette open+close {whole} ms, of which other clients' patches {part} ms; "
                  f"importing vcrpy's patches then {vcrpy} s of CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
