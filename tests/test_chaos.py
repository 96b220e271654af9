"""Fault injection: every bundled scenario, every fault, at every request of the recorded run.

The oracle is written here, from the cassette and the SDK's documented retry policy, not taken from
harness.chaos: status errors (429/529/500) and connection failures (timeout, disconnect, a JSON body
cut off) are retried by the SDK, so the run must end exactly as recorded; a stream that fails after
the SDK has started to hand it out (cut-stream, sse-error on a streamed call) cannot be retried, so
the loop must end the run with outcome error and the steps done before the fault. Every run is under
a time limit; a hang fails the test instead of stalling CI.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic._base_client import BaseClient

from harness.cassette.format import load_cassette
from harness.chaos import FAULTS, ChaosCassette, RunHung, inject, run_chaos, time_limit
from harness.cli import main
from harness.errors import HarnessError
from harness.loop import Outcome, RunResult, run_loop_async
from harness.sim import Simulator
from harness_demo.dayflow import SYSTEM_PROMPT, build_registry, user_prompt
from harness_demo.scenarios import SCENARIOS, Scenario, record_scenario, scenario

REPO = Path(__file__).resolve().parents[1]
OFFLINE = "http://127.0.0.1:9"
RUN_SECONDS = 30  # generous: a replayed run takes milliseconds; only a hang comes near it
RETRIED_ALWAYS = {"429", "529", "500", "timeout", "disconnect"}
STREAM_ONLY = {"cut-stream", "sse-error"}  # retried on a plain call (cut JSON / a 529), fatal mid-stream


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each scenario's cassette: the bundled one under cassettes/ when present, else freshly recorded."""
    bundled, recorded = REPO / "cassettes", tmp_path_factory.mktemp("chaos-cassettes")
    found = {}
    for item in SCENARIOS:
        if not item.path(bundled).is_file():
            record_scenario(item, recorded)
        found[item.name] = item.path(bundled) if item.path(bundled).is_file() else item.path(recorded)
    return found


def replay(item: Scenario, path: Path, faults: dict[int, str]) -> tuple[RunResult, ChaosCassette]:
    with time_limit(RUN_SECONDS):
        cassette = ChaosCassette(path, faults)
        with cassette.installed():
            client = anthropic.Anthropic(api_key="chaos", base_url=OFFLINE, max_retries=item.max_retries)
            try:
                return item.run_with(client), cassette
            finally:
                client.close()


def shared(result: RunResult) -> dict[str, Any]:
    """What a replay must reproduce, timings aside."""
    return {
        "outcome": result.outcome,
        "steps": result.steps,
        "final_text": result.final_text,
        "usage": result.usage,
        "calls": [(call.request, call.response) for call in result.calls],
        "tools": [(c.step, c.name, c.id, c.input, c.output, c.is_error) for c in result.tool_calls],
    }


def complete_message(interaction: dict[str, Any]) -> bool:
    """A recorded answer the loop counts as a step: a 200 whose stream (if any) reached message_stop."""
    response = interaction.get("response") or {}
    if response.get("status") != 200:
        return False
    kinds = [(event.get("data") or {}).get("type") for event in response.get("events", [])]
    return "events" not in response or ("message_stop" in kinds and "error" not in kinds)


def attempt_of(interactions: list[dict[str, Any]], at: int) -> int:
    """0 for a call's first try; n when the n requests before it were tries of the same call."""
    body = interactions[at]["request"].get("body")
    attempt = 0
    while attempt < at and interactions[at - attempt - 1]["request"].get("body") == body:
        attempt += 1
    return attempt


FAULT_MATRIX = [pytest.param(item, kind, id=f"{item.name}-{kind}") for item in SCENARIOS for kind in FAULTS]


@pytest.mark.parametrize(("item", "kind"), FAULT_MATRIX)
def test_every_fault_at_every_request_ends_in_the_outcome_the_sdk_policy_predicts(
    item: Scenario, kind: str, cassettes: dict[str, Path]
) -> None:
    path = cassettes[item.name]
    interactions = load_cassette(path).interactions
    clean, plain = replay(item, path, {})
    assert plain.requests_seen == len(interactions) and not plain.misses, "precondition: a linear recorded run"

    for at in range(plain.requests_seen):
        result, cassette = replay(item, path, {at: kind})
        where = f"{item.name}: {kind} at request {at}"
        assert [(f.index, f.kind) for f in cassette.fired] == [(at, kind)], where
        assert not cassette.misses, where
        streamed = (interactions[at]["request"].get("body") or {}).get("stream") is True
        if kind in RETRIED_ALWAYS or not streamed:
            # The SDK retried; the retry got the recording, so the run is the recorded one.
            assert shared(result) == shared(clean), where
            if clean.ok:
                assert result.reason == clean.reason, where
            retries_left = attempt_of(interactions, at) < item.max_retries
            assert cassette.was_retried(cassette.fired[0]) is retries_left, where
            assert cassette.requests_seen > at + 1 if retries_left else cassette.requests_seen == at + 1, where
        else:
            done = sum(1 for interaction in interactions[:at] if complete_message(interaction))
            assert result.outcome is Outcome.ERROR and result.incomplete, where
            assert result.steps == done, where
            assert result.reason.startswith(f"step {done + 1}: the model call failed: "), where
            # The partial trajectory is the recorded one up to the fault, nothing invented after it.
            assert shared(result)["calls"] == shared(clean)["calls"][:done], where
            assert shared(result)["tools"] == [t for t in shared(clean)["tools"] if t[0] <= done], where
            assert cassette.requests_seen == at + 1, f"{where}: a started stream must not be retried"
            assert not cassette.was_retried(cassette.fired[0]), where


