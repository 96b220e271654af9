"""Side by side with the peers: the SDK floor, this project, pytest-recording (vcrpy) and cassetter, in one run.

    .venv/bin/python -m bench.peers                         # 300 tests, 1,000 interactions, 3 rounds
    .venv/bin/python -m bench.peers --tests 30 --size 100 --repeat 1     # a quick look

Three measurements, every engine interleaved inside each round so that load from other processes weighs on
all alike (read the ratios; the load average is printed with them):

- suite: bench/suite.py's tests (two-request tool loops, one small cassette each) as whole pytest processes,
  cold (HOME and LOOP_HARNESS_CACHE_DIR fresh empty folders for every process: a fresh CI runner) and warm
  (the same folders every time, filled by an untimed run first). Each engine twice: like for like (one
  session-scoped `anthropic.Anthropic()` in every engine) and its usual way (our `anthropic_client` fixture;
  a client built per test for the peers, as their users write it).
- replay: one large cassette, per request, timed on a window at its start and one at its end (bench.replay's
  windows), the floor (`httpx2.MockTransport` keyed by the request's bytes) timed beside each engine.
- load: that cassette's cold load, each engine's own file: ours with an empty parse cache, vcrpy's YAML,
  cassetter's YAML, against `json.loads` of the same content.

No engine passes by not matching bodies: vcrpy and cassetter match on method, URI and body (cassetter's
default is method and URI only), and before any timing each engine is shown a changed request, in the suite
(one test with its prompt changed must fail) and in the large cassette (the replay must refuse it).

cassetter's pytest plugin registers `--record-mode` as ours does, so the two cannot load in one pytest
process: cassetter is installed with `pip install --target` into a folder of its own (`--cassetter-dir`,
default .venv/bench-peers/cassetter-VERSION), which only its own processes put on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # `python -m bench.peers` from the repository root
    from bench import replay, suite
    from bench._cassettes import write_all
except ModuleNotFoundError:  # pragma: no cover - run as a plain script
    import replay  # type: ignore[no-redef]
    import suite  # type: ignore[no-redef]
    from _cassettes import write_all  # type: ignore[no-redef]

from harness.cassette.format import load_cassette
from harness.cassette.recorder import use_cassette

CASSETTER_VERSION = "0.16.1"
REPOSITORY = Path(__file__).resolve().parent.parent
PEER_MATCH_ON = ["method", "uri", "body"]  # vcrpy and cassetter alike: a changed body must miss

# -- the suite's projects ---------------------------------------------------------------------------------------

SESSION_CONFTEST = textwrap.dedent("""
    import anthropic
    import pytest

    @pytest.fixture(scope="session")
    def client():
        built = anthropic.Anthropic(api_key="sk-bench")  # one client for the whole session, in every engine
        yield built
        built.close()
""")

PER_TEST_CONFTEST = textwrap.dedent("""
    import anthropic
    import pytest

    @pytest.fixture
    def client():
        built = anthropic.Anthropic(api_key="sk-bench")  # a client per test, as the peers' users build one
        yield built
        built.close()
""")

PEER_CONFIG = textwrap.dedent(f"""

    @pytest.fixture(scope="module")
    def vcr_config():
        return {{"match_on": {PEER_MATCH_ON!r}}}
""")

# Which plugins each engine's processes load: only its own.
FLAGS = {
    "ours": ["-p", "no:recording"],
    "pytest-recording": ["-p", "no:loop_harness"],
    "cassetter": ["-p", "no:loop_harness", "-p", "no:recording"],
    "none": ["-p", "no:loop_harness", "-p", "no:recording"],
}


@dataclass(frozen=True)
class Variant:
    name: str
    engine: str  # a key of FLAGS
    folder: Path


def ensure_cassetter(folder: Path) -> Path:
    """cassetter installed into `folder` (pip --target), apart from the project's venv; the folder."""
    marker = folder / f"cassetter-{CASSETTER_VERSION}.dist-info"
    if not marker.is_dir():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--target",
                str(folder),
                f"cassetter=={CASSETTER_VERSION}",
            ],
            check=True,
        )
    return folder


