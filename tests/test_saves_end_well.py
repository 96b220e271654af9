"""Saves replace a file only after a run that ended well: an interrupted pytest session, a run never answered
(a dead or wrong base URL) or a connection failure never replaces a good recording; a cassette several tests
name is merged, not overwritten, whoever records it (one file of them, two sessions at once, mode once).

Each wait ends on a signal (a held request arriving, a process ending), never on a deadline; HANG_SECONDS only
stops a test that would otherwise wait forever.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anthropic
import pytest

from harness import proxy as proxy_module
from harness.cassette.format import load_cassette
from harness.cassette.journal import journal_path
from harness.cassette.recorder import use_cassette
from harness.cassette.storage import UnansweredRun
from harness.cli import main as harness_main
from harness.httpserver.answers import Responder
from harness.proxy import RecordingProxy
from harness.sim import Simulator
from tests.harness_processes import start_serving_command
from tests.test_nothing_lost import HANG_SECONDS, holding_second_answer, wait_until

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ask(base_url: str, *texts: str) -> None:
    client = anthropic.Anthropic(base_url=base_url, api_key="sk-test-key", max_retries=0)
    for text in texts:
        client.messages.create(model="sim-echo", max_tokens=16, messages=[{"role": "user", "content": text}])


def _asked(path: Path) -> list[str]:
    return [i["request"]["body"]["messages"][0]["content"] for i in load_cassette(path).interactions]


def _good(path: Path, sim: Simulator, *texts: str) -> bytes:
    with use_cassette(path, "rewrite"):
        _ask(sim.base_url, *texts)
    return path.read_bytes()


# -- a run never answered ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["rewrite", "all"])
@pytest.mark.parametrize("upstream", ["dead", "wrong"])
def test_a_run_never_answered_never_replaces_a_good_recording(tmp_path: Path, mode: str, upstream: str) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        before = _good(path, sim, "one", "two")
        # dead: nothing listens (connection failures); wrong: a server that answers every request with a 404.
        url = f"http://127.0.0.1:{_closed_port()}" if upstream == "dead" else f"{sim.base_url}/nowhere"
        refused = pytest.raises(UnansweredRun, match="not saved: every request of this run")
        with refused as raised, use_cassette(path, mode):
            for text in ("one", "two"):
                with pytest.raises(anthropic.APIError):  # the agent catches its client's errors, as run_loop does
                    _ask(url, text)
    assert "the previous recording is kept" in str(raised.value) and str(path) in str(raised.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.yaml"]


def test_in_mode_all_a_connection_failure_never_renews_an_answered_recording(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        _good(path, sim, "one", "two")
        with use_cassette(path, "all"):
            _ask(sim.base_url, "three")  # answered: the run is worth saving
            with pytest.raises(anthropic.APIConnectionError):
                _ask(f"http://127.0.0.1:{_closed_port()}", "one")
    assert _asked(path) == ["one", "two", "three"]
    assert all("response" in i for i in load_cassette(path).interactions), "the failure renewed a good recording"


@pytest.mark.parametrize("mode", ["rewrite", "fork"])
def test_a_run_that_loses_its_upstream_midway_never_replaces_a_good_recording(tmp_path: Path, mode: str) -> None:
    """The simulator (or the route to the API) goes away after the first answer, and the agent carries on past its
    client's connection error, as run_loop does: the good two-answer recording stays (a probe of the fresh set)."""
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        before = _good(path, sim, "one", "two")
    with Simulator() as sim:
        url = sim.base_url
        with pytest.raises(UnansweredRun, match="failed to connect") as raised, use_cassette(path, mode):
            _ask(url, "one" if mode == "rewrite" else "changed")
            sim.stop()
            with pytest.raises(anthropic.APIConnectionError):
                _ask(url, "two")
    assert "the previous recording is kept" in str(raised.value)
    assert path.read_bytes() == before


def test_a_connection_failure_the_retry_got_past_still_records(tmp_path: Path) -> None:
    """A connect failure followed by an answer is a recorded retry, not a lost upstream: rewrite saves it."""
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        _good(path, sim, "one")
        with use_cassette(path, "rewrite"):
            with pytest.raises(anthropic.APIConnectionError):
                _ask(f"http://127.0.0.1:{_closed_port()}", "one")
            _ask(sim.base_url, "one")
    assert [("error" in i, i.get("response", {}).get("status")) for i in load_cassette(path).interactions] == [
        (True, None), (False, 200)]


AGENT = '''
from harness import run_loop

def brief(client):
    return run_loop(client, system="be brief", user="hello", tools=None, model="sim-echo", max_steps=2)
'''


