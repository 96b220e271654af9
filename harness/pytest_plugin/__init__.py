"""pytest plugin: recorded agent tests as the default way to test.

Registered by entry point, so installing loop-harness is enough. It feels like pytest-recording and
answers what its users complain about:

- `--record-mode` defaults to none: CI never records, and a test with a cassette cannot reach any
  host but loopback (blocked at socket level), so nothing silently goes live;
- a request with no recording fails the test with the diff against the nearest recorded request;
- interactions recorded but never played fail the test, so a stale cassette is found the day it
  goes stale (opt out with `@pytest.mark.cassette(allow_unused=True)`).

Loading it costs a session nothing it does not use: the recorder (and with it the anthropic SDK, httpx2
and vcrpy) is imported when a test first asks for a cassette. Beside pytest-recording, its `--record-mode`
(same values) drives both plugins, and a test may carry either marker.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.cassette.modes import MODES, PLACEHOLDER_API_KEY
from harness.pytest_plugin.marker import MARKER_OWN, cassette_path_of, keywords_of, marker_keywords, unknown_options
from harness.pytest_plugin.misses import line_of_test, miss_failure
from harness.pytest_plugin.network import network_blocked

# --drift-report and the fork summary, and the check of cassettes shared by several tests, live in their
# own modules, registered with this one.
pytest_plugins = ("harness.pytest_plugin.drift", "harness.pytest_plugin.shared")

if TYPE_CHECKING:
    from harness.cassette.recorder import Cassette

_CASSETTE_KEY = pytest.StashKey["Cassette"]()
_AGENT_SDK_KEY = pytest.StashKey[Any]()
_DRIFTS_KEY = pytest.StashKey[list[str]]()
_FAILED_KEY = pytest.StashKey[bool]()
_PYTEST_RECORDING = "recording"  # pytest-recording's plugin name (its pytest11 entry point)


def _pytest_recording_will_add_record_mode(pluginmanager: pytest.PytestPluginManager) -> bool:
    """pytest-recording defines the same --record-mode (same values); two definitions stop pytest at start.
    When it is installed and will load after us, leave the option to it and read its value."""
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") or pluginmanager.is_blocked(_PYTEST_RECORDING):
        return False
    return importlib.util.find_spec("pytest_recording") is not None


# pytest-recording's --record-mode knows only vcrpy's modes; when it owns the option, `fork` is added to its
# choices (after whichever of the two plugins registers last), so one option still drives both.
_PARSERS: list[pytest.Parser] = []


def _allow_fork(parser: pytest.Parser, group: str) -> None:
    for option in parser.getgroup(group).options:
        # Argument.attrs() is what the option is built from (pytest 8) or its argparse action's own (pytest 9).
        choices = option.attrs().get("choices") if "--record-mode" in option.names() else None
        if choices is not None and "fork" not in choices:
            option.attrs()["choices"] = [*choices, "fork"]


def pytest_plugin_registered(plugin: object, plugin_name: str, manager: pytest.PytestPluginManager) -> None:
    if plugin_name == _PYTEST_RECORDING:  # its pytest_addoption has run: its --record-mode exists now
        for parser in _PARSERS:
            _allow_fork(parser, _PYTEST_RECORDING)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("loop-harness", "record and replay Claude agent loops")
    if not _pytest_recording_will_add_record_mode(pluginmanager):
        # ValueError: pytest-recording loaded first and defined it; one option drives both.
        with contextlib.suppress(ValueError):
            group.addoption(
                "--record-mode",
                action="store",
                default=None,
                choices=MODES,
                help="none (default: replay only, network blocked), once, new_episodes, all, rewrite, "
                "fork (replay the matching prefix, record from the first divergent request)",
            )
    _PARSERS.append(parser)
    if pluginmanager.has_plugin(_PYTEST_RECORDING):  # it loaded first and owns the option
        _allow_fork(parser, _PYTEST_RECORDING)
    group.addoption("--cassette-dir", action="store", default=None, help="where default cassette paths live")
    group.addoption(
        "--simulator",
        action="store",
        default=None,
        metavar="auto|FILE",
        help="answer the clients' calls from an in-process simulator instead of the API (record with no key): "
        "auto (sim-auto; options as auto:serial,rounds=2,until-corrected), another simulator model name, "
        "or a YAML model script",
    )
    parser.addini("record_mode", "default record mode when --record-mode is not given", default="none")
    parser.addini("cassette_dir", "folder for default cassette paths, relative to the rootdir (default: `cassettes` "
                  "of [tool.loop-harness], else cassettes/)", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cassette(path=None, **options): record or replay this test's Messages API calls; options are exactly "
        "harness.use_cassette's keywords, plus allow_unused, and faults={request_index: '429'|'529'|'500'|"
        "'timeout'|'disconnect'|'cut-stream'|'sse-error'} to replay the run with faults injected (an agent_sdk "
        "test: AgentSdkSession's keywords plus match_policy). A misspelt one fails the test at setup.",
    )
    config.addinivalue_line(
        "markers",
        "simulator(**options): options for the `simulator` fixture's Simulator (model=callable or name, "
        "scripts=[FILE], faults={index: kind}, seed=N).",
    )
    record_mode(config)  # a bad value in the config file is a usage error before any test runs
    _check_simulator_option(config)


def record_mode(config: pytest.Config) -> str:
    mode = config.getoption("record_mode", default=None) or config.getini("record_mode") or "none"
    if mode not in MODES:
        raise pytest.UsageError(f"record_mode = {mode!r} in the config file; use one of {', '.join(MODES)}")
    return mode


# -- fixtures ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def harness_config() -> dict[str, Any]:
    """Options for every cassette of a module (ignore_fields, scrubbers, base_url, ...). Override it in a
    test module or conftest, like pytest-recording's vcr_config."""
    return {}


