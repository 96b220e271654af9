"""Record against the simulator, stop it, replay offline: the same run, for every kind of client.

Sync, async, streaming, the reference loop, a hand-written loop and the SDK's beta tool runner.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from harness import CassetteMismatch, use_cassette
from harness.cassette.format import load_cassette
from harness.loop import run_loop_async
from harness.sim import Simulator
from harness_demo.dayflow import SYSTEM_PROMPT, build_registry, user_prompt
from harness_demo.scenarios import SCENARIOS, record_scenario, replay_scenario
from tests.dayflow_clients import dayflow_runner_reply, text_of

OFFLINE = "http://127.0.0.1:9"  # nothing listens there: a replay that tried the network would fail


def summary(result: Any) -> dict[str, Any]:
    return {
        "outcome": result.outcome,
        "final_text": result.final_text,
        "steps": result.steps,
        "tools": [(call.name, call.input, call.is_error, call.output) for call in result.tool_calls],
        "usage": result.usage,
        "responses": [call.response for call in result.calls],
    }


@pytest.mark.parametrize("item", SCENARIOS, ids=lambda s: s.name)
def test_every_scenario_replays_to_the_recorded_run(item: Any, tmp_path: Path) -> None:
    live = record_scenario(item, tmp_path)
    cassette = load_cassette(item.path(tmp_path))
    assert cassette.meta["source"] == "simulator", "a simulator recording must say so"
    replayed = replay_scenario(item, tmp_path)
    assert summary(replayed) == summary(live)


def test_async_loop_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "async.yaml"

    async def run(base_url: str, mode: str) -> Any:
        with use_cassette(path, mode=mode):
            client = anthropic.AsyncAnthropic(api_key="sim", base_url=base_url, max_retries=0)
            return await run_loop_async(client, system=SYSTEM_PROMPT, user=user_prompt(), tools=build_registry(),
                                        model="claude-sonnet-5", stream=True)

    with Simulator() as sim:
        live = asyncio.run(run(sim.base_url, "once"))
    replayed = asyncio.run(run(OFFLINE, "none"))
    assert live.outcome.value == "ended" and summary(replayed) == summary(live)


def hand_written_loop(client: anthropic.Anthropic) -> list[str]:
    """The seed's loop, written the plain way, with its tools dispatched from the Dayflow registry."""
    registry = build_registry()
    messages: list[dict[str, Any]] = [{"role": "user", "content": user_prompt()}]
    stops = []
    while True:
        response = client.messages.create(model="claude-sonnet-5", max_tokens=1024, system=SYSTEM_PROMPT,
                                          tools=registry.definitions(), messages=messages)
        stops.append(response.stop_reason)
        if response.stop_reason != "tool_use":
            return [*stops, "".join(b.text for b in response.content if b.type == "text")]
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in response.content]})
        results = []
        for block in response.content:
            if block.type == "tool_use":
                output = registry.run(block.name, block.input)
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output.content,
                                "is_error": output.is_error})
        messages.append({"role": "user", "content": results})


def test_hand_written_loop_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "hand.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        live = hand_written_loop(anthropic.Anthropic(api_key="sim", base_url=sim.base_url))
    with use_cassette(path, mode="none"):
        replayed = hand_written_loop(anthropic.Anthropic(api_key="sim", base_url=OFFLINE))
    assert replayed == live and live[:2] == ["tool_use", "end_turn"]


def tool_runner_brief(client: anthropic.Anthropic, **options: Any) -> str:
    return text_of(dayflow_runner_reply(client, **options))


def test_sdk_tool_runner_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "runner.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        live = tool_runner_brief(anthropic.Anthropic(api_key="sim", base_url=sim.base_url), thread=False)
    with use_cassette(path, mode="none"):
        replayed = tool_runner_brief(anthropic.Anthropic(api_key="sim", base_url=OFFLINE), thread=False)
    assert "## Needs a reply" in live and replayed == live
    assert len(load_cassette(path).interactions) == 2


def test_a_changed_prompt_fails_fast_with_the_diff_against_a_simulator_recording(tmp_path: Path) -> None:
    path = tmp_path / "prompt.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        hand_written_loop(anthropic.Anthropic(api_key="sim", base_url=sim.base_url))
    changed = SYSTEM_PROMPT.replace("promotions", "adverts")
    with use_cassette(path, mode="none", on_miss="ignore"), pytest.raises(CassetteMismatch) as caught:
        anthropic.Anthropic(api_key="sim", base_url=OFFLINE).messages.create(
            model="claude-sonnet-5", max_tokens=1024, system=changed, tools=build_registry().definitions(),
            messages=[{"role": "user", "content": user_prompt()}])
    assert any(line.startswith("system changed") and "adverts" in line for line in caught.value.differences)
    assert json.dumps(caught.value.differences).count("changed") == 1, caught.value.differences


def test_threaded_tool_runner_round_trip_and_trajectory(tmp_path: Path) -> None:
    """The SDK 2.x tool runner threads by default: `continue` requests carry only the new messages."""
    from harness import load_trajectory
    from harness.checks.registry import run_check

    path = tmp_path / "threaded.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        live = tool_runner_brief(anthropic.Anthropic(api_key="sim", base_url=sim.base_url))
    bodies = [i["request"]["body"] for i in load_cassette(path).interactions]
    assert [b.get("thread", {}).get("type") for b in bodies] == ["create", "continue"]
    assert "system" not in bodies[1] and "tools" not in bodies[1], "a continue sends only what is new"
    with use_cassette(path, mode="none"):
        replayed = tool_runner_brief(anthropic.Anthropic(api_key="sim", base_url=OFFLINE))
    assert replayed == live

    trajectory = load_trajectory(path)
    assert len(trajectory.runs) == 1 and len(trajectory.steps) == 2
    assert [call.name for call in trajectory.tool_calls] == ["read_inbox", "read_calendar", "read_tasks"]
    assert all(call.result is not None and not call.result.is_error for call in trajectory.tool_calls)
    assert trajectory.steps[1].request["tools"] == ["read_inbox", "read_calendar", "read_tasks"]
    assert run_check("tool_ids_matched", trajectory, {}).passed
