"""Message threads (beta) in the simulator: the SDK's tool runner threads by default and must finish.

The wire contract checked here is the SDK's (anthropic/lib/threads/): a `create` carries the whole
request, a `continue` only the new messages and no `system`/`tools`, the thread is named by the
reply's ordinary `id`, and rejections carry `error.details.error_code`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import anthropic
import httpx2
import pytest

from harness.commands import sim as cli
from harness.sim import MESSAGE_THREADS_BETA, Simulator
from harness.sim.threads import Threads
from harness_demo.dayflow import SYSTEM_PROMPT, build_registry, user_prompt
from tests.dayflow_clients import dayflow_runner_reply, text_of

BETA_HEADERS = {
    "x-api-key": "sim-key",
    "anthropic-version": "2023-06-01",
    "anthropic-beta": MESSAGE_THREADS_BETA,
}
TOOLS = [
    {"name": name, "description": f"{name}.", "input_schema": {"type": "object", "properties": {}}}
    for name in build_registry().names
]
CREATE = {
    "model": "claude-sonnet-5",
    "max_tokens": 1024,
    "system": SYSTEM_PROMPT,
    "tools": TOOLS,
    "messages": [{"role": "user", "content": user_prompt()}],
    "thread": {"type": "create"},
}


class Recorder:
    """The JSON bodies a client sent, in order (an httpx2 request hook)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> None:
        self.bodies.append(json.loads(request.content))


def sdk_client(sim: Simulator, recorder: Recorder | None = None) -> anthropic.Anthropic:
    hooks = {"request": [recorder]} if recorder else {}
    return anthropic.Anthropic(
        api_key="sim-key", base_url=sim.base_url, max_retries=0, http_client=httpx2.Client(event_hooks=hooks)
    )


def post(sim: Simulator, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.post(f"{sim.base_url}/v1/messages?beta=true", json=body, headers=headers or BETA_HEADERS)


def tool_results(reply: dict[str, Any]) -> dict[str, Any]:
    """A user turn answering every tool_use of `reply` with the registry's real result."""
    registry = build_registry()
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": block["id"], "content": registry.run(block["name"], {}).content}
            for block in reply["content"]
            if block["type"] == "tool_use"
        ],
    }


def continue_from(message_id: str, *messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-5",
        "max_tokens": 1024,
        "messages": list(messages),
        "thread": {"type": "continue", "previous_message_id": message_id},
        **fields,
    }


# -- the SDK's tool runner, end to end --------------------------------------------------------------


