"""Record and replay proven with a client no one here wrote: the official TypeScript SDK.

tests/ts/dayflow_loop.mjs is the Dayflow loop on @anthropic-ai/sdk (send, read stop_reason, run the
tools, return the results). It is recorded through `harness proxy` against the simulator and replayed
from `harness serve` with the simulator stopped, streaming and not. A cassette made by the Python
recorder replays for it, and one it made replays for Python and reads as a trajectory.

Needs node and `npm ci --prefix tests/ts`; skipped, with that reason, when either is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anthropic
import pytest

from harness.cassette.format import load_cassette
from harness.cassette.recorder import use_cassette
from harness.proxy import RecordingProxy
from harness.serve import ReplayServer
from harness.sim import Simulator
from harness_demo.dayflow.prompt import SYSTEM_PROMPT, user_prompt
from harness_demo.dayflow.tools import build_registry

TS_DIR = Path(__file__).resolve().parent / "ts"
LOOP = TS_DIR / "dayflow_loop.mjs"
FIXTURES = Path(__file__).resolve().parent.parent / "harness_demo" / "dayflow" / "fixtures"
NODE = shutil.which("node")

if NODE is None:
    pytest.skip("node is not installed: the TypeScript SDK tests need Node.js 20+", allow_module_level=True)
if not (TS_DIR / "node_modules" / "@anthropic-ai" / "sdk" / "package.json").exists():
    pytest.skip("tests/ts/node_modules is missing: run `npm ci --prefix tests/ts`", allow_module_level=True)

TOOL_FILES = {"read_inbox": "inbox", "read_calendar": "calendar", "read_tasks": "tasks"}
RECORD_KEY = "sk-ant-api03-typescript-record-0000000000"
STREAM_MODES = [pytest.param(False, id="json"), pytest.param(True, id="stream")]


def dayflow_spec(**changes: Any) -> dict[str, Any]:
    """The run both loops make: Dayflow's prompts and tool definitions, tools answered from the fixtures."""
    spec = {
        "model": "claude-sonnet-5",
        "max_tokens": 2048,
        "system": SYSTEM_PROMPT,
        "user": user_prompt(),
        "tools": build_registry().definitions(),
        "fixtures": {name: str(FIXTURES / f"{stem}.json") for name, stem in TOOL_FILES.items()},
        "max_steps": 10,
        "max_retries": 0,
    }
    return {**spec, **changes}


