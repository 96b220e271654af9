"""Clients built during a replay share one verifying TLS context (harness/cassette/shared_tls.py)."""

from __future__ import annotations

import ssl
import threading
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.cassette import shared_tls
from harness.cassette.recorder import use_cassette
from tests.fake_messages_api import FakeMessagesAPI


def _context(client: Any) -> ssl.SSLContext:
    return client._client._transport._pool._ssl_context


def _record(path: Path) -> None:
    with use_cassette(path, "once"):
        FakeMessagesAPI().client().messages.create(model="claude-sonnet-5", max_tokens=8,
                                                  messages=[{"role": "user", "content": "hi"}])


def test_clients_built_in_a_replay_share_one_verifying_context(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.yaml"
    _record(path)
    monkeypatch.setattr(shared_tls, "_contexts", {})  # as in a fresh process
    loads: list[object] = []
    real_load = ssl.SSLContext.load_verify_locations
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations",
                        lambda self, *a, **k: (loads.append(a), real_load(self, *a, **k))[1])
    with use_cassette(path, "none"):
        first, second = anthropic.Anthropic(), anthropic.Anthropic()
        asynchronous = anthropic.AsyncAnthropic()
        own = ssl.create_default_context()
        chosen = anthropic.Anthropic(http_client=httpx2.Client(verify=own))
        shared = _context(first)
        assert _context(second) is shared and _context(asynchronous) is shared
        assert len(loads) <= 2, "one CA load for the replay's clients (plus the test's own context)"
        assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
        assert shared.cert_store_stats()["x509_ca"] > 0, "it verifies like the context the SDK builds"
        assert _context(chosen) is own, "a client given its own verify= keeps it"
        reply = first.messages.create(model="claude-sonnet-5", max_tokens=8,
                                      messages=[{"role": "user", "content": "hi"}])
        assert reply.content, "the replay still answers the client"
    assert _context(anthropic.Anthropic(api_key="sk-after")) is not shared, "only during the replay"


def test_recording_clients_build_their_own(tmp_path: Path) -> None:
    with use_cassette(tmp_path / "new.yaml", "once"):
        assert _context(anthropic.Anthropic()) is not _context(anthropic.Anthropic())


def test_the_patch_comes_off_when_the_last_of_two_threads_leaves(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    _record(path)
    from httpx2._transports import default

    original = default.create_ssl_context
    entered, leave = threading.Event(), threading.Event()

    def replay_in_a_thread() -> None:
        with use_cassette(path, "none", allow_repeats=True):
            entered.set()
            leave.wait(60)  # a hang guard: the test sets it once its own replay is done

    thread = threading.Thread(target=replay_in_a_thread)
    thread.start()
    assert entered.wait(60)
    with use_cassette(path, "none", allow_repeats=True):
        assert default.create_ssl_context is not original
    assert default.create_ssl_context is not original, "the other thread's replay is still in use"
    leave.set()
    thread.join(60)
    assert default.create_ssl_context is original
