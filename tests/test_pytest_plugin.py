"""The pytest plugin, exercised as a user would: inner test files run by pytester."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx2  # noqa: F401  (see below)
import pytest

from harness.cassette.format import load_cassette

# Imported here, in the process that runs the inner sessions: pytester takes the modules an in-process run
# imported out of sys.modules when it ends, and the next in-process run would import a second httpx2 whose
# transports are not the ones the plugin's patch sees, so its requests would bypass the cassette. Whether
# that happened used to depend on which tests had run before in the same worker.

pytest_plugins = ["pytester"]

FAKE = (Path(__file__).parent / "fake_messages_api.py").read_text()

ASK = '''
import pytest
from fake_messages_api import FakeMessagesAPI

def ask(client, text):
    return client.messages.create(model="claude-sonnet-5", max_tokens=32,
                                  messages=[{"role": "user", "content": text}]).content[0].text
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(fake_messages_api=FAKE)
    return pytester


def record(project: pytest.Pytester, *texts: str, name: str = "test_rec") -> Path:
    """Record one cassette with the given requests through an inner test in --record-mode=once."""
    body = "\n".join(f"    ask(FakeMessagesAPI().client(), {text!r})" for text in texts)
    project.makepyfile(**{name: ASK + f"\n@pytest.mark.cassette\ndef test_it():\n{body}\n"})
    project.runpytest("--record-mode=once", f"{name}.py").assert_outcomes(passed=1)
    (project.path / f"{name}.py").unlink()
    return project.path / "cassettes" / name / "test_it.yaml"


def test_default_path_and_record_then_replay(project: pytest.Pytester) -> None:
    path = record(project, "hello")
    assert path.exists(), "default path is cassettes/<module>/<test>.yaml under the rootdir"
    assert load_cassette(path).interactions[0]["request"]["body"]["messages"][0]["content"] == "hello"
    project.makepyfile(test_replay=ASK + '''
@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml")
def test_replays(anthropic_client, cassette):
    assert ask(anthropic_client, "hello") == "echo: hello"
    assert cassette.mode == "none"
''')
    project.runpytest("test_replay.py").assert_outcomes(passed=1)


def test_parametrized_names_are_file_safe(project: pytest.Pytester) -> None:
    project.makepyfile(test_param=ASK + '''
@pytest.mark.parametrize("word", ["a b", "c/d"])
@pytest.mark.cassette
def test_p(word):
    ask(FakeMessagesAPI().client(), word)
''')
    project.runpytest("--record-mode=once").assert_outcomes(passed=2)
    names = sorted(p.name for p in (project.path / "cassettes" / "test_param").iterdir())
    assert names == ["test_p-a-b.yaml", "test_p-c-d.yaml"]


def test_a_miss_fails_with_the_diff_not_connection_error(project: pytest.Pytester) -> None:
    record(project, "hello")
    project.makepyfile(test_miss=ASK + '''
@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml")
def test_miss(anthropic_client):
    ask(anthropic_client, "hello, changed")
''')
    result = project.runpytest("test_miss.py")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "request #1 (POST /v1/messages) has no recording" in output
    assert "messages[0].content changed from 'hello' to 'hello, changed'" in output
    assert "Connection error" not in output


def test_a_missing_cassette_in_mode_none_says_so(project: pytest.Pytester) -> None:
    project.makepyfile(test_absent=ASK + '''
@pytest.mark.cassette
def test_absent(anthropic_client):
    ask(anthropic_client, "x")
''')
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no cassette here, and mode 'none' only replays*"])


def test_unplayed_interactions_fail_the_test_unless_allowed(project: pytest.Pytester) -> None:
    record(project, "one", "two")
    project.makepyfile(test_stale=ASK + '''
@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml")
def test_stale(anthropic_client):
    ask(anthropic_client, "one")

@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml", allow_unused=True)
def test_allowed(anthropic_client):
    ask(anthropic_client, "one")
''')
    result = project.runpytest()
    # Two tests name the cassette: it is judged once, after both, from what either played.
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "1 recorded interaction was never played (#2)" in result.stdout.str()
    project.makepyfile(test_stale=ASK + '''
@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml")
def test_stale(anthropic_client):
    ask(anthropic_client, "one")
''')
    result = project.runpytest()  # its only test: judged right after it
    result.assert_outcomes(failed=1)
    assert "1 recorded interaction was never played (#2)" in result.stdout.str()
    project.makepyfile(test_stale=ASK + '''
@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml", allow_unused=True)
def test_allowed(anthropic_client):
    ask(anthropic_client, "one")
''')
    project.runpytest().assert_outcomes(passed=1)


def test_network_is_blocked_in_mode_none_except_loopback(project: pytest.Pytester) -> None:
    record(project, "hello")
    project.makepyfile(test_block=ASK + '''
import socket

@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml", allow_unused=True)
def test_outside_is_blocked():
    with pytest.raises(OSError, match="blocked a connection to 192.0.2.1:80"):
        socket.create_connection(("192.0.2.1", 80), timeout=1)

@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml", allow_unused=True)
def test_loopback_is_allowed():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    with socket.create_connection(server.getsockname(), timeout=1):
        pass
    server.close()

def test_without_a_cassette_nothing_is_patched():
    assert "guarded" not in socket.socket.connect.__name__
''')
    project.runpytest().assert_outcomes(passed=3)


def test_ini_record_mode_and_flag_precedence(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nrecord_mode = once\n")
    project.makepyfile(test_ini=ASK + '''
@pytest.mark.cassette
def test_it(cassette):
    assert cassette.mode == "once"
    ask(FakeMessagesAPI().client(), "ini")
''')
    project.runpytest().assert_outcomes(passed=1)
    assert (project.path / "cassettes" / "test_ini" / "test_it.yaml").exists()
    result = project.runpytest("--record-mode=none")
    result.assert_outcomes(failed=1)  # the flag wins: mode none, and the test asserts once


def test_every_flag_value_is_accepted_and_bad_ini_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(test_mode=ASK + '''
import sys
@pytest.mark.cassette(path="cassettes/mode.yaml", allow_unused=True)
def test_mode(cassette, request):
    assert cassette.mode == request.config.getoption("--record-mode")
''')
    record(project, "seed")
    (project.path / "cassettes" / "test_rec" / "test_it.yaml").rename(project.path / "cassettes" / "mode.yaml")
    for mode in ("none", "once", "new_episodes", "all", "rewrite"):
        project.runpytest(f"--record-mode={mode}").assert_outcomes(passed=1)
    project.makeini("[pytest]\nrecord_mode = sometimes\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_harness_config_fixture_sets_module_options(project: pytest.Pytester) -> None:
    project.makepyfile(test_cfg=ASK + '''
@pytest.fixture(scope="module")
def harness_config():
    return {"ignore_fields": ["metadata.user_id"]}

def call(client, user):
    return client.messages.create(model="claude-sonnet-5", max_tokens=8, metadata={"user_id": user},
                                  messages=[{"role": "user", "content": "x"}]).content[0].text

@pytest.mark.cassette(path="cassettes/cfg.yaml")
def test_cfg(request):
    client = FakeMessagesAPI().client()
    user = "run-1" if request.config.getoption("--record-mode") == "once" else "run-2"
    assert call(client, user) == "echo: x"
''')
    project.runpytest("--record-mode=once").assert_outcomes(passed=1)
    project.runpytest().assert_outcomes(passed=1)


def test_async_client_fixture(project: pytest.Pytester) -> None:
    record(project, "async hello")
    project.makepyfile(test_async=ASK + '''
import asyncio

@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml")
def test_async(async_anthropic_client):
    async def go():
        message = await async_anthropic_client.messages.create(
            model="claude-sonnet-5", max_tokens=32, messages=[{"role": "user", "content": "async hello"}])
        return message.content[0].text
    assert asyncio.run(go()) == "echo: async hello"
''')
    project.runpytest().assert_outcomes(passed=1)


def test_a_failed_test_does_not_save_its_recording(project: pytest.Pytester) -> None:
    project.makepyfile(test_fail=ASK + '''
@pytest.mark.cassette
def test_fail():
    ask(FakeMessagesAPI().client(), "partial")
    assert False, "the agent broke"
''')
    project.runpytest("--record-mode=once").assert_outcomes(failed=1)
    assert not (project.path / "cassettes" / "test_fail" / "test_fail.yaml").exists()


def test_two_xdist_workers_recording_one_cassette_do_not_interleave(project: pytest.Pytester) -> None:
    # Two tests, one per worker (xdist deals out fewer than two tests per worker round robin), each record three
    # requests into one cassette. After its first request each waits until the other has reached its setup, a
    # readiness signal written before any fixture, so before the recording lock: were the runs not taking turns,
    # both would be under way at once here. The file must then hold each run whole and in order, one after the other.
    (project.path / "arrived").mkdir()
    project.makeconftest('''
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):  # before any fixture, so before the cassette's recording lock is taken
    (item.config.rootpath / "arrived" / item.callspec.id).touch()
''')
    project.makepyfile(test_shared=ASK + '''
import time
from pathlib import Path

@pytest.mark.parametrize("run", ["a", "b"])
@pytest.mark.cassette(path="cassettes/shared.yaml")
def test_shared(run):
    client = FakeMessagesAPI().client()
    ask(client, f"run {run} request 0")
    other = Path(__file__).parent / "arrived" / ("b" if run == "a" else "a")
    deadline = time.monotonic() + 60  # a readiness signal, not a speed test: the other worker may start slowly
    while not other.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    for k in (1, 2):
        ask(client, f"run {run} request {k}")
''')
    result = project.runpytest_subprocess("-n", "2", "--record-mode=new_episodes", "-p", "xdist")
    result.assert_outcomes(passed=2)
    texts = [i["request"]["body"]["messages"][0]["content"]
             for i in load_cassette(project.path / "cassettes" / "shared.yaml").interactions]
    whole_runs = [[f"run {run} request {k}" for k in range(3)] for run in "ab"]
    assert sorted([texts[:3], texts[3:]]) == whole_runs, f"the two runs interleaved or one was lost: {texts}"


def test_faults_marker_replays_the_run_with_a_fault_injected(project: pytest.Pytester) -> None:
    record(project, "hello")
    project.makepyfile(test_chaos_marker=ASK + '''
import anthropic

@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml", faults={0: "529"})
def test_retried(cassette):
    assert ask(FakeMessagesAPI().client(max_retries=2), "hello") == "echo: hello"

@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml", faults={0: "timeout"})
def test_not_retried():
    with pytest.raises(anthropic.APITimeoutError):
        ask(FakeMessagesAPI().client(max_retries=0), "hello")
''')
    project.runpytest().assert_outcomes(passed=2)
    result = project.runpytest("--record-mode=once", "test_chaos_marker.py")
    assert "cassette faults= replays only" in result.stdout.str() + result.stderr.str()
    assert result.ret != pytest.ExitCode.OK


TLS_COUNTER = '''
import ssl
import pytest

@pytest.fixture
def tls_loads(monkeypatch):
    """Every CA load and default TLS context made from here on (requested before the client fixture)."""
    calls = []
    real_load, real_default = ssl.SSLContext.load_verify_locations, ssl.create_default_context
    def load(self, *args, **kwargs):
        calls.append("load_verify_locations")
        return real_load(self, *args, **kwargs)
    def default(*args, **kwargs):
        calls.append("create_default_context")
        return real_default(*args, **kwargs)
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", load)
    monkeypatch.setattr(ssl, "create_default_context", default)
    return calls

def tls_of(client):
    return client._client._transport._pool._ssl_context
'''


def test_replayed_clients_load_no_ca_and_recording_still_verifies(project: pytest.Pytester) -> None:
    record(project, "hello")
    project.makeconftest(TLS_COUNTER)
    project.makepyfile(test_tls=ASK + '''
import asyncio
import ssl
from conftest import tls_of

@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml")
def test_replay(tls_loads, anthropic_client):
    assert tls_loads == [], "replay built its client without loading a CA bundle"
    context = tls_of(anthropic_client)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0, "trusts no CA: a stray TLS handshake fails closed"
    assert ask(anthropic_client, "hello") == "echo: hello"

@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml")
def test_replay_async(tls_loads, async_anthropic_client):
    assert tls_loads == []
    async def go():
        message = await async_anthropic_client.messages.create(
            model="claude-sonnet-5", max_tokens=32, messages=[{"role": "user", "content": "hello"}])
        return message.content[0].text
    assert asyncio.run(go()) == "echo: hello"

@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml", allow_unused=True)
def test_sessions_clients_share_one_context(anthropic_client):
    from harness.pytest_plugin.clients import _replay_tls_context
    assert tls_of(anthropic_client) is _replay_tls_context()
''')
    project.runpytest("test_tls.py").assert_outcomes(passed=3)
    project.makepyfile(test_tls_rec=ASK + '''
import ssl
from conftest import tls_of

@pytest.mark.cassette(path="cassettes/rec/tls.yaml")
def test_recording_verifies(tls_loads, anthropic_client):
    assert "load_verify_locations" in tls_loads, "recording keeps the SDK's own verifying client"
    context = tls_of(anthropic_client)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0
    ask(FakeMessagesAPI().client(), "hi")
''')
    with pytest.MonkeyPatch.context() as patch:  # recording with no key fails at setup; this one sends none
        patch.setenv("ANTHROPIC_API_KEY", "sk-unused")
        project.runpytest("--record-mode=once", "test_tls_rec.py").assert_outcomes(passed=1)


def test_a_client_the_test_builds_itself_loads_the_ca_bundle_once_per_session(project: pytest.Pytester) -> None:
    record(project, "hello")
    project.makeconftest(TLS_COUNTER)
    project.makepyfile(test_own=ASK + '''
import anthropic
import ssl
from conftest import tls_of

SEEN = []

@pytest.mark.parametrize("n", range(3))
@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml")
def test_own_client(tls_loads, n):
    client = anthropic.Anthropic()  # the SDK's own client: its TLS context is shared during the replay
    assert ask(client, "hello") == "echo: hello"
    context = tls_of(client)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0, "the same verifying context the SDK builds"
    SEEN.append((context, list(tls_loads)))

def test_shared_only_during_the_replay():
    contexts = {id(context) for context, _ in SEEN}
    assert len(SEEN) == 3 and len(contexts) == 1
    assert [loads for _, loads in SEEN][1:] == [[], []], "later clients load no CA bundle"
    outside = anthropic.Anthropic(api_key="sk-outside")
    assert tls_of(outside) is not SEEN[0][0], "outside a replay a client builds its own"
''')
    project.runpytest("-p", "no:randomly", "test_own.py").assert_outcomes(passed=4)


SHARED = ASK + '''
@pytest.mark.cassette(path="cassettes/shared.yaml")
def test_first():
    assert ask(FakeMessagesAPI().client(), "first") == "echo: first"

@pytest.mark.cassette(path="cassettes/shared.yaml")
def test_second():
    assert ask(FakeMessagesAPI().client(), "second") == "echo: second"
'''


def _record_shared(project: pytest.Pytester, *extra: str) -> Path:
    """A cassette two tests share, recorded by both (plus `extra` requests, which no test makes later)."""
    body = "".join(f"\n@pytest.mark.cassette(path='cassettes/shared.yaml')\ndef test_extra_{n}():\n"
                   f"    ask(FakeMessagesAPI().client(), {text!r})\n" for n, text in enumerate(extra))
    project.makepyfile(test_shared=SHARED + body)
    project.runpytest("--record-mode=new_episodes", "test_shared.py").assert_outcomes(passed=2 + len(extra))
    project.makepyfile(test_shared=SHARED)
    return project.path / "cassettes" / "shared.yaml"


def test_a_cassette_shared_by_two_tests_is_checked_once_for_the_session(project: pytest.Pytester) -> None:
    assert len(load_cassette(_record_shared(project)).interactions) == 2
    result = project.runpytest("test_shared.py")  # each test plays its half: neither half is stale
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK  # a stale half would fail the session, not a test
    result = project.runpytest("test_shared.py", "-k", "first")  # the other test's half is not judged
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    assert "not checked for never-played interactions" in result.stdout.str()


def test_a_stale_interaction_of_a_shared_cassette_fails_the_session(project: pytest.Pytester) -> None:
    _record_shared(project, "gone")
    result = project.runpytest("test_shared.py")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "1 recorded interaction was never played (#3) by the 2 tests" in result.stdout.str()


def test_under_xdist_the_played_interactions_of_every_worker_count(project: pytest.Pytester) -> None:
    _record_shared(project)
    result = project.runpytest_subprocess("-n", "2", "-p", "xdist", "test_shared.py")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    _record_shared(project, "gone")
    result = project.runpytest_subprocess("-n", "2", "-p", "xdist", "test_shared.py")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "was never played (#3)" in result.stdout.str()


# -- a shared cassette recorded in rewrite/all, under xdist ------------------------------------------------------
SHARED_RECORDING = ASK + '''
import os
from pathlib import Path

@pytest.mark.parametrize("run", ["alpha", "bravo", "charlie", "delta"])
@pytest.mark.cassette(path="cassettes/shared.yaml")
def test_shared(run):
    client = FakeMessagesAPI().client()
    ask(client, "hello")  # every test's first request is the same one
    for k in range(2):
        ask(client, f"run {run} request {k}")
    (Path(__file__).parent / "workers" / run).write_text(os.environ.get("PYTEST_XDIST_WORKER", "main"))
'''
EVERY_TEST = ["hello", *(f"run {run} request {k}" for run in ("alpha", "bravo", "charlie", "delta") for k in range(2))]


def _asked(path: Path) -> list[str]:
    return [i["request"]["body"]["messages"][0]["content"] for i in load_cassette(path).interactions]


def _record_under_xdist(project: pytest.Pytester, mode: str, *args: str) -> pytest.RunResult:
    (project.path / "workers").mkdir(exist_ok=True)
    result = project.runpytest_subprocess("-n", "2", "-p", "xdist", f"--record-mode={mode}", "test_shared.py", *args)
    workers = {path.read_text() for path in (project.path / "workers").iterdir()}
    assert len(workers) == 2, f"precondition: both workers recorded into the cassette ({workers})"
    return result


@pytest.mark.parametrize("mode", ["rewrite", "all"])
def test_a_cassette_shared_under_xdist_holds_what_every_worker_recorded(project: pytest.Pytester, mode: str) -> None:
    path = _record_shared(project, "gone")  # an older recording of other tests, one request no test makes now
    assert _asked(path) == ["first", "second", "gone"]
    project.makepyfile(test_shared=SHARED_RECORDING)
    result = _record_under_xdist(project, mode)
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    # Written once, in the tests' order whichever worker ran them; the request all four make is kept once.
    old = {"rewrite": [], "all": ["first", "second", "gone"]}[mode]  # all keeps what the session did not renew
    assert _asked(path) == old + EVERY_TEST
    # And it replays, under xdist too, with nothing stale left in it: every recording is some test's.
    project.makepyfile(test_shared=SHARED_RECORDING + (SHARED.removeprefix(ASK) + '''
@pytest.mark.cassette(path="cassettes/shared.yaml")
def test_gone():
    ask(FakeMessagesAPI().client(), "gone")
''') * (mode == "all"))
    result = project.runpytest_subprocess("-n", "2", "-p", "xdist", "test_shared.py")
    result.assert_outcomes(passed=4 + 3 * (mode == "all"))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()


def test_a_rewrite_that_leaves_some_sharing_tests_out_keeps_their_recordings(project: pytest.Pytester) -> None:
    project.makepyfile(test_shared=SHARED_RECORDING)
    path = project.path / "cassettes" / "shared.yaml"
    _record_under_xdist(project, "rewrite").assert_outcomes(passed=4)
    shutil.rmtree(project.path / "workers")
    result = _record_under_xdist(project, "rewrite", "-k", "alpha or charlie")  # bravo and delta's stay
    result.assert_outcomes(passed=2)
    assert sorted(_asked(path)) == sorted(EVERY_TEST)
    assert "kept the recordings of the 2 tests that did not run and pass" in result.stdout.str()


WALK_COUNTER = """
import json
import harness.files
import harness.project

