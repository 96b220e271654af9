"""`harness serve`: replaying cassettes over HTTP with the Python client's matching, to any client."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.cassette.format import CassetteFile, load_cassette, save_cassette
from harness.cassette.recorder import CassetteMismatch, use_cassette
from harness.errors import HarnessError
from harness.httpserver.answers import MISS_HEADER, write_recorded
from harness.proxy import RecordingProxy
from harness.serve import STATUS_PATH, ReplayServer
from harness.sim import Simulator
from harness.wire.sse import render_event
from tests.clocks import FakeClock
from tests.harness_processes import HANG_SECONDS, start_serving_command

REPO = Path(__file__).resolve().parent.parent
TOOLS = [{"name": "read_inbox", "description": "Read emails.",
          "input_schema": {"type": "object", "properties": {"limit": {"type": "integer"}}}}]
DAYFLOW = {"model": "claude-sonnet-5", "max_tokens": 512, "system": "Skip promotions.", "tools": TOOLS,
           "messages": [{"role": "user", "content": "Brief for Monday 2026-09-07, please."}]}


def echo(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "sim-echo", "max_tokens": 64, "messages": [{"role": "user", "content": text}], **extra}


def client(base_url: str, **options: Any) -> anthropic.Anthropic:
    options.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=base_url, api_key="replay-key", **options)


def record(path: Path, *requests: dict[str, Any], faults: dict[int, Any] | None = None) -> list[Any]:
    """Record `requests` with the in-process Python recorder against the simulator; the Messages they got."""
    got = []
    with Simulator(faults=faults) as sim, use_cassette(path, "once"):
        sdk = anthropic.Anthropic(base_url=sim.base_url, api_key="sk-ant-api03-record-key-0000", max_retries=0)
        for body in requests:
            if body.get("stream"):
                with sdk.messages.stream(**{k: v for k, v in body.items() if k != "stream"}) as stream:
                    got.append(stream.get_final_message())
            else:
                got.append(sdk.messages.create(**body))
    return got


def message(text: str, msg_id: str) -> dict[str, Any]:
    return {"id": msg_id, "type": "message", "role": "assistant", "model": "sim-echo", "stop_reason": "end_turn",
            "stop_sequence": None, "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 3, "output_tokens": 2}}


def write_cassette(path: Path, *pairs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """A cassette made by hand: (request body, response body) pairs, answered 200."""
    save_cassette(CassetteFile(meta={"format_version": 1, "source": "simulator"}, path=path, interactions=[
        {"request": {"method": "POST", "path": "/v1/messages", "body": request},
         "response": {"status": 200, "headers": {"content-type": "application/json"}, "body": response}}
        for request, response in pairs
    ]))


def chunks_of(base_url: str, body: dict[str, Any]) -> tuple[bytes, list[bytes], bool]:
    """POST over a plain socket: (head, body chunks, whether the chunked body ended properly)."""
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    payload = json.dumps(body).encode()
    request = (f"POST /v1/messages HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n").encode() + payload
    received = b""
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request)
        try:
            while data := conn.recv(65536):
                received += data
        except ConnectionResetError:
            pass
    head, _, rest = received.partition(b"\r\n\r\n")
    chunks = []
    ended = False
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            ended = True
            break
        chunks.append(rest[:size])
        rest = rest[size + 2 :]
    return head, chunks, ended


# -- replaying --------------------------------------------------------------------------------------------


def test_replays_json_and_streams_to_the_python_sdk(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    recorded_json, recorded_stream = record(path, DAYFLOW, {**DAYFLOW, "stream": True})
    with ReplayServer([path]) as server:
        sdk = client(server.base_url)
        replayed = sdk.messages.create(**DAYFLOW)
        with sdk.messages.stream(**DAYFLOW) as stream:
            texts = list(stream.text_stream)
            streamed = stream.get_final_message()
        status = server.status()
    assert replayed.model_dump() == recorded_json.model_dump()
    assert streamed.model_dump() == recorded_stream.model_dump()
    assert "".join(texts) == streamed.content[0].text
    assert status["cassettes"][0]["unplayed"] == [] and status["misses"] == []


def test_each_event_is_its_own_chunk(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    record(path, {**echo("stream me"), "stream": True})
    events = load_cassette(path).interactions[0]["response"]["events"]
    with ReplayServer([path]) as server:
        head, chunks, ended = chunks_of(server.base_url, {**echo("stream me"), "stream": True})
    assert b"x-harness-replayed: 1" in head.lower()
    assert chunks == [render_event(event) for event in events]  # one flush per event, in order
    assert ended


def test_identical_requests_are_served_in_recorded_order(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    write_cassette(path, (echo("same"), message("first", "msg_1")), (echo("same"), message("second", "msg_2")))
    with ReplayServer([path]) as server:
        sdk = client(server.base_url)
        assert [sdk.messages.create(**echo("same")).id for _ in range(2)] == ["msg_1", "msg_2"]
        with pytest.raises(anthropic.BadRequestError, match="already played"):
            sdk.messages.create(**echo("same"))
    with ReplayServer([path], allow_repeats=True) as server:
        sdk = client(server.base_url)
        assert [sdk.messages.create(**echo("same")).id for _ in range(3)][:2] == ["msg_1", "msg_2"]
        assert server.status()["cassettes"][0]["play_counts"] in ([2, 1], [1, 2])


def test_a_miss_is_an_api_error_with_the_python_clients_diff(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    path = tmp_path / "run.yaml"
    record(path, echo("recorded question"))
    with pytest.raises(CassetteMismatch) as python_miss, use_cassette(path, "none"):
        client("http://127.0.0.1:9").messages.create(**echo("another question"))
    with ReplayServer([path]) as server:
        response = httpx2.post(f"{server.base_url}/v1/messages", json=echo("another question"))
        status = server.status()
    assert response.status_code == 400
    assert response.headers[MISS_HEADER] == "1"
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    served, python = body["error"]["message"].splitlines(), str(python_miss.value).splitlines()
    assert served[:-1] == python[:-1], "the same diff as the Python client's"
    assert "harness proxy --mode rewrite" in served[-1] and "use_cassette" in python[-1], "each its own flags"
    assert "messages[0].content changed from 'recorded question' to 'another question'" in body["error"]["message"]
    assert status["misses"][0]["message"] == body["error"]["message"]
    assert "harness serve: miss: POST /v1/messages" in capfd.readouterr().err


def test_several_cassettes_first_match_wins(tmp_path: Path) -> None:
    one, two = tmp_path / "one.yaml", tmp_path / "two.yaml"
    write_cassette(one, (echo("shared"), message("from one", "msg_one")))
    write_cassette(two, (echo("shared"), message("from two", "msg_two")),
                   (echo("only in two"), message("only two has it", "msg_two_b")))
    with ReplayServer([one, two]) as server:
        sdk = client(server.base_url)
        assert sdk.messages.create(**echo("shared")).id == "msg_one"
        assert sdk.messages.create(**echo("only in two")).id == "msg_two_b"
        with pytest.raises(anthropic.BadRequestError) as caught:
            sdk.messages.create(**echo("in neither"))
        status = httpx2.get(f"{server.base_url}{STATUS_PATH}").json()
    assert [(c["path"], c["played"], c["unplayed"]) for c in status["cassettes"]] == [
        (str(one), [0], []),
        (str(two), [1], [0]),
    ]
    # The miss names every cassette it was matched against.
    assert str(one) in caught.value.message and str(two) in caught.value.message
    assert status["requests"] == 3 and len(status["misses"]) == 1


def test_recorded_connection_failure_is_a_dropped_connection(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    # The in-process recorder never sees a dropped connection; the proxy records it.
    with Simulator(faults={0: "disconnect"}) as sim, RecordingProxy(sim.base_url, path) as proxy:
        reply = client(proxy.base_url, max_retries=1).messages.create(**echo("hello"))
    assert "error" in load_cassette(path).interactions[0]
    with ReplayServer([path]) as server:
        with pytest.raises(anthropic.APIConnectionError):
            client(server.base_url).messages.create(**echo("hello"))
        # The recorded retry is next: a client that retries gets the answer it got when recorded.
        assert client(server.base_url).messages.create(**echo("hello")).id == reply.id


def test_truncated_stream_is_cut_after_its_events(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}
    cassette = CassetteFile(meta={"format_version": 1, "source": "simulator"}, path=path, interactions=[{
        "request": {"method": "POST", "path": "/v1/messages", "body": echo("cut")},
        "response": {"status": 200, "headers": {"content-type": "text/event-stream"}, "truncated": True,
                     "events": [{"event": "message_start", "data": start, "offset_ms": 0},
                                {"event": "ping", "data": {"type": "ping"}, "offset_ms": 1}]},
    }])
    save_cassette(cassette)
    with ReplayServer([path]) as server:
        _, chunks, ended = chunks_of(server.base_url, echo("cut"))
    assert [json.loads(chunk.split(b"data: ")[1]) for chunk in chunks] == [start, {"type": "ping"}]
    assert not ended


class _Responder:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.log: list[tuple[str, float]] = []

    def send_head(self, *args: Any, **kwargs: Any) -> None:
        self.log.append(("head", self.clock.now))

    def write_chunk(self, data: bytes) -> None:
        self.log.append((data.decode().split("\n")[0], self.clock.now))

    def finish(self) -> None:
        self.log.append(("end", self.clock.now))


def test_recorded_timing_paces_head_and_events(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.httpserver.answers as answers

    clock = FakeClock(now=100.0)
    monkeypatch.setattr(answers, "time", clock)
    interaction = {"request": {"method": "POST", "path": "/v1/messages"}, "elapsed_ms": 400,
                   "response": {"status": 200, "events": [
                       {"event": "message_start", "data": {}, "offset_ms": 0},
                       {"event": "content_block_delta", "data": {}, "offset_ms": 100},
                       {"event": "message_stop", "data": {}, "offset_ms": 250}]}}
    responder = _Responder(clock)
    write_recorded(responder, interaction, timing="recorded")  # type: ignore[arg-type]
    start = 100.0
    assert [(what, round(at - start, 6)) for what, at in responder.log] == [
        ("head", 0.15),  # elapsed 400 ms less the stream's 250 ms: the wait before the answer began
        ("event: message_start", 0.15),
        ("event: content_block_delta", 0.25),
        ("event: message_stop", 0.4),
        ("end", 0.4),
    ]
    unpaced = _Responder(clock)
    write_recorded(unpaced, interaction, timing="none")  # type: ignore[arg-type]
    assert len({at for _, at in unpaced.log}) == 1


def test_missing_cassette_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"absent\.yaml: no such cassette \(record one through harness proxy\)"):
        ReplayServer([tmp_path / "absent.yaml"])


# -- the command ------------------------------------------------------------------------------------------


def _start_serve(tmp_path: Path, *arguments: str) -> tuple[subprocess.Popen[str], str]:
    return start_serving_command(tmp_path / "serve.url", "serve", *arguments)


def test_serve_command_reports_per_cassette_and_exits_1_on_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    record(path, echo("one"), echo("two"))
    process, url = _start_serve(tmp_path, str(path), "--timing", "recorded")
    try:
        assert client(url).messages.create(**echo("one")).content[0].text.endswith("one")
        with pytest.raises(anthropic.BadRequestError):
            client(url).messages.create(**echo("three"))
    finally:
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=HANG_SECONDS)
    assert process.returncode == 1
    assert "listening on http://127.0.0.1:" in stdout
    assert f"{path}: 1 of 2 interactions played; never played: #2" in stderr
    assert "2 requests, 1 misses" in stderr


def test_serve_command_exits_0_when_everything_matched(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    record(path, echo("one"))
    process, url = _start_serve(tmp_path, str(path), "--quiet")
    try:
        client(url).messages.create(**echo("one"))
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=HANG_SECONDS)
    assert process.returncode == 0, stderr
    assert "1 of 1 interactions played" in stderr
