"""Request validation: each rule through the real SDK, compared with real error bodies where one exists.

Real bodies come from shared/real-cassettes (recorded against api.anthropic.com by other projects).
Where no recording exists, the message wording is the one the real API is reported to use.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
import yaml

from harness.sim import Simulator
from tests.conftest import require_real_cassettes

AUTH_401 = "mirascope/input/cassettes/test_authentication_error/anthropic_claude_sonnet_4_0.yaml"
AUTH_401_STREAM = (
    "mirascope/input/cassettes/test_authentication_error_stream/anthropic_claude_sonnet_4_0.yaml"
)
EFFORT_400 = (
    "pydantic-ai/models/cassettes/test_anthropic/"
    "test_anthropic_explicit_effort_xhigh_unsupported_model_errors.yaml"
)
MODEL_404 = "pydantic-ai/cassettes/test_model_name_suggestions/test_model_name_suggestion[anthropic].yaml"
EMPTY_400_HAR = "mirascope/input/cassettes/empty-call/anthropic/handles-empty-string-content.har"

TOOL = {
    "name": "lookup",
    "description": "Look something up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}


def _corpus_file(relative: str) -> Path:
    return require_real_cassettes() / relative


def _recorded(relative: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(request body, response body, response headers) of the first interaction of a real recording."""
    path = _corpus_file(relative)
    if path.suffix == ".har":
        entry = json.loads(path.read_text())["log"]["entries"][0]
        headers = {h["name"].lower(): h["value"] for h in entry["response"]["headers"]}
        return (
            json.loads(entry["request"]["postData"]["text"]),
            json.loads(entry["response"]["content"]["text"]),
            headers,
        )
    interaction = yaml.safe_load(path.read_text())["interactions"][0]
    request, response = interaction["request"], interaction["response"]
    request_body = request.get("parsed_body") or json.loads(request["body"])
    response_body = response.get("parsed_body") or json.loads(response["body"]["string"])
    headers = {
        name.lower(): value[0] if isinstance(value, list) else value
        for name, value in response["headers"].items()
    }
    return request_body, response_body, headers


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    return type(value).__name__


@pytest.fixture(scope="module")
def sim() -> Simulator:
    with Simulator() as simulator:
        yield simulator


@pytest.fixture
def client(sim: Simulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.base_url, api_key="sim-key", max_retries=0)


def _post(client: anthropic.Anthropic, body: dict[str, Any]) -> anthropic.APIStatusError:
    """Send a body as-is (the SDK's typed create() would refuse some of these before sending)."""
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.post("/v1/messages", body=body, cast_to=anthropic.types.Message)
    return caught.value


def _assert_invalid(error: anthropic.APIStatusError, message: str) -> None:
    assert isinstance(error, anthropic.BadRequestError)
    assert error.status_code == 400
    assert error.body["type"] == "error"
    assert error.body["error"] == {"type": "invalid_request_error", "message": message}
    assert re.fullmatch(r"req_sim_\w+", error.body["request_id"])
    assert error.response.headers["x-should-retry"] == "false"
    assert error.response.headers["request-id"] == error.body["request_id"]


@pytest.mark.parametrize("recording", [AUTH_401, AUTH_401_STREAM, EFFORT_400, MODEL_404, EMPTY_400_HAR])
def test_error_bodies_have_the_real_shape(client: anthropic.Anthropic, recording: str) -> None:
    _, real_body, _ = _recorded(recording)
    error = _post(client, {"model": "m", "max_tokens": 10, "messages": []})
    assert _shape(error.body) == _shape(real_body)
    assert re.fullmatch(r"req_\w+", real_body["request_id"]) and re.fullmatch(
        r"req_\w+", error.body["request_id"]
    )


def test_empty_content_matches_the_recorded_400_exactly(client: anthropic.Anthropic) -> None:
    real_request, real_body, real_headers = _recorded(EMPTY_400_HAR)
    error = _post(client, real_request)
    assert error.status_code == 400
    assert error.body["error"] == real_body["error"]
    assert error.response.headers["x-should-retry"] == real_headers["x-should-retry"]


def test_unsupported_effort_matches_the_recorded_400_exactly(client: anthropic.Anthropic) -> None:
    real_request, real_body, _ = _recorded(EFFORT_400)
    error = _post(client, real_request)
    assert error.body["error"] == real_body["error"]
    ok = client.post(
        "/v1/messages",
        body={**real_request, "output_config": {"effort": "high"}},
        cast_to=anthropic.types.Message,
    )
    assert ok.stop_reason == "end_turn"


