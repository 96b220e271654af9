"""A stream cassette the SDK could not read to its end fails where it is loaded for replay, as one CassetteError
naming the file, the interaction and the event, before the SDK's own accumulator meets it (and raises a
TypeError or IndexError of its own from inside `_messages.py`)."""

from __future__ import annotations

import contextlib
import copy
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.cassette.format import check_streams, load_cassette
from harness.cassette.recorder import Cassette, use_cassette
from harness.cli import main
from harness.errors import CassetteError
from harness.proxy import RecordingProxy
from harness.serve import ReplayServer
from harness.sim import Simulator
from harness.sim.faults import Fault
from harness.wire.sse import MalformedStream, check_stream, fold_stream, render_sse

REPO = Path(__file__).resolve().parents[1]
STREAM = REPO / "cassettes" / "dayflow" / "brief_stream.yaml"


def _cut_after_a_delta_index(tmp_path: Path) -> Path:
    """The bundled stream cassette cut off right after a content_block_delta's `index:`."""
    text = STREAM.read_text(encoding="utf-8")
    delta = text.index("type: content_block_delta", len(text) // 2)
    path = tmp_path / "cut.yaml"
    path.write_text(text[: text.index("index: ", delta) + len("index: ")], encoding="utf-8")
    return path


def _one_delta_at_200_million(tmp_path: Path) -> Path:
    """The bundled stream cassette with one content_block_delta's index made 200000000."""
    text = STREAM.read_text(encoding="utf-8")
    delta = text.index("type: content_block_delta")
    index = text.index("index: 0", delta)
    path = tmp_path / "huge_index.yaml"
    path.write_text(text[:index] + "index: 200000000" + text[index + len("index: 0") :], encoding="utf-8")
    return path


def _replay_every_request(path: Path) -> None:
    """The recorded run again, streamed through the installed SDK inside use_cassette."""
    requests = [interaction["request"]["body"] for interaction in load_cassette(path).interactions]
    with use_cassette(path, "none"):
        client = anthropic.Anthropic(api_key="sk-ant-placeholder", base_url="http://127.0.0.1:9")
        for body in requests:
            with client.messages.stream(**{k: v for k, v in body.items() if k != "stream"}) as stream:
                stream.get_final_message()


def _sdk_reads(events: list[dict[str, Any]]) -> Any:
    """What the installed SDK makes of `events` on its own, over the wire of a mock transport, harness aside."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=render_sse(events))

    client = anthropic.Anthropic(api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))
    with client.messages.stream(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}]) as stream:
        return stream.get_final_message()


PROBES: dict[str, Callable[[Path], Path]] = {
    "cut after a delta's index": _cut_after_a_delta_index,
    "a delta at index 200000000": _one_delta_at_200_million,
}


@pytest.mark.parametrize("probe", PROBES)
def test_each_broken_stream_probe_is_one_cassette_error_naming_file_interaction_and_event(
    tmp_path: Path, probe: str
) -> None:
    path = PROBES[probe](tmp_path)
    with pytest.raises(CassetteError) as refused:
        _replay_every_request(path)
    message = str(refused.value)
    assert str(path) in message and "$.interactions[" in message and "].response.events[" in message
    assert "content_block_delta" in message, message
    # Without the check at load, the same events reach the SDK's accumulator and it fails with its own error.
    where = refused.value.where or ""
    interaction = int(where.split("interactions[")[1].split("]")[0])
    events = load_cassette(path).interactions[interaction]["response"]["events"]
    with pytest.raises((TypeError, IndexError, AttributeError)):
        _sdk_reads(events)


@pytest.mark.parametrize("probe", PROBES)
def test_serve_and_show_refuse_the_probes_too(tmp_path: Path, probe: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = PROBES[probe](tmp_path)
    with pytest.raises(CassetteError, match=r"\$\.interactions\[\d+\]\.response\.events\[\d+\]"):
        ReplayServer([path])
    assert main(["show", str(path)]) == 2
    assert str(path) in capsys.readouterr().err


def test_a_huge_delta_index_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    path = _one_delta_at_200_million(tmp_path)
    cassette = load_cassette(path)
    tracemalloc.start()
    try:
        with pytest.raises(CassetteError, match="index 200000000"):
            check_streams(cassette)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, f"checking the stream allocated {peak:,} bytes"  # a list of 200M slots is 1.6 GB


# -- the rules, one broken stream each, against a well-formed one --------------------------------------------
def _event(data: dict[str, Any]) -> dict[str, Any]:
    return {"event": data["type"], "data": data}


def _good() -> list[dict[str, Any]]:
    return [
        _event(data)
        for data in [
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [],
                    "usage": {"input_tokens": 3, "output_tokens": 1},
                },
            },
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
            {"type": "content_block_stop", "index": 0},
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"a": '},
            },
            {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "1}"}},
            {"type": "content_block_stop", "index": 1},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
            {"type": "message_stop"},
        ]
    ]


def _without(position: int) -> Callable[[list[dict[str, Any]]], Any]:
    return lambda events: events.pop(position)


def _set(position: int, *keys: str, value: Any) -> Callable[[list[dict[str, Any]]], None]:
    def edit(events: list[dict[str, Any]]) -> None:
        target = events[position]["data"]
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


BROKEN: dict[str, tuple[Callable[[list[dict[str, Any]]], Any], int, str]] = {
    # name: (mutation, the event named, what the reason says)
    "no message_start": (_without(0), 0, "before message_start"),
    "a second message_start": (lambda e: e.insert(1, copy.deepcopy(e[0])), 1, "a second message_start"),
    "a message_start with no content list": (_set(0, "message", "content", value=None), 0, "content list"),
    "a block started out of order": (_set(1, "index", value=3), 1, "the next block is 0"),
    "a block index that is text": (_set(1, "index", value="0"), 1, "index '0'"),
    "a block index that is missing": (_set(2, "index", value=None), 2, "index None"),
    "a delta for a block never started": (_set(2, "index", value=7), 2, "never started"),
    "a delta after its block stopped": (lambda e: e.insert(4, copy.deepcopy(e[2])), 4, "was stopped"),
    "a delta index of 200 million": (_set(2, "index", value=200_000_000), 2, "index 200000000, outside"),
    "a delta whose text is not text": (_set(2, "delta", "text", value=None), 2, "text None, not text"),
    "a delta with no delta": (_set(2, "delta", value=None), 2, "no delta object"),
    "a block with no content_block": (_set(1, "content_block", value=None), 1, "no content_block"),
    "tool input that is not JSON": (_set(6, "delta", "partial_json", value="]"), 7, "not JSON"),
    "a message_delta with no usage": (_set(8, "usage", value=None), 8, "delta and usage"),
    "a message_stop with a block open": (_without(7), 8, "block 1 still open"),
    "an event after message_stop": (lambda e: e.append(copy.deepcopy(e[2])), 10, "after message_stop"),
    "no message_stop": (_without(9), 8, "ends without message_stop"),
    "an event with no name": (lambda e: e[2].pop("event"), 2, "no event name"),
    "a name that is not its data's type": (lambda e: e[2].update(event="content_block_stop"), 2, "carries data"),
    "data that is not an object": (lambda e: e[2].update(data="{not json"), 2, "not a JSON object"),
}


def test_the_well_formed_stream_passes_and_folds_as_the_sdk_reads_it() -> None:
    events = _good()
    check_stream(events)
    message = fold_stream(events)
    read = _sdk_reads(events)
    assert [block.model_dump(exclude_none=True) for block in read.content] == message["content"]
    assert message["stop_reason"] == read.stop_reason == "tool_use"


@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_stream_is_refused_naming_the_event_and_the_reason(case: str) -> None:
    mutate, position, reason = BROKEN[case]
    events = _good()
    mutate(events)
    with pytest.raises(MalformedStream) as refused:
        check_stream(events)
    assert refused.value.event == position and reason in refused.value.reason, refused.value
    if case != "no message_stop":  # show and eval read a stream that stops early as cut; the rest they refuse
        with pytest.raises(MalformedStream) as folded:
            fold_stream(events)
        assert folded.value.reason == refused.value.reason


def test_a_recorded_cut_and_a_recorded_error_event_pass_and_what_they_hold_is_still_checked() -> None:
    events = _good()[:3]
    with pytest.raises(MalformedStream, match="truncated: true"):
        check_stream(events)
    check_stream(events, cut=True)  # recorded as cut off (`truncated: true`)
    with pytest.raises(MalformedStream, match="block 9, which was never started"):
        check_stream(
            [
                *events,
                _event({"type": "content_block_delta", "index": 9, "delta": {"type": "text_delta", "text": "x"}}),
            ],
            cut=True,
        )
    error = {"event": "error", "data": {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}}
    check_stream([*events, error])
    assert fold_stream([*events, error])["error"] == {"type": "overloaded_error", "message": "busy"}


def test_streams_the_proxy_recorded_cut_or_ending_in_an_error_load_for_replay(tmp_path: Path) -> None:
    path = tmp_path / "faults.yaml"
    body = {
        "model": "claude-sonnet-5",
        "max_tokens": 64,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    faults = {0: Fault("cut-stream", after_events=3), 1: Fault("sse-error", after_events=2)}
    with Simulator(faults=faults) as sim, RecordingProxy(sim.base_url, path) as proxy:
        for _ in faults:
            with (
                contextlib.suppress(httpx2.TransportError),
                httpx2.stream(
                    "POST", f"{proxy.base_url}/v1/messages", json=body, headers={"x-api-key": "sk-ant-k"}
                ) as sent,
            ):
                sent.read()
    cut, errored = (interaction["response"] for interaction in load_cassette(path).interactions)
    assert cut["truncated"] is True and errored["events"][-1]["event"] == "error"
    assert len(Cassette(path, "none").recorded.interactions) == 2  # loaded for replay: its streams checked
    with ReplayServer([path]) as server:
        assert server.base_url


def test_a_ping_and_an_unknown_event_pass_as_the_sdk_passes_them() -> None:
    events = _good()
    events.insert(1, {"event": "ping", "data": {"type": "ping"}})
    events.insert(3, _event({"type": "a_later_event", "detail": 1}))
    events.insert(4, _event({"type": "content_block_delta", "index": 0, "delta": {"type": "a_later_delta"}}))
    check_stream(events)
    assert fold_stream(events)["content"][0] == {"type": "text", "text": "Hi"}
    assert _sdk_reads(events).content[0].text == "Hi"
