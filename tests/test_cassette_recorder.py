"""use_cassette: record, replay, mismatch diffs, modes, zero-backoff retries, secrets, atomicity."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
import yaml

from harness import CassetteMismatch, use_cassette
from harness.cassette.format import load_cassette
from harness.errors import CassetteError
from tests.fake_messages_api import FakeMessagesAPI

MODEL = "claude-sonnet-5"


def ask(client: anthropic.Anthropic, text: str, *, system: str = "Be brief.") -> anthropic.types.Message:
    return client.messages.create(model=MODEL, max_tokens=64, system=system,
                                  messages=[{"role": "user", "content": text}])


def record(path: Path, *texts: str, system: str = "Be brief.") -> list[str]:
    api = FakeMessagesAPI()
    with use_cassette(path, mode="once"):
        return [ask(api.client(), text, system=system).content[0].text for text in texts]


def test_round_trip_sync_and_stream(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    api = FakeMessagesAPI()
    with use_cassette(path, mode="once"):
        live = ask(api.client(), "hello")
        with api.client().messages.stream(model=MODEL, max_tokens=64,
                                          messages=[{"role": "user", "content": "streamed"}]) as stream:
            live_streamed = stream.get_final_message()
    assert api.calls == 2

    offline = FakeMessagesAPI()
    with use_cassette(path, mode="none") as cassette:
        replayed = ask(offline.client(), "hello")
        with offline.client().messages.stream(model=MODEL, max_tokens=64,
                                              messages=[{"role": "user", "content": "streamed"}]) as stream:
            replayed_streamed = stream.get_final_message()
    assert offline.calls == 0, "replay must never reach the transport's handler"
    assert replayed.model_dump() == live.model_dump()
    assert replayed_streamed.model_dump() == live_streamed.model_dump()
    assert replayed._request_id == "req_live_1"  # request ids are kept: not a credential
    assert cassette.unplayed == []

    stored = load_cassette(path)
    assert stored.meta["source"] == "live" and stored.meta["format_version"] == 1
    assert "events" in stored.interactions[1]["response"], "a stream is stored as events"
    assert stored.interactions[0]["response"]["body"]["content"][0]["text"] == "echo: hello"


def test_round_trip_async(tmp_path: Path) -> None:
    path = tmp_path / "async.yaml"

    async def run(api: FakeMessagesAPI, mode: str) -> str:
        with use_cassette(path, mode=mode):
            client = api.async_client()
            message = await client.messages.create(model=MODEL, max_tokens=64,
                                                   messages=[{"role": "user", "content": "async"}])
            stream = await client.messages.create(model=MODEL, max_tokens=64, stream=True,
                                                  messages=[{"role": "user", "content": "async stream"}])
            deltas = [event.delta.text async for event in stream if event.type == "content_block_delta"]
            return message.content[0].text + "|" + "".join(deltas)

    live = asyncio.run(run(FakeMessagesAPI(), "once"))
    offline = FakeMessagesAPI()
    assert asyncio.run(run(offline, "none")) == live == "echo: async|echo: async stream"
    assert offline.calls == 0


def test_changed_system_prompt_fails_at_once_with_a_diff(tmp_path: Path) -> None:
    path = tmp_path / "prompt.yaml"
    record(path, "brief me", system="Skip newsletters and promotions.")
    offline = FakeMessagesAPI()
    with use_cassette(path, mode="none", on_miss="ignore"), pytest.raises(CassetteMismatch) as caught:
        ask(offline.client(max_retries=2), "brief me", system="Include everything.")
    error = caught.value
    assert isinstance(error, anthropic.AnthropicError)
    assert not isinstance(error, anthropic.APIConnectionError), "the SDK must not wrap the miss"
    assert offline.calls == 0
    assert error.position == 0 and error.nearest_position == 0
    assert any(line.startswith("system changed from") for line in error.differences), error.differences
    assert "'Skip newsletters" in str(error) and "'Include everything.'" in str(error)
    assert str(path) in str(error)


def test_changed_tool_schema_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    tool = {"name": "read_inbox", "description": "Read mail",
            "input_schema": {"type": "object", "properties": {"limit": {"type": "integer"}}}}
    with use_cassette(path, mode="once"):
        FakeMessagesAPI().client().messages.create(model=MODEL, max_tokens=8, tools=[tool],
                                                   messages=[{"role": "user", "content": "x"}])
    changed = json.loads(json.dumps(tool))
    changed["input_schema"]["properties"]["limit"]["minimum"] = 1
    with use_cassette(path, mode="none", on_miss="ignore"), pytest.raises(CassetteMismatch) as caught:
        FakeMessagesAPI().client().messages.create(model=MODEL, max_tokens=8, tools=[changed],
                                                   messages=[{"role": "user", "content": "x"}])
    added = "tools.read_inbox.input_schema.properties.limit.minimum added"  # tools diffed by name
    assert any(added in line for line in caught.value.differences)


def test_missing_cassette_in_mode_none_says_so(tmp_path: Path) -> None:
    with (
        pytest.raises(CassetteError, match="no cassette here, and mode 'none' only replays"),
        use_cassette(tmp_path / "absent.yaml", mode="none"),
    ):
        pass


def test_identical_requests_are_served_in_recorded_order(tmp_path: Path) -> None:
    path = tmp_path / "repeat.yaml"
    api = FakeMessagesAPI()
    counter = iter(range(10))
    api.reply_text = lambda body: f"answer {next(counter)}"  # type: ignore[method-assign]
    with use_cassette(path, mode="once"):
        live = [ask(api.client(), "same").content[0].text for _ in range(3)]
    with use_cassette(path, mode="none", on_miss="ignore"):
        client = FakeMessagesAPI().client()
        replayed = [ask(client, "same").content[0].text for _ in range(3)]
        with pytest.raises(CassetteMismatch, match="every recording was already played"):
            ask(client, "same")
    assert replayed == live == ["answer 0", "answer 1", "answer 2"]


def test_recorded_retries_replay_without_sleeping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "retry.yaml"
    api = FakeMessagesAPI()
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                  "request_id": "req_x"}
    api.script.append(httpx2.Response(529, json=overloaded, headers={"retry-after": "0"}))
    with use_cassette(path, mode="once"):
        assert ask(api.client(max_retries=2), "retry me").content[0].text == "echo: retry me"
    stored = load_cassette(path)
    assert [i["response"]["status"] for i in stored.interactions] == [529, 200]

    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", lambda seconds: sleeps.append(seconds))
    with use_cassette(path, mode="none") as cassette:
        assert ask(FakeMessagesAPI().client(max_retries=2), "retry me").content[0].text == "echo: retry me"
    assert sleeps and all(seconds == 0 for seconds in sleeps), sleeps
    assert cassette.unplayed == []


def test_no_secret_reaches_the_disk(tmp_path: Path) -> None:
    path = tmp_path / "secrets.yaml"
    api_key = "sk-ant-api03-PLANTEDKEY1234567890abcdef"
    org = "4c1d7e52-93a0-4b6e-8f21-0d5a9b7c3e11"
    api = FakeMessagesAPI(extra_headers={"anthropic-organization-id": org, "set-cookie": "__cf_bm=abcdef0123456789"})
    limited = {"type": "error", "error": {"type": "rate_limit_error", "message":
               f"This request would exceed the rate limit for your organization ({org}) of 50 requests per minute."}}
    api.script.append(httpx2.Response(429, json=limited, headers={"retry-after": "0",
                                                                  "anthropic-organization-id": org}))
    with use_cassette(path, mode="once"):
        client = api.client(api_key=api_key, max_retries=1, default_headers={"cookie": "session=topsecretcookie99"})
        ask(client, f"my key is {api_key}, keep it safe")
        bearer = api.client(api_key=None, auth_token="oauth-token-PLANTED-abcdefghijkl")
        ask(bearer, "token run")
    text = path.read_text()
    for secret in (api_key, org, "abcdef0123456789", "topsecretcookie99", "oauth-token-PLANTED-abcdefghijkl"):
        assert secret not in text, f"{secret} reached the disk"
    assert "<redacted:anthropic-key:1>" in text and "<redacted:organization-id:1>" in text
    assert "authorization" not in text.lower() and "x-api-key" not in text.lower()


def test_a_failed_run_leaves_no_half_recorded_cassette(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.yaml"
    with pytest.raises(RuntimeError), use_cassette(fresh, mode="once"):
        ask(FakeMessagesAPI().client(), "partial")
        raise RuntimeError("the loop crashed")
    assert not fresh.exists()

    kept = tmp_path / "kept.yaml"
    record(kept, "original")
    before = kept.read_bytes()
    with pytest.raises(RuntimeError), use_cassette(kept, mode="rewrite"):
        ask(FakeMessagesAPI().client(), "replacement")
        raise RuntimeError("the loop crashed")
    assert kept.read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp")), "no temp file is left behind"


def test_save_on_error_keeps_the_partial_run_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "partial.yaml"
    with pytest.raises(RuntimeError), use_cassette(path, mode="once", save_on_error=True):
        ask(FakeMessagesAPI().client(), "partial")
        raise RuntimeError("crash")
    assert len(load_cassette(path).interactions) == 1


def test_modes_new_episodes_all_and_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "modes.yaml"
    record(path, "one", "two")

    api = FakeMessagesAPI()
    with use_cassette(path, mode="new_episodes"):
        ask(api.client(), "one")
        ask(api.client(), "three")
    assert api.calls == 1, "new_episodes replays what matches and records the rest"
    assert [i["request"]["body"]["messages"][0]["content"] for i in load_cassette(path).interactions] == [
        "one", "two", "three"]

    api = FakeMessagesAPI()
    api.reply_text = lambda body: "renewed"  # type: ignore[method-assign]
    with use_cassette(path, mode="all"):
        ask(api.client(), "two")
    assert api.calls == 1
    texts = {i["request"]["body"]["messages"][0]["content"]: i["response"]["body"]["content"][0]["text"]
             for i in load_cassette(path).interactions}
    assert texts == {"one": "echo: one", "three": "echo: three", "two": "renewed"}

    with use_cassette(path, mode="rewrite"):
        ask(FakeMessagesAPI().client(), "only")
    assert [i["request"]["body"]["messages"][0]["content"] for i in load_cassette(path).interactions] == ["only"]


def test_once_with_an_existing_cassette_refuses_new_requests(tmp_path: Path) -> None:
    path = tmp_path / "once.yaml"
    record(path, "first")
    api = FakeMessagesAPI()
    with use_cassette(path, mode="once", on_miss="ignore"), pytest.raises(CassetteMismatch):
        ask(api.client(), "second")
    assert api.calls == 0


def test_unplayed_interactions_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "unplayed.yaml"
    record(path, "a", "b", "c")
    with use_cassette(path, mode="none") as cassette:
        ask(FakeMessagesAPI().client(), "b")
    assert cassette.unplayed == [0, 2]


def test_ignore_fields_leave_volatile_parts_out_of_matching(tmp_path: Path) -> None:
    path = tmp_path / "volatile.yaml"
    api = FakeMessagesAPI()
    with use_cassette(path, mode="once", ignore_fields=["metadata.user_id"]):
        api.client().messages.create(model=MODEL, max_tokens=8, metadata={"user_id": "run-1"},
                                     messages=[{"role": "user", "content": "x"}])
    with use_cassette(path, mode="none", ignore_fields=["metadata.user_id"]):
        message = FakeMessagesAPI().client().messages.create(model=MODEL, max_tokens=8, metadata={"user_id": "run-2"},
                                                             messages=[{"role": "user", "content": "x"}])
    assert message.content[0].text == "echo: x"


def test_decorator_form(tmp_path: Path) -> None:
    path = tmp_path / "decorated.yaml"
    record(path, "decorated")

    @use_cassette(path)
    def replay() -> str:
        return ask(FakeMessagesAPI().client(), "decorated").content[0].text

    assert replay() == "echo: decorated"


def test_cassette_text_reads_like_the_conversation(tmp_path: Path) -> None:
    path = tmp_path / "readable.yaml"
    record(path, "line one\nline two")
    text = path.read_text()
    assert "content: |-\n" in text or "content: |\n" in text, "multi-line text is a literal block"
    data = yaml.safe_load(text)
    assert data["interactions"][0]["request"]["body"]["messages"][0]["content"] == "line one\nline two"


def test_recording_is_captured_by_vcrpy_and_replay_never_enters_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import vcr.stubs.httpx_stubs as stubs

    captured: list[int] = []
    real_serialize = stubs._serialize_response

    def spy(response: Any, content: bytes) -> Any:
        captured.append(response.status_code)
        return real_serialize(response, content)

    monkeypatch.setattr(stubs, "_serialize_response", spy)
    path = tmp_path / "vcr.yaml"
    record(path, "one", "two")
    assert captured == [200, 200], "every recorded exchange goes through vcrpy's httpx2 stub"
    with use_cassette(path, mode="none"):
        ask(FakeMessagesAPI().client(), "one")
    assert captured == [200, 200], "replay answers from the index, before vcrpy"


def test_a_beta_true_recording_replays_for_an_sdk_that_sends_no_query(tmp_path: Path) -> None:
    path = tmp_path / "beta.yaml"
    with use_cassette(path, mode="once"):
        FakeMessagesAPI().client().messages.create(model=MODEL, max_tokens=8, extra_query={"beta": "true"},
                                                   messages=[{"role": "user", "content": "old sdk"}])
    assert load_cassette(path).interactions[0]["request"]["query"] == "beta=true"
    with use_cassette(path, mode="none"):
        message = FakeMessagesAPI().client().messages.create(model=MODEL, max_tokens=8,
                                                             messages=[{"role": "user", "content": "old sdk"}])
    assert message.content[0].text == "echo: old sdk"


@pytest.mark.parametrize(("failure", "kind"), [(httpx2.ReadTimeout, "timeout"), (httpx2.ConnectError, "connect"),
                                               (httpx2.RemoteProtocolError, "disconnect")])
def test_connection_failures_are_recorded_and_replayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       failure: type[Exception], kind: str) -> None:
    path = tmp_path / "failure.yaml"
    api = FakeMessagesAPI()
    real_call = api.__call__
    calls = iter([True])

    def flaky(request: httpx2.Request) -> httpx2.Response:
        if next(calls, False):
            raise failure("upstream went away", request=request)
        return real_call(request)

    client = anthropic.Anthropic(api_key="sk-ant-api03-test-key-0000000000", max_retries=1,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(flaky)))
    with use_cassette(path, mode="once"):
        assert ask(client, "flaky").content[0].text == "echo: flaky"
    stored = load_cassette(path).interactions
    assert stored[0]["error"]["kind"] == kind and "response" not in stored[0]
    assert stored[1]["response"]["status"] == 200

    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", lambda seconds: sleeps.append(seconds))
    with use_cassette(path, mode="none") as cassette:
        assert ask(FakeMessagesAPI().client(max_retries=1), "flaky").content[0].text == "echo: flaky"
    assert cassette.unplayed == [] and sleeps == [0.0]