# What `harness_config` may hold beside the cassette options: the client fixtures' own (read by _client_options).
CLIENT_OPTIONS = ("base_url", "max_retries")


def _valid_keywords(consumer: str) -> list[str]:
    """The marker's keywords for the fixture that opens the cassette: the signature of what it opens, plus its own."""
    if consumer == "agent_sdk":
        from harness.agent_sdk import AgentSdkSession

        return [*keywords_of(AgentSdkSession), *MARKER_OWN["agent_sdk"]]
    from harness.cassette.recorder import use_cassette

    return [*keywords_of(use_cassette), *MARKER_OWN["cassette"]]


def _marked_cassette(
    request: pytest.FixtureRequest, harness_config: dict[str, Any], consumer: str = "cassette"
) -> tuple[Path, dict[str, Any], str]:
    """The test's cassette as its marker and harness_config say: its absolute path, the options, the mode.

    A keyword the marker (or harness_config) does not take fails the test here, at setup, with one screen.
    """
    marker = request.node.get_closest_marker("cassette")
    marker_options: dict[str, Any] = {}
    problem: str | None = None
    try:
        marker_options = marker_keywords(marker) if marker else {}
    except ValueError as err:
        problem = f"{request.node.nodeid}: {err}"
    valid = _valid_keywords(consumer)
    if problem is None:
        problem = unknown_options(marker_options, valid, what=f"{request.node.nodeid}: @pytest.mark.cassette")
    if problem is None:
        everything = dict.fromkeys([*valid, *_valid_keywords("agent_sdk" if consumer == "cassette" else "cassette"),
                                    *CLIENT_OPTIONS])
        problem = unknown_options(harness_config, everything, what=f"{request.node.nodeid}: harness_config")
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    options = {**harness_config, **marker_options}
    for name in CLIENT_OPTIONS:
        options.pop(name, None)
    path = options.pop("path", None)
    mode = options.pop("mode", None) or record_mode(request.config)
    return cassette_path_of(request.node, path), options, mode


def _open_failure(request: pytest.FixtureRequest, err: Exception) -> None:
    """A cassette that cannot be opened (corrupt, hostile, a bad option value) as one screen: the file, the
    place, the reason and what to do, no traceback through the harness."""
    pytest.fail(f"{request.node.nodeid}: {err}{_next_step(err)}", pytrace=False)


def _next_step(error: BaseException) -> str:
    from harness.errors import CassetteError

    if isinstance(error, CassetteError) and error.file:
        return ("\nFix the file, or record it afresh: pytest --record-mode=rewrite "
                "(or use_cassette(..., mode='rewrite')).")
    return ""


