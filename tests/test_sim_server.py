"""The simulator as an HTTP server: framing, SSE order, headers, determinism, usage, binding, CLI."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.commands import sim as cli
from harness.errors import HarnessError
from harness.sim import Simulator
from tests.harness_processes import READY_TIMEOUT, start_serving_thread

TOOLS = [
    {
        "name": "read_inbox",
        "description": "Read emails.",
        "input_schema": {"type": "object", "properties": {"limit": {"type": "integer"}}},
    },
    {
        "name": "read_calendar",
        "description": "Read events.",
        "input_schema": {"type": "object", "properties": {"days": {"type": "integer"}}},
    },
    {
        "name": "read_tasks",
        "description": "Read tasks.",
        "input_schema": {"type": "object", "properties": {"include_done": {"type": "boolean"}}},
    },
]
DAYFLOW_FIRST = {
    "model": "sim-dayflow",
    "max_tokens": 1024,
    "system": "Skip promotions.",
    "tools": TOOLS,
    "messages": [{"role": "user", "content": "Brief for Monday 2026-09-07, please."}],
}
KEY = {"x-api-key": "sim-key", "content-type": "application/json", "anthropic-version": "2023-06-01"}


def _raw_exchange(base_url: str, body: dict[str, Any], path: str = "/v1/messages") -> bytes:
    """One HTTP/1.1 request over a plain socket; returns everything the server sent, framing included."""
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    payload = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {len(payload)}\r\n"
        + "".join(f"{name}: {value}\r\n" for name, value in KEY.items())
        + "\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(head.encode() + payload)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    return received


def _chunks(raw: bytes) -> list[bytes]:
    """Split a chunked HTTP body into its chunks (the terminating empty chunk excluded)."""
    _, _, body = raw.partition(b"\r\n\r\n")
    chunks = []
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        chunks.append(rest[:size])
        body = rest[size + 2 :]
    return chunks


def _events(chunks: list[bytes]) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in chunks:
        match = re.fullmatch(rb"event: (\S+)\ndata: (.*)\n\n", chunk, re.DOTALL)
        assert match, f"chunk is not exactly one SSE event: {chunk!r}"
        events.append((match.group(1).decode(), json.loads(match.group(2))))
    return events


def test_each_sse_event_is_sent_as_its_own_chunk_in_the_real_order() -> None:
    with Simulator() as sim:
        raw = _raw_exchange(sim.base_url, {**DAYFLOW_FIRST, "stream": True})
    head = raw.split(b"\r\n\r\n", 1)[0].decode().lower()
    assert "transfer-encoding: chunked" in head
    assert "content-type: text/event-stream" in head
    events = _events(_chunks(raw))
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[1] == "content_block_start" and names[2] == "ping"
    assert names[-2:] == ["message_delta", "message_stop"]
    # every block is start, deltas, stop, with indexes in order
    body = [(name, data) for name, data in events[1:-2] if name != "ping"]
    index = -1
    for name, data in body:
        if name == "content_block_start":
            assert data["index"] == index + 1
            index = data["index"]
        else:
            assert data["index"] == index
    assert index == 3  # a text block and three tool_use blocks
    json_deltas = [
        d["delta"]["partial_json"]
        for n, d in events
        if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta" and d["index"] == 1
    ]
    assert len(json_deltas) > 2 and json_deltas[0] == ""
    assert json.loads("".join(json_deltas)) == {"limit": 20}
    final = events[-2][1]
    assert final["delta"]["stop_reason"] == "tool_use"
    assert final["usage"]["output_tokens"] > 1


def test_streamed_message_equals_the_non_streamed_one() -> None:
    with Simulator() as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        created = client.messages.create(**DAYFLOW_FIRST)
        with client.messages.stream(**DAYFLOW_FIRST) as stream:
            streamed = stream.get_final_message()
    assert streamed.model_dump(exclude={"content"}) == created.model_dump(exclude={"content"})
    assert [b.model_dump(exclude={"parsed_output"}) for b in streamed.content] == [
        b.model_dump() for b in created.content
    ]


def _run_twice(seed_a: int, seed_b: int, body: dict[str, Any]) -> tuple[list[bytes], list[bytes]]:
    outputs = []
    for seed in (seed_a, seed_b):
        with Simulator(seed=seed) as sim:
            json_body = _raw_exchange(sim.base_url, body).split(b"\r\n\r\n", 1)[1]
            sse_body = _raw_exchange(sim.base_url, {**body, "stream": True}).split(b"\r\n\r\n", 1)[1]
            outputs.append([json_body, sse_body])
    return outputs[0], outputs[1]


def test_same_seed_same_requests_give_the_same_bytes() -> None:
    first, second = _run_twice(7, 7, DAYFLOW_FIRST)
    assert first == second
    assert b"toolu_sim_" in first[0] and b"msg_sim_" in first[0]


def test_another_seed_gives_other_ids_but_the_same_content() -> None:
    first, second = _run_twice(1, 2, DAYFLOW_FIRST)
    assert first[0] != second[0]
    one, two = json.loads(first[0]), json.loads(second[0])
    assert one["id"] != two["id"]
    assert [b.get("input") for b in one["content"]] == [b.get("input") for b in two["content"]]


def test_request_id_and_rate_limit_headers_like_the_real_service() -> None:
    with Simulator() as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        first = client.messages.with_raw_response.create(**DAYFLOW_FIRST)
        second = client.messages.with_raw_response.create(**DAYFLOW_FIRST)
    headers = first.headers
    assert headers["x-harness-simulator"] == "1"
    assert headers["x-harness-sim-policy"] == "dayflow"
    assert headers["request-id"].startswith("req_sim_")
    assert headers["content-type"] == "application/json"
    for name in ("requests", "tokens", "input-tokens", "output-tokens"):
        for part in ("limit", "remaining", "reset"):
            assert headers[f"anthropic-ratelimit-{name}-{part}"]
    # a repeated identical request is a new request: its own id, one fewer request remaining
    assert second.headers["request-id"] != headers["request-id"]
    remaining = int(headers["anthropic-ratelimit-requests-remaining"])
    assert int(second.headers["anthropic-ratelimit-requests-remaining"]) == remaining - 1
    assert first.parse().id == second.parse().id  # same body, same message


def test_beta_path_and_count_tokens_are_served() -> None:
    with Simulator() as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        beta = client.beta.messages.create(**DAYFLOW_FIRST)
        counted = client.messages.count_tokens(
            model="sim-dayflow",
            system=DAYFLOW_FIRST["system"],
            tools=TOOLS,
            messages=DAYFLOW_FIRST["messages"],
        )
        created = client.messages.create(**DAYFLOW_FIRST)
        assert sim.requests_seen == 2  # count_tokens is not a /v1/messages request
    assert beta.stop_reason == "tool_use"
    assert counted.input_tokens == created.usage.input_tokens > 0


def test_usage_is_stable_and_grows_with_the_input() -> None:
    short = {"model": "sim-echo", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    long = {**short, "messages": [{"role": "user", "content": "hi " * 100}]}
    with Simulator() as one, Simulator() as two:
        usages = []
        for sim in (one, two):
            client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
            usages.append(
                [client.messages.create(**body).usage.model_dump() for body in (short, long, short)]
            )
    assert usages[0] == usages[1]
    assert usages[0][0] == usages[0][2]
    assert usages[0][1]["input_tokens"] > usages[0][0]["input_tokens"]
    assert usages[0][1]["output_tokens"] > usages[0][0]["output_tokens"]


def test_cache_control_writes_then_reads_the_prefix() -> None:
    system = [
        {"type": "text", "text": "You are a careful assistant. " * 20, "cache_control": {"type": "ephemeral"}}
    ]
    body = {
        "model": "sim-echo",
        "max_tokens": 100,
        "system": system,
        "messages": [{"role": "user", "content": "hello"}],
    }
    follow_up = {
        **body,
        "messages": [
            *body["messages"],
            {"role": "assistant", "content": "You said: hello"},
            {"role": "user", "content": "again"},
        ],
    }
    with Simulator() as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        uncached = client.messages.count_tokens(model="sim-echo", system=system, messages=body["messages"])
        first = client.messages.create(**body).usage
        second = client.messages.create(**follow_up).usage
    assert first.cache_creation_input_tokens > 0 and first.cache_read_input_tokens == 0
    assert first.cache_creation.ephemeral_5m_input_tokens == first.cache_creation_input_tokens
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0
    total = first.input_tokens + first.cache_creation_input_tokens + first.cache_read_input_tokens
    assert total == uncached.input_tokens


@pytest.mark.parametrize(
    ("model", "minimum"),
    [("claude-sonnet-4-5", 1024), ("claude-opus-4-6", 4096), ("claude-haiku-4-5-20251001", 4096),
     ("claude-opus-4-7", 2048), ("claude-opus-5", 512), ("claude-sonnet-5", 1024)],
)
def test_a_prefix_below_the_models_minimum_cacheable_length_writes_no_cache(model: str, minimum: int) -> None:
    """The API caches no prefix shorter than its model's minimum, silently: no write, no error (a 2-word prompt marked
    for caching reported a write before). The simulator counts a token as 4 characters."""

    def usage(client: anthropic.Anthropic, characters: int) -> Any:
        system = [{"type": "text", "text": "x" * characters, "cache_control": {"type": "ephemeral"}}]
        return client.messages.create(model=model, max_tokens=100, system=system,
                                      messages=[{"role": "user", "content": "Two words."}]).usage

    with Simulator() as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        short = usage(client, 4 * (minimum - 20))
        long = usage(client, 4 * minimum)
        again = usage(client, 4 * (minimum - 20))  # the short prefix was never cached: nothing to read either
    assert short.cache_creation_input_tokens == 0 and short.cache_read_input_tokens == 0
    assert short.input_tokens > minimum - 20
    assert long.cache_creation_input_tokens >= minimum
    assert again.cache_read_input_tokens == 0 and again.cache_creation_input_tokens == 0


def test_unknown_path_is_a_not_found_error_and_health_answers() -> None:
    with Simulator() as sim:
        missing = httpx2.post(sim.base_url + "/v1/complete", json={}, headers=KEY)
        health = httpx2.get(sim.base_url + "/health")
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found_error"
    assert health.status_code == 200 and health.headers["x-harness-simulator"] == "1"
    assert "dayflow" in health.json()["policies"]


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "192.168.0.10", "example.com", ""])
def test_refuses_to_bind_a_non_loopback_host(host: str) -> None:
    with pytest.raises(HarnessError, match="loopback"):
        Simulator(host=host)


def test_localhost_and_loopback_range_are_accepted() -> None:
    with Simulator(host="localhost") as sim:
        assert sim.base_url.startswith("http://127.0.0.1:")
        assert httpx2.get(sim.base_url + "/health").status_code == 200
    with Simulator(host="127.0.0.2") as sim:
        assert httpx2.get(sim.base_url + "/health").status_code == 200


def test_unknown_default_policy_is_refused() -> None:
    with pytest.raises(HarnessError, match="unknown simulator model"):
        Simulator(policy="chatty")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="harness sim")
    cli.add_arguments(parser)
    return parser.parse_args(argv)


def test_cli_run_serves_until_max_requests(tmp_path: Path) -> None:
    url_file = tmp_path / "sim.url"
    args = _parse(
        [
            "--port",
            "0",
            "--url-file",
            str(url_file),
            "--max-requests",
            "2",
            "--seed",
            "3",
            "--fault",
            "0:529",
            "--policy",
            "refuse",
            "--quiet",
        ]
    )
    thread, result, base_url = start_serving_thread(url_file, lambda: cli.run(args))
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", base_url)
    client = anthropic.Anthropic(base_url=base_url, api_key="k", max_retries=1)
    response = client.messages.create(
        model="claude-sonnet-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert response.stop_reason == "refusal"  # the --policy default, after the SDK retried the 529
    thread.join(timeout=READY_TIMEOUT)
    assert not thread.is_alive()
    assert result == [0]


def test_cli_refuses_a_non_loopback_host() -> None:
    with pytest.raises(HarnessError, match="not a loopback address"):
        cli.run(_parse(["--host", "0.0.0.0", "--port", "0", "--quiet"]))


def test_cli_rejects_a_bad_fault_spec(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        _parse(["--fault", "first:429"])
    assert caught.value.code == 2
    assert "IDX:KIND" in capsys.readouterr().err


def test_moving_the_breakpoint_forward_reads_the_earlier_turns() -> None:
    def turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
        *earlier, last = messages
        marked = {
            **last,
            "content": [{"type": "text", "text": last["content"], "cache_control": {"type": "ephemeral"}}],
        }
        return {"model": "sim-echo", "max_tokens": 1000, "messages": [*earlier, marked]}

    first_turn = [{"role": "user", "content": "tell me about caching " * 30}]
    second_turn = [*first_turn, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    with Simulator() as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        first = client.messages.create(**turn(first_turn)).usage
        second = client.messages.create(**turn(second_turn)).usage
    assert first.cache_read_input_tokens == 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens > 0
    assert second.cache_creation_input_tokens > 0  # the new turn is written
    assert second.input_tokens == 0  # the breakpoint is on the last block: nothing left uncached


def test_a_burst_of_concurrent_async_calls_is_served() -> None:
    async def burst(base_url: str) -> list[str]:
        async with anthropic.AsyncAnthropic(base_url=base_url, api_key="k", max_retries=0) as client:
            calls = [
                client.messages.create(
                    model="sim-echo", max_tokens=50, messages=[{"role": "user", "content": f"call {n}"}]
                )
                for n in range(50)
            ]
            return [response.content[0].text for response in await asyncio.gather(*calls)]

    with Simulator() as sim:
        texts = asyncio.run(burst(sim.base_url))
        assert sim.requests_seen == 50
    assert texts == [f"You said: call {n}" for n in range(50)]