@contextlib.contextmanager
def cassetter_importable(folder: Path) -> Iterator[Any]:
    sys.path.insert(0, str(folder))
    try:
        import cassetter

        yield cassetter
    finally:
        sys.path.remove(str(folder))


def convert_for_cassetter(cassetter: Any, vcrpy_file: Path, target: Path) -> None:
    """cassetter reads vcrpy's YAML (its migration path); saved again in cassetter's own format, as its
    users' cassettes are once recorded or converted."""
    from cassetter._core import Cassette as RustCassette

    target.parent.mkdir(parents=True, exist_ok=True)
    RustCassette.load(str(vcrpy_file)).save(str(target))


def build_suite(root: Path, count: int, cassetter_dir: Path) -> list[Variant]:
    """bench/suite.py's projects (recorded once against the simulator), plus the like-for-like and cassetter ones."""
    built = suite.build(root, count)
    plugin = built["plugin"]
    vcr_cassettes = built["pytest-recording"] / "cassettes"

    def project(name: str, marker: str, conftest: str, cassettes: Path) -> Path:
        folder = suite._project(root / name, suite._tests(count, marker, "client"), conftest)
        (folder / "cassettes").symlink_to(cassettes, target_is_directory=True)
        return folder

    with cassetter_importable(cassetter_dir) as cassetter:
        cassetter_cassettes = root / "cassetter-cassettes"
        for vcrpy_file in sorted((vcr_cassettes / "test_suite").glob("*.yaml")):
            convert_for_cassetter(cassetter, vcrpy_file, cassetter_cassettes / "test_suite" / vcrpy_file.name)
    peer_per_test = PER_TEST_CONFTEST + PEER_CONFIG
    peer_session = SESSION_CONFTEST + PEER_CONFIG
    return [
        Variant("empty session", "none", built["empty"]),
        Variant("floor", "none", built["floor"]),
        Variant(
            "ours, session client", "ours", project("ours-session", "cassette", SESSION_CONFTEST, plugin / "cassettes")
        ),
        Variant(
            "pytest-recording, session client",
            "pytest-recording",
            project("vcr-session", "vcr", peer_session, vcr_cassettes),
        ),
        Variant(
            "cassetter, session client",
            "cassetter",
            project("cassetter-session", "vcr", peer_session, cassetter_cassettes),
        ),
        Variant("ours, anthropic_client", "ours", plugin),
        Variant(
            "pytest-recording, client per test",
            "pytest-recording",
            project("vcr-per-test", "vcr", peer_per_test, vcr_cassettes),
        ),
        Variant(
            "cassetter, client per test",
            "cassetter",
            project("cassetter-per-test", "vcr", peer_per_test, cassetter_cassettes),
        ),
    ]


def _environment(variant: Variant, home: Path, cassetter_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ANTHROPIC_") and k not in ("XDG_CACHE_HOME", "PYTHONDONTWRITEBYTECODE")
    }
    env.update(HOME=str(home), LOOP_HARNESS_CACHE_DIR=str(home / "cache"), **extra)
    if variant.engine == "cassetter":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(cassetter_dir), env.get("PYTHONPATH")]))
    return env


