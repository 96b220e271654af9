"""The fixtures that open a test's recording: `cassette` (use_cassette, or chaos's `inject` under `faults=`),
`agent_sdk` (an AgentSdkSession, served or proxied), `harness_config` (options for every cassette of a module),
and the autouse one that opens the cassette of a test that carries the marker but asks for no fixture.

Each opens what it opens in one ExitStack, and a cassette that cannot be opened fails the test at setup as one
screen. The open cassette or session is kept on the test item (harness.pytest_plugin.stash) for the plugin's
hooks, which judge the test after its call.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.cassette.modes import write_protected
from harness.pytest_plugin.clients import CLIENT_OPTIONS
from harness.pytest_plugin.marker import MARKER_OWN, cassette_path_of, keywords_of, marker_keywords, unknown_options
from harness.pytest_plugin.misses import next_step
from harness.pytest_plugin.network import network_blocked
from harness.pytest_plugin.options import decide_mode
from harness.pytest_plugin.simulator import simulator_url
from harness.pytest_plugin.stash import (
    AGENT_SDK_KEY,
    CASSETTE_KEY,
    ENDED_KEY,
    FAILED_KEY,
    PROJECT_ROOTS_KEY,
    VERDICTS_KEY,
)

if TYPE_CHECKING:
    from harness.agent_sdk import AgentSdkSession
    from harness.cassette.modes import Mode
    from harness.cassette.recorder import Cassette

__all__ = ["agent_sdk", "cassette", "harness_config"]


@pytest.fixture(scope="module")
def harness_config() -> dict[str, Any]:
    """Options for every cassette of a module (ignore_fields, scrubbers, base_url, ...). Override it in a
    test module or conftest, like pytest-recording's vcr_config."""
    return {}


@functools.cache  # signatures do not change in a session, and reading one took 60-70 us for every marked test
def _valid_keywords(consumer: str) -> tuple[str, ...]:
    """The marker's keywords for the fixture that opens the cassette: the signature of what it opens, plus its own."""
    if consumer == "agent_sdk":
        from harness.agent_sdk import AgentSdkSession

        return (*keywords_of(AgentSdkSession), *MARKER_OWN["agent_sdk"])
    from harness.cassette.recorder import use_cassette

    return (*keywords_of(use_cassette), *MARKER_OWN["cassette"])


def _marked_cassette(
    request: pytest.FixtureRequest, harness_config: dict[str, Any], consumer: str = "cassette"
) -> tuple[Path, dict[str, Any], Mode]:
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
        everything = dict.fromkeys(
            [*valid, *_valid_keywords("agent_sdk" if consumer == "cassette" else "cassette"), *CLIENT_OPTIONS]
        )
        problem = unknown_options(harness_config, everything, what=f"{request.node.nodeid}: harness_config")
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    options = {**harness_config, **marker_options}
    for name in CLIENT_OPTIONS:
        options.pop(name, None)
    path = options.pop("path", None)
    # The run's mode unless the test asks for a stricter one. A mode the marker names is checked where the cassette
    # opens: an unknown one fails there, naming the file.
    source = "@pytest.mark.cassette" if "mode" in marker_options else "harness_config"
    mode: Any = decide_mode(request.node, options.pop("mode", None), source)
    return cassette_path_of(request.node, path), options, mode


def _open_failure(request: pytest.FixtureRequest, err: Exception) -> None:
    """A cassette that cannot be opened (corrupt, hostile, a bad option value) as one screen: the file, the
    place, the reason and what to do, no traceback through the harness."""
    pytest.fail(f"{request.node.nodeid}: {err}{next_step(err)}", pytrace=False)


