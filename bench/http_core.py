"""Per-request latency of the one HTTP server core, seen through the simulator: one keep-alive client sends
N small /v1/messages requests and the figure is the median time from request sent to answer read.

The core sends a head and its body in two writes; with Nagle's algorithm on, the body waited for the
client's delayed ACK of the head (about 40 ms on loopback). `--nagle` turns it back on to show that.

    .venv/bin/python -m bench.http_core             # as shipped (TCP_NODELAY)
    .venv/bin/python -m bench.http_core --nagle     # as before
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx2

from harness.httpserver import HardenedHandler
from harness.sim import Simulator

BODY = {"model": "sim-echo", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--nagle", action="store_true", help="leave Nagle's algorithm on, as before")
    args = parser.parse_args()
    HardenedHandler.disable_nagle_algorithm = not args.nagle
    latencies: list[float] = []
    with Simulator() as sim, httpx2.Client(base_url=sim.base_url, headers={"x-api-key": "sk-bench"}) as client:
        client.post("/v1/messages", json=BODY)  # the connection, opened once
        for _ in range(args.requests):
            started = time.perf_counter()
            client.post("/v1/messages", json=BODY).raise_for_status()
            latencies.append((time.perf_counter() - started) * 1000)
    nagle = "on" if args.nagle else "off (TCP_NODELAY)"
    print(f"simulator, {args.requests} requests on one connection, Nagle {nagle}: "
          f"median {statistics.median(latencies):.2f} ms, p90 {statistics.quantiles(latencies, n=10)[-1]:.2f} ms")


if __name__ == "__main__":
    main()