def fixture_json(tool: str) -> str:
    """What the TypeScript loop's tool returns: the fixture's JSON, compact (JSON.stringify)."""
    data = json.loads((FIXTURES / f"{TOOL_FILES[tool]}.json").read_text(encoding="utf-8"))
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def run_ts(base_url: str, spec: dict[str, Any], tmp_path: Path, *, stream: bool, ok: bool = True) -> dict[str, Any]:
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec), encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if not name.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY=RECORD_KEY)
    command = [str(NODE), str(LOOP), "--spec", str(spec_file), *(["--stream"] if stream else [])]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, cwd=TS_DIR)
    assert (result.returncode == 0) == ok, f"node exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_python(client: anthropic.Anthropic, spec: dict[str, Any], *, stream: bool) -> dict[str, Any]:
    """The same loop on the Python SDK, so that its requests are the TypeScript loop's, byte for byte of JSON."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": spec["user"]}]
    out: dict[str, Any] = {"stop_reasons": [], "tool_calls": [], "final_text": ""}
    for step in range(1, spec["max_steps"] + 1):
        params = {key: spec[key] for key in ("model", "max_tokens", "system", "tools")}
        if stream:
            with client.messages.stream(**params, messages=messages) as events:
                response = events.get_final_message()
        else:
            response = client.messages.create(**params, messages=messages)
        out["stop_reasons"].append(response.stop_reason)
        if response.stop_reason != "tool_use":
            out["final_text"] = "".join(block.text for block in response.content if block.type == "text")
            return out
        messages.append({"role": "assistant", "content": response.content})
        results = []
        for block in response.content:
            if block.type == "tool_use":
                out["tool_calls"].append({"step": step, "id": block.id, "name": block.name, "input": block.input})
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": fixture_json(block.name)})
        messages.append({"role": "user", "content": results})
    raise AssertionError("no end_turn within max_steps")


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    return {key: result[key] for key in ("final_text", "stop_reasons", "tool_calls")}


@pytest.fixture(scope="module")
def ts_recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[Path, dict[str, Any], int]]:
    """For each of json/stream: (cassette the TS loop recorded through the proxy, its result, requests the sim saw)."""
    folder = tmp_path_factory.mktemp("ts-recordings")
    made = {}
    for stream in (False, True):
        cassette = folder / f"dayflow-ts-{'stream' if stream else 'json'}.yaml"
        with Simulator() as sim, RecordingProxy(sim.base_url, cassette) as proxy:
            result = run_ts(proxy.base_url, dayflow_spec(), folder, stream=stream)
            seen = sim.requests_seen
        made[stream] = (cassette, result, seen)
    return made


@pytest.mark.parametrize("stream", STREAM_MODES)
def test_ts_loop_recorded_through_the_proxy(ts_recordings: dict, stream: bool) -> None:
    cassette_path, result, seen = ts_recordings[stream]
    assert result["stop_reasons"] == ["tool_use", "end_turn"]
    assert {call["name"] for call in result["tool_calls"]} == set(TOOL_FILES)
    assert "Priya Raman" in result["final_text"] and "## Needs a reply" in result["final_text"]
    assert "Brightside" not in result["final_text"]  # the prompt says to skip promotions
    cassette = load_cassette(cassette_path)
    assert cassette.meta["source"] == "simulator"
    assert len(cassette.interactions) == seen == 2
    assert RECORD_KEY not in cassette_path.read_text()
    last = cassette.interactions[-1]
    if stream:
        assert result["text_events"] > 1  # the client rendered the brief piece by piece
        assert all("offset_ms" in event for event in last["response"]["events"])
        assert last["request"]["body"]["stream"] is True
    else:
        assert last["response"]["body"]["stop_reason"] == "end_turn"
    # The second request carries the tool results the TypeScript loop produced.
    results = last["request"]["body"]["messages"][-1]["content"]
    assert {block["content"] for block in results} == {fixture_json(name) for name in TOOL_FILES}


@pytest.mark.parametrize("stream", STREAM_MODES)
def test_ts_loop_replays_from_serve_with_the_simulator_stopped(ts_recordings: dict, stream: bool,
                                                              tmp_path: Path) -> None:
    cassette, recorded, _ = ts_recordings[stream]
    with ReplayServer([cassette]) as server:
        replayed = run_ts(server.base_url, dayflow_spec(), tmp_path, stream=stream)
        status = server.status()
    assert replayed == recorded  # final text, tool calls (ids too), stop reasons, usage, delta count
    assert status["misses"] == [] and status["cassettes"][0]["unplayed"] == []


@pytest.mark.parametrize("stream", STREAM_MODES)
def test_python_made_cassette_replays_for_typescript(stream: bool, tmp_path: Path) -> None:
    cassette = tmp_path / "python.yaml"
    with Simulator() as sim, use_cassette(cassette, "once"):
        python = run_python(anthropic.Anthropic(base_url=sim.base_url, api_key=RECORD_KEY, max_retries=0),
                            dayflow_spec(), stream=stream)
    with ReplayServer([cassette]) as server:
        typescript = run_ts(server.base_url, dayflow_spec(), tmp_path, stream=stream)
        status = server.status()
    assert comparable(typescript) == python
    assert status["misses"] == [] and status["cassettes"][0]["unplayed"] == []


@pytest.mark.parametrize("stream", STREAM_MODES)
def test_typescript_made_cassette_replays_for_python(ts_recordings: dict, stream: bool) -> None:
    cassette, typescript, _ = ts_recordings[stream]
    # Mode none: nothing may reach the network, and this base URL would refuse anyway.
    with use_cassette(cassette, "none") as replay:
        python = run_python(anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="replay", max_retries=0),
                            dayflow_spec(), stream=stream)
    assert python == comparable(typescript)
    assert replay.unplayed == []


@pytest.mark.parametrize("stream", STREAM_MODES)
def test_typescript_made_cassette_reads_as_a_trajectory(ts_recordings: dict, stream: bool) -> None:
    trajectory_module = pytest.importorskip("harness.trajectory", reason="harness.trajectory is not written yet")
    cassette, typescript, _ = ts_recordings[stream]
    trajectory = trajectory_module.load_trajectory(cassette)
    (run,) = trajectory.runs
    assert [step.stop_reason for step in run.steps] == typescript["stop_reasons"]
    assert run.final_text == typescript["final_text"]
    calls = run.steps[0].tool_calls
    assert [(call.id, call.name, call.input) for call in calls] == [
        (call["id"], call["name"], call["input"]) for call in typescript["tool_calls"]
    ]
    for call in calls:  # each tool_use found its tool_result in the next request
        assert call.result is not None and call.result.content == fixture_json(call.name)
        assert not call.result.is_error
    assert run.outcome.kind == "stop" and run.outcome.stop_reason == "end_turn"


def test_typescript_client_gets_a_miss_with_the_diff(ts_recordings: dict, tmp_path: Path) -> None:
    cassette, _, _ = ts_recordings[False]
    changed = dayflow_spec(user="Write my evening summary.")
    with ReplayServer([cassette]) as server:
        outcome = run_ts(server.base_url, changed, tmp_path, stream=False, ok=False)
    error = outcome["error"]
    assert error["status"] == 400 and error["name"] == "BadRequestError"
    assert error["harness_miss"] == "1"
    assert "has no recording in this cassette" in error["message"]
    assert "Write my [-morning-]{+evening+} [-brief-]{+summary+}." in error["message"]  # the word diff
