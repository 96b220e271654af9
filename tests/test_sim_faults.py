"""Injected faults, seen through the real anthropic SDK: what it retries and what it surfaces."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.cassette.recorder import use_cassette
from harness.chaos import FAULTS, inject
from harness.errors import HarnessError
from harness.sim import FAULT_KINDS, Fault, Simulator
from harness.sim.faults import CHAOS_KINDS, KINDS, SIMULATOR_KINDS, parse_fault_spec
from tests.clocks import FakeClock

REQUEST = {
    "model": "sim-echo",
    "max_tokens": 200,
    "messages": [{"role": "user", "content": "a message long enough to stream in several deltas"}],
}


def _client(sim: Simulator, retries: int, timeout: float = 10.0) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=retries, timeout=timeout)


def _served(sim: Simulator) -> list[tuple[int | None, int, str | None]]:
    return [(served.index, served.status, served.fault) for served in sim.served]


@pytest.mark.parametrize(
    ("kind", "status", "error_type"),
    [("429", 429, "rate_limit_error"), ("529", 529, "overloaded_error"), ("500", 500, "api_error")],
)
@pytest.mark.parametrize("stream", [False, True])
def test_sdk_retries_error_status_and_succeeds_on_the_next_index(
    kind: str, status: int, error_type: str, stream: bool
) -> None:
    with Simulator(faults={0: kind}) as sim:
        client = _client(sim, retries=2)
        if stream:
            with client.messages.stream(**REQUEST) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**REQUEST)
        assert message.stop_reason == "end_turn"
        assert _served(sim) == [(0, status, kind), (1, 200, None)]
        assert [served.retry_count for served in sim.served] == ["0", "1"]


@pytest.mark.parametrize(
    ("kind", "error_class", "error_type"),
    [
        ("429", anthropic.RateLimitError, "rate_limit_error"),
        ("529", anthropic.OverloadedError, "overloaded_error"),
        ("500", anthropic.InternalServerError, "api_error"),
    ],
)
def test_error_fault_body_and_headers(kind: str, error_class: type[Exception], error_type: str) -> None:
    with Simulator(faults={0: Fault(kind, retry_after=2)}) as sim, pytest.raises(error_class) as caught:
        _client(sim, retries=0).messages.create(**REQUEST)
    error: Any = caught.value
    assert set(error.body) == {"type", "error", "request_id"}
    assert error.body["error"]["type"] == error_type
    assert error.body["request_id"].startswith("req_sim_")
    headers = error.response.headers
    assert headers["x-should-retry"] == "true"
    assert headers["retry-after"] == "2"
    assert headers["retry-after-ms"] == "2000"
    assert headers["x-harness-simulator"] == "1"
    if kind == "429":
        assert headers["anthropic-ratelimit-requests-remaining"] == "0"
        assert headers["anthropic-ratelimit-requests-limit"]


def test_fault_fires_once_at_its_index_only() -> None:
    with Simulator(faults={1: "429", 3: "529"}) as sim:
        client = _client(sim, retries=0)
        outcomes = []
        for _ in range(5):
            try:
                outcomes.append(client.messages.create(**REQUEST).stop_reason)
            except anthropic.APIStatusError as err:
                outcomes.append(err.status_code)
        assert outcomes == ["end_turn", 429, "end_turn", 529, "end_turn"]
        assert sim.requests_seen == 5


# The client's timeout is real (httpx2's socket timeout): the held answer trips it, and the retry's answer must
# come within it. A simulator answer takes 20-30 ms on this 2-core machine at load 7; 1 s leaves room for a
# loaded machine's stalls without making the held attempts wait long.
ANSWER_SECONDS = 1.0


def test_slow_response_trips_the_client_timeout_and_the_retry_succeeds() -> None:
    clock = FakeClock(hold=True)  # the slow answer stays silent until the test lets it go: no real 2 s
    try:
        with Simulator(faults={0: Fault("slow", delay=2.0)}, clock=clock) as sim, \
                pytest.raises(anthropic.APITimeoutError):
            _client(sim, retries=0, timeout=ANSWER_SECONDS).messages.create(**REQUEST)
        with Simulator(faults={0: Fault("slow", delay=2.0)}, clock=clock) as sim:
            message = _client(sim, retries=1, timeout=ANSWER_SECONDS).messages.create(**REQUEST)
            assert message.stop_reason == "end_turn"
            assert sim.requests_seen == 2
    finally:
        clock.release()
    assert clock.sleeps == [2.0, 2.0]


def test_slow_response_still_arrives_when_the_client_waits() -> None:
    clock = FakeClock()
    with Simulator(faults={0: Fault("slow", delay=0.2)}, clock=clock) as sim:
        assert _client(sim, retries=0).messages.create(**REQUEST).stop_reason == "end_turn"
        assert _served(sim) == [(0, 200, "slow")]
    assert clock.sleeps == [0.2]


@pytest.mark.parametrize("stream", [False, True])
def test_disconnect_is_a_connection_error_that_the_sdk_retries(stream: bool) -> None:
    with Simulator(faults={0: "disconnect"}) as sim:
        client = _client(sim, retries=0)
        with pytest.raises(anthropic.APIConnectionError):
            if stream:
                with client.messages.stream(**REQUEST) as events:
                    events.get_final_message()
            else:
                client.messages.create(**REQUEST)
        assert _served(sim) == [(0, 0, "disconnect")]
    with Simulator(faults={0: "disconnect"}) as sim:
        assert _client(sim, retries=1).messages.create(**REQUEST).stop_reason == "end_turn"
        assert _served(sim) == [(0, 0, "disconnect"), (1, 200, None)]


def test_cut_stream_surfaces_mid_stream_and_is_not_retried() -> None:
    with Simulator(faults={0: Fault("cut-stream", after_events=4)}) as sim:
        received = []
        with (
            pytest.raises(httpx2.RemoteProtocolError),
            _client(sim, retries=2).messages.stream(**REQUEST) as events,
        ):
            for event in events:
                received.append(event.type)
        assert received[0] == "message_start"
        assert "message_stop" not in received
        assert sim.requests_seen == 1  # the SDK cannot retry a stream it has started to hand out


def test_cut_json_body_is_a_connection_error_that_the_sdk_retries() -> None:
    with Simulator(faults={0: "cut-stream"}) as sim, pytest.raises(anthropic.APIConnectionError):
        _client(sim, retries=0).messages.create(**REQUEST)
    with Simulator(faults={0: "cut-stream"}) as sim:
        assert _client(sim, retries=1).messages.create(**REQUEST).stop_reason == "end_turn"


def test_sse_error_event_surfaces_as_an_api_error_mid_stream() -> None:
    with Simulator(faults={0: Fault("sse-error", after_events=3)}) as sim:
        received = []
        with (
            pytest.raises(anthropic.APIStatusError) as caught,
            _client(sim, retries=2).messages.stream(**REQUEST) as events,
        ):
            for event in events:
                received.append(event.type)
        assert caught.value.body == {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
        }
        assert received and received[0] == "message_start"
        assert sim.requests_seen == 1


def test_sse_error_on_a_non_streaming_request_is_a_529() -> None:
    with Simulator(faults={0: "sse-error"}) as sim, pytest.raises(anthropic.OverloadedError):
        _client(sim, retries=0).messages.create(**REQUEST)


def test_async_client_retries_an_overload() -> None:
    async def call(base_url: str) -> str | None:
        async with anthropic.AsyncAnthropic(base_url=base_url, api_key="k", max_retries=2) as client:
            return (await client.messages.create(**REQUEST)).stop_reason

    with Simulator(faults={0: "529", 1: "429"}) as sim:
        assert asyncio.run(call(sim.base_url)) == "end_turn"
        assert _served(sim) == [(0, 529, "529"), (1, 429, "429"), (2, 200, None)]


def test_fault_specs_parse_from_the_command_line_form() -> None:
    assert parse_fault_spec("0:429") == (0, Fault("429"))
    assert parse_fault_spec("2:slow:delay=0.5") == (2, Fault("slow", delay=0.5))
    assert parse_fault_spec("4:cut-stream:after_events=2,retry_after=1") == (
        4,
        Fault("cut-stream", after_events=2, retry_after=1.0),
    )


@pytest.mark.parametrize(
    "spec", ["x:429", "429", "0:teapot", "0:slow:speed=3", "0:slow:delay=soon", "-1:429"]
)
def test_bad_fault_specs_name_the_problem(spec: str) -> None:
    with pytest.raises(HarnessError, match="fault"):
        parse_fault_spec(spec)


@pytest.mark.parametrize("faults", [{0: "teapot"}, {-1: "429"}, {"0": "429"}])
def test_bad_fault_mappings_are_refused(faults: Mapping[Any, Any]) -> None:
    with pytest.raises(HarnessError):
        Simulator(faults=faults)


def test_every_fault_kind_is_documented_and_constructible() -> None:
    assert set(FAULT_KINDS) == {"429", "529", "500", "slow", "disconnect", "cut-stream", "sse-error"}
    for kind in FAULT_KINDS:
        assert Fault(kind).kind == kind


# -- one vocabulary for the simulator and chaos ---------------------------------------------------------------


def test_the_simulator_chaos_and_the_script_schema_share_one_vocabulary() -> None:
    schema = json.loads((Path(__file__).parents[1] / "harness/sim/script.schema.json").read_text())
    assert {str(kind) for kind in schema["$defs"]["fault_kind"]["enum"]} == set(SIMULATOR_KINDS) == set(FAULT_KINDS)
    assert set(FAULTS) == set(CHAOS_KINDS)
    shared = set(FAULTS) & set(FAULT_KINDS)
    assert shared == {"429", "529", "500", "disconnect", "cut-stream", "sse-error"}
    assert all(FAULTS[kind] == FAULT_KINDS[kind] == KINDS[kind] for kind in shared)  # one description each


def _replay_client() -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="k", max_retries=0)


def _on_the_wire(error: Any) -> tuple[int, Any, dict[str, str | None]]:
    names = ("x-should-retry", "retry-after", "retry-after-ms", "content-type")
    return error.status_code, error.body["error"], {name: error.response.headers.get(name) for name in names}


@pytest.mark.parametrize("kind", ["429", "529", "500", "sse-error"])
def test_chaos_puts_a_status_fault_on_the_wire_as_the_simulator_does(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim, use_cassette(path, "once"):
        _client(sim, retries=0).messages.create(**REQUEST)
    with Simulator(faults={0: kind}) as sim, pytest.raises(anthropic.APIStatusError) as from_simulator:
        _client(sim, retries=0).messages.create(**REQUEST)
    with inject(path, at=0, fault=kind), pytest.raises(anthropic.APIStatusError) as from_chaos:
        _replay_client().messages.create(**REQUEST)
    assert _on_the_wire(from_chaos.value) == _on_the_wire(from_simulator.value)
    if kind == "429":  # the other anthropic-ratelimit-* headers are the simulator's on every answer
        remaining = "anthropic-ratelimit-requests-remaining"
        assert from_chaos.value.response.headers[remaining] == from_simulator.value.response.headers[remaining] == "0"


@pytest.mark.parametrize("kind", ["sse-error", "cut-stream"])
def test_chaos_breaks_a_stream_where_the_simulator_does(kind: str, tmp_path: Path) -> None:
    def events_until_it_breaks(client: anthropic.Anthropic) -> tuple[list[str], Any]:
        received: list[str] = []
        with pytest.raises((anthropic.APIStatusError, httpx2.RemoteProtocolError)) as caught, \
                client.messages.stream(**REQUEST) as events:
            for event in events:
                received.append(event.type)
        return received, getattr(caught.value, "body", type(caught.value))

    path = tmp_path / "run.yaml"
    with Simulator() as sim, use_cassette(path, "once"), _client(sim, retries=0).messages.stream(**REQUEST) as events:
        events.get_final_message()
    with Simulator(faults={0: kind}) as sim:
        from_simulator = events_until_it_breaks(_client(sim, retries=0))
    with inject(path, at=0, fault=kind):
        from_chaos = events_until_it_breaks(_replay_client())
    assert from_chaos == from_simulator
    assert from_simulator[0] and "message_stop" not in from_simulator[0]
