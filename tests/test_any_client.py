"""Every anthropic SDK client is recorded and replayed, whatever carries its requests (harness/cassette/transport.py).

Each client records against the in-process simulator, then replays in mode none beside a second simulator
on loopback that would answer any request that leaked: it must see none. A client whose http client could
carry a request past the cassette is stopped before sending, naming the client and the transport.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import anthropic
import httpx2
import pytest

from harness import use_cassette
from harness.cassette.format import load_cassette
from harness.cassette.modes import PLACEHOLDER_API_KEY
from harness.cassette.transport import MissingCredential, UninterceptedClient
from harness.sim import Simulator

pytest_plugins = ["pytester"]

MODEL = "claude-sonnet-5"
ASK = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "Say hello."}]}


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key anywhere: what the harness needs it supplies itself."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


# -- the ways an agent sends a request: each returns what the agent would print ------------------------------
class ForwardingTransport(httpx2.BaseTransport):
    """A user's own transport class (not one of httpx2's): it forwards to an HTTPTransport."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()
        self.calls = 0

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.calls += 1
        return self.inner.handle_request(request)


class LoggingClient(httpx2.Client):
    """A user's http client class that overrides send and calls through to httpx2's."""

    sent: ClassVar[list[str]] = []

    def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        LoggingClient.sent.append(request.url.path)
        return super().send(request, **kwargs)


def _sync(url: str, **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, max_retries=0, **options)


def _async(url: str, **options: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=url, max_retries=0, **options)


def _text(message: Any) -> str:
    return f"{message.id} {message.content[0].text}"


def default_sync(url: str) -> str:
    return _text(_sync(url).messages.create(**ASK))


def sync_streamed(url: str) -> str:
    with _sync(url).messages.stream(**ASK) as stream:
        return _text(stream.get_final_message())


def with_options_copy(url: str) -> str:
    return _text(_sync(url).with_options(timeout=30, max_retries=1).messages.create(**ASK))


def beta_messages(url: str) -> str:
    return _text(_sync(url).beta.messages.create(**ASK))


def message_thread(url: str) -> str:
    thread = _sync(url).beta.messages.thread(model=MODEL, max_tokens=64)
    first = thread.send({"role": "user", "content": "Say hello."})
    second = thread.send({"role": "user", "content": "Again."})
    return f"{_text(first)} | {_text(second)}"


def own_transport(url: str) -> str:
    return _text(_sync(url, http_client=httpx2.Client(transport=ForwardingTransport())).messages.create(**ASK))


def send_override_calling_through(url: str) -> str:
    return _text(_sync(url, http_client=LoggingClient()).messages.create(**ASK))


def count_tokens_and_models(url: str) -> str:
    client = _sync(url)
    counted = client.messages.count_tokens(model=MODEL, messages=ASK["messages"])
    return f"{counted.input_tokens} {[model.id for model in client.models.list()][:2]}"


def async_default(url: str) -> str:
    async def run() -> str:
        async with _async(url) as client:
            return _text(await client.messages.create(**ASK))

    return asyncio.run(run())


def async_httpx(url: str) -> str:
    async def run() -> str:
        async with _async(url, http_client=anthropic.DefaultAsyncHttpxClient()) as client:
            return _text(await client.messages.create(**ASK))

    return asyncio.run(run())


def aiohttp_client(url: str) -> str:
    async def run() -> str:
        async with _async(url, http_client=anthropic.DefaultAioHttpClient()) as client:
            first = _text(await client.messages.create(**ASK))
            async with client.messages.stream(**ASK) as stream:
                return f"{first} | {_text(await stream.get_final_message())}"

    return asyncio.run(run())