def test_the_threaded_tool_runner_finishes_with_the_same_brief_as_an_unthreaded_one() -> None:
    recorder = Recorder()
    with Simulator() as sim:
        threaded = dayflow_runner_reply(sdk_client(sim, recorder))
        threads_held = [served.thread for served in sim.served]
        stored = sim.threads.conversation(threaded.id)
    with Simulator() as sim:
        unthreaded = dayflow_runner_reply(sdk_client(sim), thread=False)
        assert [served.thread for served in sim.served] == [None, None]

    assert threaded.stop_reason == "end_turn"
    assert text_of(threaded) == text_of(unthreaded)
    assert "## Needs a reply" in text_of(threaded)
    assert threads_held == ["create", "continue"]

    create, follow_up = recorder.bodies
    assert create["thread"] == {"type": "create"}
    assert create["system"] == SYSTEM_PROMPT and len(create["tools"]) == 3
    assert follow_up["thread"]["type"] == "continue"
    assert "system" not in follow_up and "tools" not in follow_up
    # only the new turn goes out: the tool results for the stored reply's three calls
    assert [message["role"] for message in follow_up["messages"]] == ["user"]
    assert [block["type"] for block in follow_up["messages"][0]["content"]] == ["tool_result"] * 3

    # the server's copy of the conversation: first turn, stored reply, the continue's turn, final reply
    assert stored is not None
    assert [message["role"] for message in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[2] == follow_up["messages"][0]
    first_reply_ids = {block["id"] for block in stored[1]["content"] if block["type"] == "tool_use"}
    answered = {block["tool_use_id"] for block in stored[2]["content"]}
    assert first_reply_ids == answered and len(answered) == 3
    assert follow_up["thread"]["previous_message_id"] not in (None, threaded.id)


def test_the_streaming_tool_runner_threads_too() -> None:
    with Simulator() as sim:
        streamed = dayflow_runner_reply(sdk_client(sim), stream=True)
        assert [served.thread for served in sim.served] == ["create", "continue"]
        assert all(served.stream and served.status == 200 for served in sim.served)
    with Simulator() as sim:
        plain = dayflow_runner_reply(sdk_client(sim), thread=False)
    assert text_of(streamed) == text_of(plain) and "## Today" in text_of(streamed)


def test_threaded_ids_are_deterministic_and_a_rerun_on_the_same_server_recreates_the_threads() -> None:
    with Simulator() as first_server, Simulator() as second_server:
        client = sdk_client(first_server)
        first = dayflow_runner_reply(client)
        again = dayflow_runner_reply(client)
        elsewhere = dayflow_runner_reply(sdk_client(second_server))
        # the rerun continued its own (re-created) thread: no rejection, no replay
        assert [s.status for s in first_server.served] == [200] * 4
        assert [s.thread for s in first_server.served] == ["create", "continue"] * 2
    assert first.id == again.id == elsewhere.id
    assert text_of(first) == text_of(again)


def test_concurrent_async_runners_with_the_same_conversation_all_finish() -> None:
    """Identical conversations share thread ids; whatever collides, the SDK recovers and each run finishes."""
    registry = build_registry()

    @anthropic.beta_async_tool
    async def read_inbox(limit: int = 20) -> str:
        """Read the newest emails in the inbox."""
        return registry.run("read_inbox", {"limit": limit}).content

    @anthropic.beta_async_tool
    async def read_calendar(days: int = 7) -> str:
        """Read calendar events for the next days."""
        return registry.run("read_calendar", {"days": days}).content

    @anthropic.beta_async_tool
    async def read_tasks(include_done: bool = False) -> str:
        """Read the task list."""
        return registry.run("read_tasks", {"include_done": include_done}).content

    async def run(client: anthropic.AsyncAnthropic) -> str:
        runner = client.beta.messages.tool_runner(
            model="claude-sonnet-5",
            max_tokens=1024,
            system=SYSTEM_PROMPT,
            tools=[read_inbox, read_calendar, read_tasks],
            messages=[{"role": "user", "content": user_prompt()}],
        )
        return text_of(await runner.until_done())

    async def main(base_url: str) -> list[str]:
        async with anthropic.AsyncAnthropic(api_key="sim-key", base_url=base_url, max_retries=0) as client:
            return list(await asyncio.gather(*(run(client) for _ in range(4))))

    with Simulator() as sim:
        briefs = asyncio.run(main(sim.base_url))
        assert {served.thread for served in sim.served} == {"create", "continue"}
    with Simulator() as sim:
        plain = text_of(dayflow_runner_reply(sdk_client(sim), thread=False))
    assert briefs == [plain] * 4


def test_a_server_without_threads_makes_the_runner_fall_back_and_finish() -> None:
    recorder = Recorder()
    with Simulator(threads=False) as sim:
        fallback = dayflow_runner_reply(sdk_client(sim, recorder))
        served = [(s.thread, s.status) for s in sim.served]
    assert served == [("create", 400), (None, 200), (None, 200)]
    assert all("thread" not in body for body in recorder.bodies[1:])
    # the unthreaded turns carry the whole conversation again
    assert [m["role"] for m in recorder.bodies[2]["messages"]] == ["user", "assistant", "user"]
    with Simulator() as sim:
        plain = dayflow_runner_reply(sdk_client(sim), thread=False)
    assert text_of(fallback) == text_of(plain)


def test_a_paused_turn_is_resumed_by_a_continue_with_no_messages() -> None:
    recorder = Recorder()
    with Simulator() as sim:
        final = dayflow_runner_reply(sdk_client(sim, recorder), model="sim-pause-turn")
        stored = sim.threads.conversation(final.id)
    assert final.stop_reason == "end_turn" and "finished" in text_of(final)
    resume = recorder.bodies[1]
    assert resume["thread"]["type"] == "continue" and resume["messages"] == []
    assert stored is not None and [m["role"] for m in stored] == ["user", "assistant", "assistant"]


def test_the_sdk_replays_under_a_new_thread_when_the_server_lost_it() -> None:
    recorder = Recorder()
    with Simulator() as sim:
        port = sim.port
        client = sdk_client(sim, recorder)
        thread = client.beta.messages.thread(model="sim-echo", max_tokens=200, system="Answer briefly.")
        first = thread.send({"role": "user", "content": "first question"})
    with Simulator(port=port) as restarted:  # a new server: it holds no thread
        second = thread.send({"role": "user", "content": "second question"})
        served = [(s.thread, s.status) for s in restarted.served]
    assert served == [("continue", 404), ("create", 200)]
    assert text_of(first) == "You said: first question"
    assert text_of(second) == "You said: second question"
    replay = recorder.bodies[-1]
    assert replay["system"] == "Answer briefly."
    assert [m["role"] for m in replay["messages"]] == ["user", "assistant", "user"]


def test_a_retried_continue_whose_reply_was_lost_is_already_continued_and_the_sdk_replays() -> None:
    """The server stored the reply it could not deliver: the retry finds the reply used up."""
    with Simulator(faults={1: "cut-stream"}) as sim:
        client = anthropic.Anthropic(api_key="sim-key", base_url=sim.base_url, max_retries=2)
        final = dayflow_runner_reply(client)
        served = [(s.thread, s.status) for s in sim.served]
    assert served == [("create", 200), ("continue", 200), ("continue", 400), ("create", 200)]
    assert final.stop_reason == "end_turn" and "## Today" in text_of(final)


# -- the rejections, as the SDK reads them ----------------------------------------------------------


def test_an_unknown_previous_message_id_is_thread_not_found() -> None:
    with Simulator() as sim:
        response = post(sim, continue_from("msg_nowhere", {"role": "user", "content": "hi"}))
        assert response.status_code == 404
        error = response.json()["error"]
        assert error["type"] == "not_found_error"
        assert error["details"] == {"error_code": "thread_not_found"}
        assert "msg_nowhere" in error["message"]
        with pytest.raises(anthropic.NotFoundError) as caught:
            sdk_client(sim).beta.messages.create(
                model="claude-sonnet-5",
                max_tokens=100,
                messages=[{"role": "user", "content": "hi"}],
                thread={"type": "continue", "previous_message_id": "msg_nowhere"},
                betas=[MESSAGE_THREADS_BETA],
            )
    assert caught.value.error_code == "thread_not_found"
    assert type(caught.value).__name__ == "ThreadNotFoundError"


def test_a_reply_can_be_continued_only_once() -> None:
    with Simulator() as sim:
        created = post(sim, CREATE).json()
        assert created["stop_reason"] == "tool_use"
        answer = tool_results(created)
        continued = post(sim, continue_from(created["id"], answer))
        assert continued.status_code == 200 and "## Deadlines this week" in continued.json()["content"][0]["text"]

        again = post(sim, continue_from(created["id"], answer))
        assert again.status_code == 400
        assert again.json()["error"]["details"] == {"error_code": "thread_already_continued"}
        with pytest.raises(anthropic.BadRequestError) as caught:
            sdk_client(sim).beta.messages.create(**continue_from(created["id"], answer), betas=[MESSAGE_THREADS_BETA])
        assert caught.value.error_code == "thread_already_continued"

        # the newest reply is still open
        later = post(sim, continue_from(continued.json()["id"], {"role": "user", "content": "Thanks!"}))
        assert later.status_code == 200


def test_a_continue_is_validated_against_the_stored_conversation_and_a_failure_does_not_use_it_up() -> None:
    with Simulator() as sim:
        created = post(sim, CREATE).json()
        unanswered = post(sim, continue_from(created["id"], {"role": "user", "content": "Never mind."}))
        assert unanswered.status_code == 400
        assert "`tool_use` ids were found without `tool_result` blocks" in unanswered.json()["error"]["message"]
        wrong_id = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "{}"}]}
        mismatched = post(sim, continue_from(created["id"], wrong_id))
        assert "unexpected `tool_use_id`" in mismatched.json()["error"]["message"]
        # the tools come from the thread: tool results pass the "must define tools" check without them
        assert post(sim, continue_from(created["id"], tool_results(created))).status_code == 200