@pytest.fixture
def cassette(request: pytest.FixtureRequest, harness_config: dict[str, Any]) -> Iterator[Cassette]:
    """The active cassette: every Messages API call of the test is recorded to or replayed from it."""
    from harness.cassette.recorder import use_cassette

    cassette_path, options, mode = _marked_cassette(request, harness_config)
    if mode == "none" and not cassette_path.exists():  # one screen, no traceback through the plugin
        pytest.fail(f"{cassette_path}: no cassette here, and mode 'none' only replays. Record it first: "
                    "pytest --record-mode=once (with a key, or ANTHROPIC_BASE_URL pointing at harness sim)",
                    pytrace=False)
    from harness.errors import HarnessError

    faults = options.pop("faults", None)
    allow_unused = bool(options.pop("allow_unused", bool(faults)))
    with contextlib.ExitStack() as stack:
        try:
            if faults:
                # Chaos: the recorded run, with faults injected at the given request indexes. Replay only; a fatal
                # fault leaves later recordings unplayed, which is the point rather than a stale cassette.
                if mode != "none":
                    pytest.fail(f"{request.node.nodeid}: cassette faults= replays only; run with record mode none",
                                pytrace=False)
                from harness.cassette.recorder import Cassette
                from harness.chaos import inject

                # A replay takes no lock and writes nothing: the cassette's own options are all it can use.
                replay_options = set(keywords_of(Cassette)) - {"path", "mode"}
                context: Any = inject(cassette_path, faults=faults,
                                      **{k: v for k, v in options.items() if k in replay_options})
            else:
                context = use_cassette(cassette_path, mode, **options)
            if mode == "none":
                stack.enter_context(network_blocked())
            elif (simulator_url := _simulator_url(request)) is not None:
                # Recording against --simulator (or the `simulator` fixture): a client the agent builds itself goes
                # there too, with no key (the cassette gives a keyless client a placeholder, sent to loopback only).
                request.getfixturevalue("monkeypatch").setenv("ANTHROPIC_BASE_URL", simulator_url)
            active = stack.enter_context(_left_as_the_test_ended(context, request.node))
        except HarnessError as err:
            problem: HarnessError | None = err
        else:
            problem = None
        if problem is not None:  # failed outside the except block: no "during handling" chain on the screen
            _open_failure(request, problem)
        active.allow_unused = allow_unused  # type: ignore[attr-defined]
        from harness.pytest_plugin.shared import collect_recordings  # registered by pytest_plugins: imported first

        collect_recordings(request.node, active)  # a shared cassette in rewrite/all: written once, for the session
        request.node.stash[_CASSETTE_KEY] = active
        yield active


class _TestFailed(RuntimeError):
    """Raised through a cassette's context when its test failed: it saves only with save_on_error."""


@contextlib.contextmanager
def _left_as_the_test_ended(context: Any, item: pytest.Item) -> Iterator[Any]:
    """`context` entered, and left as the test ended: a failed test leaves it as an error would."""
    with contextlib.suppress(_TestFailed), context as active:
        yield active
        if item.stash.get(_FAILED_KEY, False):
            raise _TestFailed("test failed")


def _client_options(harness_config: dict[str, Any], simulator_url: str | None = None) -> dict[str, Any]:
    return {
        # In replay the key is never sent anywhere; when recording, the real one comes from the environment.
        "api_key": os.environ.get("ANTHROPIC_API_KEY") or PLACEHOLDER_API_KEY,
        "base_url": simulator_url or harness_config.get("base_url") or os.environ.get("ANTHROPIC_BASE_URL") or None,
        "max_retries": harness_config.get("max_retries", 2),
    }


_replay_tls: Any = None


def _replay_tls_context() -> Any:
    """One TLS context for every replayed client of the session, with no CA loaded.

    The SDK's own httpx2 client loads the system's CA bundle (`load_verify_locations`, ~36 ms) each time a
    client is built; replay never opens a TLS connection (the cassette answers at the transport, and mode none
    blocks every host but loopback), so that cost bought nothing. This context still requires a verified
    certificate and a matching host name, and trusts no CA: were a replayed request ever to reach TLS, the
    handshake would fail rather than go out unverified. Recording modes keep the SDK's own client.
    """
    global _replay_tls
    if _replay_tls is None:
        import ssl

        _replay_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname and CERT_REQUIRED by default
    return _replay_tls


def _http_client_option(cassette: Cassette, asynchronous: bool) -> dict[str, Any]:
    """`http_client=` for a replay-only cassette (the SDK's defaults, TLS set-up skipped); nothing otherwise."""
    if getattr(cassette, "mode", None) != "none":
        return {}
    import anthropic

    factory = anthropic.DefaultAsyncHttpxClient if asynchronous else anthropic.DefaultHttpxClient
    return {"http_client": factory(verify=_replay_tls_context())}


@pytest.fixture
def anthropic_client(
    request: pytest.FixtureRequest, cassette: Cassette, harness_config: dict[str, Any]
) -> Iterator[Any]:
    """An `anthropic.Anthropic` whose calls go through this test's cassette."""
    import anthropic

    with anthropic.Anthropic(**_client_options(harness_config, _simulator_url(request)),
                             **_http_client_option(cassette, asynchronous=False)) as client:
        yield client


