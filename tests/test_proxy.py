"""`harness proxy`: recording any HTTP client through a reverse proxy, against the simulator or fakes.

Loopback only. The proxy runs in-process (threads) except where a signal must reach it (subprocess).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.cassette.credentials import find_secrets
from harness.cassette.format import load_cassette
from harness.cassette.recorder import use_cassette
from harness.errors import HarnessError
from harness.httpserver.answers import MISS_HEADER
from harness.proxy import PROXY_ERROR_HEADER, RecordingProxy, _EventSplitter
from harness.sim import Fault, Simulator
from harness.wire.bodies import response_message
from tests.clocks import FakeClock
from tests.harness_processes import HANG_SECONDS, start_serving_command

REPO = Path(__file__).resolve().parent.parent
KEY = "sk-ant-api03-proxy-test-key-000000000000"
TOOLS = [
    {"name": "read_inbox", "description": "Read emails.",
     "input_schema": {"type": "object", "properties": {"limit": {"type": "integer"}}}},
]
DAYFLOW = {"model": "claude-sonnet-5", "max_tokens": 512, "system": "Skip promotions.", "tools": TOOLS,
           "messages": [{"role": "user", "content": "Brief for Monday 2026-09-07, please."}]}


def client(base_url: str, **options: Any) -> anthropic.Anthropic:
    options.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=base_url, api_key=KEY, **options)


def echo(text: str) -> dict[str, Any]:
    return {"model": "sim-echo", "max_tokens": 64, "messages": [{"role": "user", "content": text}]}


def sse_body(raw: bytes) -> list[str]:
    """Event names, in order, of an SSE body."""
    return [line.split(":", 1)[1].strip() for line in raw.decode().splitlines() if line.startswith("event:")]


# -- recording ----------------------------------------------------------------------------------------------


def test_records_json_and_streams_as_they_happen(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim, RecordingProxy(sim.base_url, path) as proxy:
        sdk = client(proxy.base_url)
        message = sdk.messages.create(**DAYFLOW)
        with sdk.messages.stream(**DAYFLOW) as stream:
            streamed = stream.get_final_message()
    # Journalled during the run, written once at stop; the journal is gone once the cassette holds it all.
    assert not (tmp_path / ".run.yaml.journal").exists()
    assert message.stop_reason == streamed.stop_reason == "tool_use"
    cassette = load_cassette(path)
    assert cassette.meta["source"] == "simulator"
    first, second = cassette.interactions
    assert first["request"]["body"] == DAYFLOW
    assert first["response"]["body"]["id"] == message.id
    assert [block["type"] for block in first["response"]["body"]["content"]] == [b.type for b in message.content]
    events = second["response"]["events"]
    assert events[0]["event"] == "message_start" and events[-1]["event"] == "message_stop"
    offsets = [event["offset_ms"] for event in events]
    assert offsets == sorted(offsets) and all(offset >= 0 for offset in offsets)
    assert response_message(second["response"])["content"] == [b.model_dump(exclude_none=True)
                                                                for b in streamed.content]
    assert second["elapsed_ms"] >= offsets[-1]


def test_credentials_never_reach_the_disk(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim, RecordingProxy(sim.base_url, path) as proxy:
        # The echo model repeats the prompt, so the key would be in the response body too.
        reply = client(proxy.base_url).messages.create(**echo(f"my key is {KEY}"))
    assert KEY in reply.content[0].text  # the client got the real answer...
    text = path.read_text()
    assert KEY not in text  # ...the cassette a scrubbed one
    assert "authorization" not in text.lower() and "x-api-key" not in text.lower()
    assert find_secrets(text) == []
    headers = load_cassette(path).interactions[0]["request"]["headers"]
    assert set(headers) <= {"anthropic-version", "anthropic-beta", "content-type"}


def test_each_retry_is_its_own_interaction(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator(faults={0: Fault("529", retry_after=0)}) as sim, RecordingProxy(sim.base_url, path) as proxy:
        reply = client(proxy.base_url, max_retries=2).messages.create(**echo("hello"))
    assert reply.content[0].text
    statuses = [i["response"]["status"] for i in load_cassette(path).interactions]
    assert statuses == [529, 200]
    first = load_cassette(path).interactions[0]["response"]
    assert first["body"]["error"]["type"] == "overloaded_error"


def test_upstream_4xx_goes_through_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim, RecordingProxy(sim.base_url, path) as proxy, \
            pytest.raises(anthropic.NotFoundError) as caught:
        client(proxy.base_url).messages.create(**{**echo("hi"), "model": "sim-no-such-policy"})
    assert caught.value.response.headers.get("x-harness-recorded") == "1"
    (interaction,) = load_cassette(path).interactions
    assert interaction["response"]["status"] == 404
    assert interaction["response"]["body"]["error"] == caught.value.body["error"]
    # The request id is kept as the client saw it (not a credential), so the replayed error body is the same.
    assert interaction["response"]["body"]["request_id"] == caught.value.body["request_id"]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connect_failure_is_recorded_and_answered_502(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with RecordingProxy(f"http://127.0.0.1:{_closed_port()}", path) as proxy:
        response = httpx2.post(f"{proxy.base_url}/v1/messages", json=echo("hi"), headers={"x-api-key": KEY})
    assert response.status_code == 502
    assert response.headers[PROXY_ERROR_HEADER] == "connect"
    body = response.json()
    assert body["type"] == "error" and "failed before answering" in body["error"]["message"]
    (interaction,) = load_cassette(path).interactions
    assert interaction["error"]["kind"] == "connect"
    assert "response" not in interaction  # the failure, not the 502


@contextlib.contextmanager
def _port_that_never_accepts() -> Iterator[int]:
    """A listening port whose accept queue is full: the kernel drops each new SYN, so a connect times out."""
    with socket.socket() as server, contextlib.ExitStack() as held:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        for _ in range(16):  # fill the queue; the connect that times out shows that it is full
            conn = held.enter_context(socket.socket())
            conn.settimeout(0.5)
            try:
                conn.connect(("127.0.0.1", port))
            except TimeoutError:
                break
        else:
            raise AssertionError("the accept queue never filled")
        yield port


def test_a_connect_timeout_is_recorded_as_a_timeout_in_process_and_by_the_proxy(tmp_path: Path) -> None:
    with _port_that_never_accepts() as port:
        upstream = f"http://127.0.0.1:{port}"
        with RecordingProxy(upstream, tmp_path / "proxied.yaml", timeout=0.3) as proxy:
            response = httpx2.post(f"{proxy.base_url}/v1/messages", json=echo("hi"), headers={"x-api-key": KEY})
        with use_cassette(tmp_path / "in_process.yaml", "once"), pytest.raises(anthropic.APITimeoutError):
            client(upstream, timeout=httpx2.Timeout(10, connect=0.3)).messages.create(**echo("hi"))
    assert response.status_code == 502 and response.headers[PROXY_ERROR_HEADER] == "timeout"
    kinds = [load_cassette(tmp_path / name).interactions[0]["error"]["kind"]
             for name in ("proxied.yaml", "in_process.yaml")]
    assert kinds == ["timeout", "timeout"]  # what the SDK raised for it: APITimeoutError, replayed as a timeout


def test_disconnect_then_retry(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator(faults={0: "disconnect"}) as sim, RecordingProxy(sim.base_url, path) as proxy:
        reply = client(proxy.base_url, max_retries=1).messages.create(**echo("hello"))
    assert reply.stop_reason == "end_turn"
    failed, answered = load_cassette(path).interactions
    assert failed["error"]["kind"] == "disconnect"
    assert answered["response"]["status"] == 200


def test_upstream_timeout_is_recorded_as_timeout(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    clock = FakeClock(hold=True)  # the upstream stays silent until the test lets it go
    try:
        with Simulator(faults={0: Fault("slow", delay=2.0)}, clock=clock) as sim, \
                RecordingProxy(sim.base_url, path, timeout=0.2) as proxy:
            response = httpx2.post(f"{proxy.base_url}/v1/messages", json=echo("hi"), headers={"x-api-key": KEY})
    finally:
        clock.release()
    assert response.status_code == 502 and response.headers[PROXY_ERROR_HEADER] == "timeout"
    assert load_cassette(path).interactions[0]["error"]["kind"] == "timeout"


def test_cut_stream_is_recorded_truncated_and_cut_for_the_client(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator(faults={0: Fault("cut-stream", after_events=3)}) as sim, \
            RecordingProxy(sim.base_url, path) as proxy:
        received = b""
        with pytest.raises(httpx2.TransportError), httpx2.stream(
            "POST", f"{proxy.base_url}/v1/messages", json={**echo("hi"), "stream": True}, headers={"x-api-key": KEY}
        ) as response:
            for chunk in response.iter_bytes():
                received += chunk
    assert len(sse_body(received)) == 3 and sse_body(received)[0] == "message_start"
    (interaction,) = load_cassette(path).interactions
    assert interaction["response"]["truncated"] is True
    assert [e["event"] for e in interaction["response"]["events"]] == sse_body(received)


def test_concurrent_clients_each_get_their_interaction(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    texts = [f"question {n}" for n in range(6)]
    answers: dict[str, str] = {}
    with Simulator() as sim, RecordingProxy(sim.base_url, path) as proxy:
        def ask(text: str) -> None:
            answers[text] = client(proxy.base_url).messages.create(**echo(text)).content[0].text

        threads = [threading.Thread(target=ask, args=(text,)) for text in texts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    assert all(answers[text].endswith(text) for text in texts)
    recorded = {i["request"]["body"]["messages"][0]["content"]: i["response"]["body"]["content"][0]["text"]
                for i in load_cassette(path).interactions}
    assert recorded == answers


def test_a_target_that_is_not_a_path_is_refused(tmp_path: Path) -> None:
    with Simulator() as sim, RecordingProxy(sim.base_url, tmp_path / "run.yaml") as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as conn:
            conn.sendall(b"GET @example.com/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            received = b""
            while data := conn.recv(65536):
                received += data
        assert sim.requests_seen == 0 and proxy.recorded == 0
    assert received.startswith(b"HTTP/1.1 400")
    assert b"is not a path" in received


# -- SSE passes through as it arrives ---------------------------------------------------------------------------


class _SlowStream(BaseHTTPRequestHandler):
    """Sends one event, then waits for the test to say the client has seen it, then the rest."""

    protocol_version = "HTTP/1.1"
    first_seen = threading.Event()
    finished = threading.Event()

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self._chunk(b'event: message_start\ndata: {"type":"message_start"}\n\n')
        self.first_seen.wait(timeout=120)  # a buffering proxy never lets the client see it: then we give up
        self._chunk(b'event: ping\ndata: {"type": "ping"}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n')
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.finished.set()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


@pytest.fixture
def slow_upstream() -> Iterator[str]:
    _SlowStream.first_seen = threading.Event()
    _SlowStream.finished = threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowStream)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_client_sees_the_first_event_before_the_upstream_finishes(tmp_path: Path, slow_upstream: str) -> None:
    path = tmp_path / "run.yaml"
    with RecordingProxy(slow_upstream, path) as proxy, httpx2.stream(
        "POST", f"{proxy.base_url}/v1/messages", json={**echo("hi"), "stream": True}
    ) as response:
        lines = response.iter_lines()
        first = next(lines)
        upstream_done_when_first_seen = _SlowStream.finished.is_set()
        _SlowStream.first_seen.set()
        rest = list(lines)
    assert first == "event: message_start"
    assert not upstream_done_when_first_seen
    assert "event: message_stop" in rest
    events = load_cassette(path).interactions[0]["response"]["events"]
    assert [e["event"] for e in events] == ["message_start", "ping", "message_stop"]
    assert events[1]["data"] == {"type": "ping"}  # stored parsed, whatever the upstream's spacing
    assert events[0]["offset_ms"] <= events[1]["offset_ms"]


def test_event_splitter_joins_events_split_across_chunks() -> None:
    splitter = _EventSplitter()
    stream = 'event: a\r\ndata: {"x": "é"}\r\n\r\nevent: b\ndata: 2\n\n: keep-alive\n\nevent: c\ndata: 3'.encode()
    events: list[dict[str, Any]] = []
    for index in range(len(stream)):  # one byte at a time: CRLF and UTF-8 cut in half too
        events.extend(splitter.feed(stream[index : index + 1]))
    assert events == [{"event": "a", "data": {"x": "é"}}, {"event": "b", "data": 2}]
    assert splitter.close() == [{"event": "c", "data": 3}]


# -- modes ----------------------------------------------------------------------------------------------


def test_new_episodes_replays_what_matches_and_records_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        with RecordingProxy(sim.base_url, path) as proxy:
            first = client(proxy.base_url).messages.create(**echo("one"))
        seen = sim.requests_seen
        with RecordingProxy(sim.base_url, path, mode="new_episodes") as proxy:
            again = client(proxy.base_url).messages.create(**echo("one"))
            second = client(proxy.base_url).messages.create(**echo("two"))
            assert (proxy.replayed, proxy.recorded) == (1, 1)
        assert sim.requests_seen == seen + 1  # only "two" reached the upstream
    assert again.model_dump() == first.model_dump()
    bodies = [i["request"]["body"]["messages"][0]["content"] for i in load_cassette(path).interactions]
    assert bodies == ["one", "two"]
    assert second.content[0].text.endswith("two")


def test_once_over_an_existing_cassette_answers_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        with RecordingProxy(sim.base_url, path) as proxy:
            client(proxy.base_url).messages.create(**echo("one"))
        before = path.read_bytes()
        seen = sim.requests_seen
        with RecordingProxy(sim.base_url, path, mode="once") as proxy, \
                pytest.raises(anthropic.BadRequestError) as caught:
            client(proxy.base_url).messages.create(**echo("changed"))
        assert sim.requests_seen == seen
    assert caught.value.response.headers[MISS_HEADER] == "1"
    assert "messages[0].content changed from 'one' to 'changed'" in caught.value.message
    assert path.read_bytes() == before


def test_rewrite_replaces_the_recording(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        with RecordingProxy(sim.base_url, path) as proxy:
            client(proxy.base_url).messages.create(**echo("old"))
        with RecordingProxy(sim.base_url, path, mode="rewrite") as proxy:
            client(proxy.base_url).messages.create(**echo("new"))
    contents = [i["request"]["body"]["messages"][0]["content"] for i in load_cassette(path).interactions]
    assert contents == ["new"]


def test_bad_upstream_and_mode_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="not an http"):
        RecordingProxy("api.anthropic.com", tmp_path / "c.yaml")
    with pytest.raises(HarnessError, match="harness serve"):
        RecordingProxy("http://127.0.0.1:1", tmp_path / "c.yaml", mode="none")


# -- the command, and signals -------------------------------------------------------------------------------


def _start_proxy(tmp_path: Path, upstream: str, cassette: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    return start_serving_command(tmp_path / "proxy.url", "proxy", "--upstream", upstream,
                                 "--cassette", str(cassette), *extra)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_leaves_a_complete_cassette(tmp_path: Path, stop_signal: signal.Signals) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        process, url = _start_proxy(tmp_path, sim.base_url, path)
        try:
            client(url).messages.create(**echo("one"))
            client(url).messages.create(**echo("two"))
        finally:
            process.send_signal(stop_signal)
            _, stderr = process.communicate(timeout=HANG_SECONDS)
    assert process.returncode == 0, stderr
    assert "2 exchanges recorded" in stderr
    assert len(load_cassette(path).interactions) == 2
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_signal_before_any_exchange_leaves_the_previous_cassette(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        with RecordingProxy(sim.base_url, path) as proxy:
            client(proxy.base_url).messages.create(**echo("keep me"))
        before = path.read_bytes()
        process, _ = _start_proxy(tmp_path, sim.base_url, path, "--mode", "rewrite")
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=HANG_SECONDS)
    assert process.returncode == 0
    assert path.read_bytes() == before


def test_proxy_command_arguments() -> None:
    from harness import cli
    from harness.commands import proxy

    assert importlib.import_module(cli.command_module("proxy")) is proxy
    parser = argparse.ArgumentParser()
    proxy.add_arguments(parser)
    args = parser.parse_args(["--upstream", "http://127.0.0.1:8765", "--cassette", "c.yaml"])
    assert (args.mode, args.port, args.timeout) == ("once", 8766, 600.0)
    with pytest.raises(SystemExit):
        parser.parse_args(["--upstream", "http://x", "--cassette", "c.yaml", "--mode", "none"])


def test_a_journal_folded_into_an_existing_cassette_keeps_the_note_it_was_recorded_under(tmp_path: Path) -> None:
    """A proxy in mode once over a cassette that exists, killed mid-run: its journal is added (new_episodes)
    with the note (and provenance) it was recording under, not the bare options."""
    from harness.cassette.journal import Journal
    from harness.proxy import _recover_journal

    path = tmp_path / "run.yaml"
    with Simulator() as simulator:
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=simulator.base_url, max_retries=0)
        with use_cassette(path, mode="once"):
            client.messages.create(model="claude-sonnet-5", max_tokens=16,
                                   messages=[{"role": "user", "content": "hi"}])
    stored = load_cassette(path)
    journal = Journal(path)
    journal.append({"mode": "once", "provenance": dict(stored.meta), "note": "killed mid-run"}, 1,
                   stored.interactions[0])
    journal.close()
    assert _recover_journal(path, {}) == 1
    folded = load_cassette(path)
    assert len(folded.interactions) == 2
    assert folded.meta.get("note") == "killed mid-run"