def run_pytest(variant: Variant, env: dict[str, str], *extra: str, expect_failure: bool = False) -> tuple[float, float]:
    """One whole pytest process: (CPU seconds, wall seconds). CPU time (user + system, of the process and its
    children) is what the tables compare: on a machine shared by many jobs, wall time mostly measures the wait
    for a core."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FLAGS[variant.engine], *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=variant.folder, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if expect_failure != (done.returncode != 0):
        what = "passed a changed request" if expect_failure else "failed"
        raise SystemExit(f"{variant.name} {what} ({variant.folder}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, elapsed


def refuse_changed_requests(variants: list[Variant], scratch: Path, cassetter_dir: Path) -> None:
    """Every engine fails a test whose prompt changed (the loop's BENCH_MUTATE), with its bodies matched."""
    for variant in variants:
        if variant.name == "empty session":
            continue
        home = Path(tempfile.mkdtemp(dir=scratch))
        env = _environment(variant, home, cassetter_dir, BENCH_MUTATE="1")
        # Two tests by node id (`-k test_0` would pick test_0, test_10, test_100...: each miss is retried by the SDK).
        run_pytest(variant, env, "test_suite.py::test_0", "test_suite.py::test_1", expect_failure=True)


@dataclass
class SuiteFigures:
    cold: dict[str, float] = field(default_factory=dict)  # best CPU seconds of a whole process, per variant
    warm: dict[str, float] = field(default_factory=dict)
    cold_wall: dict[str, float] = field(default_factory=dict)  # best wall seconds, for the record
    warm_wall: dict[str, float] = field(default_factory=dict)
    load: list[float] = field(default_factory=list)  # the 1-minute load average after each round


def measure_suite(variants: list[Variant], scratch: Path, cassetter_dir: Path, repeat: int) -> SuiteFigures:
    names = [v.name for v in variants]
    figures = SuiteFigures(*(dict.fromkeys(names, float("inf")) for _ in range(4)))
    warm_homes = {}
    for variant in variants:  # fill each warm home (parse cache, bytecode) with an untimed run
        warm_homes[variant.name] = Path(tempfile.mkdtemp(dir=scratch))
        run_pytest(variant, _environment(variant, warm_homes[variant.name], cassetter_dir))
    for _ in range(repeat):
        for variant in variants:
            cold_home = Path(tempfile.mkdtemp(dir=scratch))
            cold, cold_wall = run_pytest(variant, _environment(variant, cold_home, cassetter_dir))
            warm, warm_wall = run_pytest(variant, _environment(variant, warm_homes[variant.name], cassetter_dir))
            name = variant.name
            figures.cold[name] = min(figures.cold[name], cold)
            figures.warm[name] = min(figures.warm[name], warm)
            figures.cold_wall[name] = min(figures.cold_wall[name], cold_wall)
            figures.warm_wall[name] = min(figures.warm_wall[name], warm_wall)
        figures.load.append(os.getloadavg()[0])
    return figures


# -- the large cassette ----------------------------------------------------------------------------------------


@dataclass
class LargeFigures:
    size: int
    window: int
    per_request: dict[str, list[float]] = field(default_factory=dict)  # ms per request, one value per round
    load: dict[str, list[float]] = field(default_factory=dict)  # seconds, one value per round
    loadavg: list[float] = field(default_factory=list)


def _window_ms(times: list[float]) -> float:
    return statistics.fmean(times) * 1000


def _changed(call: replay.Call) -> dict[str, Any]:
    kwargs = json.loads(call.kwargs_json)
    kwargs["messages"][0]["content"] = f"{kwargs['messages'][0]['content']} (changed)"
    return kwargs


def _must_refuse(engine: str, action: Callable[[], Any]) -> None:
    try:
        action()
    except Exception:  # each engine raises its own kind of miss; any refusal will do
        return
    raise SystemExit(f"{engine} answered a changed request: its bodies are not matched")


def build_large(folder: Path, size: int, cassetter: Any) -> tuple[dict[str, Path], list[replay.Call]]:
    files = write_all(folder, size)
    files["cassetter"] = folder / "cassetter.yaml"
    convert_for_cassetter(cassetter, files["vcrpy"], files["cassetter"])
    return files, replay.calls_of(load_cassette(files["harness"]).interactions)


def large_round(
    files: dict[str, Path],
    calls: list[replay.Call],
    positions: list[range],
    cassetter: Any,
    scratch: Path,
    figures: LargeFigures,
) -> None:
    """One round: every engine's load, then every engine's replay windows, each beside the floor."""

    def add(bucket: dict[str, list[float]], name: str, value: float) -> None:
        bucket.setdefault(name, []).append(value)

    json_text = files["json"].read_text(encoding="utf-8")
    with replay.parse_cache(Path(tempfile.mkdtemp(dir=scratch))):  # empty: a fresh runner's first load
        add(figures.load, "ours, cold", replay.seconds(lambda: load_cassette(files["harness"])))
        add(figures.load, "ours, warm", replay.seconds(lambda: load_cassette(files["harness"])))
    add(figures.load, "json.loads", replay.seconds(lambda: json.loads(json_text)))
    from cassetter._core import Cassette as RustCassette
    from vcr.serializers import yamlserializer

    add(figures.load, "cassetter", replay.seconds(lambda: RustCassette.load(str(files["cassetter"]))))
    add(
        figures.load,
        "vcrpy",
        replay.seconds(lambda: yamlserializer.deserialize(files["vcrpy"].read_text(encoding="utf-8"))),
    )

    floor = replay.floor_client(calls, [p for window in positions for p in window])
    with replay.parse_cache(None):
        with use_cassette(files["harness"], mode="none", on_miss="ignore", on_unplayed="ignore"):  # refused: the point
            client = replay.sdk_client()
            _must_refuse("ours", lambda: replay.send(client, _changed(calls[0]), calls[0].streamed))
        for window in positions:  # ours: the windows only, the rest marked played by replaying it untimed
            with use_cassette(files["harness"], mode="none", on_unplayed="ignore"):  # what follows the window
                client = replay.sdk_client()
                replay.timed_calls(client, calls, range(window.start))
                add(figures.per_request, "floor beside ours", _window_ms(replay.timed_calls(floor, calls, window)))
                add(figures.per_request, f"ours {window.start}", _window_ms(replay.timed_calls(client, calls, window)))
    cassette_options = {"record_mode": "none", "match_on": PEER_MATCH_ON}
    import anthropic

    peer_client = anthropic.Anthropic(api_key=replay.API_KEY, max_retries=0)
    with cassetter.use_cassette(str(files["cassetter"]), **cassette_options):
        _must_refuse("cassetter", lambda: replay.send(peer_client, _changed(calls[0]), calls[0].streamed))
    for window in positions:
        with cassetter.use_cassette(str(files["cassetter"]), **cassette_options):
            replay.timed_calls(peer_client, calls, range(window.start))
            add(figures.per_request, "floor beside cassetter", _window_ms(replay.timed_calls(floor, calls, window)))
            add(
                figures.per_request,
                f"cassetter {window.start}",
                _window_ms(replay.timed_calls(peer_client, calls, window)),
            )
    figures.loadavg.append(os.getloadavg()[0])


def _first_loads(files: dict[str, Path], cassetter: Any) -> None:
    """Each engine's one-offs of a process (imports, our schema's compiled check), paid on a tiny cassette first:
    the cold load timed next is a new file's, not a new process's."""
    from cassetter._core import Cassette as RustCassette
    from vcr.serializers import yamlserializer

    with replay.parse_cache(None):
        load_cassette(files["harness"])
    RustCassette.load(str(files["cassetter"]))
    yamlserializer.deserialize(files["vcrpy"].read_text(encoding="utf-8"))


def measure_large(folder: Path, size: int, window: int, repeat: int, cassetter_dir: Path) -> LargeFigures:
    with cassetter_importable(cassetter_dir) as cassetter:
        files, calls = build_large(folder, size, cassetter)
        (folder / "first").mkdir()
        first, _ = build_large(folder / "first", 4, cassetter)
        _first_loads(first, cassetter)
        start, end = replay.windows(size, window)
        figures = LargeFigures(size, len(start))
        for _ in range(repeat):
            gc.collect()
            large_round(files, calls, [start, end], cassetter, folder, figures)
    return figures


# -- the table ---------------------------------------------------------------------------------------------------


def _median(values: list[float]) -> float:
    return statistics.median(values)


def render(suite_figures: SuiteFigures, large: LargeFigures, tests: int) -> list[str]:
    return render_suite(suite_figures, tests) + render_large(large)


def render_suite(suite_figures: SuiteFigures, tests: int) -> list[str]:
    lines = [
        f"suite: {tests} tests of two requests, whole pytest processes, CPU seconds (wall in brackets), best of "
        f"the rounds (load average {', '.join(f'{v:.1f}' for v in suite_figures.load)})",
        f"  {'variant':<34} {'cold':>6} {'x floor':>8} {'(wall)':>8} {'warm':>6} {'x floor':>8} {'(wall)':>8}",
    ]
    cold, warm = suite_figures.cold, suite_figures.warm
    for name in cold:
        lines.append(
            f"  {name:<34} {cold[name]:6.2f} {cold[name] / cold['floor']:7.2f}x {suite_figures.cold_wall[name]:7.1f}s"
            f" {warm[name]:6.2f} {warm[name] / warm['floor']:7.2f}x {suite_figures.warm_wall[name]:7.1f}s"
        )

    def versus(peer: str, ours: str, which: dict[str, float]) -> str:
        return f"{which[peer] / which[ours]:.2f}x"

    for label, which in (("cold", cold), ("warm", warm)):
        lines.append(
            f"  {label}: like for like, pytest-recording/ours "
            f"{versus('pytest-recording, session client', 'ours, session client', which)}, "
            f"cassetter/ours {versus('cassetter, session client', 'ours, session client', which)}; "
            f"usual ways, pytest-recording/ours "
            f"{versus('pytest-recording, client per test', 'ours, anthropic_client', which)}, "
            f"cassetter/ours {versus('cassetter, client per test', 'ours, anthropic_client', which)}"
        )
    return lines


def render_large(large: LargeFigures) -> list[str]:
    lines = []
    per = large.per_request
    lines.append(
        f"replay: {large.size} interactions, ms per request over windows of {large.window}, median of "
        f"the rounds (load average {', '.join(f'{v:.1f}' for v in large.loadavg)})"
    )
    starts = sorted({int(k.split()[-1]) for k in per if k.startswith("ours ")})
    for engine in ("ours", "cassetter"):
        floor = _median(per[f"floor beside {engine}"])
        cells = [f"at {s}: {_median(per[f'{engine} {s}']):.2f} ms" for s in starts]
        lines.append(
            f"  {engine:<10} {'; '.join(cells)}; floor beside it {floor:.2f} ms; "
            + ", ".join(f"{_median(per[f'{engine} {s}']) / floor:.2f}x" for s in starts)
            + " the floor"
        )
    lines.append(f"load: {large.size} interactions, seconds, median of the rounds")
    base = _median(large.load["json.loads"])
    for name, values in large.load.items():
        lines.append(f"  {name:<12} {_median(values):7.3f} s  {_median(values) / base:6.1f}x json.loads")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=300, help="tests in the suite (default 300)")
    parser.add_argument("--size", type=int, default=1000, help="interactions in the large cassette (default 1,000)")
    parser.add_argument("--window", type=int, default=2 * replay.CYCLE, help="requests timed at each end")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the suite keeps the best, the rest the median")
    parser.add_argument(
        "--cassetter-dir", type=Path, default=REPOSITORY / ".venv" / "bench-peers" / f"cassetter-{CASSETTER_VERSION}"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    cassetter_dir = ensure_cassetter(args.cassetter_dir)
    with tempfile.TemporaryDirectory(prefix="harness-peers-") as tmp:
        root = Path(tmp)
        variants = build_suite(root / "suite", args.tests, cassetter_dir)
        refuse_changed_requests(variants, root, cassetter_dir)
        suite_figures = measure_suite(variants, root, cassetter_dir, args.repeat)
        print("\n".join(render_suite(suite_figures, args.tests)), flush=True)  # before the large cassette's part
        (root / "large").mkdir()
        large = measure_large(root / "large", args.size, args.window, args.repeat, cassetter_dir)
    print("\n".join(render_large(large)))
    if args.json:
        args.json.write_text(
            json.dumps({"suite": vars(suite_figures), "large": vars(large)}, indent=1), encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