@pytest.fixture
def async_anthropic_client(
    request: pytest.FixtureRequest, cassette: Cassette, harness_config: dict[str, Any]
) -> Iterator[Any]:
    """An `anthropic.AsyncAnthropic` whose calls go through this test's cassette (use it inside any loop);
    closed after the test."""
    import anthropic

    with contextlib.closing(_AsyncClosing(anthropic.AsyncAnthropic(
            **_client_options(harness_config, _simulator_url(request)),
            **_http_client_option(cassette, asynchronous=True)))) as closing:
        yield closing.client


class _AsyncClosing:
    """An async client closed from synchronous teardown: its own close, run to the end on a loop of its own
    (the test's loop has ended by then; a connection bound to it is dropped with it)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def close(self) -> None:
        import asyncio

        if not self.client.is_closed():
            with contextlib.suppress(RuntimeError, OSError):  # a transport bound to the test's closed loop
                asyncio.run(self.client.close())


@pytest.fixture(autouse=True)
def _harness_cassette_marker(request: pytest.FixtureRequest) -> None:
    # A test that carries the marker gets its cassette even if it asks for no fixture.
    # (An Agent SDK test's requests come over HTTP from the CLI: the `agent_sdk` fixture serves its cassette.)
    if request.node.get_closest_marker("cassette") is not None and "agent_sdk" not in request.fixturenames:
        request.getfixturevalue("cassette")


# -- after the test body: stale interactions fail the test ------------------------------------------------


def _missing_credential(error: BaseException | None) -> BaseException | None:
    """The MissingCredential that `error` is or was raised from, if any (the SDK or an agent may wrap it)."""
    transport = sys.modules.get("harness.cassette.transport")
    seen = 0
    while transport is not None and error is not None and seen < 20:
        if isinstance(error, transport.MissingCredential):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


def _bad_input_failure(item: pytest.Item, error: BaseException) -> pytest.fail.Exception | None:
    """A file the harness cannot use (a corrupt cassette or golden the test opened itself) as one screen: the file,
    the place, what to do, and the test's line; no traceback through the harness."""
    errors = sys.modules.get("harness.errors")  # not loaded: no harness error was raised
    if errors is None or not isinstance(error, errors.HarnessError):
        return None
    return pytest.fail.Exception(f"{error}{_next_step(error)}{line_of_test(item, error)}", pytrace=False)


@pytest.fixture
def agent_sdk(request: pytest.FixtureRequest, harness_config: dict[str, Any]) -> Iterator[Any]:
    """A Claude Agent SDK run against this test's cassette: `ClaudeAgentOptions(env=agent_sdk.env)`.

    Replays through `harness serve` (record mode none, or once with the cassette present); records through
    `harness proxy` in front of `upstream` (the live API, or "simulator") otherwise. Marker options:
    normalize (a Normalization), match_policy ("strict" or "sequence"), upstream, sim_policy,
    allow_unused, allow_rejected.
    """
    from harness.agent_sdk import AgentSdkSession
    from harness.errors import HarnessError
    from harness.normalize import Normalization

    cassette_path, options, mode = _marked_cassette(request, harness_config, "agent_sdk")
    rules = options.pop("normalize", None) or Normalization()
    policy = options.pop("match_policy", None)
    if policy:
        rules = rules.merged(Normalization(policy=policy))
    session_options = set(keywords_of(AgentSdkSession))  # harness_config may hold use_cassette's options too
    session = AgentSdkSession(cassette_path, mode, normalize=rules or None,
                              **{k: v for k, v in options.items() if k in session_options})
    with contextlib.ExitStack() as stack:
        failure: HarnessError | None = None
        try:
            stack.enter_context(session)
        except HarnessError as err:
            failure = err
        if failure is not None:  # outside the except block: one screen, no "during handling" chain
            pytest.fail(str(failure), pytrace=False)
        request.node.stash[_AGENT_SDK_KEY] = session
        yield session


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    active = item.stash.get(_CASSETTE_KEY, None)
    session = item.stash.get(_AGENT_SDK_KEY, None)
    try:
        result = yield
    except Exception as raised:
        # The Claude Code CLI turns a replay miss into its own error after retrying degraded requests: the
        # test fails on the first miss instead, with its diff. Any other failure of the test stands as it is.
        if session is not None and session.first_miss():
            raise pytest.fail.Exception(_agent_sdk_problems(item, session), pytrace=False) from None
        failure = miss_failure(item, active, raised) or _bad_input_failure(item, raised)
        if failure is not None:
            raise failure from None
        no_key = _missing_credential(raised)
        if no_key is not None:  # recording with no key and no simulator: the one line that says both ways out
            raise pytest.fail.Exception(str(no_key), pytrace=False) from None
        raise
    if session is not None:
        problems = _agent_sdk_problems(item, session)
        if problems:
            raise pytest.fail.Exception(problems, pytrace=False)
    # A miss the test swallowed fails it; under --drift-report it is the report's to count instead.
    failure = None if item.config.getoption("--drift-report", None) else miss_failure(item, active, None)
    if failure is not None:
        raise failure
    from harness.pytest_plugin.shared import is_shared  # registered by pytest_plugins: imported there first

    if active is not None and active.write_protected and not getattr(active, "allow_unused", False) and not (
            is_shared(item, active.path)):  # several tests play it: checked once, at the end (pytest_shared)
        unplayed = active.unplayed
        if unplayed:
            numbers = ", ".join(f"#{p + 1}" for p in unplayed[:10])
            raise pytest.fail.Exception(
                f"{active.path}: {len(unplayed)} recorded "
                f"{'interaction was' if len(unplayed) == 1 else 'interactions were'} never played ({numbers}). "
                "The test no longer makes these requests: re-record (--record-mode=rewrite) or mark the test "
                "@pytest.mark.cassette(allow_unused=True)."
            )
    return result


