"""The one HTTP server core under the simulator, the proxy and the replay server: framing, targets,
Host, timeouts, listen queue and stop, checked on all three over raw sockets."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest

from harness.cassette.recorder import use_cassette
from harness.httpserver import LISTEN_QUEUE
from harness.httpserver.incoming import HardenedHandler, is_loopback_host
from harness.proxy import RecordingProxy
from harness.serve import ReplayServer
from harness.sim import Simulator
from tests.harness_processes import start_serving_command

BODY = json.dumps({"model": "sim-echo", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}).encode()


def _record(path: Path) -> None:
    with Simulator() as sim, use_cassette(path, "once"):
        anthropic.Anthropic(base_url=sim.base_url, api_key="sk-test", max_retries=0).messages.create(
            model="sim-echo", max_tokens=16, messages=[{"role": "user", "content": "hi"}])


@contextlib.contextmanager
def _server(kind: str, tmp_path: Path) -> Iterator[tuple[int, object]]:
    with Simulator() as sim:
        if kind == "sim":
            yield sim.port, sim
        elif kind == "proxy":
            with RecordingProxy(sim.base_url, tmp_path / "proxied.yaml") as proxy:
                yield proxy.port, proxy
        else:
            _record(tmp_path / "served.yaml")
            with ReplayServer([tmp_path / "served.yaml"]) as server:
                yield server.port, server


def _exchange(port: int, raw: bytes) -> bytes:
    """Send raw bytes, read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(raw)
        received = b""
        with contextlib.suppress(ConnectionResetError):
            while data := conn.recv(65536):
                received += data
    return received


SERVERS = ["sim", "proxy", "serve"]
MALFORMED = {
    "negative content-length": b"Content-Length: -1\r\n\r\n" + BODY,
    "words for a content-length": b"Content-Length: twelve\r\n\r\n" + BODY,
    "signed content-length": b"Content-Length: +5\r\n\r\nhello",
    "two different content-lengths": b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    "a chunk size that is not hex": b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    "a negative chunk size": b"Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
    "a body shorter than its length": b"Content-Length: 100\r\n\r\nshort",
    "both framings": b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("kind", SERVERS)
def test_malformed_framing_is_a_400_and_nothing_is_forwarded(kind: str, tmp_path: Path) -> None:
    with _server(kind, tmp_path) as (port, server):
        for name, tail in MALFORMED.items():
            raw = b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            if name == "a body shorter than its length":
                # The client must hang up for the server to see the body end early.
                with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
                    conn.sendall(raw + tail)
                    conn.shutdown(socket.SHUT_WR)
                    received = b""
                    while data := conn.recv(65536):
                        received += data
            else:
                received = _exchange(port, raw + tail)
            assert received.startswith(b"HTTP/1.1 400 "), (name, received[:200])
            assert b"invalid_request_error" in received, name
        if kind == "proxy":
            assert server.recorded == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", SERVERS)
def test_a_target_with_control_characters_is_a_400(kind: str, tmp_path: Path) -> None:
    with _server(kind, tmp_path) as (port, _):
        received = _exchange(port, b"GET /v1/\x01models\x7f HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert received.startswith(b"HTTP/1.1 400 "), received[:200]
    assert b"characters a URL may not have" in received


@pytest.mark.parametrize("kind", SERVERS)
def test_a_host_that_is_not_loopback_is_refused(kind: str, tmp_path: Path) -> None:
    """DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 sends Host: evil.example."""
    with _server(kind, tmp_path) as (port, _):
        refused = _exchange(port, b"GET /_harness/status HTTP/1.1\r\nHost: evil.example:%d\r\n"
                            b"Connection: close\r\n\r\n" % port)
        accepted = _exchange(port, b"GET /health HTTP/1.1\r\nHost: localhost:%d\r\nConnection: close\r\n\r\n" % port)
    assert refused.startswith(b"HTTP/1.1 403 "), refused[:200]
    assert b"is not a loopback name" in refused
    assert not accepted.startswith(b"HTTP/1.1 403 ")


def test_loopback_names() -> None:
    for host in ("127.0.0.1", "127.0.0.1:8766", "localhost", "LOCALHOST:1", "[::1]:80", "::1", "app.localhost",
                 "127.9.9.9"):
        assert is_loopback_host(host), host
    for host in ("evil.example", "evil.example:8766", "10.0.0.1", "[::2]:80", "localhost.evil.example", "",
                 "127.0.0.1.nip.io"):
        assert not is_loopback_host(host), host


@pytest.mark.parametrize("kind", SERVERS)
def test_a_silent_connection_is_closed_by_the_server(kind: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HardenedHandler, "timeout", 0.3)
    with _server(kind, tmp_path) as (port, _), socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # half a head, then nothing
        received = b""
        with contextlib.suppress(ConnectionResetError):
            while data := conn.recv(65536):
                received += data
    # The server hung up (recv returned b"") rather than keeping a thread waiting for ever.
    assert b"200 OK" not in received


@pytest.mark.parametrize("kind", SERVERS)
def test_the_listen_queue_takes_a_burst(kind: str, tmp_path: Path) -> None:
    with _server(kind, tmp_path) as (_, server):
        assert server._server.request_queue_size >= 128 == LISTEN_QUEUE  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["serve", "proxy", "sim"])
def test_sigterm_with_a_client_mid_answer_stops_cleanly(command: str, tmp_path: Path) -> None:
    """A client holding a connection open (a keep-alive, half a request) does not keep the server alive."""
    with Simulator() as sim:
        cassette = tmp_path / "run.yaml"
        _record(cassette)
        argv = {"serve": ["serve", str(cassette)],
                "proxy": ["proxy", "--upstream", sim.base_url, "--cassette", str(tmp_path / "p.yaml")],
                "sim": ["sim"]}[command]
        process, url = start_serving_command(tmp_path / "url", *argv)
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=20) as idle:
            idle.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nhalf")
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr, stderr
    assert "stopped" in stderr
