"""Replay speed: the harness against plain vcrpy and against the SDK's own floor, at several cassette sizes.

    .venv/bin/python -m bench.replay                      # 100, 1,000 and 5,000 interactions, 3 repeats
    .venv/bin/python -m bench.replay --quick              # 100 and 1,000, one repeat: a quick look
    .venv/bin/python -m bench.replay --sizes 100,1000 --repeat 5 --json figures.json

Per request, with the real anthropic SDK (2.x, over httpx2) making each call the way an agent does
(`messages.create`, or `messages.stream(...).get_final_message()` for the streamed runs):

- harness: `use_cassette(path, mode="none")`, the whole cassette replayed in order;
- floor: the SDK over `httpx2.MockTransport` serving prebuilt responses from a dict (no recorder at all),
  timed on the same requests as the harness's windows, alternately just before and just after them, so
  that load from other processes on the machine weighs on both alike;
- vcrpy: `vcr.VCR().use_cassette` with its default matchers, the same content as a vcrpy YAML cassette;
- vcrpy+body: vcrpy matching on method, uri and body, on sizes up to --body-max, a few requests only.

Each is timed on a window of requests at the START of the cassette and one at its END: the growth with
size is the point. vcrpy serves in order, so its end window is reached by marking the interactions
before it as played, which is the state a full replay leaves (its matchers still run over them).
Load time compares our YAML through `load_cassette` (cold: no parse cache; warm: cached) with
`json.loads` of the same content, plain and with the cyclic collector paused. "open" is everything
before the first request: load, the request index, the transport patch. Peak memory (tracemalloc)
covers opening the cassette and replaying the start window. Figures are the median over --repeat runs.

Every replayed answer is checked against the recorded message id, so a fast wrong answer cannot pass for
speed. The requests are kept as JSON text between calls, so the benchmark's own data does not add to
the heap the collector walks while the replays are timed.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import vcr
from rich.console import Console
from rich.table import Table

try:  # `python -m bench.replay` from the repository root, or `python bench/replay.py`
    from bench._cassettes import CYCLE, agent_interactions, sdk_arguments, write_all
except ModuleNotFoundError:  # pragma: no cover - run as a plain script
    from _cassettes import CYCLE, agent_interactions, sdk_arguments, write_all  # type: ignore[no-redef]

from harness import commands
from harness.cassette.format import load_cassette
from harness.cassette.recorder import use_cassette
from harness.wire.bodies import body_bytes

API_KEY = "sk-ant-bench-0000"
CACHE_ENV = "LOOP_HARNESS_CACHE_DIR"  # harness.cassette.format.CACHE_ENV; named here so older code can be measured


# -- one SDK call, as an agent makes it -------------------------------------------------------------------

@dataclass(frozen=True)
class Call:
    """One recorded request as the benchmark replays it, and the answer it must get."""

    kwargs_json: str  # the arguments to messages.create / messages.stream, as JSON text
    streamed: bool
    expected_id: str
    status: int  # the recorded response, for the floor's prebuilt answers
    headers: tuple[tuple[str, str], ...]
    content: bytes


def calls_of(interactions: Sequence[dict[str, Any]]) -> list[Call]:
    out = []
    for interaction in interactions:
        kwargs, streamed = sdk_arguments(interaction)
        response = interaction["response"]
        message = response["events"][0]["data"]["message"] if "events" in response else response["body"]
        out.append(Call(json.dumps(kwargs), streamed, message["id"], response["status"],
                        tuple(response["headers"].items()), body_bytes(response)))
    return out


def send(client: anthropic.Anthropic, kwargs: dict[str, Any], streamed: bool) -> str:
    """One request through the SDK; the id of the Message that comes back."""
    if streamed:
        with client.messages.stream(**kwargs) as stream:
            return stream.get_final_message().id
    return client.messages.create(**kwargs).id


# What a request or a load is timed with: this thread's CPU time. Every engine here runs in the calling thread
# without I/O, so on an idle machine this is its wall time; on a shared one it leaves out the waits for a core,
# which land on whichever request is running and were most of the spread between runs.
clock = time.thread_time


def timed_calls(client: anthropic.Anthropic, calls: Sequence[Call], positions: range) -> list[float]:
    """CPU seconds per request for `positions`, in order; raises if any answer is not the recorded one."""
    out = []
    for position in positions:
        call = calls[position]
        kwargs = json.loads(call.kwargs_json)
        start = clock()
        got = send(client, kwargs, call.streamed)
        out.append(clock() - start)
        if got != call.expected_id:
            raise AssertionError(f"request {position}: the replay answered {got}, the recording {call.expected_id}")
    return out


def _refuse(request: httpx2.Request) -> httpx2.Response:
    raise AssertionError(f"a replay reached the transport: {request.method} {request.url}")


# As imported, before any cassette patches them: the floor's clients keep these, out of a cassette's reach.
_TRANSPORT_FOR_URL = httpx2.Client._transport_for_url
_BUILD_REQUEST = anthropic.Anthropic._build_request


class FloorHttpClient(httpx2.Client):
    """An httpx2 client whose transport choice no cassette wraps: the floor can be timed inside a replay."""

    _transport_for_url = _TRANSPORT_FOR_URL


class FloorAnthropic(anthropic.Anthropic):
    """The SDK client with its own request building, unchecked by a cassette (it talks to the floor's client)."""

    _build_request = _BUILD_REQUEST


def sdk_client(handler: Callable[[httpx2.Request], httpx2.Response] = _refuse, *,
               floor: bool = False) -> anthropic.Anthropic:
    if floor:
        return FloorAnthropic(api_key=API_KEY, max_retries=0,
                              http_client=FloorHttpClient(transport=httpx2.MockTransport(handler)))
    return anthropic.Anthropic(api_key=API_KEY, max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


# -- the ways of answering -------------------------------------------------------------------------------------

def floor_client(calls: Sequence[Call], positions: Iterable[int]) -> anthropic.Anthropic:
    """The SDK alone: MockTransport answering from a dict of prebuilt responses keyed by the request's bytes."""
    prebuilt: dict[bytes, Call] = {}
    wanted = list(positions)
    pending = iter(wanted)

    def learn(request: httpx2.Request) -> httpx2.Response:  # a first pass: which bytes the SDK sends for which
        call = prebuilt[request.content] = calls[next(pending)]
        return httpx2.Response(call.status, headers=list(call.headers), content=call.content)

    def serve(request: httpx2.Request) -> httpx2.Response:
        call = prebuilt[request.content]
        return httpx2.Response(call.status, headers=list(call.headers), content=call.content)

    learner = sdk_client(learn, floor=True)
    for position in wanted:
        send(learner, json.loads(calls[position].kwargs_json), calls[position].streamed)
    return sdk_client(serve, floor=True)


def floor_replay(calls: Sequence[Call], positions: range) -> list[float]:
    return timed_calls(floor_client(calls, positions), calls, positions)


@dataclass
class ReplayRound:
    opened: float  # seconds to enter use_cassette: load, index, patch
    harness: list[float]  # seconds per request, every position in order
    floor: dict[int, float]  # seconds per request at the window positions, timed next to the harness's


def harness_replay(path: Path, calls: Sequence[Call], paired: Iterable[int] = ()) -> ReplayRound:
    """The whole cassette, in order, through use_cassette('none'); the floor timed on the same request
    right before or after (alternately) at the `paired` positions, so load from other processes on
    the machine hits both alike."""
    paired = sorted(set(paired))
    floor = floor_client(calls, paired)
    harness_times: list[float] = []
    floor_times: dict[int, float] = {}
    started = time.perf_counter()
    with use_cassette(path, mode="none") as cassette:
        opened = time.perf_counter() - started
        client = sdk_client()
        pairs = set(paired)
        for position in range(len(calls)):
            window = range(position, position + 1)
            if position in pairs and position % 2:
                floor_times[position] = timed_calls(floor, calls, window)[0]
            harness_times.append(timed_calls(client, calls, window)[0])
            if position in pairs and not position % 2:
                floor_times[position] = timed_calls(floor, calls, window)[0]
    if cassette.unplayed:
        raise AssertionError(f"interactions never asked for: {cassette.unplayed[:5]}")
    return ReplayRound(opened, harness_times, floor_times)


@contextlib.contextmanager
def vcrpy_cassette(path: Path, match_on: tuple[str, ...] | None = None) -> Iterator[Any]:
    options: dict[str, Any] = {"record_mode": "none"}
    if match_on:
        options["match_on"] = match_on
    with vcr.VCR(**options).use_cassette(str(path)) as cassette:
        yield cassette


def vcrpy_window(cassette: Any, calls: Sequence[Call], positions: range) -> list[float]:
    """Requests at `positions` with everything before them already played, as in a full in-order replay."""
    cassette.play_counts = collections.Counter(range(positions.start))
    return timed_calls(sdk_client(), calls, positions)


# -- load time and memory ------------------------------------------------------------------------------------

@contextlib.contextmanager
def parse_cache(path: Path | None) -> Iterator[None]:
    """Point the harness's parse cache at `path` (None: turn it off) for the duration."""
    old = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(path) if path is not None else ""
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = old


def seconds(action: Callable[[], Any], *, collector: bool = True) -> float:
    gc.collect()  # start each load from the same heap, not from the garbage of the one before
    if not collector:
        gc.disable()
    try:
        start = clock()
        action()
        return clock() - start
    finally:
        gc.enable()


def peak_bytes(action: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- one size -------------------------------------------------------------------------------------------------

@dataclass
class SizeFigures:
    """Medians over the repeats, in milliseconds (memory in MB); None where not measured."""

    size: int
    window: int
    floor_start: float = 0.0
    floor_end: float = 0.0
    harness_start: float = 0.0
    harness_end: float = 0.0
    harness_all: float = 0.0
    vcrpy_start: float | None = None
    vcrpy_end: float | None = None
    vcrpy_body_start: float | None = None
    vcrpy_body_end: float | None = None
    body_window: int = 0
    load_yaml_cold: float = 0.0
    load_yaml_warm: float = 0.0
    load_json: float = 0.0
    load_json_paused: float = 0.0
    open_harness: float = 0.0
    open_vcrpy: float | None = None
    yaml_mb: float = 0.0
    memory_harness_mb: float | None = None
    memory_vcrpy_mb: float | None = None
    rounds: dict[str, list[float]] = field(default_factory=dict)

    @property
    def floor(self) -> float:
        """The floor for the end window, timed beside the harness's requests there."""
        return self.floor_end

    @property
    def harness_over_floor(self) -> float:
        """harness/floor in the end window: the median over the rounds of each round's own ratio, so a
        round slowed by other work on the machine moves it less than it moves either figure."""
        pairs = zip(self.rounds.get("harness_end", []), self.rounds.get("floor_end", []), strict=True)
        ratios = [harness / floor for harness, floor in pairs if floor]
        return statistics.median(ratios) if ratios else self.harness_end / self.floor


def windows(size: int, window: int) -> tuple[range, range]:
    """The first `window` requests, and the last `window` that end on a cycle of the generator's runs:
    both then hold the same mix of steps and streams, so they differ only in where they sit."""
    window = max(1, min(window, size // 2))
    last = size - size % CYCLE
    if window % CYCLE or last < 2 * window:
        last = size  # a window that is not whole cycles, or a cassette too short: simply the end
    return range(window), range(last - window, last)


def _ms(values: list[float]) -> float:
    return statistics.fmean(values) * 1000


def measure_size(size: int, folder: Path, *, repeat: int = 3, window: int = 2 * CYCLE, body_max: int = 1000,
                 body_window: int = 3, vcrpy_max: int = 5000, memory: bool = True,
                 log: Callable[[str], None] = lambda _: None) -> SizeFigures:
    start, end = windows(size, window)
    window = len(start)
    log(f"{size}: writing the cassettes")
    interactions = agent_interactions(size)
    files = write_all(folder, size)
    calls = calls_of(interactions)
    del interactions
    figures = SizeFigures(size=size, window=window, yaml_mb=files["harness"].stat().st_size / 1e6)
    runs: dict[str, list[float]] = collections.defaultdict(list)
    cache = folder / f"parse-cache-{size}"
    floor_replay(calls, range(min(size, CYCLE)))  # warm the process: imports, the SDK's first call

    for round_ in range(repeat):
        log(f"{size}: round {round_ + 1}/{repeat}: loading")
        with parse_cache(None):
            runs["load_yaml_cold"].append(seconds(lambda: load_cassette(files["harness"])))
        with parse_cache(cache):
            load_cassette(files["harness"])  # fills the cache
            runs["load_yaml_warm"].append(seconds(lambda: load_cassette(files["harness"])))
        runs["load_json"].append(seconds(lambda: json.loads(files["json"].read_bytes())))
        runs["load_json_paused"].append(seconds(lambda: json.loads(files["json"].read_bytes()), collector=False))

        log(f"{size}: round {round_ + 1}/{repeat}: the harness over all {size} requests, the floor beside it")
        gc.collect()
        with parse_cache(cache):
            result = harness_replay(files["harness"], calls, [*start, *end])
        runs["open_harness"].append(result.opened)
        runs["harness_start"].append(_ms(result.harness[:window]))
        runs["harness_end"].append(_ms(result.harness[-window:]))
        runs["harness_all"].append(_ms(result.harness))
        runs["floor_start"].append(_ms([result.floor[position] for position in start]))
        runs["floor_end"].append(_ms([result.floor[position] for position in end]))

    if size <= vcrpy_max:
        with vcrpy_cassette(files["vcrpy"]):
            pass  # the first open pays for vcrpy's imports and patching, like the warm-up above
        for round_ in range(repeat):
            log(f"{size}: round {round_ + 1}/{repeat}: vcrpy, default matchers")
            gc.collect()
            started = time.perf_counter()
            with vcrpy_cassette(files["vcrpy"]) as cassette:
                runs["open_vcrpy"].append(time.perf_counter() - started)
                runs["vcrpy_start"].append(_ms(vcrpy_window(cassette, calls, start)))
                runs["vcrpy_end"].append(_ms(vcrpy_window(cassette, calls, end)))

    if size <= body_max:
        figures.body_window = sample = max(1, min(body_window, window))
        with vcrpy_cassette(files["vcrpy"], ("method", "uri", "body")) as cassette:
            for round_ in range(repeat):
                log(f"{size}: round {round_ + 1}/{repeat}: vcrpy, body matcher, {sample} requests at each end")
                runs["vcrpy_body_start"].append(_ms(vcrpy_window(cassette, calls, range(sample))))
                runs["vcrpy_body_end"].append(_ms(vcrpy_window(cassette, calls, range(size - sample, size))))

    for name, values in runs.items():
        in_seconds = name.startswith(("load_", "open_"))
        setattr(figures, name, statistics.median(values) * (1000 if in_seconds else 1))
    figures.rounds = dict(runs)

    if memory:
        log(f"{size}: peak memory")

        def open_and_replay_harness() -> None:
            with parse_cache(cache), use_cassette(files["harness"], mode="none", on_unplayed="ignore"):  # a window
                timed_calls(sdk_client(), calls, start)

        def open_and_replay_vcrpy() -> None:
            with vcrpy_cassette(files["vcrpy"]) as cassette:
                vcrpy_window(cassette, calls, start)

        figures.memory_harness_mb = peak_bytes(open_and_replay_harness) / 1e6
        if size <= vcrpy_max:
            figures.memory_vcrpy_mb = peak_bytes(open_and_replay_vcrpy) / 1e6
    return figures


# -- the report -----------------------------------------------------------------------------------------------

def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _ratio(top: float | None, bottom: float | None) -> str:
    return "-" if not top or not bottom else f"{top / bottom:,.2f}x"


def render(results: list[SizeFigures], console: Console) -> None:
    speed = Table(title="Replay: ms per request (mean over the window, median over the repeats)")
    for column in ("interactions", "engine", "start", "end", "end/start", "end/floor", "end/harness"):
        speed.add_column(column, justify="right")
    for f in results:
        rows = [("floor", f.floor_start, f.floor_end), ("harness", f.harness_start, f.harness_end),
                ("vcrpy", f.vcrpy_start, f.vcrpy_end),
                (f"vcrpy+body ({f.body_window} req)", f.vcrpy_body_start, f.vcrpy_body_end)]
        shown = [row for row in rows if row[1] is not None and row[2] is not None]
        for number, (engine, start, end) in enumerate(shown, 1):
            over_floor = f"{f.harness_over_floor:.2f}x" if engine == "harness" else _ratio(end, f.floor)
            speed.add_row(f"{f.size:,}", engine, _fmt(start), _fmt(end), _ratio(end, start), over_floor,
                          _ratio(end, f.harness_end), end_section=number == len(shown))
    console.print(speed)

    load = Table(title="Load and open (ms, median); peak memory (MB, tracemalloc: open + the first window)")
    for column in ("interactions", "YAML MB", "ours cold", "ours warm", "JSON", "JSON, gc paused",
                   "warm/JSON paused", "open harness", "open vcrpy", "MB harness", "MB vcrpy"):
        load.add_column(column, justify="right")
    for f in results:
        load.add_row(f"{f.size:,}", _fmt(f.yaml_mb, 1), _fmt(f.load_yaml_cold, 0), _fmt(f.load_yaml_warm, 0),
                     _fmt(f.load_json, 0), _fmt(f.load_json_paused, 0), _ratio(f.load_yaml_warm, f.load_json_paused),
                     _fmt(f.open_harness, 0), _fmt(f.open_vcrpy, 0), _fmt(f.memory_harness_mb, 1),
                     _fmt(f.memory_vcrpy_mb, 1))
    console.print(load)
    for line in summary(results):
        console.print(line)


def summary(results: list[SizeFigures]) -> list[str]:
    """The targets, one line each, with the figures that decide them."""
    smallest, largest = results[0], results[-1]
    worst = max(results, key=lambda f: f.harness_over_floor)
    relative = largest.harness_over_floor / smallest.harness_over_floor
    lines = [
        f"harness/floor, worst size ({worst.size:,}, end window): {worst.harness_over_floor:.2f}x "
        f"({worst.harness_end:.2f} vs {worst.floor:.2f} ms; target <= 1.30x)",
        f"harness per request, end of {largest.size:,} vs end of {smallest.size:,}: "
        f"{largest.harness_end / smallest.harness_end:.2f}x ({largest.harness_end:.2f} vs "
        f"{smallest.harness_end:.2f} ms; target <= 1.20x); measured against the floor beside it: {relative:.2f}x",
        f"load of {largest.size:,}: ours warm {largest.load_yaml_warm:,.0f} ms, cold {largest.load_yaml_cold:,.0f} ms;"
        f" JSON {largest.load_json:,.0f} ms, {largest.load_json_paused:,.0f} ms with the collector paused",
    ]
    if largest.vcrpy_end is not None:
        lines.append(f"vcrpy/harness, end of {largest.size:,}: {largest.vcrpy_end / largest.harness_end:,.1f}x")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,5000", help="cassette sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is reported")
    parser.add_argument("--quick", action="store_true", help="sizes 100,1000, one repeat, smaller windows")
    parser.add_argument("--window", type=int, default=2 * CYCLE, help="requests timed at each end of a cassette")
    parser.add_argument("--body-max", type=int, default=1000, help="largest size vcrpy's body matcher runs on")
    parser.add_argument("--body-window", type=int, default=3, help="requests at each end for the body matcher")
    parser.add_argument("--vcrpy-max", type=int, default=5000, help="largest size plain vcrpy runs on")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--workdir", type=Path, help="where cassettes are written (default: a temp folder)")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.repeat, args.window, args.body_max = "100,1000", 1, CYCLE, 100
    sizes = sorted({int(part) for part in args.sizes.split(",") if part.strip()})
    console = commands.console(width=max(120, shutil.get_terminal_size().columns))  # NO_COLOR, FORCE_COLOR
    progress = commands.console(stderr=True)

    with contextlib.ExitStack() as stack:
        folder = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-replay-")))
        began = time.perf_counter()
        results = [measure_size(size, folder, repeat=max(1, args.repeat), window=args.window,
                                body_max=args.body_max, body_window=args.body_window, vcrpy_max=args.vcrpy_max,
                                memory=not args.no_memory, log=progress.log)
                   for size in sizes]
        render(results, console)
        console.print(f"total {time.perf_counter() - began:,.0f} s; python {sys.version.split()[0]}, "
                      f"anthropic {anthropic.__version__}, vcrpy {vcr.__version__}, {os.cpu_count()} cpus")
    if args.json:
        figures = [{**asdict(f), "harness_over_floor": f.harness_over_floor} for f in results]
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
