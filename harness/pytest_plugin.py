"""pytest plugin: recorded agent tests as the default way to test.

Registered by entry point, so installing loop-harness is enough. It feels like pytest-recording and
answers what its users complain about:

- `--record-mode` defaults to none: CI never records, and a test with a cassette cannot reach any
  host but loopback (blocked at socket level), so nothing silently goes live;
- a request with no recording fails the test with the diff against the nearest recorded request;
- interactions recorded but never played fail the test, so a stale cassette is found the day it
  goes stale (opt out with `@pytest.mark.cassette(allow_unused=True)`).
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cassette.recorder import MODES, Cassette, use_cassette

_CASSETTE_KEY = pytest.StashKey[Cassette]()
_AGENT_SDK_KEY = pytest.StashKey[Any]()
_DRIFTS_KEY = pytest.StashKey[list[str]]()
_FAILED_KEY = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("loop-harness", "record and replay Claude agent loops")
    group.addoption(
        "--record-mode",
        action="store",
        default=None,
        choices=MODES,
        help="none (default: replay only, network blocked), once, new_episodes, all, rewrite",
    )
    group.addoption("--cassette-dir", action="store", default=None, help="where default cassette paths live")
    parser.addini("record_mode", "default record mode when --record-mode is not given", default="none")
    parser.addini("cassette_dir", "folder for default cassette paths, relative to the rootdir", default="cassettes")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cassette(path=None, **options): record or replay this test's Messages API calls; options are "
        "use_cassette's (ignore_fields, scrubbers, allow_repeats, save_on_error) plus allow_unused, and "
        "faults={request_index: '429'|'529'|'500'|'timeout'|'disconnect'|'cut-stream'|'sse-error'} to replay "
        "the run with faults injected.",
    )
    record_mode(config)  # a bad value in the config file is a usage error before any test runs


def record_mode(config: pytest.Config) -> str:
    mode = config.getoption("--record-mode") or config.getini("record_mode") or "none"
    if mode not in MODES:
        raise pytest.UsageError(f"record_mode = {mode!r} in the config file; use one of {', '.join(MODES)}")
    return mode


def default_cassette_path(item: pytest.Item) -> Path:
    """cassettes/<test module>/<test name>.yaml under the rootdir (parametrized ids made file-safe)."""
    config = item.config
    folder = Path(config.getoption("--cassette-dir") or config.getini("cassette_dir") or "cassettes")
    if not folder.is_absolute():
        folder = config.rootpath / folder
    module = Path(str(item.path)).stem
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", item.name).strip("-")
    return folder / module / f"{name}.yaml"


# -- the network block -----------------------------------------------------------------------------------

class NetworkBlocked(OSError):
    """A test in record mode none tried to reach a host other than loopback."""


def _is_loopback(host: Any) -> bool:
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _guard(original: Callable[..., Any], describe: Callable[..., tuple[Any, Any]]) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        host, port = describe(*args, **kwargs)
        if not _is_loopback(host):
            raise NetworkBlocked(
                f"loop-harness blocked a connection to {host}:{port}: record mode is 'none', so this test may "
                "talk to loopback only. Record with --record-mode=once (or new_episodes) to reach the network."
            )
        return original(*args, **kwargs)

    return guarded


def _connect_target(sock: socket.socket, address: Any, *_: Any) -> tuple[Any, Any]:
    if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
        return address[0], address[1]
    return "localhost", None  # unix sockets and the like never leave the machine


@pytest.fixture
def _harness_network_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guard(socket.socket.connect, _connect_target))
    monkeypatch.setattr(socket.socket, "connect_ex", _guard(socket.socket.connect_ex, _connect_target))
    monkeypatch.setattr(socket, "getaddrinfo", _guard(socket.getaddrinfo, lambda host, port, *a, **k: (host, port)))


# -- fixtures ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def harness_config() -> dict[str, Any]:
    """Options for every cassette of a module (ignore_fields, scrubbers, base_url, ...). Override it in a
    test module or conftest, like pytest-recording's vcr_config."""
    return {}