AGENTS: dict[str, Callable[[str], str]] = {
    "default-sync": default_sync,
    "sync-streamed": sync_streamed,
    "with-options": with_options_copy,
    "beta-messages": beta_messages,
    "message-thread": message_thread,
    "own-transport": own_transport,
    "send-override-calling-through": send_override_calling_through,
    "count-tokens-and-models": count_tokens_and_models,
    "async-default": async_default,
    "async-httpx": async_httpx,
    "aiohttp": aiohttp_client,
}


@pytest.mark.parametrize("name", list(AGENTS))
def test_every_client_records_against_the_simulator_and_replays_with_nothing_sent(tmp_path: Path, name: str) -> None:
    agent, path = AGENTS[name], tmp_path / f"{name}.yaml"
    with Simulator() as sim, use_cassette(path, mode="once") as recording:
        recorded_output = agent(sim.base_url)
    assert path.is_file() and recording.new_interactions, f"{name}: nothing recorded"
    assert PLACEHOLDER_API_KEY not in path.read_text(encoding="utf-8")  # no key was set; none reaches the disk
    assert load_cassette(path).meta["source"] == "simulator"

    with Simulator() as bystander, use_cassette(path, mode="none") as replay:  # would answer a leaked request
        replayed_output = agent(bystander.base_url)
        assert bystander.requests_seen == 0, f"{name}: a replayed request reached the network"
    assert replayed_output == recorded_output
    assert replay.unplayed == []


def test_the_aiohttp_client_misses_like_the_default_one(tmp_path: Path) -> None:
    path = tmp_path / "aiohttp.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        aiohttp_client(sim.base_url)

    async def changed(url: str) -> None:
        async with _async(url, http_client=anthropic.DefaultAioHttpClient()) as client:
            await client.messages.create(**{**ASK, "max_tokens": 65})

    with Simulator() as bystander, use_cassette(path, mode="none", on_miss="ignore") as replay:
        with pytest.raises(anthropic.AnthropicError, match=r"request #1 \(POST /v1/messages\) has no recording"):
            asyncio.run(changed(bystander.base_url))
        assert bystander.requests_seen == 0
    assert replay.misses and replay.misses[0].kind == "model_parameters"


