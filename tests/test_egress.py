"""One egress guard that nothing gets past while a run may not record (issue 38 item 2, issue 37 item 5).

Each probe below reached a non-loopback host from inside a replayed test before the guard: a curl child, a
multiprocessing `spawn` child, a UDP `sendto`, a TCP fast-open `sendto`, `socket.gethostbyname` (a DNS query) and
`_socket.socket.connect`. The target is 192.0.2.1 (TEST-NET-1, never routed) or a name under `.example`: the
guard must refuse before any packet, so each probe asserts the guard's own error (or the loopback refuser's
answer), never a timeout. Loopback stays open.
"""

from __future__ import annotations

import asyncio
import http.server
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2  # noqa: F401  (kept imported across pytester's in-process runs: see tests/test_pytest_plugin.py)
import pytest

from harness import use_cassette
from harness.cassette import modes
from harness.egress import EgressBlocked, active, egress_guard, refuser
from harness.egress.guard import ENV_KEYS

pytest_plugins = ["pytester"]


def record_mode_of_this_run() -> str | None:
    """The record mode this pytest run was started in (the hint a run in mode none pushes says 'none')."""
    hint = modes.replaying_run()
    return "none" if hint is not None and "record mode is 'none'" in hint else None

FAKE = (Path(__file__).parent / "fake_messages_api.py").read_text()
TARGET = ("192.0.2.1", 80)
HINT = "record with --record-mode=once instead."
CURL = shutil.which("curl")
NODE = shutil.which("node")

# The probes, each a way out that got past the socket patches. Shared by the guard's own tests and the pytest
# plugin's (an inner test file), so that each is proven both ways.
PROBES = '''
import multiprocessing, os, shutil, socket, subprocess, sys
import _socket
import pytest

TARGET = ("192.0.2.1", 80)
BLOCKED = "loop-harness blocked"


def probe_udp_sendto():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        with pytest.raises(OSError, match=BLOCKED + " a packet to 192.0.2.1:9"):
            udp.sendto(b"x", ("192.0.2.1", 9))


def probe_tcp_fast_open_sendto():
    with socket.socket() as tcp:
        with pytest.raises(OSError, match=BLOCKED + " a packet to 192.0.2.1:80"):
            tcp.sendto(b"GET / HTTP/1.0\\r\\n\\r\\n", socket.MSG_FASTOPEN, TARGET)


def probe_gethostbyname():
    with pytest.raises(OSError, match=BLOCKED + " a DNS lookup of egress-probe.example"):
        socket.gethostbyname("egress-probe.example")
    with pytest.raises(OSError, match=BLOCKED + " a DNS lookup of egress-probe.example"):
        socket.gethostbyname_ex("egress-probe.example")
    with pytest.raises(OSError, match=BLOCKED + " a reverse DNS lookup of 192.0.2.1"):
        socket.gethostbyaddr("192.0.2.1")


def probe_private_socket_connect():
    raw = _socket.socket()
    try:
        with pytest.raises(OSError, match=BLOCKED + " a connection to 192.0.2.1:80"):
            raw.connect(TARGET)
        with pytest.raises(OSError, match=BLOCKED + " a connection to 192.0.2.1:80"):
            raw.connect_ex(TARGET)
    finally:
        raw.close()


def probe_curl_child():
    # curl honours the proxy variables: it asks the loopback refuser, which answers 403 naming the host.
    done = subprocess.run(["curl", "-sS", "--max-time", "20", "http://192.0.2.1/"], capture_output=True, text=True)
    assert BLOCKED + " a connection to 192.0.2.1:80" in done.stdout, (done.stdout, done.stderr)
    # ...with an environment of its own too, and over TLS (CONNECT refused: curl exits with an error).
    done = subprocess.run(["curl", "-sS", "--max-time", "20", "https://192.0.2.1/"], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"]})
    assert done.returncode != 0 and "403" in done.stderr, (done.stdout, done.stderr)


def probe_spawn_child(capfd):
    context = multiprocessing.get_context("spawn")
    child = context.Process(target=socket.create_connection, args=(TARGET, 20))
    child.start()
    child.join(60)
    err = capfd.readouterr().err  # the child's traceback: the guard's error, raised in the child
    assert child.exitcode == 1 and BLOCKED + " a connection to 192.0.2.1:80" in err, err


def probe_python_child():
    code = "import socket; socket.create_connection(('192.0.2.1', 80), timeout=20)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 1 and BLOCKED + " a connection to 192.0.2.1:80" in done.stderr, done.stderr


def probe_node_child():
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    code = ("require('net').connect(80, '192.0.2.1');")
    done = subprocess.run(["node", "-e", code], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and BLOCKED + " a connection to 192.0.2.1:80" in done.stderr, done.stderr
'''

