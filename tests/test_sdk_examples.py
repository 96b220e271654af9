"""The anthropic SDK's own `examples/`, recorded against `harness sim` and replayed offline: code nobody here wrote.

    .venv/bin/python -m tests.test_sdk_examples        # the report: each example, passed or why not
    .venv/bin/python -m pytest tests/test_sdk_examples.py   # the same as tests (CI runs it with the suite)

The examples are the installed SDK version's, from its sdist on the package index (`pip download --no-deps
--no-binary :all: anthropic==X`), cached under the harness cache folder (~/.cache/loop-harness/sdists, or
$XDG_CACHE_HOME/loop-harness/sdists); nothing of them is copied into this repository. Where the index cannot be
reached, every test here skips, saying so.

Each example that talks to the Messages API or its neighbours (batches, files, count_tokens, models, the tool
runner, message threads) runs unchanged, as `python examples/NAME.py` would run it, with no key set anywhere:

1. recorded: `use_cassette(path, mode="once")`, ANTHROPIC_BASE_URL pointing at an in-process `harness sim`;
2. replayed: `use_cassette(path, mode="none")`, ANTHROPIC_BASE_URL pointing at a second simulator that would
   answer any request that got out: it must see none, every recording must be played, and the example must
   print exactly what it printed while recording.

`NEEDS` lists the examples the simulator cannot serve yet, each with the feature it lacks: those are expected
to fail (strict: the day the simulator learns the feature, the test fails as XPASS, saying to drop the entry).
`OUT_OF_SCOPE` lists the examples that talk to neither the Messages API nor its neighbours, with why.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import runpy
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

import pytest
from filelock import FileLock

# Examples the simulator cannot serve yet: name -> the feature it lacks. Remove an entry when it passes.
NEEDS: dict[str, str] = {}

# The simulator model an example records with, where the default (sim-auto) is not how its user would record it.
# None now: message_threads.py chats twice with thread.send()/stream() before it hands a turn to the tool runner, and
# sim-auto answers those turns in text as a model does (its first turn is "Hi!"; the second asks about shipping
# before the order number is known), so it no longer needs `sim-auto:chat-first=2`.
SIMULATOR_MODEL: dict[str, str] = {}

# The matching an example records with, where its tools' results are this machine's at this moment:
# mcp_tool_runner.py lists the real /tmp through the filesystem MCP server (sim-auto calls list_directory for "List
# the files in /tmp", as a model does), and /tmp changes between the recording and the replay. The `sequence` policy
# serves a recording whose only difference is inside tool_result content, and reports it as drift.
MATCHING: dict[str, Literal["strict", "sequence"]] = {"mcp_tool_runner.py": "sequence"}

# Examples that are not about the Messages API or its neighbours: name -> why they are left out.
OUT_OF_SCOPE: dict[str, str] = {
    "agents.py": "managed agents (beta agents, environments and sessions APIs)",
    "agents_comprehensive.py": "managed agents (beta agents, environments and sessions APIs)",
    "agents_with_files.py": "managed agents (beta agents and sessions APIs)",
    "managed-agents-observe-tool-calls.py": "managed agents (beta sessions and their event streams)",
    "managed-agents-self-hosted-sandbox-worker.py": "managed agents (a self-hosted sandbox worker)",
    "managed-agents-streaming-deltas-manual.py": "managed agents (beta sessions and their event streams)",
    "managed-agents-worker-dispatch.py": "managed agents (worker dispatch)",
    "azure.py": "another platform's endpoint (Microsoft Foundry)",
    "bedrock.py": "another platform's API (AWS Bedrock, SigV4)",
    "vertex.py": "another platform's API (Google Vertex AI)",
    "google_cloud.py": "another platform's API (Google Cloud)",
    "workload_identity.py": "credential providers and profile files (no request it makes is the point)",
}

# What an example's user has on their machine before they record it, set up outside any cassette: a pytest run in
# mode none lets a recording block reach loopback only, and npx would fetch the MCP server from the npm registry
# while recording (a fresh HOME has no npx cache). The server exits when its stdin ends.
PREPARE: dict[str, list[str]] = {
    "mcp_tool_runner.py": ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
}

# What an example needs to run unchanged: its command-line arguments, made by a step recorded with it...
SETUP: dict[str, Callable[[], list[str]]] = {}
# ...and what a person would type at its prompts.
TYPED: dict[str, str] = {
    "memory/basic.py": "Please remember that my favourite colour is green.\n/quit\n",
    "tools_runner_deferred_streaming.py": "y\ny\ny\n",
}

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "loop-harness" / "sdists"
SDK_VERSION = metadata.version("anthropic")


def _batch_for_results() -> list[str]:
    """batch_results.py reads the results of a batch named on its command line: create one first."""
    import anthropic

    client = anthropic.Anthropic()
    batch = client.messages.batches.create(
        requests=[
            {
                "custom_id": "hello",
                "params": {
                    "model": "claude-sonnet-5",
                    "max_tokens": 64,
                    "messages": [{"role": "user", "content": "Hi"}],
                },
            }
        ]
    )
    for _ in range(10):  # as its user would: wait for the batch to end (the simulator ends it after a few polls)
        if client.messages.batches.retrieve(batch.id).processing_status == "ended":
            break
    return [batch.id]


SETUP["batch_results.py"] = _batch_for_results


# -- the examples, from the sdist ----------------------------------------------------------------------------
class IndexUnreachable(Exception):
    pass


def examples_folder() -> Path:
    """The examples/ of the installed SDK version's sdist, downloaded once into the cache and unpacked there.

    Under a file lock: pytest-xdist's workers each collect this file at once, and on a fresh machine (an empty
    cache) they would otherwise download and unpack side by side, one of them failing and so collecting other
    tests than its sibling (xdist then stops the whole run)."""
    unpacked = CACHE / f"anthropic-{SDK_VERSION}"
    if (unpacked / "examples").is_dir():
        return unpacked / "examples"
    CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(str(CACHE / f"anthropic-{SDK_VERSION}.lock"), timeout=900):
        if (unpacked / "examples").is_dir():  # a sibling process made it while this one waited
            return unpacked / "examples"
        return _download_and_unpack(unpacked)


def _download_and_unpack(unpacked: Path) -> Path:
    archive = CACHE / f"anthropic-{SDK_VERSION}.tar.gz"
    if not archive.is_file():
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"anthropic=={SDK_VERSION}",
            "-d",
            str(CACHE),
            "--quiet",
            "--disable-pip-version-check",
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0 or not archive.is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise IndexUnreachable(f"pip download anthropic=={SDK_VERSION} failed: {last}")
    staging = CACHE / f".unpacking-{os.getpid()}"
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(f"anthropic-{SDK_VERSION}/examples/")]
        tar.extractall(staging, members=members, filter="data")
    os.replace(staging / f"anthropic-{SDK_VERSION}", unpacked)  # atomic: a half-unpacked folder is never seen
    staging.rmdir()
    return unpacked / "examples"


@functools.cache
def available() -> tuple[tuple[str, ...], str]:
    """The examples' names (paths under examples/), or none and why: asked of the index once per process."""
    try:
        folder = examples_folder()
    except (IndexUnreachable, OSError, subprocess.TimeoutExpired) as err:
        return (), f"the package index cannot be reached, so the SDK's examples cannot be had: {err}"
    names = tuple(sorted(str(path.relative_to(folder)) for path in folder.rglob("*.py")))
    return names, "" if names else "the sdist has no examples"