@pytest.fixture
def cassette(request: pytest.FixtureRequest, harness_config: dict[str, Any]) -> Iterator[Cassette]:
    """The active cassette: every Messages API call of the test is recorded to or replayed from it."""
    from harness.cassette.recorder import use_cassette

    cassette_path, options, mode = _marked_cassette(request, harness_config)
    if mode == "none" and not cassette_path.exists():  # one screen, no traceback through the plugin
        pytest.fail(
            f"{cassette_path}: no cassette here, and mode 'none' only replays. Record it first, with no key: "
            "pytest --record-mode=once --simulator=auto (or against the API: set ANTHROPIC_API_KEY and run "
            "pytest --record-mode=once)",
            pytrace=False,
        )
    from harness.errors import HarnessError

    faults = options.pop("faults", None)
    allow_unused = bool(options.pop("allow_unused", bool(faults)))
    # The plugin judges a miss and unplayed recordings after the call, in pytest's words (an unplayed recording fails
    # the test unless the marker says otherwise): the cassette itself says nothing at its exit, so nothing is said
    # twice (harness.cassette.verdict).
    verdicts = {"on_miss": options.pop("on_miss", "fail"),
                "on_unplayed": options.pop("on_unplayed", "ignore" if allow_unused else "fail")}
    with contextlib.ExitStack() as stack:
        try:
            from harness.cassette.verdict import checked

            for name, value in verdicts.items():
                checked(name, value, cassette_path)
            if faults:
                # Chaos: the recorded run, with faults injected at the given request indexes. Replay only; a fatal
                # fault leaves later recordings unplayed, which is the point rather than a stale cassette.
                if mode != "none":
                    pytest.fail(
                        f"{request.node.nodeid}: cassette faults= replays only; run with record mode none",
                        pytrace=False,
                    )
                from harness.cassette.recorder import Cassette
                from harness.chaos import inject

                # A replay takes no lock and writes nothing: the cassette's own options are all it can use.
                replay_options = set(keywords_of(Cassette)) - {"path", "mode"}
                context: Any = inject(
                    cassette_path, faults=faults, **{k: v for k, v in options.items() if k in replay_options}
                )
            else:
                context = use_cassette(cassette_path, mode, on_miss="ignore", on_unplayed="ignore", **options)
            if write_protected(mode, cassette_path.exists()):  # what may not record may not reach the network
                stack.enter_context(network_blocked(mode))
            elif (url := simulator_url(request)) is not None:
                # Recording against --simulator (or the `simulator` fixture): a client the agent builds itself goes
                # there too, with no key (the cassette gives a keyless client a placeholder, sent to loopback only).
                request.getfixturevalue("monkeypatch").setenv("ANTHROPIC_BASE_URL", url)
            from harness.files import project_roots_remembered

            # The project each cassette folder belongs to, looked up once a session rather than per test (a walk up
            # to / when no folder above holds a marker). A pyproject.toml made during the session is not a case.
            with project_roots_remembered(request.config.stash.setdefault(PROJECT_ROOTS_KEY, {})):
                active = stack.enter_context(_left_as_the_test_ended(context, request.node))
        except HarnessError as err:
            problem: HarnessError | None = err
        else:
            problem = None
        if problem is not None:  # failed outside the except block: no "during handling" chain on the screen
            _open_failure(request, problem)
        active.allow_unused = verdicts["on_unplayed"] != "fail"  # the shared-cassette check and the drift report
        request.node.stash[VERDICTS_KEY] = verdicts
        from harness.pytest_plugin.shared import collect_recordings  # registered by pytest_plugins: imported first

        collect_recordings(request.node, active)  # a shared cassette in rewrite/all: written once, for the session
        request.node.stash[CASSETTE_KEY] = active
        yield active


class _TestFailed(RuntimeError):
    """Raised through a cassette's context when its test failed: it saves only with save_on_error."""


class _TestInterrupted(BaseException):
    """Raised through a cassette's context when its test's call never ended (Ctrl-C): it never saves. pytest
    tears the fixture down as if all were well, so the context would otherwise save half a run."""


@contextlib.contextmanager
def _left_as_the_test_ended(context: Any, item: pytest.Item) -> Iterator[Any]:
    """`context` entered, and left as the test ended: a failed test leaves it as an error would, an interrupted
    one as an interrupt would; a save the cassette refuses (a run never answered) fails the test in one line."""
    from harness.errors import HarnessError

    entered = False
    try:
        with contextlib.suppress(_TestFailed, _TestInterrupted), context as active:
            entered = True
            yield active
            if not item.stash.get(ENDED_KEY, False):
                raise _TestInterrupted("the test's call did not end")
            if item.stash.get(FAILED_KEY, False):
                raise _TestFailed("test failed")
    except HarnessError as err:
        if not entered:  # the cassette could not be opened: the fixture's one screen, with what to do next
            raise
        failure: HarnessError | None = err
    else:
        failure = None
    if failure is not None:  # outside the except block: one screen, no "during handling" chain
        pytest.fail(f"{item.nodeid}: {failure}", pytrace=False)


@pytest.fixture(autouse=True)
def _harness_cassette_marker(request: pytest.FixtureRequest) -> None:
    # A test that carries the marker gets its cassette even if it asks for no fixture.
    # (An Agent SDK test's requests come over HTTP from the CLI: the `agent_sdk` fixture serves its cassette.)
    if request.node.get_closest_marker("cassette") is not None and "agent_sdk" not in request.fixturenames:
        request.getfixturevalue("cassette")


@pytest.fixture
def agent_sdk(request: pytest.FixtureRequest, harness_config: dict[str, Any]) -> Iterator[AgentSdkSession]:
    """A Claude Agent SDK run against this test's cassette: `ClaudeAgentOptions(env=agent_sdk.env)`.

    Replays through `harness serve` (record mode none, or once with the cassette present); records through
    `harness proxy` in front of `upstream` (the live API, or "simulator") otherwise. Marker options:
    normalize (a Normalization), match_policy ("strict" or "sequence"), upstream, sim_policy,
    allow_unused, allow_rejected, fresh_config (False: the CLI reads the user's ~/.claude, not a fresh folder).
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
    session = AgentSdkSession(
        cassette_path, mode, normalize=rules or None, **{k: v for k, v in options.items() if k in session_options}
    )
    with contextlib.ExitStack() as stack:
        failure: HarnessError | None = None
        try:
            if session.replaying:  # the CLI and anything the test starts reach loopback only, as in a cassette test
                stack.enter_context(network_blocked(mode))
            stack.enter_context(session)
        except HarnessError as err:
            failure = err
        if failure is not None:  # outside the except block: one screen, no "during handling" chain
            pytest.fail(str(failure), pytrace=False)
        request.node.stash[AGENT_SDK_KEY] = session
        yield session