_CASSETTE_OPTIONS = ("ignore_fields", "scrubbers", "allow_repeats", "save_on_error", "note", "normalize")


@pytest.fixture
def cassette(request: pytest.FixtureRequest, harness_config: dict[str, Any]) -> Iterator[Cassette]:
    """The active cassette: every Messages API call of the test is recorded to or replayed from it."""
    marker = request.node.get_closest_marker("cassette")
    marker_options = dict(marker.kwargs) if marker else {}
    path = marker_options.pop("path", None) or (marker.args[0] if marker and marker.args else None)
    options = {**harness_config, **marker_options}
    mode = options.pop("record_mode", None) or record_mode(request.config)
    cassette_path = Path(path) if path else default_cassette_path(request.node)
    if not cassette_path.is_absolute():
        cassette_path = request.config.rootpath / cassette_path
    faults = options.pop("faults", None)
    if faults:
        # Chaos: the recorded run, with faults injected at the given request indexes. Replay only; a fatal
        # fault leaves later recordings unplayed, which is the point rather than a stale cassette.
        if mode != "none":
            raise pytest.UsageError(f"{request.node.nodeid}: cassette faults= replays only; run with record mode none")
        from harness.chaos import inject

        options.setdefault("allow_unused", True)
        context: Any = inject(cassette_path, faults=faults,
                              **{k: v for k, v in options.items() if k in ("ignore_fields", "allow_repeats")})
    else:
        context = use_cassette(cassette_path, mode, **{k: v for k, v in options.items() if k in _CASSETTE_OPTIONS})
    if mode == "none":
        request.getfixturevalue("_harness_network_block")
    active = context.__enter__()
    active.allow_unused = bool(options.get("allow_unused", False))  # type: ignore[attr-defined]
    request.node.stash[_CASSETTE_KEY] = active
    try:
        yield active
    finally:
        failed = request.node.stash.get(_FAILED_KEY, False)
        if failed:
            context.__exit__(RuntimeError, RuntimeError("test failed"), None)
        else:
            context.__exit__(None, None, None)


def _client_options(harness_config: dict[str, Any]) -> dict[str, Any]:
    return {
        # In replay the key is never sent anywhere; when recording, the real one comes from the environment.
        "api_key": os.environ.get("ANTHROPIC_API_KEY") or "replay-key-not-a-secret",
        "base_url": harness_config.get("base_url") or os.environ.get("ANTHROPIC_BASE_URL") or None,
        "max_retries": harness_config.get("max_retries", 2),
    }


@pytest.fixture
def anthropic_client(cassette: Cassette, harness_config: dict[str, Any]) -> Iterator[Any]:
    """An `anthropic.Anthropic` whose calls go through this test's cassette."""
    import anthropic

    client = anthropic.Anthropic(**_client_options(harness_config))
    yield client
    client.close()


@pytest.fixture
def async_anthropic_client(cassette: Cassette, harness_config: dict[str, Any]) -> Any:
    """An `anthropic.AsyncAnthropic` whose calls go through this test's cassette (use it inside any loop)."""
    import anthropic

    return anthropic.AsyncAnthropic(**_client_options(harness_config))


@pytest.fixture(autouse=True)
def _harness_cassette_marker(request: pytest.FixtureRequest) -> None:
    # A test that carries the marker gets its cassette even if it asks for no fixture.
    # (An Agent SDK test's requests come over HTTP from the CLI: the `agent_sdk` fixture serves its cassette.)
    if request.node.get_closest_marker("cassette") is not None and "agent_sdk" not in request.fixturenames:
        request.getfixturevalue("cassette")


# -- after the test body: stale interactions fail the test ------------------------------------------------

_AGENT_SDK_OPTIONS = ("normalize", "upstream", "sim_policy", "allow_unused", "allow_rejected")