# -- one example, recorded then replayed ----------------------------------------------------------------------
@dataclass
class Outcome:
    name: str
    passed: bool
    why: str = ""  # what went wrong, one line, when it did not pass


@contextlib.contextmanager
def _as_a_user_runs_it(folder: Path, base_url: str, typed: str) -> Iterator[None]:
    """No key anywhere, ANTHROPIC_BASE_URL set, `folder` (a fresh copy of examples/, so that what one run writes
    cannot change the next) as the working directory, and `typed` as what is typed at its prompts."""
    saved = {name: os.environ.get(name) for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")}
    cwd, argv, stdin = Path.cwd(), sys.argv, sys.stdin
    os.environ.pop("ANTHROPIC_API_KEY", None)
    os.environ.pop("ANTHROPIC_AUTH_TOKEN", None)
    os.environ["ANTHROPIC_BASE_URL"] = base_url
    sys.stdin = io.StringIO(typed)
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.argv, sys.stdin = argv, stdin
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run(path: Path, arguments: list[str]) -> str:
    """Run the example as `python path ARGS` would, in this process; what it printed."""
    printed = io.StringIO()
    sys.argv = [str(path), *arguments]
    with contextlib.redirect_stdout(printed):
        runpy.run_path(str(path), run_name="__main__")
    return printed.getvalue()


def record_and_replay(name: str, cassettes: Path) -> Outcome:
    from harness import Normalization, use_cassette
    from harness.sim import Simulator

    here = cassettes / name.replace("/", "_").removesuffix(".py")
    cassette, typed = here / "cassette.yaml", TYPED.get(name, "")
    recording, replaying = (shutil.copytree(examples_folder(), here / run) for run in ("recording", "replaying"))
    if name in PREPARE:
        prepared = subprocess.run(PREPARE[name], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=600, check=False)
        if prepared.returncode != 0:
            return Outcome(name, False, f"its set-up {' '.join(PREPARE[name])} failed: {prepared.stderr[-500:]}")
    try:
        with (
            Simulator(model=SIMULATOR_MODEL.get(name)) as sim,
            _as_a_user_runs_it(recording, sim.base_url, typed),
            use_cassette(cassette, mode="once", normalize=Normalization(policy=MATCHING.get(name, "strict"))) as made,
        ):
            arguments = SETUP[name]() if name in SETUP else []
            recorded = _run(recording / name, arguments)
    except Exception as err:  # an example's failure is the data this reports
        return Outcome(name, False, f"recording failed: {_line(err)}")
    if not made.new_interactions:
        return Outcome(name, False, "recording made no request")
    try:
        with (
            Simulator() as bystander,
            _as_a_user_runs_it(replaying, bystander.base_url, typed),
            use_cassette(cassette, mode="none") as replay,
        ):
            arguments = SETUP[name]() if name in SETUP else []
            replayed = _run(replaying / name, arguments)
            leaked = bystander.requests_seen
    except Exception as err:
        return Outcome(name, False, f"replay failed: {_line(err)}")
    if leaked:
        return Outcome(name, False, f"replay sent {leaked} request(s) to the network")
    if replay.unplayed:
        return Outcome(name, False, f"replay left recordings unplayed: {replay.unplayed}")
    if _as_seen(replayed) != _as_seen(recorded):
        return Outcome(name, False, "the replay printed something else than the recording")
    return Outcome(name, True)


def _as_seen(printed: str) -> str:
    """What a terminal shows of `printed`: a carriage return writes over the line from its start. A spinner
    (memory/basic.py's, while it waits for an answer) prints as many frames as the wait takes, which differs from
    a recording to its replay; what is left on the screen does not."""
    shown = []
    for line in printed.split("\n"):
        screen = ""
        for part in line.split("\r"):
            screen = part + screen[len(part) :]
        shown.append(screen.rstrip())
    return "\n".join(shown)


def _line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:300]}"