def _agent_sdk_problems(item: pytest.Item, session: Any) -> str:
    """Drifts become warnings (and the terminal summary lists them); the text of what must fail the test
    (a miss, unplayed recordings, a refused recorded request), or "" when nothing must."""
    from harness.agent_sdk import HarnessDriftWarning

    for drift in session.drifts:
        text = f"{session.path}: {drift.describe()}"
        item.warn(HarnessDriftWarning(text))  # recorded against the test, wherever the filters stand
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
    active = item.stash.get(_CASSETTE_KEY, None)
    if report.when == "call" and active is not None:
        from harness.pytest_plugin.shared import note_played

        note_played(item, active, passed=report.passed)
    return report


# -- the simulator: recording with no key ----------------------------------------------------------------
# `--simulator=auto|NAME|FILE` answers every client fixture's calls from one in-process simulator for the
# session; the `simulator` fixture starts one for a single test (options from @pytest.mark.simulator).
# Either way the cassette says `source: simulator` and which simulator model answered.

_SESSION_SIMULATOR = pytest.StashKey[Any]()


def _simulator_options(value: str) -> dict[str, Any]:
    """`auto[:options]` or a simulator model name -> model=...; anything else is a script file."""
    from harness.sim.models import MODEL_PREFIX

    if value == "auto" or value.startswith(("auto:", MODEL_PREFIX)):
        return {"model": value if value.startswith(MODEL_PREFIX) else MODEL_PREFIX + value}
    return {"scripts": [value]}


def _check_simulator_option(config: pytest.Config) -> None:
    value = config.getoption("--simulator", None)
    if not value:
        return
    from harness.errors import HarnessError
    from harness.sim import Simulator

    options = _simulator_options(value)
    if "scripts" in options and not Path(value).is_absolute():
        options["scripts"] = [str(Path(config.invocation_params.dir) / value)]
    try:
        config.stash[_SESSION_SIMULATOR] = Simulator(**options)  # checks the model name or script now
    except HarnessError as err:
        raise pytest.UsageError(f"--simulator={value}: {err}") from None


def pytest_unconfigure(config: pytest.Config) -> None:
    simulator = config.stash.get(_SESSION_SIMULATOR, None)
    if simulator is not None:
        simulator.stop()


def _simulator_url(request: pytest.FixtureRequest) -> str | None:
    """The base URL of this test's simulator (the `simulator` fixture), else of --simulator's, else None."""
    if "simulator" in request.fixturenames:
        return request.getfixturevalue("simulator").base_url
    session = request.config.stash.get(_SESSION_SIMULATOR, None)
    return session.start().base_url if session is not None else None


@pytest.fixture
def simulator(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A Messages API simulator on loopback for this test; `anthropic_client` talks to it. Options from
    `@pytest.mark.simulator(model=callable_or_name, scripts=[...], faults={...})`."""
    from harness.sim import Simulator

    marker = request.node.get_closest_marker("simulator")
    with Simulator(**(dict(marker.kwargs) if marker else {})) as running:
        yield running
