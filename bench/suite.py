"""A CI-shaped suite: many pytest tests with a small cassette each, replayed, against the floor and vcrpy.

    .venv/bin/python -m bench.suite                 # 300 tests, best of 3 whole pytest processes each
    .venv/bin/python -m bench.suite --tests 100 --repeat 1

Each generated test is a two-request tool loop (a request offering a tool, then the tool's result sent back).
Its cassette is recorded once, in a temporary directory, by the plugin against `harness.Simulator`
(`--record-mode=once`). Then the same tests run, each variant as its own pytest process:

- floor: a fixture builds the SDK client over `httpx2.MockTransport`, which answers the test's requests in
  order from a dict of the recorded responses, each request's JSON body checked against the recorded one
  (no recorder, no cassette file read per test);
- plugin: `@pytest.mark.cassette` and the `anthropic_client` fixture, record mode none;
- own client: `@pytest.mark.cassette`, the test building its own `anthropic.Anthropic()` (what a user who does
  not use the fixture pays; in a replay the SDK's TLS context is shared, so the CA bundle loads once);
- pytest-recording: `@pytest.mark.vcr` with vcrpy cassettes of the same interactions, and a client built per
  test the way its users build one (`anthropic.Anthropic()`: the SDK's own httpx2 client, CA bundle loaded);
- empty: one trivial test, so that the per-test figures leave pytest's own start-up out.

Each figure is the best of --repeat whole processes (wall time, `python -m pytest -q`), the variants
interleaved so that load from other processes weighs on all alike. Every run must pass all its tests.

Bytecode: the processes run as Python does by default, caching compiled modules (and pytest its rewritten
test modules) in __pycache__, as a CI job does after its first run. A shell with PYTHONDONTWRITEBYTECODE=1
(this development machine's) compiles every harness module, and pytest rewrites the plugin's modules, in
every process, about 1.5 s of a 300-test run; `--no-bytecode-cache` measures that way.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from harness.cassette.format import load_cassette
from harness.wire.bodies import body_bytes

try:  # `python -m bench.suite` from the repository root, or `python bench/suite.py`
    from bench._cassettes import write_vcrpy_cassette
except ModuleNotFoundError:  # pragma: no cover - run as a plain script
    from _cassettes import write_vcrpy_cassette  # type: ignore[no-redef]

MODEL = "claude-sonnet-5"

# The loop every variant runs: its own module beside each variant's tests, so that they run the same code.
LOOP = textwrap.dedent(f'''
    import os

    # BENCH_MUTATE changes every prompt: a replay that matches bodies must then refuse the test (bench/peers.py).
    CHANGE = " (changed)" if os.environ.get("BENCH_MUTATE") else ""

    TOOLS = [{{"name": "lookup", "description": "Look a word up in the dictionary.",
              "input_schema": {{"type": "object", "properties": {{"word": {{"type": "string"}}}},
                               "required": ["word"]}}}}]

    def tool_loop(client, number):
        messages = [{{"role": "user", "content": f"Look up word number {{number}} and define it.{{CHANGE}}"}}]
        first = client.messages.create(model={MODEL!r}, max_tokens=64, tools=TOOLS, messages=messages)
        messages.append({{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]}})
        uses = [b for b in first.content if b.type == "tool_use"]
        if uses:
            messages.append({{"role": "user", "content": [
                {{"type": "tool_result", "tool_use_id": u.id, "content": f"definition {{number}}"}} for u in uses]}})
        else:
            messages.append({{"role": "user", "content": "Once more, please."}})
        return client.messages.create(model={MODEL!r}, max_tokens=64, tools=TOOLS, messages=messages)
''')

FLOOR_CONFTEST = textwrap.dedent('''
    import json
    from pathlib import Path

    import anthropic
    import httpx2
    import pytest

    ANSWERS = json.loads((Path(__file__).parent / "answers.json").read_text(encoding="utf-8"))

    @pytest.fixture
    def client(request):
        answers = iter(ANSWERS[request.node.name])

        def answer(sent):
            expected, status, headers, body = next(answers)
            if json.loads(sent.read()) != expected:  # the floor matches bodies too, as every engine measured must
                return httpx2.Response(418, json={"error": {"type": "bench", "message": "not the recorded request"}})
            return httpx2.Response(status, headers=headers, content=body.encode("utf-8"))

        transport = httpx2.MockTransport(answer)
        built = anthropic.Anthropic(api_key="sk-floor", max_retries=0, http_client=httpx2.Client(transport=transport))
        yield built
        built.close()
''')

VCR_CONFTEST = textwrap.dedent('''
    import anthropic
    import pytest

    @pytest.fixture
    def client():
        built = anthropic.Anthropic(api_key="sk-vcr")
        yield built
        built.close()
''')

OWN_CLIENT_CONFTEST = textwrap.dedent('''
    import anthropic
    import pytest

    @pytest.fixture
    def client():
        built = anthropic.Anthropic()  # the user's own client, built inside the test's replay
        yield built
        built.close()
''')

VARIANTS = ("empty", "floor", "plugin", "own client", "pytest-recording")
# Each variant runs with only the plugin it measures: the floor and the empty session with neither.
PLUGIN_FLAGS = {"empty": ["-p", "no:loop_harness", "-p", "no:recording"],
                "floor": ["-p", "no:loop_harness", "-p", "no:recording"],
                "plugin": ["-p", "no:recording"],
                "own client": ["-p", "no:recording"],
                "pytest-recording": ["-p", "no:loop_harness"]}


def _tests(count: int, marker: str | None, fixture: str) -> str:
    lines = ["import pytest", "from tool_loop import tool_loop", ""]
    for number in range(count):
        lines += [f"@pytest.mark.{marker}"] if marker else []
        lines += [f"def test_{number}({fixture}):",
                  f"    assert tool_loop({fixture}, {number}).content", ""]
    return "\n".join(lines)


def _project(folder: Path, test_file: str, conftest: str = "") -> Path:
    folder.mkdir(parents=True)
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (folder / "tool_loop.py").write_text(LOOP, encoding="utf-8")
    (folder / "conftest.py").write_text(conftest, encoding="utf-8")
    (folder / "test_suite.py").write_text(test_file, encoding="utf-8")
    return folder


def _pytest(folder: Path, variant: str, *extra: str, env: dict[str, str] | None = None) -> float:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PLUGIN_FLAGS[variant], *extra]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{variant} in {folder} failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return elapsed


def build(root: Path, count: int) -> dict[str, Path]:
    """The five projects; the plugin's cassettes recorded against the simulator, the others made from them."""
    from harness.sim import Simulator

    plugin = _project(root / "plugin", _tests(count, "cassette", "anthropic_client"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    with Simulator() as sim:
        _pytest(plugin, "plugin", "--record-mode=once", env={**env, "ANTHROPIC_BASE_URL": sim.base_url})
    answers: dict[str, list[tuple[int, dict[str, str], str]]] = {}
    vcr = _project(root / "pytest-recording", _tests(count, "vcr", "client"), VCR_CONFTEST)
    for number in range(count):
        interactions = load_cassette(plugin / "cassettes" / "test_suite" / f"test_{number}.yaml").interactions
        if len(interactions) != 2:
            raise SystemExit(f"test_{number} recorded {len(interactions)} requests, not 2")
        answers[f"test_{number}"] = [
            (i["request"]["body"], i["response"]["status"],
             {"content-type": i["response"]["headers"].get("content-type", "application/json"),
              "request-id": i["response"]["headers"].get("request-id", "req_bench")},
             body_bytes(i["response"]).decode("utf-8")) for i in interactions]
        write_vcrpy_cassette(vcr / "cassettes" / "test_suite" / f"test_{number}.yaml",
                             [{**i, "request": {**i["request"], "path": "/v1/messages"}} for i in interactions])
    own = _project(root / "own-client", _tests(count, "cassette", "client"), OWN_CLIENT_CONFTEST)
    shutil.copytree(plugin / "cassettes", own / "cassettes")
    floor = _project(root / "floor", _tests(count, None, "client"), FLOOR_CONFTEST)
    (floor / "answers.json").write_text(json.dumps(answers), encoding="utf-8")
    empty = _project(root / "empty", "def test_nothing():\n    pass\n")
    return {"empty": empty, "floor": floor, "plugin": plugin, "own client": own, "pytest-recording": vcr}


def measure(projects: dict[str, Path], repeat: int, *, bytecode_cache: bool = True) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    if bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    best = dict.fromkeys(VARIANTS, float("inf"))
    for _ in range(repeat):
        for variant in VARIANTS:
            best[variant] = min(best[variant], _pytest(projects[variant], variant, env=env))
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=300, help="tests in the suite (default 300)")
    parser.add_argument("--repeat", type=int, default=3, help="whole processes per variant; the best counts")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="run every process with PYTHONDONTWRITEBYTECODE=1 (compile every module every time)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="harness-suite-") as tmp:
        projects = build(Path(tmp), args.tests)
        best = measure(projects, args.repeat, bytecode_cache=not args.no_bytecode_cache)
    per_test = {v: (best[v] - best["empty"]) / args.tests * 1000 for v in VARIANTS if v != "empty"}
    cache = "without a bytecode cache" if args.no_bytecode_cache else "bytecode cached, as Python does by default"
    print(f"{args.tests} tests, two requests each; best of {args.repeat} whole pytest processes ({cache})")
    print(f"  empty session      {best['empty']:6.2f} s")
    for variant in ("floor", "plugin", "own client", "pytest-recording"):
        ratio = best[variant] / best["floor"]
        print(f"  {variant:<18} {best[variant]:6.2f} s  {ratio:4.2f}x the floor  "
              f"{per_test[variant]:5.1f} ms per test beyond an empty session")
    print(f"  pytest-recording / plugin: {best['pytest-recording'] / best['plugin']:.2f}x "
          f"(per test: {per_test['pytest-recording'] / per_test['plugin']:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