# -- what the cassette cannot see is stopped before it is sent ----------------------------------------------
class CountingTransport(httpx2.BaseTransport):
    def __init__(self) -> None:
        self.calls = 0

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.calls += 1
        return httpx2.Response(
            200,
            json={
                "id": "msg_leaked",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
            request=request,
        )


class BypassingClient(httpx2.Client):
    """An http client whose send goes straight to its transport, past httpx2's send path."""

    def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        return self._transport.handle_request(request)


def _recorded(tmp_path: Path) -> Path:
    path = tmp_path / "recorded.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        default_sync(sim.base_url)
    return path


@pytest.mark.parametrize("mode", ["none", "once", "rewrite"])
def test_a_client_the_cassette_cannot_see_fails_at_once_naming_client_and_transport(tmp_path: Path, mode: str) -> None:
    path = _recorded(tmp_path)
    transport = CountingTransport()
    client = anthropic.Anthropic(
        base_url="http://127.0.0.1:9", max_retries=0, http_client=BypassingClient(transport=transport)
    )
    with use_cassette(path, mode=mode), pytest.raises(UninterceptedClient) as raised:  # type: ignore[arg-type]
        client.messages.create(**ASK)
    message = str(raised.value)
    assert "anthropic.Anthropic" in message and "BypassingClient" in message and "CountingTransport" in message
    assert "BypassingClient.send() does not call httpx2's own" in message
    assert transport.calls == 0  # nothing was sent


def test_a_send_replaced_on_the_instance_is_stopped_too(tmp_path: Path) -> None:
    path = _recorded(tmp_path)
    transport = CountingTransport()
    http = httpx2.Client(transport=transport)
    http.send = lambda request, **kwargs: transport.handle_request(request)  # type: ignore[method-assign]
    client = anthropic.Anthropic(base_url="http://127.0.0.1:9", max_retries=0, http_client=http)
    with use_cassette(path, mode="none"), pytest.raises(UninterceptedClient, match="replaced on the instance"):
        client.messages.create(**ASK)
    assert transport.calls == 0


def test_outside_a_cassette_nothing_is_checked_or_changed() -> None:
    transport = CountingTransport()
    client = anthropic.Anthropic(
        api_key="k", base_url="http://127.0.0.1:9", max_retries=0, http_client=BypassingClient(transport=transport)
    )
    assert client.messages.create(**ASK).id == "msg_leaked"
    assert transport.calls == 1


# -- keys: none needed for the simulator or any loopback base URL --------------------------------------------
def test_an_agent_with_its_own_client_records_against_the_simulator_with_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "own.yaml"
    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        client = anthropic.Anthropic()  # built before the cassette, with no key: what an agent module does
        with use_cassette(path, mode="once"):
            client.messages.create(**ASK)
    text = path.read_text(encoding="utf-8")
    assert "source: simulator" in text and PLACEHOLDER_API_KEY not in text


def test_with_neither_key_nor_base_url_recording_says_both_ways_out_in_one_line(tmp_path: Path) -> None:
    with use_cassette(tmp_path / "nokey.yaml", mode="once"), pytest.raises(MissingCredential) as raised:
        anthropic.Anthropic(max_retries=0).messages.create(**ASK)
    message = str(raised.value)
    assert "\n" not in message
    assert "ANTHROPIC_API_KEY" in message and "harness sim" in message and "ANTHROPIC_BASE_URL" in message
    assert "https://api.anthropic.com" in message
    assert not (tmp_path / "nokey.yaml").exists()


def test_an_empty_base_url_is_named_as_such(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "")  # `$(cat sim.url)` before the simulator wrote it
    with use_cassette(tmp_path / "nokey.yaml", mode="once"), pytest.raises(MissingCredential) as raised:
        anthropic.Anthropic(max_retries=0).messages.create(**ASK)
    assert "no API key to record against an empty base URL: set ANTHROPIC_API_KEY" in str(raised.value)


def test_a_key_that_is_set_is_sent_as_it_is(tmp_path: Path) -> None:
    seen: list[str | None] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.headers.get("x-api-key"))
        return CountingTransport().handle_request(request)

    client = anthropic.Anthropic(
        api_key="my-own-key",
        base_url="https://api.example.com",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
    )
    with use_cassette(tmp_path / "keyed.yaml", mode="once"):
        client.messages.create(**ASK)
    assert seen == [None]  # the SDK sends its key as Authorization; no placeholder was added
    assert "my-own-key" not in (tmp_path / "keyed.yaml").read_text(encoding="utf-8")


# -- any agent shape, under harness record, --trials and harness chaos ---------------------------------------
AGENT_MODULE = """
import asyncio
import json
from pathlib import Path

import anthropic

ASK = dict(model="claude-sonnet-5", max_tokens=64, messages=[{"role": "user", "content": "Say hello."}])


def own_client():  # builds its own client with no key anywhere, returns the Message
    return anthropic.Anthropic().messages.create(**ASK)


async def async_own_client():  # async, its own client, returns a string
    async with anthropic.AsyncAnthropic() as client:
        message = await client.messages.create(**ASK)
    return message.content[0].text


async def async_given(client):  # async, given an AsyncAnthropic, returns nothing
    await client.messages.create(**ASK)


def given_returns_dict(client):
    return {"id": client.messages.create(**ASK).id}


def broken():
    raise RuntimeError("the agent's own bug")


def fails_on_replay_when_flagged():
    anthropic.Anthropic().messages.create(**ASK)
    if Path("flag").exists():
        raise RuntimeError("an unrelated failure")
"""

SHAPES = ("own_client", "async_own_client", "async_given", "given_returns_dict")
_projects = iter(range(1_000_000))


