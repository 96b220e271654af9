"""One place decides a test's record mode (issue 38 item 1): the strictest of the run's `--record-mode` and what
the marker or `harness_config` asks for. Recording is opt-in per run (the command line, CI), never per file: a
marker that asks for more than the run allows is reported in one line and not obeyed."""

from __future__ import annotations

from pathlib import Path

import httpx2  # noqa: F401  (kept imported across pytester's in-process runs: see tests/test_pytest_plugin.py)
import pytest

from harness.cassette.format import load_cassette
from harness.cassette.modes import MODES, strictest

pytest_plugins = ["pytester"]

FAKE = (Path(__file__).parent / "fake_messages_api.py").read_text()

ASK = """
import socket
import pytest
from fake_messages_api import FakeMessagesAPI

def ask(client, text):
    return client.messages.create(model="claude-sonnet-5", max_tokens=32,
                                  messages=[{"role": "user", "content": text}]).content[0].text
"""


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> Path:
    """A project with one cassette recorded (one request, "hello"), as `pytest --record-mode=once` would."""
    pytester.makepyfile(fake_messages_api=FAKE)
    pytester.makepyfile(test_rec=ASK + "\n@pytest.mark.cassette\ndef test_it():\n"
                                       "    ask(FakeMessagesAPI().client(), 'hello')\n")
    pytester.runpytest("--record-mode=once", "test_rec.py").assert_outcomes(passed=1)
    (pytester.path / "test_rec.py").unlink()
    return pytester.path / "cassettes" / "test_rec" / "test_it.yaml"


CHANGED = """
def test_changed():
    ask(FakeMessagesAPI().client(), "hello, changed")

def test_the_network_stays_blocked():
    with pytest.raises(OSError, match="192.0.2.1"):
        socket.create_connection(("192.0.2.1", 80), timeout=1)
"""


def test_a_markers_mode_does_not_beat_a_plain_pytest_run(pytester: pytest.Pytester, recorded: Path) -> None:
    before = recorded.read_bytes()
    pytester.makepyfile(test_marked=ASK + CHANGED.replace(
        "def test_", '@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml", mode="new_episodes", '
        'allow_unused=True)\ndef test_'))
    result = pytester.runpytest("test_marked.py")
    result.assert_outcomes(failed=1, passed=1)  # the changed request misses; it is not sent, nothing is recorded
    output = result.stdout.str()
    assert "request #1 (POST /v1/messages) has no recording" in output
    assert recorded.read_bytes() == before
    # Reported in one line naming the marker, its mode and the run's.
    lines = [line for line in output.splitlines() if "mode='new_episodes'" in line]
    assert lines and all("record mode is 'none'" in line and "@pytest.mark.cassette" in line for line in lines), output


def test_harness_configs_mode_does_not_beat_a_plain_pytest_run(pytester: pytest.Pytester, recorded: Path) -> None:
    before = recorded.read_bytes()
    pytester.makepyfile(test_configured=ASK + """
@pytest.fixture(scope="module")
def harness_config():
    return {"mode": "all", "allow_unused": True}
""" + CHANGED.replace("def test_", '@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml")\ndef test_'))
    result = pytester.runpytest("test_configured.py")
    result.assert_outcomes(failed=1, passed=1)
    output = result.stdout.str()
    assert "request #1 (POST /v1/messages) has no recording" in output
    assert load_cassette(recorded).interactions[0]["request"]["body"]["messages"][0]["content"] == "hello"
    assert recorded.read_bytes() == before
    assert any("harness_config" in line and "mode='all'" in line and "record mode is 'none'" in line
               for line in output.splitlines()), output


def test_a_stricter_marker_mode_is_obeyed_and_a_wider_run_records(pytester: pytest.Pytester, recorded: Path) -> None:
    # The run allows recording, the marker asks for none: none wins, silently (asking for less is always allowed).
    pytester.makepyfile(test_strict=ASK + """
@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml", mode="none", allow_unused=True)
def test_changed():
    ask(FakeMessagesAPI().client(), "hello, changed")
""")
    result = pytester.runpytest("--record-mode=new_episodes", "test_strict.py")
    result.assert_outcomes(failed=1)
    assert "has no recording" in result.stdout.str() and "asks for more" not in result.stdout.str()
    # The run allows new_episodes and the marker asks for it: the new request is recorded.
    pytester.makepyfile(test_strict=ASK + """
@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml", mode="new_episodes", allow_unused=True)
def test_changed():
    ask(FakeMessagesAPI().client(), "hello, changed")
""")
    pytester.runpytest("--record-mode=new_episodes", "test_strict.py").assert_outcomes(passed=1)
    assert len(load_cassette(recorded).interactions) == 2


def test_strictest_is_the_mode_that_may_record_least() -> None:
    for run in MODES:
        assert strictest(run, None) == run
        assert strictest(run, "none") == "none"
        assert strictest("none", run) == "none"
        assert strictest(run, run) == run
    assert strictest("once", "rewrite") == "once"
    assert strictest("rewrite", "once") == "once"
    assert strictest("all", "new_episodes") == "new_episodes"
    assert strictest("new_episodes", "fork") == "new_episodes"
    assert strictest("none", "sideways") == "sideways"  # not a mode: left for the cassette to refuse, naming it


OWN_BLOCK = """
import anthropic, pytest
from harness import use_cassette
from harness.sim import Simulator

def ask(base_url, path):
    with use_cassette(path, mode="all"):
        client = anthropic.Anthropic(api_key="sk-ant-not-a-real-key", base_url=base_url, max_retries=0)
        return client.messages.create(model="claude-sonnet-5", max_tokens=512,
                                      messages=[{"role": "user", "content": "Hi!"}])

def test_live(tmp_path):
    # 192.0.2.1 is TEST-NET-1 (never routed): the guard must refuse it before any packet leaves
    with pytest.raises(anthropic.APIConnectionError) as raised:
        ask("http://192.0.2.1", tmp_path / "live.yaml")
    assert "loop-harness blocked a connection to 192.0.2.1:80" in str(raised.value.__cause__)
    assert "pytest --record-mode=once" in str(raised.value.__cause__)
    assert not (tmp_path / "live.yaml").exists()

def test_simulator(tmp_path):
    with Simulator() as sim:
        assert ask(sim.base_url, tmp_path / "sim.yaml").stop_reason == "end_turn"
    assert (tmp_path / "sim.yaml").exists()
"""


def test_a_recording_block_a_test_opens_itself_reaches_loopback_only_in_a_run_that_replays(
        pytester: pytest.Pytester) -> None:
    # Fresh probe of issue 38: `use_cassette(mode="all")` inside a test went to the API under a plain `pytest`.
    pytester.makepyfile(test_own=OWN_BLOCK)
    pytester.runpytest("test_own.py").assert_outcomes(passed=2)
    # Recording is chosen per run: the same test under --record-mode=all is not held back.
    pytester.makepyfile(test_own=OWN_BLOCK.replace("def test_live", "def _not_run_live"))
    pytester.runpytest("--record-mode=all", "test_own.py").assert_outcomes(passed=1)