# -- as tests ------------------------------------------------------------------------------------------------
NAMES, UNAVAILABLE = available()


def _params() -> list[object]:
    if not NAMES:
        return [pytest.param(None, marks=pytest.mark.skip(reason=UNAVAILABLE), id="examples-unavailable")]
    params: list[object] = []
    for name in NAMES:
        marks: list[pytest.MarkDecorator] = []
        if name in OUT_OF_SCOPE:
            marks.append(pytest.mark.skip(reason=f"not the Messages API or its neighbours: {OUT_OF_SCOPE[name]}"))
        elif name in NEEDS:
            marks.append(pytest.mark.xfail(reason=f"the simulator lacks {NEEDS[name]}", strict=True))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.mark.parametrize("name", _params())
def test_sdk_example_records_against_the_simulator_and_replays_offline(name: str, tmp_path: Path) -> None:
    outcome = record_and_replay(name, tmp_path)
    assert outcome.passed, f"{name}: {outcome.why}"


def test_every_example_is_run_or_listed_with_why() -> None:
    if not NAMES:
        pytest.skip(UNAVAILABLE)
    listed = set(NEEDS) | set(OUT_OF_SCOPE)
    assert not listed - set(NAMES), f"listed but not in the sdist any more: {sorted(listed - set(NAMES))}"
    assert not set(NEEDS) & set(OUT_OF_SCOPE)


# -- as a script: the report ---------------------------------------------------------------------------------
def main() -> int:
    import tempfile

    names, unavailable = available()
    if not names:
        print(unavailable)
        return 0
    failed = 0
    with tempfile.TemporaryDirectory(prefix="sdk-examples-") as folder:
        for name in names:
            if name in OUT_OF_SCOPE:
                print(f"left out  {name}: {OUT_OF_SCOPE[name]}")
                continue
            outcome = record_and_replay(name, Path(folder))
            expected = name in NEEDS
            word = "passed" if outcome.passed else ("cannot" if expected else "FAILED")
            why = (
                f": needs {NEEDS[name]}"
                if expected and not outcome.passed
                else (f": {outcome.why}" if not outcome.passed else "")
            )
            print(f"{word:9} {name}{why}")
            failed += (not outcome.passed and not expected) or (outcome.passed and expected)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