@pytest.fixture
def shapes_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's project whose scenarios are every shape of agent; a module name of its own per test."""
    module = f"anyclient_agents_{next(_projects)}"
    names = [*SHAPES, "broken", "fails_on_replay_when_flagged"]
    table = "\n".join(f'{name} = "{module}:{name}"' for name in names)
    (tmp_path / "pyproject.toml").write_text(f"[tool.loop-harness.scenarios]\n{table}\n")
    (tmp_path / f"{module}.py").write_text(AGENT_MODULE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_harness_record_records_every_agent_shape_with_no_key(
    shapes_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main as harness_main

    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["record", *SHAPES]) == 0
        assert harness_main(["record", "async_given", "--trials", "2"]) == 0
    out = capsys.readouterr().out
    for name in SHAPES:
        path = shapes_project / "cassettes" / f"{name}.yaml"
        assert f"recorded {path}: 1 step, outcome ended" in out
        text = path.read_text(encoding="utf-8")
        assert "source: simulator" in text and PLACEHOLDER_API_KEY not in text
    assert out.count("async_given.trial-") == 2


def test_harness_record_goes_on_past_a_failed_scenario_and_sums_up(
    shapes_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main as harness_main

    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["record", "broken", "own_client"]) == 1
    captured = capsys.readouterr()
    assert (shapes_project / "cassettes" / "own_client.yaml").is_file()
    assert "1 of 2 cassettes not recorded:" in captured.err
    assert "  broken: RuntimeError: the agent's own bug" in captured.err


def test_harness_record_with_neither_key_nor_base_url_says_both_ways_out(
    shapes_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main as harness_main

    assert harness_main(["record", "own_client"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "ANTHROPIC_API_KEY" in err and "ANTHROPIC_BASE_URL" in err and "harness sim" in err


@pytest.mark.parametrize("name", ["own_client", "async_own_client", "async_given"])
def test_harness_chaos_replays_any_agent_shape_under_a_fault(
    shapes_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    from harness.cli import main as harness_main

    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["record", name]) == 0
    monkeypatch.delenv("ANTHROPIC_BASE_URL")  # replay: no key, no base URL, nothing to reach
    capsys.readouterr()
    assert harness_main(["chaos", f"cassettes/{name}.yaml", "--at", "0", "--fault", "529"]) == 0
    out = capsys.readouterr().out
    assert "with fault: ended after 1 step, 2 requests: stop_reason end_turn" in out
    assert "the SDK retried the faulted request; the run ended as recorded" in out
    assert harness_main(["chaos", f"cassettes/{name}.yaml", "--at", "0", "--fault", "500", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["recorded"] == {"outcome": "ended", "steps": 1, "requests": 1}
    assert report["result"]["outcome"] == "ended" and report["retried"] is True


def test_harness_chaos_does_not_blame_the_fault_for_a_failure_without_it(
    shapes_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main as harness_main

    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["record", "fails_on_replay_when_flagged"]) == 0
    (shapes_project / "flag").write_text("")
    capsys.readouterr()
    path = "cassettes/fails_on_replay_when_flagged.yaml"
    assert harness_main(["chaos", path, "--at", "0", "--fault", "529"]) == 2
    err = capsys.readouterr().err
    assert "fails on a plain replay of this cassette, with no fault injected: RuntimeError: an unrelated" in err
    assert "crashed under" not in err


# -- the pytest record modes: an agent's own client, no key --------------------------------------------------
OWN_CLIENT_TEST = """
import anthropic
import pytest

@pytest.mark.cassette
def test_own():
    message = anthropic.Anthropic().messages.create(
        model="claude-sonnet-5", max_tokens=64, messages=[{"role": "user", "content": "Say hello."}])
    assert message.stop_reason == "end_turn"
"""


@pytest.mark.parametrize("mode", ["once", "new_episodes", "fork", "rewrite", "all"])
def test_pytest_record_modes_record_an_agent_that_builds_its_own_client_with_no_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    pytester.makepyfile(test_own=OWN_CLIENT_TEST)
    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        pytester.runpytest(f"--record-mode={mode}").assert_outcomes(passed=1)
    path = pytester.path / "cassettes" / "test_own" / "test_own.yaml"
    assert load_cassette(path).meta["source"] == "simulator"
    assert PLACEHOLDER_API_KEY not in path.read_text(encoding="utf-8")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    pytester.runpytest().assert_outcomes(passed=1)  # replay: no key, no simulator


def test_pytest_simulator_option_answers_a_client_the_agent_builds_itself(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_own=OWN_CLIENT_TEST)
    pytester.runpytest("--record-mode=once", "--simulator=auto").assert_outcomes(passed=1)
    path = pytester.path / "cassettes" / "test_own" / "test_own.yaml"
    assert load_cassette(path).meta["simulator_model"] == "sim-auto"


def test_pytest_recording_with_neither_key_nor_base_url_fails_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_own=OWN_CLIENT_TEST)
    result = pytester.runpytest("--record-mode=once")
    result.assert_outcomes(failed=1)
    line = next(line for line in result.outlines if "no API key to record against" in line)
    assert "ANTHROPIC_API_KEY" in line and "harness sim" in line and "ANTHROPIC_BASE_URL" in line
    assert "Traceback" not in result.stdout.str() and "transport.py" not in result.stdout.str()


AIOHTTP_TEST = """
import asyncio

import anthropic
import pytest

ASK = dict(model="claude-sonnet-5", max_tokens=64, messages=[{"role": "user", "content": "Say hello."}])


async def ask(times):
    async with anthropic.AsyncAnthropic(http_client=anthropic.DefaultAioHttpClient()) as client:
        for _ in range(times):
            await client.messages.create(**ASK)


@pytest.mark.cassette(path="cassettes/aiohttp.yaml")
def test_aiohttp(request):
    asyncio.run(ask(int(request.config.getoption("--times", 2))))
"""


def test_pytest_reports_recordings_the_aiohttp_client_never_played(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest("def pytest_addoption(parser):\n    parser.addoption('--times', type=int, default=2)\n")
    pytester.makepyfile(test_aio=AIOHTTP_TEST.replace('"Say hello."', '"Say hello, twice."'))
    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        pytester.runpytest("--record-mode=once").assert_outcomes(passed=1)
    assert len(load_cassette(pytester.path / "cassettes" / "aiohttp.yaml").interactions) == 2
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    pytester.runpytest().assert_outcomes(passed=1)
    result = pytester.runpytest("--times=1")
    result.assert_outcomes(failed=1)
    assert "1 recorded interaction was never played (#2)" in result.stdout.str()


# -- an agent framework over the SDK, unchanged ---------------------------------------------------------------
def test_a_pydantic_ai_agent_records_against_the_simulator_and_replays_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pydantic_ai = pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim[anthropic] is a dev extra")

    def weather_agent() -> str:  # as its docs write it: the framework builds the anthropic client itself
        agent = pydantic_ai.Agent("anthropic:claude-sonnet-4-5", instructions="Be brief.")

        @agent.tool_plain
        def get_weather(city: str) -> str:
            """Today's weather in a city."""
            return f"sunny in {city}"

        return str(agent.run_sync("What is the weather in Paris?").output)

    path = tmp_path / "pydantic_ai.yaml"
    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)  # no key: the framework asks the environment for one
        with use_cassette(path, mode="once") as recording:
            recorded = weather_agent()
    assert len(recording.new_interactions) == 2  # the tool call, then the answer quoting its result
    assert "sunny in" in recorded
    assert PLACEHOLDER_API_KEY not in path.read_text(encoding="utf-8")
    with Simulator() as bystander:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", bystander.base_url)
        with use_cassette(path, mode="none") as replay:
            assert weather_agent() == recorded
        assert bystander.requests_seen == 0
    assert replay.unplayed == []