@pytest.mark.parametrize("recording", [AUTH_401, AUTH_401_STREAM])
def test_wrong_key_matches_the_recorded_401_exactly(sim: Simulator, recording: str) -> None:
    real_request, real_body, real_headers = _recorded(recording)
    client = anthropic.Anthropic(base_url=sim.base_url, api_key="sk-ant-invalid-key", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        client.post("/v1/messages", body=real_request, cast_to=anthropic.types.Message)
    assert caught.value.body["error"] == real_body["error"]
    assert caught.value.response.headers["x-should-retry"] == real_headers["x-should-retry"]
    # even on a stream:true request the error is plain JSON, as recorded
    assert caught.value.response.headers["content-type"] == "application/json"


def test_missing_key_is_a_401_and_a_bearer_token_is_accepted(
    sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    body = {"model": "sim-echo", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    keyless = anthropic.Anthropic(
        base_url=sim.base_url,
        api_key=None,
        max_retries=0,
        default_headers={"Authorization": anthropic.Omit()},
    )
    with pytest.raises(anthropic.AuthenticationError) as caught:
        keyless.messages.create(**body)
    assert caught.value.body["error"] == {
        "type": "authentication_error",
        "message": "x-api-key header is required",
    }
    bearer = anthropic.Anthropic(base_url=sim.base_url, api_key=None, auth_token="oauth-token", max_retries=0)
    assert bearer.messages.create(**body).stop_reason == "end_turn"
    x_api_key = httpx2.post(sim.base_url + "/v1/messages", json=body, headers={"x-api-key": "plain-key"})
    assert x_api_key.status_code == 200


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("model", "model: Field required"),
        ("max_tokens", "max_tokens: Field required"),
        ("messages", "messages: Field required"),
    ],
)
def test_required_fields(client: anthropic.Anthropic, missing: str, message: str) -> None:
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    del body[missing]
    _assert_invalid(_post(client, body), message)


def test_empty_messages(client: anthropic.Anthropic) -> None:
    _assert_invalid(
        _post(client, {"model": "m", "max_tokens": 10, "messages": []}),
        "messages: at least one message is required",
    )


def test_first_message_must_be_user(client: anthropic.Anthropic) -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "assistant", "content": "Hello"}, {"role": "user", "content": "hi"}],
    }
    _assert_invalid(_post(client, body), 'messages: first message must use the "user" role')