@pytest.mark.parametrize("field", ["system", "tools"])
def test_a_continue_that_repeats_a_create_only_field_is_refused(field: str) -> None:
    with Simulator() as sim:
        created = post(sim, CREATE).json()
        refused = post(sim, continue_from(created["id"], tool_results(created), **{field: CREATE[field]}))
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["type"] == "invalid_request_error" and f"`{field}`" in error["message"]
        assert "details" not in error
        assert post(sim, continue_from(created["id"], tool_results(created))).status_code == 200


def test_threads_off_answers_thread_unsupported_request_naming_the_features() -> None:
    with Simulator(threads=False) as sim:
        body = {**CREATE, "thinking": {"type": "enabled", "budget_tokens": 1024}}
        response = post(sim, body)
        assert response.status_code == 400
        assert response.json()["error"]["details"] == {
            "error_code": "thread_unsupported_request",
            "unsupported": ["thinking"],
        }
        unthreaded = {key: value for key, value in CREATE.items() if key != "thread"}
        assert post(sim, unthreaded).status_code == 200


def test_the_thread_field_needs_the_beta_header_and_a_valid_shape() -> None:
    with Simulator() as sim:
        plain_headers = {key: value for key, value in BETA_HEADERS.items() if key != "anthropic-beta"}
        no_beta = post(sim, CREATE, plain_headers)
        assert no_beta.status_code == 400 and MESSAGE_THREADS_BETA in no_beta.json()["error"]["message"]
        for thread, expected in (
            ({"type": "fork"}, "does not match any of the expected tags"),
            ({"type": "continue"}, "thread.continue.previous_message_id: Field required"),
            ({"type": "create", "id": "x"}, "thread.create.id: Extra inputs are not permitted"),
        ):
            response = post(sim, {**CREATE, "thread": thread})
            assert response.status_code == 400 and expected in response.json()["error"]["message"]
        assert post(sim, {**CREATE, "thread": None}).status_code == 200  # null means no thread


def test_a_second_continue_while_the_first_is_in_flight_is_refused() -> None:
    threads = Threads()
    create, error = threads.open(CREATE)
    assert error is None and create is not None
    threads.finish(create, {"id": "msg_a", "content": [{"type": "text", "text": "Hello."}]})
    body = continue_from("msg_a", {"role": "user", "content": "more"})
    first, error = threads.open(body)
    assert error is None and first is not None
    assert first.body["system"] == SYSTEM_PROMPT and len(first.body["messages"]) == 3
    _, busy = threads.open(body)
    assert busy is not None and busy.details == {"error_code": "thread_continue_in_flight"}
    threads.finish(first, None)  # the first failed: the reply can be continued again
    retry, error = threads.open(body)
    assert error is None and retry is not None


def test_the_cli_turns_threads_off_with_no_threads() -> None:
    parser = argparse.ArgumentParser(prog="harness sim")
    cli.add_arguments(parser)
    assert parser.parse_args([]).threads is True
    assert parser.parse_args(["--no-threads"]).threads is False
    assert Simulator(threads=False).threads.enabled is False