@pytest.fixture
def agent_sdk(request: pytest.FixtureRequest, harness_config: dict[str, Any]) -> Iterator[Any]:
    """A Claude Agent SDK run against this test's cassette: `ClaudeAgentOptions(env=agent_sdk.env)`.

    Replays through `harness serve` (record mode none, or once with the cassette present); records through
    `harness proxy` in front of `upstream` (the live API, or "simulator") otherwise. Marker options:
    normalize (a Normalization), match_policy ("strict" or "sequence"), upstream, sim_policy,
    allow_unused, allow_rejected.
    """
    from harness.agent_sdk import AgentSdkSession
    from harness.cassette.normalize import Normalization
    from harness.errors import HarnessError

    marker = request.node.get_closest_marker("cassette")
    marker_options = dict(marker.kwargs) if marker else {}
    path = marker_options.pop("path", None) or (marker.args[0] if marker and marker.args else None)
    options = {**harness_config, **marker_options}
    mode = options.pop("record_mode", None) or record_mode(request.config)
    cassette_path = Path(path) if path else default_cassette_path(request.node)
    if not cassette_path.is_absolute():
        cassette_path = request.config.rootpath / cassette_path
    rules = options.get("normalize") or Normalization()
    if options.get("match_policy"):
        rules = rules.merged(Normalization(policy=options["match_policy"]))
    session = AgentSdkSession(cassette_path, mode, normalize=rules or None,
                              **{k: v for k, v in options.items() if k in _AGENT_SDK_OPTIONS and k != "normalize"})
    try:
        session.start()
    except HarnessError as err:
        pytest.fail(str(err), pytrace=False)
    request.node.stash[_AGENT_SDK_KEY] = session
    try:
        yield session
    finally:
        session.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    session = item.stash.get(_AGENT_SDK_KEY, None)
    try:
        result = yield
    except BaseException:
        # The CLI turns a replay miss into its own error after retrying degraded requests: the test fails
        # on the first miss instead, with its diff. Any other failure of the test stands as it is.
        miss = session.first_miss() if session is not None else None
        if miss:
            raise pytest.fail.Exception(_agent_sdk_problems(item, session), pytrace=False) from None
        raise
    if session is not None:
        problems = _agent_sdk_problems(item, session)
        if problems:
            raise pytest.fail.Exception(problems, pytrace=False)
    active = item.stash.get(_CASSETTE_KEY, None)
    if active is not None and active.write_protected and not getattr(active, "allow_unused", False):
        unplayed = active.unplayed
        if unplayed:
            numbers = ", ".join(f"#{p + 1}" for p in unplayed[:10])
            raise pytest.fail.Exception(
                f"{active.path}: {len(unplayed)} recorded interaction(s) were never played ({numbers}). "
                "The test no longer makes these requests: re-record (--record-mode=rewrite) or mark the test "
                "@pytest.mark.cassette(allow_unused=True)."
            )
    return result


def _agent_sdk_problems(item: pytest.Item, session: Any) -> str:
    """Drifts become warnings (and the terminal summary lists them); the text of what must fail the test
    (a miss, unplayed recordings, a refused recorded request), or "" when nothing must."""
    import warnings

    from harness.agent_sdk import HarnessDriftWarning

    for drift in session.drifts:
        text = f"{session.path}: {drift.describe()}"
        warnings.warn(HarnessDriftWarning(text), stacklevel=1)
        item.config.stash.setdefault(_DRIFTS_KEY, []).append(f"{item.nodeid}: {text}")
    return "\n\n".join(session.problems())


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    drifts = config.stash.get(_DRIFTS_KEY, [])
    if drifts:
        terminalreporter.section("loop-harness: tool-output drift served under matching policy 'sequence'")
        for line in drifts:
            terminalreporter.line(line)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[_FAILED_KEY] = True
    return report