def test_harness_record_with_a_dead_or_wrong_base_url_keeps_the_cassette_and_exits_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    module = f"agent_{os.getpid()}_{id(tmp_path)}"
    (tmp_path / f"{module}.py").write_text(AGENT)
    (tmp_path / "pyproject.toml").write_text(f'[tool.loop-harness.scenarios]\nbrief = "{module}:brief"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["record"]) == 0
        (path,) = (tmp_path / "cassettes").glob("**/*.yaml")
        before = path.read_bytes()
        capsys.readouterr()
        for url in (f"http://127.0.0.1:{_closed_port()}", f"{sim.base_url}/nowhere"):
            monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
            assert harness_main(["record"]) == 1
            err = capsys.readouterr().err
            assert path.read_bytes() == before, f"a run against {url} replaced the good cassette"
            line = next(line for line in err.splitlines() if "not recorded" in line)
            assert "every request of this run" in line and "the previous recording is kept" in line, err
            assert "Traceback" not in err
    assert load_cassette(path).meta["source"] == "simulator"


def test_a_scenario_whose_point_is_the_fault_still_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The refusal above is for errors nobody asked for. The demo's fault-server-error scenario asks the simulator
    # for a 500 on every attempt (retries running out is what it records): it is written, with outcome error.
    assert harness_main(["record", "--demo", "fault-server-error", "--cassettes", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "outcome error" in out, out
    recorded = load_cassette(tmp_path / "faults" / "server_error_exhausted.yaml")
    assert [i["response"]["status"] for i in recorded.interactions] == [500, 500, 500]


# -- an interrupted pytest session ----------------------------------------------------------------------------

CHILD_TEST = '''
import os
import anthropic
import pytest

@pytest.mark.cassette(path="cassettes/two.yaml")
def test_two():
    client = anthropic.Anthropic(base_url=os.environ["SIM_URL"], api_key="sk-test-key", max_retries=0)
    for text in ("one", "two"):
        client.messages.create(model="sim-echo", max_tokens=16, messages=[{"role": "user", "content": text}])
'''
# A shell that starts a job without job control hands it SIGINT ignored; Ctrl-C is what is tested.
CHILD_CONFTEST = "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"


def test_ctrl_c_during_a_pytest_rewrite_leaves_the_cassette(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "test_child.py").write_text(CHILD_TEST)
    (tmp_path / "conftest.py").write_text(CHILD_CONFTEST)
    path = tmp_path / "cassettes" / "two.yaml"
    with Simulator() as sim:
        before = _good(path, sim, "one", "two")
    with holding_second_answer() as (sim, clock):
        child = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
             "--record-mode=rewrite", "test_child.py"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "SIM_URL": sim.base_url, "PYTHONPATH": str(REPO)})
        try:
            wait_until(clock.sleeping, child, "its second request (held back by the simulator)")
            child.send_signal(signal.SIGINT)
            out, _ = child.communicate(timeout=HANG_SECONDS)
        finally:
            if child.poll() is None:
                child.kill()
    assert child.returncode == pytest.ExitCode.INTERRUPTED, out
    assert path.read_bytes() == before, "Ctrl-C during a rewrite replaced the cassette with half a run"


def test_an_interrupt_never_saves_even_with_save_on_error(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        before = _good(path, sim, "one", "two")
        with pytest.raises(KeyboardInterrupt), use_cassette(path, "rewrite", save_on_error=True):
            _ask(sim.base_url, "one")
            raise KeyboardInterrupt
    assert path.read_bytes() == before


# -- a cassette several tests name --------------------------------------------------------------------------

ASK = '''
import pytest
from fake_messages_api import FakeMessagesAPI

def ask(text):
    return FakeMessagesAPI().client().messages.create(
        model="claude-sonnet-5", max_tokens=32, messages=[{"role": "user", "content": text}]).content[0].text
'''


def _sharing(letter: str, count: int = 2) -> str:
    return ASK + "".join(textwrap.dedent(f'''
        @pytest.mark.cassette(path="cassettes/shared.yaml")
        def test_{letter}{n}():
            assert ask("hello") == "echo: hello"  # every test sends this one alike
            assert ask("{letter}{n}") == "echo: {letter}{n}"
        ''') for n in range(count))


@pytest.fixture
def two_files(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(fake_messages_api=(REPO / "tests" / "fake_messages_api.py").read_text())
    pytester.makepyfile(test_a=_sharing("a"), test_b=_sharing("b"))
    return pytester


def test_rewriting_one_file_keeps_the_recordings_of_the_tests_in_another(two_files: pytest.Pytester) -> None:
    path = two_files.path / "cassettes" / "shared.yaml"
    two_files.runpytest("--record-mode=rewrite").assert_outcomes(passed=4)
    assert sorted(_asked(path)) == ["a0", "a1", "b0", "b1", "hello"]
    two_files.runpytest("--record-mode=rewrite", "test_a.py").assert_outcomes(passed=2)
    assert sorted(_asked(path)) == ["a0", "a1", "b0", "b1", "hello"], "test_b's recordings were lost"
    two_files.runpytest().assert_outcomes(passed=4)  # and it replays, nothing stale in it
    # A test its file no longer has owns nothing: its recording goes at the next rewrite of that file.
    two_files.makepyfile(test_b=_sharing("b", count=1))
    two_files.runpytest("--record-mode=rewrite", "test_b.py").assert_outcomes(passed=1)
    assert sorted(_asked(path)) == ["a0", "a1", "b0", "hello"]
    result = two_files.runpytest()
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()


def test_two_sessions_rewriting_one_cassette_at_once_keep_both(two_files: pytest.Pytester) -> None:
    path = two_files.path / "cassettes" / "shared.yaml"
    two_files.runpytest("--record-mode=rewrite").assert_outcomes(passed=4)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
               "--record-mode=rewrite"]
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{two_files.path}"}
    children = [subprocess.Popen([*command, name], cwd=two_files.path, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True) for name in ("test_a.py", "test_b.py")]
    for child in children:
        out, _ = child.communicate(timeout=HANG_SECONDS)
        assert child.returncode == 0, out
    assert sorted(_asked(path)) == ["a0", "a1", "b0", "b1", "hello"]


def test_once_records_every_test_of_a_shared_cassette_not_yet_recorded(two_files: pytest.Pytester) -> None:
    path = two_files.path / "cassettes" / "shared.yaml"
    result = two_files.runpytest("--record-mode=once")
    result.assert_outcomes(passed=4)
    assert sorted(_asked(path)) == ["a0", "a1", "b0", "b1", "hello"]
    two_files.runpytest().assert_outcomes(passed=4)


# -- the proxy journals an exchange before its client sees the answer ----------------------------------------


def _journaled(path: Path) -> int:
    journal = journal_path(path)
    return len(journal.read_text().splitlines()) - 1 if journal.exists() else 0


@pytest.mark.parametrize("kind", ["json", "stream", "connect-failure"])
def test_the_proxy_journals_an_exchange_before_its_client_sees_the_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """At the moment the proxy hands its client the answer (the body, the stream's end, the 502), the
    journal already holds the exchange: a kill at any point after that loses nothing the client saw."""
    path = tmp_path / "run.yaml"
    seen: list[int] = []  # exchanges in the journal each time an answer was handed over
    for name in ("send_body", "finish", "send_json"):
        real = getattr(Responder, name)

        def handing_over(self: Responder, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            if sys._getframe(1).f_code.co_filename == proxy_module.__file__:  # the proxy's, not the simulator's
                seen.append(_journaled(path))
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(Responder, name, handing_over)
    with Simulator() as sim:
        upstream = f"http://127.0.0.1:{_closed_port()}" if kind == "connect-failure" else sim.base_url
        with RecordingProxy(upstream, path, mode="new_episodes") as proxy:
            client = anthropic.Anthropic(base_url=proxy.base_url, api_key="sk-test-key", max_retries=0)
            for n in range(3):
                request = {"model": "sim-echo", "max_tokens": 16, "messages": [{"role": "user", "content": f"q{n}"}]}
                if kind == "stream":
                    with client.messages.stream(**request) as stream:  # type: ignore[arg-type]
                        stream.get_final_message()
                elif kind == "json":
                    client.messages.create(**request)  # type: ignore[arg-type]
                else:
                    with pytest.raises(anthropic.APIStatusError):
                        client.messages.create(**request)  # type: ignore[arg-type]
    assert seen == [1, 2, 3], f"the answers went out with {seen} exchanges journaled"


def test_a_proxy_killed_right_after_its_client_got_an_answer_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        for n in range(3):  # each round: an answer, then SIGKILL at once; the next proxy folds the journal in
            process, url = start_serving_command(tmp_path / "url", "proxy", "--upstream", sim.base_url,
                                                 "--cassette", str(path), "--mode", "new_episodes")
            try:
                _ask(url, f"k{n}")
            finally:
                process.send_signal(signal.SIGKILL)
                process.communicate(timeout=HANG_SECONDS)
        with RecordingProxy(sim.base_url, path, mode="new_episodes"):
            pass
    assert _asked(path) == ["k0", "k1", "k2"]