NAMES = ["udp_sendto", "tcp_fast_open_sendto", "gethostbyname", "private_socket_connect", "curl_child",
         "spawn_child", "python_child", "node_child"]


@pytest.fixture(scope="module")
def probes() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(PROBES, "probes", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("name", NAMES)
def test_each_way_out_is_refused_by_the_guard(name: str, probes: dict[str, Any],
                                              capfd: pytest.CaptureFixture[str]) -> None:
    if name == "curl_child" and CURL is None:
        pytest.skip("curl is not installed")
    with egress_guard(HINT):
        probes[f"probe_{name}"](*([capfd] if name == "spawn_child" else []))


def test_the_refuser_names_each_host_a_child_asked_for() -> None:
    if CURL is None:
        pytest.skip("curl is not installed")
    before = len(refuser().refused)
    with egress_guard(HINT):
        done = subprocess.run([CURL, "-sS", "--max-time", "20", "http://192.0.2.1:8080/x"], capture_output=True,
                              text=True)
    assert done.stdout == f"loop-harness blocked a connection to 192.0.2.1:8080: {HINT}\n"
    assert refuser().refused[before:] == ["192.0.2.1:8080"]  # it asked the loopback refuser, not the host


@pytest.fixture
def loopback_server() -> Iterator[str]:
    class Quiet(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"loopback answered")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_loopback_stays_open_here_and_in_children(loopback_server: str, tmp_path: Path) -> None:
    with egress_guard(HINT):
        port = int(loopback_server.rsplit(":", 1)[1].strip("/"))
        with socket.create_connection(("localhost", port), timeout=5):
            pass
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(b"x", ("127.0.0.1", 9))
        assert socket.gethostbyname("localhost").startswith("127.")
        with socket.socket(socket.AF_UNIX) as server, socket.socket(socket.AF_UNIX) as client:
            server.bind(str(tmp_path / "s"))
            server.listen()
            client.connect(str(tmp_path / "s"))
        code = f"import urllib.request; print(urllib.request.urlopen({loopback_server!r}).read().decode())"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.stdout.strip() == "loopback answered", done.stderr
        if CURL is not None:
            done = subprocess.run([CURL, "-sS", loopback_server], capture_output=True, text=True)
            assert done.stdout == "loopback answered", done.stderr
        if NODE is not None:
            code = f"fetch({loopback_server!r}).then(r => r.text()).then(t => console.log(t))"
            done = subprocess.run([NODE, "-e", code], capture_output=True, text=True, timeout=60)
            assert done.stdout.strip() == "loopback answered", done.stderr


def test_a_fork_child_and_an_asyncio_loop_are_refused_too(capfd: pytest.CaptureFixture[str]) -> None:
    with egress_guard(HINT):
        with pytest.raises(EgressBlocked, match=r"blocked a connection to 192\.0\.2\.1:80"):
            asyncio.run(asyncio.wait_for(asyncio.open_connection(*TARGET), 20))
        child = multiprocessing.get_context("fork").Process(target=socket.create_connection, args=(TARGET, 20))
        child.start()
        child.join(60)
    err = capfd.readouterr().err
    assert child.exitcode == 1 and "loop-harness blocked a connection to 192.0.2.1:80" in err, err


def test_a_python_childs_own_sitecustomize_still_runs(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("import builtins\nbuiltins.THEIRS = 'ran'\n")
    code = ("import builtins, socket\nprint(builtins.THEIRS)\n"
            "try:\n    socket.gethostbyname('egress-probe.example')\nexcept OSError as err:\n    print(err)\n")
    with egress_guard(HINT):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.stdout.splitlines() == ["ran", f"loop-harness blocked a DNS lookup of egress-probe.example: {HINT}"], (
        done.stderr)


def test_one_error_names_the_host_and_how_to_record() -> None:
    with egress_guard(HINT), pytest.raises(EgressBlocked) as raised:
        socket.create_connection(TARGET, timeout=20)
    assert str(raised.value) == f"loop-harness blocked a connection to 192.0.2.1:80: {HINT}"


def test_off_again_after_the_block_and_this_process_environment_untouched() -> None:
    before = {key: os.environ.get(key) for key in ENV_KEYS}
    with egress_guard(HINT):
        assert active()
        assert {key: os.environ.get(key) for key in ENV_KEYS} == before  # this process's clients meet the hook
        seen = subprocess.run(["sh", "-c", "echo $HARNESS_EGRESS_GUARD"], capture_output=True, text=True).stdout
        assert seen.strip() == HINT  # a child's environment holds the guard's
        # subprocess's posix_spawn path hands os.environ itself to the child: it is given the guard's too...
        seen = subprocess.run(["/bin/sh", "-c", "echo $HTTPS_PROXY"], capture_output=True, text=True,
                              close_fds=False).stdout
        assert seen.strip() == refuser().url
        # `env=os.environ` itself: given the guard's variables (until the guard ends)...
        seen = subprocess.run(["sh", "-c", "echo $HTTPS_PROXY"], capture_output=True, text=True,
                              env=os.environ).stdout
        assert seen.strip() == refuser().url
    # ...and given back as it was when the guard ends.
    assert not active()
    assert {key: os.environ.get(key) for key in ENV_KEYS} == before
    seen = subprocess.run(["sh", "-c", "echo ${HARNESS_EGRESS_GUARD-unset}"], capture_output=True, text=True).stdout
    assert seen.strip() == "unset"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:  # no guard: nothing refused (loopback target)
        udp.sendto(b"x", ("127.0.0.1", 9))


def test_npm_in_a_guarded_child_uses_its_cache_before_the_registry() -> None:
    # An agent that starts an MCP server with `npx -y PACKAGE` replays once its recording cached the package:
    # npx asks the registry whether a cached package is stale unless told to prefer the cache, and the guard
    # would refuse that question (the SDK's mcp_tool_runner example, tests/test_sdk_examples.py, shows it whole).
    with egress_guard(HINT):
        seen = subprocess.run(["sh", "-c", "echo $npm_config_prefer_offline"], capture_output=True, text=True).stdout
    assert seen.strip() == "true"


def test_use_cassette_refuses_the_network_in_the_modes_that_may_not_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from fake_messages_api import FakeMessagesAPI
    finally:
        sys.path.pop(0)
    path = tmp_path / "c.yaml"
    with use_cassette(tmp_path / "other.yaml", mode="once"):  # may record, but this pytest run replays: loopback only
        assert active() == (record_mode_of_this_run() == "none")
    monkeypatch.setattr(modes, "_RUNS_THAT_REPLAY", [])  # outside a run that replays (a script, harness record)...
    with use_cassette(path, mode="once"):  # ...a block that may record (no file yet) has the guard off
        assert not active()
        FakeMessagesAPI().client().messages.create(model="claude-sonnet-5", max_tokens=8,
                                                   messages=[{"role": "user", "content": "hi"}])
    for mode in ("none", "once"):  # may not record now: the file exists
        with use_cassette(path, mode=mode, on_unplayed="ignore"):
            assert active()
            with pytest.raises(EgressBlocked, match=r"blocked a DNS lookup of egress-probe\.example: .*c\.yaml is "
                                                     rf"replayed \(mode '{mode}'\).*mode='new_episodes'"):
                socket.gethostbyname("egress-probe.example")
        assert not active()


def test_a_replayed_pytest_test_gets_past_no_probe(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(fake_messages_api=FAKE)
    pytester.makepyfile(test_rec="""
import pytest
from fake_messages_api import FakeMessagesAPI

@pytest.mark.cassette(path="cassettes/c.yaml")
def test_it():
    FakeMessagesAPI().client().messages.create(model="claude-sonnet-5", max_tokens=8,
                                               messages=[{"role": "user", "content": "hi"}])
""")
    pytester.runpytest("--record-mode=once", "test_rec.py").assert_outcomes(passed=1)
    tests = "".join(f'''
@pytest.mark.cassette(path="cassettes/c.yaml", allow_unused=True)
def test_{name}(capfd):
    probe_{name}({"capfd" if name == "spawn_child" else ""})
''' for name in NAMES if name != "curl_child" or CURL is not None)
    pytester.makepyfile(test_probes=PROBES + tests)
    result = pytester.runpytest("test_probes.py", "-p", "no:randomly")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0, result.stdout.str()



def test_a_replayed_agent_sdk_test_is_guarded_too(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed")
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from fake_messages_api import FakeMessagesAPI
    finally:
        sys.path.pop(0)
    with use_cassette(pytester.path / "cassettes" / "session.yaml", mode="once"):
        FakeMessagesAPI().client().messages.create(model="claude-sonnet-5", max_tokens=8,
                                                   messages=[{"role": "user", "content": "hi"}])
    pytester.makepyfile(test_session='''
import socket, subprocess
import pytest
from harness.egress import active

@pytest.mark.cassette("cassettes/session.yaml", allow_unused=True)
def test_it(agent_sdk):
    assert active()
    with pytest.raises(OSError, match="loop-harness blocked a DNS lookup of egress-probe.example"):
        socket.gethostbyname("egress-probe.example")
    # The CLI is started with agent_sdk.env over the test's environment: it gets the guard's proxies.
    seen = subprocess.run(["sh", "-c", "echo $HTTPS_PROXY"], capture_output=True, text=True,
                          env=dict(agent_sdk.env)).stdout
    assert seen.startswith("http://127.0.0.1:"), seen
''')
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