@pytest.mark.parametrize("name", ["dayflow-brief", "dayflow-brief-stream"])
@pytest.mark.parametrize("kind", sorted(FAULTS.keys() - {"timeout"}))
def test_chaos_replay_agrees_with_the_same_fault_from_a_live_simulator(
    name: str, kind: str, cassettes: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simulator drops real connections and writes real broken streams: what the SDK and the loop do
    with those is the ground truth that chaos replay must reproduce."""
    item = scenario(name)
    monkeypatch.setattr(BaseClient, "_calculate_retry_timeout", lambda *args, **kwargs: 0.0)
    for at in range(len(load_cassette(cassettes[name]).interactions)):
        with time_limit(RUN_SECONDS), Simulator(faults={at: kind}) as sim:
            client = anthropic.Anthropic(api_key="sim", base_url=sim.base_url, max_retries=item.max_retries)
            live = item.run_with(client)
            client.close()
            live_requests = sim.requests_seen
        replayed, cassette = replay(item, cassettes[name], {at: kind})
        where = f"{name}: {kind} at request {at}"
        assert (replayed.outcome, replayed.steps) == (live.outcome, live.steps), where
        assert [c.name for c in replayed.tool_calls] == [c.name for c in live.tool_calls], where
        assert cassette.requests_seen == live_requests, where
        if not live.ok:  # the same error type reaches the loop (RemoteProtocolError, APIStatusError, ...)
            assert replayed.reason.split(":")[1] == live.reason.split(":")[1], where


def test_several_faults_exhaust_the_retries_into_a_typed_error(cassettes: dict[str, Path]) -> None:
    item = scenario("dayflow-brief")
    result, cassette = replay(item, cassettes[item.name], {0: "500", 1: "529", 2: "500"})
    assert result.outcome is Outcome.ERROR and result.steps == 0 and result.calls == []
    assert "step 1: the model call failed: InternalServerError" in result.reason
    assert cassette.requests_seen == item.max_retries + 1 == len(cassette.fired)

    result, cassette = replay(item, cassettes[item.name], {0: "529", 1: "429"})
    assert result.outcome is Outcome.ENDED and len(cassette.fired) == 2


def test_retries_replay_without_sleeping(cassettes: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import anthropic._base_client as base

    sleeps: list[float] = []
    monkeypatch.setattr(base.time, "sleep", sleeps.append)
    item = scenario("dayflow-brief")
    result, _ = replay(item, cassettes[item.name], {0: "429", 2: "timeout", 3: "disconnect"})
    assert result.ok
    assert sleeps == [0.0, 0.0, 0.0], "a 429's retry-after or the SDK's backoff was really waited"


def test_async_client_under_chaos(cassettes: dict[str, Path]) -> None:
    path = cassettes["dayflow-brief-stream"]

    async def brief(faults: dict[int, str]) -> tuple[RunResult, int]:
        with inject(path, faults=faults) as cassette:
            async with anthropic.AsyncAnthropic(api_key="chaos", base_url=OFFLINE, max_retries=2) as client:
                result = await run_loop_async(client, system=SYSTEM_PROMPT, user=user_prompt(),
                                              tools=build_registry(), model="claude-sonnet-5", stream=True)
        return result, cassette.requests_seen

    with time_limit(RUN_SECONDS):
        retried, requests = asyncio.run(brief({0: "529", 2: "disconnect"}))
        assert retried.outcome is Outcome.ENDED and requests == 4
        cut, requests = asyncio.run(brief({1: "cut-stream"}))
        assert cut.outcome is Outcome.ERROR and cut.steps == 1 and requests == 2
        assert "RemoteProtocolError" in cut.reason


def test_the_time_limit_stops_a_hang_that_the_loop_would_otherwise_swallow() -> None:
    started = time.monotonic()
    with pytest.raises(RunHung), time_limit(0.2):
        try:
            time.sleep(30)
        except Exception:  # what the loop does with a failed call: RunHung must not be caught here
            pytest.fail("RunHung was caught as an ordinary Exception")
    assert time.monotonic() - started < 25


def test_inject_needs_a_fault_and_checks_it(cassettes: dict[str, Path]) -> None:
    path = cassettes["dayflow-brief"]
    for bad in ({"at": 0}, {"fault": "529"}, {}, {"at": 0, "fault": "418"}, {"faults": {-1: "529"}}):
        with pytest.raises(HarnessError), inject(path, **bad):
            pass


# ---------------------------------------------------------------------------------------------------
# The command


def test_cli_prints_the_outcome_of_a_retried_fault(cassettes: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(cassettes["dayflow-brief"].parents[1])
    with time_limit(RUN_SECONDS):
        assert main(["chaos", "--demo", "dayflow/brief.yaml", "--at", "1", "--fault", "529"]) == 0
    out = capsys.readouterr().out
    assert "dayflow-brief from dayflow/brief.yaml: 529 at request 1" in out
    assert "with fault: ended after 2 steps, 3 requests" in out
    assert "the SDK retried the faulted request; the run ended as recorded" in out


def test_cli_prints_the_partial_run_of_a_fatal_fault(cassettes: dict[str, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = cassettes["dayflow-brief-stream"]
    with time_limit(RUN_SECONDS):
        assert main(["chaos", "--demo", str(path), "--at", "1", "--fault", "cut-stream", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["scenario"] == "dayflow-brief-stream"
    assert report["fired"] == [{"index": 1, "kind": "cut-stream", "method": "POST", "path": "/v1/messages",
                                "streamed": True}]
    assert report["result"]["outcome"] == "error" and report["result"]["steps"] == 1
    assert report["result"]["tool_calls"] == ["read_inbox", "read_calendar", "read_tasks"]
    assert report["retried"] is False and report["same_as_recorded"] is False


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--at", "99", "--fault", "529"], "sends only 2 request(s)"),
        (["--at", "-1", "--fault", "529"], "a request index is 0 or more"),
        (["--at", "0", "--fault", "529", "--scenario", "nope"], "no scenario 'nope'"),
        (["--at", "0", "--fault", "529", "--scenario", "sql-self-correction"], "does not replay from this cassette"),
    ],
)
def test_cli_bad_input_is_exit_2_with_a_reason(arguments: list[str], message: str, cassettes: dict[str, Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with time_limit(RUN_SECONDS):
        assert main(["chaos", "--demo", str(cassettes["dayflow-brief"]), *arguments]) == 2
    assert message in capsys.readouterr().err


def test_cli_asks_for_the_scenario_when_the_path_does_not_name_one(
    cassettes: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "mine.yaml"
    copy.write_bytes(cassettes["dayflow-brief"].read_bytes())
    assert main(["chaos", "--demo", str(copy), "--at", "0", "--fault", "500"]) == 2
    assert "pass --scenario NAME" in capsys.readouterr().err
    with time_limit(RUN_SECONDS):
        assert main(["chaos", "--demo", str(copy), "--at", "0", "--fault", "500", "--scenario", "dayflow-brief"]) == 0
    assert "the SDK retried the faulted request; the run ended as recorded" in capsys.readouterr().out


def test_an_unknown_fault_is_a_usage_error(cassettes: dict[str, Path]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["chaos", "--demo", str(cassettes["dayflow-brief"]), "--at", "0", "--fault", "418"])
    assert raised.value.code == 2


def test_run_chaos_reports_what_happened(cassettes: dict[str, Path]) -> None:
    with time_limit(RUN_SECONDS):
        outcome = run_chaos(cassettes["sql-self-correction"], at=2, fault="timeout", scenario_set="demo")
    assert outcome.retried and outcome.same_as_recorded
    assert outcome.requests == outcome.recorded_requests + 1 == 4


def test_cli_exit_1_when_the_agent_crashes_instead_of_ending_its_run(
    cassettes: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What chaos is for: a loop that lets a failed call escape (this one does not catch) is caught out."""
    import harness.loop as loop

    def careless_call(client: anthropic.Anthropic, effect: Any) -> Any:
        kwargs, _ = loop._sdk_arguments(effect)  # the stream flag: this scenario always streams
        with client.messages.stream(**kwargs) as events:
            return loop._ModelReply(message=events.get_final_message(), error=None, duration_ms=0.0)

    monkeypatch.setattr(loop, "_call_sync", careless_call)
    with time_limit(RUN_SECONDS):
        code = main(["chaos", "--demo", str(cassettes["dayflow-brief-stream"]), "--at", "1", "--fault", "sse-error"])
    assert code == 1
    assert "the agent crashed under sse-error at request 1: APIStatusError" in capsys.readouterr().err