@pytest.mark.parametrize("role", ["user", "assistant"])
def test_consecutive_turns_of_one_role_are_combined(client: anthropic.Anthropic, role: str) -> None:
    """The SDK's MessageCreateParams: "Consecutive `user` or `assistant` turns in your request will be combined into
    a single turn" (this pinned a 400 "roles must alternate" before; instructor's JSON-mode retry sends two user
    turns in a row)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    messages.insert(2 if role == "assistant" else 1, {"role": role, "content": "again"})
    if role == "assistant":
        messages.append({"role": "user", "content": [{"type": "text", "text": "and?"}]})
    reply = client.messages.create(model="sim-echo", max_tokens=100, messages=messages)  # type: ignore[arg-type]
    said = "and?" if role == "assistant" else "hi\nagain"  # the two user turns are one turn to the model
    assert reply.stop_reason == "end_turn" and reply.content[0].text == f"You said: {said}"  # type: ignore[union-attr]
    counted = client.messages.count_tokens(model="sim-echo", messages=messages)  # type: ignore[arg-type]
    assert counted.input_tokens > 0


def test_a_user_turn_after_the_tool_results_joins_them(client: anthropic.Anthropic) -> None:
    messages = [*_tool_turns(), {"role": "user", "content": "and one more thing"}]
    reply = client.messages.create(model="sim-echo", max_tokens=100, tools=[TOOL], messages=messages)  # type: ignore[arg-type]
    assert reply.content[0].text == "You said: and one more thing"  # type: ignore[union-attr]
    # combined, the results must still come first, as the API asks of the turn after a tool_use
    early = [*_tool_turns()[:2], {"role": "user", "content": "wait"}, _tool_turns()[2]]
    _assert_invalid(
        _post(client, {"model": "sim-echo", "max_tokens": 10, "tools": [TOOL], "messages": early}),
        "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. Messages following "
        "`tool_use` blocks must begin with a matching number of `tool_result` blocks.",
    )


def test_a_conversation_of_system_messages_only_has_no_first_user_turn(client: anthropic.Anthropic) -> None:
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "system", "content": "be nice"}]}
    assert _post(client, body).body["error"]["message"] == 'messages: first message must use the "user" role'


def _tool_turns(result_id: str = "toolu_a") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "look it up"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_a", "name": "lookup", "input": {"q": "x"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": result_id, "content": "found"}]},
    ]


def test_valid_tool_history_passes(client: anthropic.Anthropic) -> None:
    response = client.messages.create(model="sim-echo", max_tokens=10, tools=[TOOL], messages=_tool_turns())
    assert response.stop_reason in ("end_turn", "max_tokens")


def test_tool_result_without_its_tool_use(client: anthropic.Anthropic) -> None:
    body = {"model": "m", "max_tokens": 10, "tools": [TOOL], "messages": _tool_turns(result_id="toolu_x")}
    _assert_invalid(
        _post(client, body),
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    )


def test_tool_use_without_tool_result_in_the_next_turn(client: anthropic.Anthropic) -> None:
    messages = _tool_turns()
    messages[2] = {"role": "user", "content": "never mind"}
    _assert_invalid(
        _post(client, {"model": "m", "max_tokens": 10, "tools": [TOOL], "messages": messages}),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    )


def test_tool_result_must_come_first_in_the_user_turn(client: anthropic.Anthropic) -> None:
    messages = _tool_turns()
    messages[2]["content"].insert(0, {"type": "text", "text": "Here you go:"})
    _assert_invalid(
        _post(client, {"model": "m", "max_tokens": 10, "tools": [TOOL], "messages": messages}),
        "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. Messages "
        "following `tool_use` blocks must begin with a matching number of `tool_result` blocks.",
    )


def test_tool_blocks_need_tools_defined(client: anthropic.Anthropic) -> None:
    _assert_invalid(
        _post(client, {"model": "m", "max_tokens": 10, "messages": _tool_turns()}),
        "Requests which include `tool_use` or `tool_result` blocks must define tools.",
    )


def test_input_schema_must_be_an_object_schema(client: anthropic.Anthropic) -> None:
    tool = {**TOOL, "name": "other", "input_schema": {"type": "string"}}
    body = {
        "model": "m",
        "max_tokens": 10,
        "tools": [TOOL, tool],
        "messages": [{"role": "user", "content": "hi"}],
    }
    _assert_invalid(_post(client, body), "tools.1.custom.input_schema.type: Input should be 'object'")


def test_tool_names_must_be_unique(client: anthropic.Anthropic) -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "tools": [TOOL, TOOL],
        "messages": [{"role": "user", "content": "hi"}],
    }
    _assert_invalid(_post(client, body), "tools: Tool names must be unique.")


def test_input_schema_must_be_valid_json_schema(client: anthropic.Anthropic) -> None:
    tool = {**TOOL, "input_schema": {"type": "object", "properties": {"q": {"type": "text"}}}}
    body = {"model": "m", "max_tokens": 10, "tools": [tool], "messages": [{"role": "user", "content": "hi"}]}
    message = _post(client, body).body["error"]["message"]
    assert message.startswith(
        "tools.0.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12"
    )


def test_thinking_budget_must_fit_under_max_tokens(client: anthropic.Anthropic) -> None:
    body = {
        "model": "m",
        "max_tokens": 1024,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert (
        "`max_tokens` must be greater than `thinking.budget_tokens`"
        in _post(client, body).body["error"]["message"]
    )


def test_invalid_stream_request_gets_json_not_sse(sim: Simulator) -> None:
    body = {"model": "m", "max_tokens": 10, "messages": [], "stream": True}
    response = httpx2.post(sim.base_url + "/v1/messages", json=body, headers={"x-api-key": "k"})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_count_tokens_validates_without_max_tokens(client: anthropic.Anthropic) -> None:
    assert (
        client.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}]).input_tokens > 0
    )
    with pytest.raises(anthropic.BadRequestError, match="must define tools"):
        client.messages.count_tokens(model="m", messages=_tool_turns())
