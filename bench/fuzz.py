"""Fuzz every cassette reader with mutated cassettes: no traceback, no hang, bounded memory.

A seeded mutator (no dependency: each case is reproducible from its seed) takes the bundled cassettes
and, when present, the real ones in ../shared/real-cassettes, and produces hostile variants: byte flips,
truncations, deleted keys, values of the wrong type, huge numbers and indices, odd unicode, duplicate
keys, deep nesting, anchors, YAML-only scalars (dates, !!binary, !!set). Each variant goes through the
readers in-process: load, show (the trajectory, its JSON and its rendering), the checks eval runs,
replay (the index and every response rebuilt) and serve (every answer written to a fake wire). A reader
may refuse the file with a HarnessError (the CLI's exit 2); anything else is a finding.

    .venv/bin/python -m bench.fuzz --cases 2000          # the longer run; prints figures and findings

tests/test_fuzz.py runs the same thing with a budget of a few seconds on every test run.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import random
import re
import resource
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
REAL = REPO.parent / "shared" / "real-cassettes"


def seed_cassettes(include_real: bool = True) -> list[Path]:
    paths = sorted((REPO / "cassettes").glob("**/*.yaml"))
    if include_real and REAL.is_dir():
        paths += sorted(REAL.glob("**/*.yaml"))
    return paths


# -- mutations ------------------------------------------------------------------------------------------------

HOSTILE_VALUES: list[Any] = [
    None, True, -1, 0, 200_000_000, 10**30, -(10**30), 1.5e308, float("nan"), "", "x" * 5000,
    "\u202e\u200b\ufeff", [], {}, [[[[]]]], {"a": {"b": {}}}, "2026-01-01", ["index"],
]
YAML_ONLY = ["2026-09-07", "!!binary aGVsbG8=", "!!set {a, b}", "2026-09-07T08:00:00Z", "!!timestamp 2001-12-14"]


def _containers(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _containers(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _containers(value, (*path, index))


def _mutate_data(data: Any, rng: random.Random) -> Any:
    data = copy.deepcopy(data)
    nodes = [(path, node) for path, node in _containers(data) if path]
    if not nodes:
        return data
    for _ in range(rng.choice((1, 1, 2, 3))):
        path, _node = rng.choice(nodes)
        action = rng.randrange(6)
        try:
            parent = data
            for step in path[:-1]:
                parent = parent[step]
            key = path[-1]
            if action == 0 and isinstance(parent, dict):
                del parent[key]
            elif action == 1:
                parent[key] = copy.deepcopy(rng.choice(HOSTILE_VALUES))
            elif action == 2:
                nested: Any = parent[key]
                for _ in range(rng.choice((50, 300, 900))):
                    nested = [nested]
                parent[key] = nested
            elif action == 3 and isinstance(parent, list):
                parent.append(copy.deepcopy(parent[key]))
            elif action == 4 and isinstance(parent, dict):
                parent[key] = {"type": rng.choice(["text", "tool_use", "content_block_delta", "message_delta"]),
                               "index": rng.choice([0, -1, 200_000_000, "0", None])}
            else:
                parent[key] = str(parent[key])[:50] if rng.random() < 0.5 else -1
        except (KeyError, IndexError, TypeError):
            continue
    return data


def _dump(data: Any) -> str:
    try:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10**9)
    except (yaml.YAMLError, RecursionError, ValueError):
        pass
    try:
        return json.dumps(data, default=str)  # JSON is YAML too, and nests deeper in one line
    except (RecursionError, ValueError):
        return "harness: {}\ninteractions: " + "[" * 5000 + "]" * 5000 + "\n"


def _mutate_text(text: str, rng: random.Random) -> str:
    action = rng.randrange(7)
    if action == 0:  # truncate
        return text[: rng.randrange(max(1, len(text)))]
    if action == 1:  # cut at an `index:`
        spots = [m.end() for m in re.finditer(r"index: ", text)]
        return text[: rng.choice(spots)] if spots else text[: len(text) // 2]
    if action == 2:  # byte flips
        chars = list(text)
        for _ in range(rng.randint(1, 8)):
            if chars:
                chars[rng.randrange(len(chars))] = chr(rng.choice([0, 9, 10, 34, 38, 42, 58, 91, 123, 0x202E, 0xFFFD]))
        return "".join(chars)
    if action == 3:  # a YAML-only scalar as a value
        spots = [m.end() for m in re.finditer(r": ", text)]
        if spots:
            at = rng.choice(spots)
            rest = text[at:].split("\n", 1)
            return text[:at] + rng.choice(YAML_ONLY) + ("\n" + rest[1] if len(rest) > 1 else "")
        return text
    if action == 4:  # duplicate a line (duplicate keys)
        lines = text.split("\n")
        at = rng.randrange(len(lines))
        lines.insert(at, lines[at])
        return "\n".join(lines)
    if action == 5:  # an anchor and aliases
        return text.replace("interactions:", "x: &a [1, 2]\ny: [*a, *a]\ninteractions:", 1)
    return text.replace("index: 0", f"index: {rng.choice([200000000, -5, 99, 1.5, 'null', '[]'])}", 1)


@dataclass
class Case:
    seed: int
    source: Path
    text: str


def cases(count: int, seed: int = 0, include_real: bool = True) -> Iterator[Case]:
    rng = random.Random(seed)
    sources = seed_cassettes(include_real)
    parsed: dict[Path, Any] = {}
    for n in range(count):
        source = sources[rng.randrange(len(sources))]
        text = source.read_text(encoding="utf-8")
        case_rng = random.Random(f"{seed}:{n}")
        if case_rng.random() < 0.5:
            if source not in parsed:
                parsed[source] = yaml.safe_load(text)
            try:
                text = _dump(_mutate_data(parsed[source], case_rng))
            except RecursionError:  # the mutator's own copy of a value it nested very deep
                text = _mutate_text(text, case_rng)
        else:
            text = _mutate_text(text, case_rng)
        yield Case(n, source, text)


# -- the readers ----------------------------------------------------------------------------------------------


class _Wire:
    """A Responder that writes nowhere: what serve would send, without a socket."""

    status: int | None = None

    def send_head(self, status: int, headers: Any, **_: Any) -> None:
        self.status = status
        list(headers)

    def write_chunk(self, data: bytes) -> None:
        assert isinstance(data, bytes)

    def finish(self) -> None: ...

    def drop(self) -> None: ...

    def send_body(self, status: int, headers: Any, body: bytes, **_: Any) -> None:
        self.send_head(status, headers)
        assert isinstance(body, bytes)


def read_every_way(path: Path) -> None:
    """Everything each reader does with a cassette; a HarnessError is a clean refusal."""
    from rich.console import Console

    from harness.cassette.recorder import Cassette
    from harness.cassette.transport import replayed_response
    from harness.checks.registry import CHECKS, run_check
    from harness.commands.show import render
    from harness.evals.results import run_details, step_details
    from harness.httpserver.answers import write_recorded
    from harness.trajectory import Trajectory, load_cassette_any

    loaded = load_cassette_any(path)
    trajectory = Trajectory.from_cassette(loaded)  # show, eval, bless, compare
    json.dumps(trajectory.to_dict())
    render(trajectory, Console(file=io.StringIO(), width=100), excerpt=200)
    json.dumps({"steps": step_details(trajectory, loaded), "runs": run_details(trajectory, loaded),
                "usage": trajectory.usage.to_dict(), "cost": trajectory.cost_usd})
    for name in CHECKS:  # eval: a check that crashes is a failed result, never a traceback
        run_check(name, trajectory, {})
    cassette = Cassette(path, "none", allow_repeats=True)  # replay and serve
    for interaction in cassette.recorded.interactions:
        if "response" in interaction:
            replayed_response(interaction["response"]).read()
        write_recorded(_Wire(), interaction)  # type: ignore[arg-type]
    replay_each_request(cassette)


def replay_each_request(cassette: Any) -> None:
    """Replay matching as a client meets it: each recorded request sent again (found by its bytes or its
    fingerprint), then one the file never held (a miss, with the nearest recorded request and its diff)."""
    from harness.cassette.match import wire_body
    from harness.cassette.mismatch import CassetteMismatch

    requests = [interaction["request"] for interaction in cassette.recorded.interactions]
    stranger = {"method": "POST", "path": "/v1/messages", "body": {"model": "claude-sonnet-5", "max_tokens": 1,
                                                                      "messages": [{"role": "user", "content": "?"}]}}
    for request in [*requests, stranger]:
        try:
            found = cassette.lookup(request["method"], request["path"], request.get("query"), wire_body(request))
            if found.position is not None:
                cassette.play(found)
        except CassetteMismatch as miss:  # a clean miss: the message a person reads
            str(miss)


@dataclass
class Findings:
    cases: int = 0
    refused: int = 0
    read: int = 0
    tracebacks: list[tuple[int, str, str]] = field(default_factory=list)
    slowest: float = 0.0


def fuzz(count: int, *, seed: int = 0, budget: float | None = None, include_real: bool = True,
         reader: Callable[[Path], None] = read_every_way) -> Findings:
    from harness.errors import HarnessError

    found = Findings()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="harness-fuzz-") as folder:
        target = Path(folder) / "case.yaml"
        for case in cases(count, seed, include_real):
            if budget is not None and time.monotonic() - started > budget:
                break
            target.write_text(case.text, encoding="utf-8", errors="surrogatepass")
            one = time.monotonic()
            try:
                reader(target)
                found.read += 1
            except HarnessError:
                found.refused += 1
            except Exception as error:  # a finding: the reader did not turn the file into a clean refusal
                frames = [f"{Path(frame.filename).name}:{frame.lineno} {frame.name}"
                          for frame in traceback.extract_tb(error.__traceback__) if "/harness/" in frame.filename]
                found.tracebacks.append((case.seed, str(case.source.name),
                                         f"{type(error).__name__}: {str(error)[:200]}\n  at " + " <- ".join(
                                             reversed(frames[-4:]))))
            found.slowest = max(found.slowest, time.monotonic() - one)
            found.cases += 1
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-real", action="store_true", help="bundled cassettes only")
    args = parser.parse_args(argv)
    # A mutated index must not be able to take the machine with it: 2 GB of address space at most.
    resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, resource.RLIM_INFINITY))
    started = time.monotonic()
    found = fuzz(args.cases, seed=args.seed, include_real=not args.no_real)
    elapsed = time.monotonic() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{found.cases} mutated cassettes from {len(seed_cassettes(not args.no_real))} seeds in {elapsed:.1f} s "
          f"({1000 * elapsed / max(1, found.cases):.1f} ms each, slowest {found.slowest * 1000:.0f} ms, "
          f"peak RSS {peak:.0f} MB)")
    print(f"read cleanly: {found.read}; refused with a reason (exit 2): {found.refused}; "
          f"tracebacks: {len(found.tracebacks)}")
    for seed, source, trace in found.tracebacks[:20]:
        print(f"\n--- case {seed} (from {source})\n{trace}")
    return 1 if found.tracebacks else 0


if __name__ == "__main__":
    sys.exit(main())
