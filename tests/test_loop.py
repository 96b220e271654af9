"""The agent loop through the real SDK, over a scripted fake of the Messages API (no network)."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import httpx2
import pytest

from harness.loop import (
    LoopConfig,
    Outcome,
    RunResult,
    TokenBudget,
    run_loop,
    run_loop_async,
)
from harness.trajectory import Trajectory
from tests.loop_fakes import (
    ApiError,
    FakeClock,
    FakeMessagesAPI,
    FakeTools,
    async_client,
    message,
    sync_client,
    text,
    tool_use,
    tools_message,
    usage,
)

SYSTEM = "You are Dayflow. Write a morning brief."
USER = "Today is Monday 2026-09-07. Brief me."


def inbox(limit: int = 20) -> dict[str, Any]:
    return {"emails": [{"id": "em-001", "subject": "Q3 vendor review"}], "limit": limit}


def calendar(days: int = 7) -> dict[str, Any]:
    return {"events": [{"id": "cal-001", "title": "Weekly staff sync"}], "days": days}


def broken() -> None:
    raise ValueError("database is locked")


SCHEMAS = {"read_inbox": {"type": "object", "properties": {"limit": {"type": "integer"}}}}


def dayflow_tools() -> FakeTools:
    return FakeTools({"read_inbox": inbox, "read_calendar": calendar, "broken": broken}, SCHEMAS)


def run(script: list[Any], tools: Any = None, **options: Any) -> tuple[FakeMessagesAPI, RunResult]:
    api = FakeMessagesAPI(script)
    result = run_loop(sync_client(api), system=SYSTEM, user=USER, tools=tools, **options)
    return api, result


def without_durations(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_durations(v) for k, v in value.items() if k != "duration_ms"}
    if isinstance(value, list):
        return [without_durations(v) for v in value]
    return value


# --- the five phases -----------------------------------------------------------------------------


def test_end_turn_sends_system_messages_tools_and_returns_the_text() -> None:
    tools = dayflow_tools()
    api, result = run([message("## Today", "\n- staff sync")], tools, max_tokens=512)

    assert result.outcome is Outcome.ENDED and result.ok and not result.incomplete
    assert result.final_text == "## Today\n- staff sync"
    assert result.steps == 1 and result.stop_sequence is None
    [body] = api.bodies
    assert body["system"] == SYSTEM
    assert body["messages"] == [{"role": "user", "content": USER}]
    assert body["tools"] == tools.definitions()
    assert body["max_tokens"] == 512 and "tool_choice" not in body and "stream" not in body
    # The recorded request is the exact body that went over the wire; the response is the Message.
    assert result.calls[0].request == body
    assert [block["text"] for block in result.calls[0].response["content"]] == ["## Today", "\n- staff sync"]
    assert result.calls[0].response["stop_reason"] == "end_turn"


def test_tool_use_runs_the_tool_and_sends_assistant_turn_then_one_result_turn() -> None:
    tools = dayflow_tools()
    asked = tools_message(tool_use("read_inbox", {"limit": 5}), preamble="Reading your inbox.")
    api, result = run([asked, message("Done.")], tools)

    assert result.outcome is Outcome.ENDED and result.final_text == "Done."
    assert tools.runs == [("read_inbox", {"limit": 5})]
    second = api.bodies[1]["messages"]
    assert len(second) == 3
    assert second[1] == {"role": "assistant", "content": asked["content"]}
    [result_block] = second[2]["content"]
    assert second[2]["role"] == "user"
    assert result_block == {
        "type": "tool_result",
        "tool_use_id": asked["content"][1]["id"],
        "content": json.dumps(inbox(5)),
    }
    assert result.messages == [*second, {"role": "assistant", "content": [text("Done.")]}]
    [call] = result.tool_calls
    assert (call.name, call.input, call.is_error, call.step) == ("read_inbox", {"limit": 5}, False, 1)
    assert call.chars == len(json.dumps(inbox(5)))


def test_parallel_tool_calls_get_one_result_each_in_order_with_matching_ids() -> None:
    tools = dayflow_tools()
    calls = [tool_use("read_calendar", {"days": 1}), tool_use("read_inbox"), tool_use("read_calendar", {"days": 7})]
    api, result = run([tools_message(*calls), message("Brief.")], tools)

    assert result.ok
    turns = api.bodies[1]["messages"]
    assert [m["role"] for m in turns] == ["user", "assistant", "user"]
    results = turns[2]["content"]
    assert [block["tool_use_id"] for block in results] == [call["id"] for call in calls]
    assert [json.loads(block["content"]) for block in results] == [calendar(1), inbox(), calendar(7)]
    assert [c.id for c in result.tool_calls] == [call["id"] for call in calls]


@pytest.mark.parametrize(
    ("name", "tool_input", "expected"),
    [
        ("send_email", {"to": "x"}, "UnknownTool"),
        ("read_inbox", {"limit": "twenty"}, "InvalidInput for read_inbox"),
        ("broken", {}, "ValueError: database is locked"),
    ],
)
def test_tool_failures_are_is_error_results_in_the_next_request(name: str, tool_input: dict, expected: str) -> None:
    asked = tools_message(tool_use(name, tool_input))
    api, result = run([asked, message("Sorry, recovering.")], dayflow_tools())

    assert result.ok
    [block] = api.bodies[1]["messages"][2]["content"]
    assert block["tool_use_id"] == asked["content"][0]["id"]
    assert block["is_error"] is True and expected in block["content"]
    assert result.tool_calls[0].is_error


def test_a_registry_that_raises_becomes_an_error_result_not_a_crash() -> None:
    class RaisingTools(FakeTools):
        def run(self, name: str, tool_input: Any) -> Any:
            raise RuntimeError("registry bug")

    api, result = run([tools_message(tool_use("read_inbox")), message("ok")], RaisingTools({"read_inbox": inbox}))

    assert result.ok
    [block] = api.bodies[1]["messages"][2]["content"]
    assert block["is_error"] is True and block["content"] == "RuntimeError: registry bug"


def test_tool_use_without_tools_answers_unknown_tool() -> None:
    _, result = run([tools_message(tool_use("read_inbox")), message("ok")], None)

    # The fake rejects tool history without tool definitions, as the API does: the loop cannot
    # invent definitions, so it ends with the API's error as the reason.
    assert result.outcome is Outcome.ERROR
    assert "must define tools" in result.reason
    assert result.tool_calls[0].is_error and "no tools" in result.tool_calls[0].output


# --- stop reasons --------------------------------------------------------------------------------


def test_max_tokens_is_a_failure_that_keeps_the_partial_run() -> None:
    api, result = run([message("## Today\n- sta", stop_reason="max_tokens"), message("never sent")], dayflow_tools())

    assert result.outcome is Outcome.MAX_TOKENS and not result.ok and result.incomplete
    assert "max_tokens=2048" in result.reason
    assert result.final_text == "## Today\n- sta"
    assert result.messages[-1] == {"role": "assistant", "content": [text("## Today\n- sta")]}
    assert len(api.requests) == 1


def test_stop_sequence_returns_the_text_and_the_sequence() -> None:
    api, result = run(
        [message("Brief", stop_reason="stop_sequence", stop_sequence="###")], dayflow_tools(), stop_sequences=("###",)
    )

    assert api.bodies[0]["stop_sequences"] == ["###"]
    assert result.outcome is Outcome.ENDED and result.ok
    assert (result.final_text, result.stop_sequence) == ("Brief", "###")
    assert "'###'" in result.reason


def test_refusal_is_its_own_outcome_and_is_never_retried() -> None:
    api, result = run([message("I can't help with that.", stop_reason="refusal"), message("retry")], dayflow_tools())

    assert result.outcome is Outcome.REFUSED and not result.ok
    assert result.final_text == "I can't help with that."
    assert len(api.requests) == 1


def test_pause_turn_sends_the_conversation_back_without_a_new_user_turn() -> None:
    paused = message("Searching the web...", stop_reason="pause_turn")
    api, result = run([paused, message("Here is your brief.")], dayflow_tools())

    assert result.ok and result.final_text == "Here is your brief."
    assert api.bodies[1]["messages"] == [
        {"role": "user", "content": USER},
        {"role": "assistant", "content": paused["content"]},
    ]
    assert result.steps == 2


def test_context_window_exceeded_names_the_context_reached() -> None:
    full = message("", stop_reason="model_context_window_exceeded", usage_=usage(input=150_000, cache_read=50_000))
    _, result = run([full], dayflow_tools())

    assert result.outcome is Outcome.CONTEXT_WINDOW and not result.ok
    assert "200,000 input tokens" in result.reason and "step 1" in result.reason


@pytest.mark.parametrize("stop_reason", ["compaction_needed", None])
def test_an_unknown_stop_reason_is_a_failure_naming_it(stop_reason: str | None) -> None:
    _, result = run([message("?", stop_reason=stop_reason)], dayflow_tools())

    assert result.outcome is Outcome.ERROR
    assert repr(stop_reason) in result.reason


def test_tool_use_stop_without_tool_use_blocks_is_an_error() -> None:
    _, result = run([message("hmm", stop_reason="tool_use")], dayflow_tools())

    assert result.outcome is Outcome.ERROR and "no tool_use block" in result.reason


# --- guards --------------------------------------------------------------------------------------


def test_max_steps_asks_for_a_summary_with_results_first_and_tools_off() -> None:
    tools = dayflow_tools()
    first, second = tools_message(tool_use("read_inbox")), tools_message(tool_use("read_calendar"))
    summary = message("Partial brief: inbox read, calendar read.")
    api, result = run([first, second, summary, message("never")], tools, max_steps=2)

    assert result.outcome is Outcome.STEP_LIMIT and result.incomplete and not result.ok
    assert result.final_text == "Partial brief: inbox read, calendar read."
    assert result.steps == 3 and len(api.requests) == 3
    last = api.bodies[2]
    assert last["tool_choice"] == {"type": "none"}
    assert last["tools"] == tools.definitions()
    closing = last["messages"][-1]["content"]
    assert closing[0]["type"] == "tool_result" and closing[0]["tool_use_id"] == second["content"][0]["id"]
    assert closing[1] == {"type": "text", "text": LoopConfig().summary_prompt}
    assert [name for name, _ in tools.runs] == ["read_inbox", "read_calendar"]
    assert "max steps (2)" in result.reason


def test_max_steps_summary_call_failure_stays_a_step_limit_outcome() -> None:
    _, result = run(
        [tools_message(tool_use("read_inbox")), ApiError(529, "overloaded_error", "Overloaded")],
        dayflow_tools(),
        max_steps=1,
    )

    assert result.outcome is Outcome.STEP_LIMIT and result.incomplete
    assert "summary call failed" in result.reason and "Overloaded" in result.reason


@pytest.mark.parametrize(
    ("budget", "label"),
    [
        (TokenBudget(output=30), "output tokens 40 exceeded the budget of 30"),
        (TokenBudget(input=150), "input tokens 200 exceeded the budget of 150"),
        (TokenBudget(cache_write=1_500), "cache write tokens 2,000 exceeded the budget of 1,500"),
        (TokenBudget(cache_read=5_000), "cache read tokens 6,000 exceeded the budget of 5,000"),
        (TokenBudget(total=8_000), "total tokens 8,240 exceeded the budget of 8,000"),
    ],
)
def test_token_budget_counts_each_kind_apart_and_stops_the_run(budget: TokenBudget, label: str) -> None:
    step = usage(input=100, output=20, cache_write=1_000, cache_read=3_000)
    script = [tools_message(tool_use("read_inbox", {"limit": n}), usage_=step) for n in range(1, 5)]
    _, result = run(script, dayflow_tools(), budget=budget)

    assert result.outcome is Outcome.BUDGET and not result.ok
    assert label in result.reason and "step 2" in result.reason
    assert result.steps == 2
    assert (result.usage.input, result.usage.output) == (200, 40)
    assert (result.usage.cache_write, result.usage.cache_read) == (2_000, 6_000)
    assert result.usage.total == 8_240
    # The tools of the call that broke the budget are not run.
    assert len(result.tool_calls) == 1


def test_budget_crossed_by_the_final_answer_keeps_the_answer() -> None:
    _, result = run([message("Brief.", usage_=usage(output=500))], dayflow_tools(), budget=TokenBudget(output=100))

    assert result.outcome is Outcome.ENDED and result.final_text == "Brief."


def test_per_call_timeout_is_passed_to_the_sdk() -> None:
    api, result = run([message("ok")], dayflow_tools(), call_timeout=7.5)

    assert result.ok
    assert api.timeouts()[0]["read"] == 7.5


def test_deadline_clips_the_call_timeout_and_ends_the_run() -> None:
    clock = FakeClock()

    def slow(reply: dict[str, Any], seconds: float) -> Any:
        def answer(request: httpx2.Request) -> dict[str, Any]:
            clock.advance(seconds)
            return reply

        return answer

    script = [
        slow(tools_message(tool_use("read_inbox")), 6),
        slow(tools_message(tool_use("read_calendar")), 5),
        message("never"),
    ]
    api, result = run(script, dayflow_tools(), deadline=10, call_timeout=30, clock=clock)

    assert result.outcome is Outcome.DEADLINE and result.incomplete
    assert [t["read"] for t in api.timeouts()] == [10, 4]
    assert len(api.requests) == 2 and result.steps == 2
    assert "before model call 3" in result.reason
    # The partial run is kept, the last tool results included.
    assert result.messages[-1]["content"][0]["type"] == "tool_result"


def test_a_timeout_after_the_deadline_is_a_deadline_outcome() -> None:
    clock = FakeClock()

    def times_out(request: httpx2.Request) -> Exception:
        clock.advance(20)
        return httpx2.ReadTimeout("read timed out", request=request)

    _, result = run([times_out], dayflow_tools(), deadline=10, clock=clock)

    assert result.outcome is Outcome.DEADLINE
    assert "during model call 1" in result.reason and "APITimeoutError" in result.reason


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (lambda request: httpx2.ReadTimeout("read timed out", request=request), "APITimeoutError"),
        (lambda request: httpx2.ConnectError("connection refused", request=request), "APIConnectionError"),
        (ApiError(500, "api_error", "boom"), "InternalServerError"),
        (ApiError(429, "rate_limit_error", "slow down"), "RateLimitError"),
    ],
)
def test_sdk_errors_end_the_run_with_their_type_and_keep_the_partial_run(failure: Any, expected: str) -> None:
    first = tools_message(tool_use("read_inbox"))
    _, result = run([first, failure], dayflow_tools())

    assert result.outcome is Outcome.ERROR and not result.ok
    assert "step 2" in result.reason and expected in result.reason
    assert result.steps == 1 and len(result.calls) == 1 and len(result.tool_calls) == 1
    assert result.events[-1].kind == "model_call" and expected in result.events[-1].data["error"]


def test_repeated_identical_calls_get_a_synthetic_error_instead_of_running() -> None:
    tools = dayflow_tools()
    same = [tools_message(tool_use("read_inbox", {"limit": 5})) for _ in range(4)]
    other = tools_message(tool_use("read_calendar"))
    again = tools_message(tool_use("read_inbox", {"limit": 5}))
    api, result = run([*same, other, again, message("done")], tools)

    assert result.ok
    # Runs 1-2 are real, 3-4 answered by the breaker; a different call resets the streak.
    assert [name for name, _ in tools.runs] == ["read_inbox", "read_inbox", "read_calendar", "read_inbox"]
    assert [call.synthetic for call in result.tool_calls] == [False, False, True, True, False, False]
    third = api.bodies[3]["messages"][-1]["content"][0]
    assert third["is_error"] is True and third["tool_use_id"] == same[2]["content"][0]["id"]
    assert "has not changed" in third["content"] and "different strategy" in third["content"]


def test_repeat_breaker_key_ignores_key_order_and_can_be_turned_off() -> None:
    tools = FakeTools({"pick": lambda a, b: a + b})
    script = [
        tools_message(tool_use("pick", {"a": 1, "b": 2})),
        tools_message(tool_use("pick", {"b": 2, "a": 1})),
        tools_message(tool_use("pick", {"a": 1, "b": 2})),
        message("3"),
    ]
    _, guarded = run(copy.deepcopy(script), tools)
    _, unguarded = run(copy.deepcopy(script), tools, repeat_limit=None)

    assert [c.synthetic for c in guarded.tool_calls] == [False, False, True]
    assert [c.synthetic for c in unguarded.tool_calls] == [False, False, False]


def test_config_overrides_by_keyword_and_rejects_unknown_options() -> None:
    api, result = run(
        [tools_message(tool_use("read_inbox")), message("summary")],
        dayflow_tools(),
        config=LoopConfig(max_steps=5),
        max_steps=1,
    )
    assert result.outcome is Outcome.STEP_LIMIT and api.bodies[1]["tool_choice"] == {"type": "none"}

    with pytest.raises(TypeError, match="max_turns"):
        run([message("x")], None, max_turns=3)
    with pytest.raises(ValueError, match="max_steps"):
        LoopConfig(max_steps=0)


# --- history compaction and caching --------------------------------------------------------------


def test_compaction_shortens_old_results_in_requests_only() -> None:
    def locked(table: str) -> None:
        raise RuntimeError(f"table {table} is locked by another writer; retry in a few seconds")

    tools = FakeTools({"read_inbox": inbox, "read_calendar": calendar, "locked": locked, "broken": broken})
    script = [
        tools_message(tool_use("read_inbox")),
        tools_message(tool_use("locked", {"table": "users"}), tool_use("broken")),
        tools_message(tool_use("read_calendar")),
        message("brief"),
    ]
    api, result = run(script, tools, compact_after=1)

    assert result.ok
    # With one result turn nothing is old yet.
    assert api.bodies[1]["messages"] == result.messages[:3]
    sent = api.bodies[3]["messages"]
    recorded = result.messages[: len(sent)]
    assert [m["role"] for m in sent] == [m["role"] for m in recorded]
    inbox_result, calendar_result = sent[2]["content"][0], sent[6]["content"][0]
    locked_result, short_result = sent[4]["content"]
    inbox_text = json.dumps(inbox())
    assert inbox_result == {
        "type": "tool_result",
        "tool_use_id": script[0]["content"][0]["id"],
        "content": f"[compacted: {len(inbox_text):,} chars from read_inbox]",
    }
    locked_text = "RuntimeError: table users is locked by another writer; retry in a few seconds"
    assert locked_result == {
        "type": "tool_result",
        "tool_use_id": script[1]["content"][0]["id"],
        "content": f"[compacted: {len(locked_text)} chars from locked]",
        "is_error": True,
    }
    # A result already shorter than its placeholder is sent as it is.
    assert short_result == recorded[4]["content"][1] and short_result["content"] == "ValueError: database is locked"
    assert calendar_result["content"] == json.dumps(calendar())
    # The recorded history keeps every result verbatim.
    assert recorded[2]["content"][0]["content"] == inbox_text
    assert result.calls[3].request == api.bodies[3]


def test_prompt_caching_marks_the_system_prompt_and_the_last_tool() -> None:
    tools = dayflow_tools()
    api, result = run(
        [
            tools_message(tool_use("read_inbox"), usage_=usage(cache_write=900)),
            message("ok", usage_=usage(cache_read=900)),
        ],
        tools,
        cache_prompts=True,
    )

    ephemeral = {"type": "ephemeral"}
    for body in api.bodies:
        assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": ephemeral}]
        assert body["tools"][-1]["cache_control"] == ephemeral
        assert all("cache_control" not in tool for tool in body["tools"][:-1])
    assert all("cache_control" not in tool for tool in tools.definitions())
    assert (result.usage.cache_write, result.usage.cache_read, result.usage.input) == (900, 900, 200)

    api_plain, _ = run([message("ok")], tools)
    assert api_plain.bodies[0]["system"] == SYSTEM
    assert all("cache_control" not in tool for tool in api_plain.bodies[0]["tools"])


# --- streaming, async, records -------------------------------------------------------------------


def dayflow_script() -> list[dict[str, Any]]:
    return [
        tools_message(
            tool_use("read_inbox", {"limit": 20}),
            tool_use("read_calendar", {"days": 7}),
            preamble="Let me look.",
            usage_=usage(input=889, output=169, cache_write=50),
        ),
        message("## Today\n- 13:00 Weekly staff sync", usage_=usage(input=2185, output=1191, cache_read=50)),
    ]


def comparable(result: RunResult) -> dict[str, Any]:
    data = without_durations(result.to_dict())
    for call in data["calls"]:
        call["request"].pop("stream", None)
    return data


def test_streaming_gives_the_same_run_result_as_non_streaming() -> None:
    script = dayflow_script()
    _, plain = run(copy.deepcopy(script), dayflow_tools())
    api_streamed, streamed = run(copy.deepcopy(script), dayflow_tools(), stream=True)

    assert all(body.get("stream") is True for body in api_streamed.bodies)
    assert all(r.headers.get("x-stainless-helper-method") == "stream" for r in api_streamed.requests)
    assert [call.request for call in streamed.calls] == api_streamed.bodies
    assert plain.ok and comparable(plain) == comparable(streamed)
    assert streamed.tool_calls[1].input == {"days": 7}


def test_async_twin_gives_the_same_run_result() -> None:
    script = dayflow_script()
    _, plain = run(copy.deepcopy(script), dayflow_tools())
    for stream in (False, True):
        api = FakeMessagesAPI(copy.deepcopy(script))
        result = asyncio.run(
            run_loop_async(async_client(api), system=SYSTEM, user=USER, tools=dayflow_tools(), stream=stream)
        )
        assert comparable(result) == comparable(plain)
        assert len(api.requests) == 2


def test_async_twin_applies_guards_too() -> None:
    api = FakeMessagesAPI([tools_message(tool_use("read_inbox")), ApiError(500, "api_error", "boom")])
    result = asyncio.run(run_loop_async(async_client(api), system=SYSTEM, user=USER, tools=dayflow_tools()))
    assert result.outcome is Outcome.ERROR and "InternalServerError" in result.reason and result.steps == 1


def test_events_record_each_model_call_and_tool_run_and_reach_the_callback() -> None:
    seen: list[Any] = []
    api = FakeMessagesAPI(dayflow_script())
    result = run_loop(sync_client(api), system=SYSTEM, user=USER, tools=dayflow_tools(), on_event=seen.append)

    assert seen == result.events
    assert [(e.kind, e.step) for e in result.events] == [
        ("model_call", 1),
        ("tool_call", 1),
        ("tool_call", 1),
        ("model_call", 2),
    ]
    assert result.events[0].data["stop_reason"] == "tool_use"
    assert result.events[0].data["usage"]["cache_creation_input_tokens"] == 50
    assert result.events[1].data["name"] == "read_inbox" and result.events[2].data["name"] == "read_calendar"
    assert result.events[2].data["input"] == {"days": 7} and result.events[2].data["id"] == result.tool_calls[1].id
    assert all(event.duration_ms >= 0 for event in result.events)

    data = json.loads(json.dumps(result.to_dict()))
    assert data["outcome"] == "ended" and data["ok"] is True
    assert data["usage"] == {"input": 3074, "output": 1360, "cache_write": 50, "cache_read": 50, "total": 4534}
    assert data["calls"][1]["response"]["usage"]["output_tokens"] == 1191
    assert data["tool_calls"][0]["name"] == "read_inbox"
    assert data["cost_usd"] == pytest.approx(result.cost_usd)


def test_the_run_is_recorded_as_exchanges_and_the_trajectory_shares_its_tool_calls() -> None:
    api, result = run(dayflow_script(), dayflow_tools())

    assert [exchange.request for exchange in result.exchanges] == api.bodies
    assert [exchange.status for exchange in result.exchanges] == [200, 200] and result.error is None
    assert [call.response for call in result.calls] == [dict(e.message or {}) for e in result.exchanges]
    # Both tool results rode on request 2, which got a message: they say so, as the trajectory's do.
    assert [call.result.step for call in result.tool_calls if call.result] == [2, 2]
    trajectory = Trajectory.from_run(result)
    assert [call.result for call in trajectory.tool_calls] == [call.result for call in result.tool_calls]
    assert [call.key for call in trajectory.tool_calls] == [call.key for call in result.tool_calls]


def test_a_failed_call_is_an_exchange_with_the_error_as_data() -> None:
    script = [tools_message(tool_use("read_inbox")), ApiError(529, "overloaded_error", "Busy")]
    api, result = run(script, dayflow_tools())

    assert len(result.exchanges) == 2 and len(result.calls) == 1
    failed = result.exchanges[-1]
    assert failed.request == api.bodies[-1] and failed.message is None
    assert (failed.status, failed.error_type, failed.error_message) == (529, "overloaded_error", "Busy")
    assert result.error == {"status": 529, "error_type": "overloaded_error", "error_message": "Busy",
                            "retry_after": None}
    assert result.to_dict()["error"] == result.error
    assert (result.events[-1].data["status"], result.events[-1].data["error_type"]) == (529, "overloaded_error")
    # The tool result went out on the request that failed: no step carried it.
    assert result.tool_calls[0].result is not None and result.tool_calls[0].result.step is None
    assert Trajectory.from_run(result).tool_calls[0].result == result.tool_calls[0].result


def test_user_may_be_content_blocks_or_a_conversation() -> None:
    blocks = [{"type": "text", "text": "Brief me."}]
    api = FakeMessagesAPI([message("a"), message("b")])
    client = sync_client(api)
    run_loop(client, system=SYSTEM, user=blocks, tools=None)
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "brief"},
    ]
    run_loop(client, system=SYSTEM, user=history, tools=None)

    assert api.bodies[0]["messages"] == [{"role": "user", "content": blocks}]
    assert api.bodies[1]["messages"] == history
    assert "tools" not in api.bodies[0]


def test_with_the_real_tool_registry() -> None:
    from harness.tools import Tool, ToolRegistry

    registry = ToolRegistry(
        [
            Tool(
                name="read_inbox",
                description="Read the inbox.",
                input_schema={"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1}}},
                function=inbox,
            )
        ]
    )
    bad, good = tool_use("read_inbox", {"limit": 0}), tool_use("read_inbox", {"limit": 2})
    api, result = run([tools_message(bad), tools_message(good), message("brief")], registry)

    assert result.ok
    assert api.bodies[0]["tools"] == registry.definitions()
    rejected = api.bodies[1]["messages"][2]["content"][0]
    assert rejected["is_error"] is True and rejected["tool_use_id"] == bad["id"] and "limit" in rejected["content"]
    accepted = api.bodies[2]["messages"][4]["content"][0]
    assert "is_error" not in accepted and json.loads(accepted["content"]) == inbox(2)


def test_max_steps_on_a_paused_turn_asks_for_the_summary_without_tool_results() -> None:
    paused = message("Still searching...", stop_reason="pause_turn")
    api, result = run([paused, message("Best effort: nothing found yet.")], dayflow_tools(), max_steps=1)

    assert result.outcome is Outcome.STEP_LIMIT and result.final_text == "Best effort: nothing found yet."
    assert api.bodies[1]["messages"][1:] == [
        {"role": "assistant", "content": paused["content"]},
        {"role": "user", "content": [{"type": "text", "text": LoopConfig().summary_prompt}]},
    ]
