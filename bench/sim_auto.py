"""sim-auto's cost at request time: a schema-valid input per tool, and a whole first turn.

    .venv/bin/python -m bench.sim_auto            # 2,000 inputs per schema, 500 turns

Figures (the median of 5 repeats): per input, for each tool of the order-desk agent in
tests/unseen_agent.py (nested objects, $ref, anyOf, formats, patterns, arrays), each input made with a
new seed and checked against its schema (the check is part of the cost); per turn, the sim-auto
answer to the agent's first request, without HTTP: its words call for all three tools (chosen by word overlap,
each input filled from the conversation and made up where it must be), and the first is called (the other two
wait for its result).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from harness.sim import auto
from harness.sim.conversation import Conversation
from harness.sim.schema_instances import instance_for
from tests.unseen_agent import SYSTEM, TOOLS


def _median_ms(run: object, count: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run(count)  # type: ignore[operator]
        times.append((time.perf_counter() - start) / count * 1000)
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sim_auto")
    parser.add_argument("--inputs", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    for tool in TOOLS:
        schema = tool["input_schema"]
        ms = _median_ms(lambda n, s=schema: [instance_for(s, i) for i in range(n)], args.inputs, args.repeat)
        print(f"input for {tool['name']:<18} {ms:.3f} ms")
    ask = "Search the products for a rake, order it and schedule the delivery"
    body = {"model": "claude-sonnet-5", "max_tokens": 1024, "system": SYSTEM, "tools": TOOLS,
            "messages": [{"role": "user", "content": ask}]}
    options = auto.AutoOptions()

    def turns(n: int) -> None:
        for seed in range(n):
            auto.answer(Conversation(body), options, seed)

    print(f"first turn (3 tools chosen) {_median_ms(turns, args.turns, args.repeat):.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