WALKS = []
REAL = (harness.project._marked_root, harness.files._nearest_marked_folder)

def _project_walk(start):
    WALKS.append(["project", str(start)])
    return REAL[0](start)

def _marked_walk(folder):
    WALKS.append(["marked", folder])
    return REAL[1](folder)

harness.project._marked_root, harness.files._nearest_marked_folder = _project_walk, _marked_walk

def pytest_sessionfinish(session):
    harness.project._marked_root, harness.files._nearest_marked_folder = REAL
    (session.config.rootpath / "walks.json").write_text(json.dumps(WALKS))
"""


def test_each_cassette_folder_is_walked_up_once_a_session(project: pytest.Pytester) -> None:
    """Opening each test's cassette asked the project root of its folder, walking up to /: now once a session."""
    record(project, "hello")
    project.makeconftest(WALK_COUNTER)
    project.makepyfile(test_replay=ASK + "".join(f'''
@pytest.mark.cassette(path="cassettes/test_rec/test_it.yaml")
def test_replays_{n}(anthropic_client):
    assert ask(anthropic_client, "hello") == "echo: hello"
''' for n in range(3)))
    project.runpytest("test_replay.py").assert_outcomes(passed=3)
    walks = [tuple(walk) for walk in json.loads((project.path / "walks.json").read_text())]
    assert ("marked", str(project.path / "cassettes" / "test_rec")) in walks
    assert len(walks) == len(set(walks)), walks  # three tests opened the cassette; each folder was walked once
