"""HTTP clients other than the SDK inside plain `use_cassette` (harness/cassette/other_clients.py).

A Messages API request built by httpx 0.x, requests, urllib3, aiohttp or urllib records against the simulator and
replays in mode none beside a second simulator that would answer any request that leaked: it must see none.
litellm, which builds its own httpx 0.x client, records and replays the same way.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import requests
import urllib3

from harness import use_cassette
from harness.cassette.format import load_cassette
from harness.cassette.mismatch import CassetteMismatch
from harness.sim import Simulator

MODEL = "claude-sonnet-5"
ASK = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "Say hello."}]}
HEADERS = {"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-api03-not-a-real-key-0123456789abcdef",
           "content-type": "application/json"}


def _said(answer: dict[str, Any]) -> str:
    return f"{answer['id']} {answer['content'][0]['text']}"


def with_httpx(url: str, body: dict[str, Any]) -> str:
    with httpx.Client() as client:
        return _said(client.post(f"{url}/v1/messages", json=body, headers=HEADERS).json())


def with_httpx_async(url: str, body: dict[str, Any]) -> str:
    async def run() -> str:
        async with httpx.AsyncClient() as client:
            return _said((await client.post(f"{url}/v1/messages", json=body, headers=HEADERS)).json())

    return asyncio.run(run())


def with_requests(url: str, body: dict[str, Any]) -> str:
    with requests.Session() as session:
        return _said(session.post(f"{url}/v1/messages", json=body, headers=HEADERS).json())


def with_urllib3(url: str, body: dict[str, Any]) -> str:
    with urllib3.PoolManager() as pool:
        return _said(pool.request("POST", f"{url}/v1/messages", body=json.dumps(body), headers=HEADERS).json())


def with_aiohttp(url: str, body: dict[str, Any]) -> str:
    async def run() -> str:
        async with aiohttp.ClientSession() as session, \
                session.post(f"{url}/v1/messages", json=body, headers=HEADERS) as response:
            return _said(await response.json())

    return asyncio.run(run())


def with_urllib(url: str, body: dict[str, Any]) -> str:
    sent = urllib.request.Request(f"{url}/v1/messages", data=json.dumps(body).encode(), headers=HEADERS)
    with urllib.request.urlopen(sent) as response:
        return _said(json.load(response))


CLIENTS: dict[str, Callable[[str, dict[str, Any]], str]] = {
    "httpx": with_httpx,
    "httpx-async": with_httpx_async,
    "requests": with_requests,
    "urllib3": with_urllib3,
    "aiohttp": with_aiohttp,
    "urllib": with_urllib,
}


@pytest.mark.parametrize("name", list(CLIENTS))
def test_each_library_records_a_messages_request_and_replays_it_with_nothing_sent(tmp_path: Path, name: str) -> None:
    client, path = CLIENTS[name], tmp_path / f"{name}.yaml"
    with Simulator() as sim, use_cassette(path, mode="once") as recording:
        recorded = client(sim.base_url, ASK)
        assert sim.requests_seen == 1, f"{name}: the request reached the upstream once"
    assert len(recording.new_interactions) == 1, f"{name}: not recorded"
    stored = load_cassette(path)
    assert stored.meta["source"] == "simulator"
    assert stored.interactions[0]["request"]["body"] == ASK
    assert HEADERS["x-api-key"] not in path.read_text(encoding="utf-8")  # allow-listed headers only

    with Simulator() as bystander, use_cassette(path, mode="none") as replay:  # would answer a leaked request
        replayed = client(bystander.base_url, ASK)
        assert bystander.requests_seen == 0, f"{name}: a replayed request reached the network"
    assert replayed == recorded
    assert replay.unplayed == []


@pytest.mark.parametrize("name", ["httpx", "requests", "aiohttp"])
def test_a_changed_request_misses_with_the_diff_and_sends_nothing(tmp_path: Path, name: str) -> None:
    client, path = CLIENTS[name], tmp_path / f"{name}.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        client(sim.base_url, ASK)
    with Simulator() as bystander:
        with pytest.raises(CassetteMismatch, match=r"max_tokens changed from '64' to '65'"), \
                use_cassette(path, mode="none"):
            client(bystander.base_url, {**ASK, "max_tokens": 65})
        assert bystander.requests_seen == 0


def test_a_request_that_is_not_the_apis_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    with Simulator() as sim, use_cassette(path, mode="once") as recording:
        with_requests(sim.base_url, ASK)
        requests.get(f"{sim.base_url}/not-the-api", timeout=10)  # a tool fetching a page, say
    assert [i["request"]["path"] for i in recording.new_interactions] == ["/v1/messages"]


def test_the_sdks_aiohttp_client_is_recorded_once(tmp_path: Path) -> None:
    import anthropic

    async def run(url: str) -> None:
        async with anthropic.AsyncAnthropic(base_url=url, api_key="k" * 40, max_retries=0,
                                            http_client=anthropic.DefaultAioHttpClient()) as client:
            await client.messages.create(**ASK)

    with Simulator() as sim, use_cassette(tmp_path / "sdk.yaml", mode="once") as recording:
        asyncio.run(run(sim.base_url))
    assert len(recording.new_interactions) == 1


# -- litellm: its own httpx client, under plain use_cassette -------------------------------------------------------
@pytest.fixture
def litellm(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # its import fetches a price list otherwise
    monkeypatch.setenv("LITELLM_TELEMETRY", "False")
    return pytest.importorskip("litellm", reason="litellm is a dev extra")


def _ask_litellm(litellm: Any, url: str, **options: Any) -> str:
    answer = litellm.completion(model=f"anthropic/{MODEL}", api_base=url, api_key="sk-ant-not-a-real-key-000000000",
                                messages=ASK["messages"], max_tokens=64, num_retries=0, **options)
    return f"{answer.id} {answer.choices[0].message.content}"


def test_litellm_records_against_the_simulator_and_replays_with_nothing_sent(tmp_path: Path, litellm: Any) -> None:
    path = tmp_path / "litellm.yaml"
    with Simulator() as sim, use_cassette(path, mode="once") as recording:
        recorded = _ask_litellm(litellm, sim.base_url)
    assert path.is_file() and len(recording.new_interactions) == 1
    assert load_cassette(path).interactions[0]["request"]["path"] == "/v1/messages"

    with Simulator() as bystander, use_cassette(path, mode="none") as replay:
        replayed = _ask_litellm(litellm, bystander.base_url)
        assert bystander.requests_seen == 0
    assert replayed.split(" ", 1)[1] == recorded.split(" ", 1)[1]
    assert replay.unplayed == []


def test_litellm_async_records_and_replays_through_its_aiohttp_transport(tmp_path: Path, litellm: Any) -> None:
    path = tmp_path / "litellm-async.yaml"

    async def ask(url: str) -> str:
        answer = await litellm.acompletion(model=f"anthropic/{MODEL}", api_base=url, messages=ASK["messages"],
                                           api_key="sk-ant-not-a-real-key-0000", max_tokens=64, num_retries=0)
        return str(answer.choices[0].message.content)

    with Simulator() as sim, use_cassette(path, mode="once") as recording:
        recorded = asyncio.run(ask(sim.base_url))
    assert len(recording.new_interactions) == 1
    with Simulator() as bystander, use_cassette(path, mode="none"):
        assert asyncio.run(ask(bystander.base_url)) == recorded
        assert bystander.requests_seen == 0


def test_litellm_streamed_replays_too(tmp_path: Path, litellm: Any) -> None:
    path = tmp_path / "litellm-stream.yaml"

    def streamed(url: str) -> str:
        chunks = litellm.completion(model=f"anthropic/{MODEL}", api_base=url, api_key="sk-ant-not-a-real-key-0000",
                                    messages=ASK["messages"], max_tokens=64, stream=True, num_retries=0)
        return "".join(chunk.choices[0].delta.content or "" for chunk in chunks)

    with Simulator() as sim, use_cassette(path, mode="once"):
        recorded = streamed(sim.base_url)
    with Simulator() as bystander, use_cassette(path, mode="none"):
        assert streamed(bystander.base_url) == recorded
        assert bystander.requests_seen == 0
    assert recorded


def test_litellm_in_mode_none_with_a_changed_prompt_sends_nothing_and_fails_at_the_end(
    tmp_path: Path, litellm: Any
) -> None:
    path = tmp_path / "litellm.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        _ask_litellm(litellm, sim.base_url)
    with Simulator() as bystander:
        with pytest.raises(Exception) as raised, use_cassette(path, mode="none"):
            _ask_litellm(litellm, bystander.base_url, temperature=0.5)
        assert bystander.requests_seen == 0
    assert "temperature" in str(raised.value) or any("temperature" in note for note in raised.value.__notes__)



def test_a_replay_through_the_sdk_alone_loads_no_vcrpy(tmp_path: Path) -> None:
    """vcrpy's patches cost 0.18 s of imports; a process that imported only the SDK pays nothing for them."""
    import subprocess
    import sys

    import anthropic

    path = tmp_path / "sdk.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        anthropic.Anthropic(base_url=sim.base_url, api_key="k" * 40, max_retries=0).messages.create(**ASK)
    script = f"""
import sys
import anthropic
from harness import use_cassette
with use_cassette({str(path)!r}, mode="none"):
    anthropic.Anthropic(base_url="http://127.0.0.1:9", max_retries=0).messages.create(**{ASK!r})
loaded = [name for name in ("vcr", "httpx", "requests", "urllib3") if name in sys.modules]
print("loaded:", loaded)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "loaded: []" in done.stdout


def test_which_requests_are_the_apis() -> None:
    from harness.cassette.other_clients import is_api_request

    assert is_api_request("/v1/messages", [])  # a client that left the header out: the API's 400 is recorded
    assert is_api_request("/v1/messages/count_tokens", [])
    assert is_api_request("/gateway/anthropic/v1/messages", [])  # a gateway's prefix
    assert is_api_request("/v1/models", ["Anthropic-Version"])  # any path of the API, by the header it requires
    assert not is_api_request("/v1/models", ["content-type"])
    assert not is_api_request("/v1/messagesx", [])
    assert not is_api_request("/v1/chat/completions", ["authorization"])
