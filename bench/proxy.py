"""Per-exchange latency of `harness proxy` as its cassette grows: the save must not grow with it.

One proxy in front of the simulator records N exchanges from one client; the figure is the median
latency of the last exchanges (the client's view: request sent to answer read) at N = 10 and N = 1,000.
Before the journal, the proxy rewrote and fsynced the whole cassette after every exchange, before the
client had its answer, so latency grew with the cassette.

    .venv/bin/python -m bench.proxy               # 10 and 1,000 interactions
    .venv/bin/python -m bench.proxy --sizes 10 200  # quicker
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx2

from harness.proxy import RecordingProxy
from harness.sim import Simulator

WINDOW = 10  # exchanges measured at the end of each run


def run(size: int, folder: Path) -> tuple[float, float]:
    """(median ms of the last WINDOW exchanges, seconds the stop took to write the cassette)."""
    with Simulator() as sim:
        proxy = RecordingProxy(sim.base_url, folder / f"run-{size}.yaml", mode="rewrite").start()
        try:
            latencies: list[float] = []
            with httpx2.Client(base_url=proxy.base_url, timeout=60) as client:
                for n in range(size):
                    body = {"model": "sim-echo", "max_tokens": 32,
                            "messages": [{"role": "user", "content": f"question {n}"}]}
                    started = time.perf_counter()
                    response = client.post("/v1/messages", json=body, headers={"x-api-key": "sk-bench"})
                    response.read()
                    latencies.append((time.perf_counter() - started) * 1000)
                    assert response.status_code == 200, response.text
        finally:
            stop_started = time.perf_counter()
            proxy.stop()
            stopped = time.perf_counter() - stop_started
    return statistics.median(latencies[-WINDOW:]), stopped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as folder:
        results = {size: run(size, Path(folder)) for size in args.sizes}
    base = results[args.sizes[0]][0]
    print(f"{'interactions':>12} | per exchange (median of last {WINDOW}) | ratio | cassette written at stop")
    for size, (latency, stopped) in results.items():
        print(f"{size:>12,} | {latency:>8.2f} ms {'':>22}| {latency / base:4.2f}x | {stopped:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
