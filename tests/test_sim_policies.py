"""Scripted models of the simulator, driven through the real anthropic SDK over loopback HTTP."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from typing import Any

import anthropic
import pytest

from harness.sim import Simulator
from harness.sim.conversation import Reply
from harness.sim.policies import CONTEXT_WINDOW_TOKENS, POLICIES

USER = "Give me my morning brief for Monday 2026-09-07."
SYSTEM_SKIP = (
    "You write a morning brief with sections ## Today, ## Needs a reply and ## Deadlines this week. "
    "Skip newsletters and promotions."
)
SYSTEM_NO_SKIP = (
    "You write a morning brief with sections ## Today, ## Needs a reply and ## Deadlines this week."
)

EMAILS = [
    {
        "id": "em-001",
        "from": "Priya Raman <priya@northwind.example>",
        "subject": "Q3 vendor review sign-off",
        "received": "2026-09-07T07:42:00Z",
        "body": "Need your sign-off by Thursday.",
        "labels": ["work"],
        "needs_reply": True,
        "deadline": "2026-09-10",
    },
    {
        "id": "em-002",
        "from": "Sam K. <sam@partnerlabs.example>",
        "subject": "Partner Labs one-pager edits",
        "received": "2026-09-07T06:10:00Z",
        "body": "Edits before Wednesday?",
        "labels": ["work"],
        "needs_reply": True,
        "deadline": "2026-09-09",
    },
    {
        "id": "em-003",
        "from": "Brightside Deals <deals@brightside.example>",
        "subject": "40% off everything this week",
        "received": "2026-09-07T05:00:00Z",
        "body": "Sale!",
        "labels": ["promotions"],
        "needs_reply": False,
        "deadline": None,
    },
    {
        "id": "em-004",
        "from": "Smile Dental <front@smile.example>",
        "subject": "Reminder: dentist appointment",
        "received": "2026-09-06T18:00:00Z",
        "body": "Tuesday 9:00",
        "labels": ["reminder"],
        "needs_reply": False,
        "deadline": None,
    },
    {
        "id": "em-005",
        "from": "Oak Street School <office@oak.example>",
        "subject": "Field trip permission slip",
        "received": "2026-09-06T15:00:00Z",
        "body": "Please return the slip.",
        "labels": ["school"],
        "needs_reply": False,
        "deadline": "2026-09-11",
    },
]
EVENTS = [
    {
        "id": "cal-001",
        "title": "Weekly staff sync",
        "start": "2026-09-07T13:00:00Z",
        "end": "2026-09-07T13:30:00Z",
        "calendar": "work",
    },
    {
        "id": "cal-002",
        "title": "Dentist",
        "start": "2026-09-08T09:00:00Z",
        "end": "2026-09-08T10:00:00Z",
        "calendar": "personal",
    },
    {
        "id": "cal-003",
        "title": "Grant report due",
        "start": "2026-09-11T17:00:00Z",
        "end": "2026-09-11T17:30:00Z",
        "calendar": "work",
    },
]
TASKS = [
    {"id": "task-001", "title": "Send Sept newsletter draft", "due": "2026-09-08", "done": False},
    {"id": "task-002", "title": "Renew parking permit", "due": None, "done": False},
    {"id": "task-003", "title": "File August expenses", "due": "2026-09-04", "done": True},
]


def _schema(**properties: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": kind} for name, kind in properties.items()}}


DAYFLOW_TOOLS = [
    {"name": "read_inbox", "description": "Read recent emails.", "input_schema": _schema(limit="integer")},
    {
        "name": "read_calendar",
        "description": "Read calendar events.",
        "input_schema": _schema(days="integer"),
    },
    {
        "name": "read_tasks",
        "description": "Read the task list.",
        "input_schema": _schema(include_done="boolean"),
    },
]


def dayflow_tool(name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
    if name == "read_inbox":
        emails = EMAILS[: tool_input.get("limit", 20)]
        return json.dumps({"emails": emails, "total": len(EMAILS), "offset": 0, "next_offset": None}), False
    if name == "read_calendar":
        return json.dumps({"events": EVENTS, "from": "2026-09-07", "days": tool_input.get("days", 7)}), False
    if name == "read_tasks":
        tasks = [t for t in TASKS if tool_input.get("include_done") or not t["done"]]
        return json.dumps({"tasks": tasks}), False
    return f"unknown tool {name}", True


ToolRunner = Callable[[str, dict[str, Any]], tuple[str, bool]]


def _results(response: Any, run_tool: ToolRunner) -> list[dict[str, Any]]:
    results = []
    for block in response.content:
        if block.type == "tool_use":
            content, is_error = run_tool(block.name, block.input)
            results.append(
                {"type": "tool_result", "tool_use_id": block.id, "content": content, "is_error": is_error}
            )
    return results


def _assistant(response: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [block.model_dump(mode="json", exclude_none=True) for block in response.content],
    }


def run_loop(
    client: anthropic.Anthropic,
    *,
    model: str,
    system: str,
    tools: list[dict[str, Any]],
    run_tool: ToolRunner,
    user: str = USER,
    stream: bool = False,
    max_steps: int = 6,
) -> list[Any]:
    """The smallest agent loop: call, run the tools asked for, send the results back, until end_turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
    responses = []
    for _ in range(max_steps):
        request = {"model": model, "max_tokens": 2048, "system": system, "tools": tools, "messages": messages}
        if stream:
            with client.messages.stream(**request) as events:
                response = events.get_final_message()
        else:
            response = client.messages.create(**request)
        responses.append(response)
        if response.stop_reason != "tool_use":
            return responses
        messages = [
            *messages,
            _assistant(response),
            {"role": "user", "content": _results(response, run_tool)},
        ]
    return responses


async def run_loop_async(
    client: anthropic.AsyncAnthropic,
    *,
    model: str,
    system: str,
    tools: list[dict[str, Any]],
    run_tool: ToolRunner,
) -> list[Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": USER}]
    responses = []
    for _ in range(6):
        response = await client.messages.create(
            model=model, max_tokens=2048, system=system, tools=tools, messages=messages
        )
        responses.append(response)
        if response.stop_reason != "tool_use":
            break
        messages = [
            *messages,
            _assistant(response),
            {"role": "user", "content": _results(response, run_tool)},
        ]
    return responses


@pytest.fixture
def sim() -> Simulator:
    with Simulator() as simulator:
        yield simulator


@pytest.fixture
def client(sim: Simulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.base_url, api_key="sim-key", max_retries=0)


def _text(response: Any) -> str:
    return "".join(block.text for block in response.content if block.type == "text")


def _check_brief(brief: str, *, promotion_expected: bool) -> None:
    for section in ("## Today", "## Needs a reply", "## Deadlines this week"):
        assert section in brief
    assert "Q3 vendor review sign-off" in brief
    assert "Partner Labs one-pager edits" in brief
    assert "Weekly staff sync" in brief
    # deadlines from an email, a task and a calendar event; the done task and undated task stay out
    assert "Field trip permission slip" in brief
    assert "Send Sept newsletter draft" in brief
    assert "Grant report due" in brief
    assert "File August expenses" not in brief
    assert ("40% off everything this week" in brief) is promotion_expected
    assert ("Brightside Deals" in brief) is promotion_expected


def test_dayflow_asks_for_three_tools_in_one_turn(client: anthropic.Anthropic) -> None:
    response = client.messages.create(
        model="claude-sonnet-4-6",
        max_tokens=1024,
        system=SYSTEM_SKIP,
        tools=DAYFLOW_TOOLS,
        messages=[{"role": "user", "content": USER}],
    )
    assert response.stop_reason == "tool_use"
    assert response.content[0].type == "text"
    calls = [(block.name, block.input) for block in response.content if block.type == "tool_use"]
    assert calls == [
        ("read_inbox", {"limit": 20}),
        ("read_calendar", {"days": 7}),
        ("read_tasks", {"include_done": False}),
    ]
    ids = [block.id for block in response.content if block.type == "tool_use"]
    assert len(set(ids)) == 3
    assert all(tool_id.startswith("toolu_sim_") for tool_id in ids)


def test_dayflow_end_to_end_sync_skips_promotion(client: anthropic.Anthropic) -> None:
    responses = run_loop(
        client, model="sim-dayflow", system=SYSTEM_SKIP, tools=DAYFLOW_TOOLS, run_tool=dayflow_tool
    )
    assert [r.stop_reason for r in responses] == ["tool_use", "end_turn"]
    _check_brief(_text(responses[-1]), promotion_expected=False)


def test_dayflow_includes_promotion_when_prompt_does_not_ask_to_skip(client: anthropic.Anthropic) -> None:
    responses = run_loop(
        client, model="sim-dayflow", system=SYSTEM_NO_SKIP, tools=DAYFLOW_TOOLS, run_tool=dayflow_tool
    )
    brief = _text(responses[-1])
    _check_brief(brief, promotion_expected=True)
    assert "## Offers" in brief


def test_dayflow_end_to_end_streaming(client: anthropic.Anthropic) -> None:
    responses = run_loop(
        client,
        model="claude-sonnet-4-6",
        system=SYSTEM_SKIP,
        tools=DAYFLOW_TOOLS,
        run_tool=dayflow_tool,
        stream=True,
    )
    assert [r.stop_reason for r in responses] == ["tool_use", "end_turn"]
    assert [b.input for b in responses[0].content if b.type == "tool_use"] == [
        {"limit": 20},
        {"days": 7},
        {"include_done": False},
    ]
    _check_brief(_text(responses[-1]), promotion_expected=False)


def test_dayflow_end_to_end_async(sim: Simulator) -> None:
    async def main() -> list[Any]:
        async with anthropic.AsyncAnthropic(
            base_url=sim.base_url, api_key="sim-key", max_retries=0
        ) as client:
            return await run_loop_async(
                client, model="sim-dayflow", system=SYSTEM_NO_SKIP, tools=DAYFLOW_TOOLS, run_tool=dayflow_tool
            )

    responses = asyncio.run(main())
    assert [r.stop_reason for r in responses] == ["tool_use", "end_turn"]
    _check_brief(_text(responses[-1]), promotion_expected=True)


def test_dayflow_runs_are_deterministic_across_servers() -> None:
    runs = []
    for _ in range(2):
        with Simulator(seed=5) as sim:
            client = anthropic.Anthropic(base_url=sim.base_url, api_key="sim-key", max_retries=0)
            responses = run_loop(
                client, model="sim-dayflow", system=SYSTEM_SKIP, tools=DAYFLOW_TOOLS, run_tool=dayflow_tool
            )
            runs.append([response.model_dump_json() for response in responses])
    assert runs[0] == runs[1]


def test_dayflow_reports_a_failed_tool_instead_of_crashing(client: anthropic.Anthropic) -> None:
    def calendar_down(name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
        if name == "read_calendar":
            return "TimeoutError: calendar service did not answer within 5s", True
        return dayflow_tool(name, tool_input)

    responses = run_loop(
        client, model="sim-dayflow", system=SYSTEM_SKIP, tools=DAYFLOW_TOOLS, run_tool=calendar_down
    )
    brief = _text(responses[-1])
    assert responses[-1].stop_reason == "end_turn"
    assert "## Could not check" in brief
    assert "calendar service did not answer" in brief
    assert "Q3 vendor review sign-off" in brief  # the inbox still made it


def _users_db(column: str) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE TABLE users (id INTEGER, username TEXT, email TEXT, {column} TEXT, status TEXT)")
    rows = [
        (1, "ann", "a@x", "2025-12-30", "active"),
        (2, "bo", "b@x", "2026-01-04", "active"),
        (3, "cy", "c@x", "2026-03-15", "inactive"),
        (4, "di", "d@x", "2026-08-01", "active"),
    ]
    db.executemany("INSERT INTO users VALUES (?, ?, ?, ?, ?)", rows)
    return db


SQL_TOOLS = [
    {
        "name": "query_db",
        "description": "Run a read-only SQL query.",
        "input_schema": {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]},
    }
]


def _query_tool(db: sqlite3.Connection) -> ToolRunner:
    def run(name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
        try:
            cursor = db.execute(tool_input["sql"])
        except sqlite3.OperationalError as err:
            columns = ", ".join(row[1] for row in db.execute("PRAGMA table_info(users)"))
            return f"OperationalError: {err}. Table users has columns: {columns}", True
        rows = [list(row) for row in cursor.fetchall()]
        return json.dumps(
            {"columns": [d[0] for d in cursor.description], "rows": rows, "row_count": len(rows)}
        ), False

    return run


def test_sql_corrects_the_column_and_answers_with_the_count(client: anthropic.Anthropic) -> None:
    db = _users_db("registration_date")
    expected = db.execute("SELECT COUNT(*) FROM users WHERE registration_date LIKE '2026%'").fetchone()[0]
    responses = run_loop(
        client,
        model="sim-sql",
        system="You answer questions about the users database.",
        tools=SQL_TOOLS,
        run_tool=_query_tool(db),
        user="How many users registered in 2026?",
    )
    queries = [b.input["sql"] for r in responses for b in r.content if b.type == "tool_use"]
    assert len(queries) == 2
    assert "created_at" in queries[0]
    assert "registration_date" in queries[1] and "created_at" not in queries[1]
    assert responses[-1].stop_reason == "end_turn"
    assert f"{expected} users registered in 2026" in _text(responses[-1])


def test_sql_answers_directly_when_the_first_query_works(client: anthropic.Anthropic) -> None:
    db = _users_db("created_at")
    responses = run_loop(
        client,
        model="claude-haiku-4-5",
        system="Data assistant.",
        tools=SQL_TOOLS,
        run_tool=_query_tool(db),
        user="How many users registered in 2026?",
    )
    assert [r.stop_reason for r in responses] == ["tool_use", "end_turn"]  # auto-detected from query_db
    assert "3 users registered in 2026" in _text(responses[-1])


def test_repeat_calls_the_first_tool_with_the_same_input_forever(client: anthropic.Anthropic) -> None:
    responses = run_loop(
        client,
        model="sim-repeat",
        system="",
        tools=SQL_TOOLS,
        max_steps=4,
        run_tool=lambda name, tool_input: ('{"rows": []}', False),
    )
    calls = [(b.name, b.input) for r in responses for b in r.content if b.type == "tool_use"]
    assert len(responses) == 4 and all(r.stop_reason == "tool_use" for r in responses)
    assert len(set(json.dumps(call) for call in calls)) == 1
    assert calls[0][0] == "query_db"
    ids = [b.id for r in responses for b in r.content if b.type == "tool_use"]
    assert len(set(ids)) == 4  # a new id per turn, as the real API gives


def test_max_tokens_policy_stops_with_cut_off_text(client: anthropic.Anthropic) -> None:
    response = client.messages.create(
        model="sim-max-tokens", max_tokens=50, messages=[{"role": "user", "content": "Write an essay."}]
    )
    assert response.stop_reason == "max_tokens"
    assert response.usage.output_tokens == 50
    assert 0 < len(_text(response)) <= 50 * 4
    assert not _text(response).endswith(".")


def test_any_reply_longer_than_max_tokens_is_cut(client: anthropic.Anthropic) -> None:
    long_text = "word " * 200
    response = client.messages.create(
        model="sim-echo", max_tokens=5, messages=[{"role": "user", "content": long_text}]
    )
    assert response.stop_reason == "max_tokens"
    assert response.usage.output_tokens == 5
    assert len(_text(response)) <= 20


def test_refuse_answers_refusal_with_stop_details(client: anthropic.Anthropic) -> None:
    response = client.messages.create(
        model="sim-refuse", max_tokens=100, messages=[{"role": "user", "content": "Do something bad."}]
    )
    assert response.stop_reason == "refusal"
    assert response.stop_details is not None
    assert response.stop_details.type == "refusal"
    assert response.stop_details.category is None
    assert response.stop_details.explanation


def test_pause_turn_then_end_turn_when_sent_back(client: anthropic.Anthropic) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Research this for me."}]
    first = client.messages.create(model="sim-pause-turn", max_tokens=100, messages=messages)
    assert first.stop_reason == "pause_turn"
    assert _text(first)
    second = client.messages.create(
        model="sim-pause-turn", max_tokens=100, messages=[*messages, _assistant(first)]
    )
    assert second.stop_reason == "end_turn"


def test_context_window_policy_stops_with_usage_filling_the_window(client: anthropic.Anthropic) -> None:
    messages = [{"role": "user", "content": "Summarise everything we discussed."}]
    response = client.messages.create(model="sim-context-window", max_tokens=500, messages=messages)
    assert response.stop_reason == "model_context_window_exceeded"
    assert _text(response)
    usage = response.usage
    assert usage.input_tokens > CONTEXT_WINDOW_TOKENS // 2
    assert usage.input_tokens + usage.output_tokens == CONTEXT_WINDOW_TOKENS

    cached = client.messages.create(
        model="sim-context-window",
        max_tokens=500,
        system=[{"type": "text", "text": "Remember this. " * 50, "cache_control": {"type": "ephemeral"}}],
        messages=messages,
    )
    cached_usage = cached.usage
    assert cached_usage.cache_creation_input_tokens and cached_usage.cache_creation_input_tokens > 0
    parts = (cached_usage.input_tokens, cached_usage.cache_creation_input_tokens, cached_usage.output_tokens)
    assert sum(parts) == CONTEXT_WINDOW_TOKENS

    with client.messages.stream(model="sim-context-window", max_tokens=500, messages=messages) as stream:
        streamed = stream.get_final_message()
    assert streamed.stop_reason == "model_context_window_exceeded"
    assert streamed.usage.input_tokens == usage.input_tokens


def test_a_model_that_fills_the_window_with_no_content_bills_the_whole_window_as_input(
    client: anthropic.Anthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A model (a plugin's, say) may stop at the window having written nothing: no content to count output from.
    # The simulator once subtracted None from the window here (found by mypy) and answered with a 500.
    monkeypatch.setitem(POLICIES, "empty-window", lambda _conversation: Reply(
        [], "model_context_window_exceeded", context_window=CONTEXT_WINDOW_TOKENS))
    messages = [{"role": "user", "content": "Summarise everything we discussed."}]
    response = client.messages.create(model="sim-empty-window", max_tokens=500, messages=messages)
    assert response.stop_reason == "model_context_window_exceeded"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (CONTEXT_WINDOW_TOKENS, 0)


def test_echo_derives_its_text_from_the_last_user_message(client: anthropic.Anthropic) -> None:
    response = client.messages.create(
        model="claude-sonnet-4-6",
        max_tokens=100,
        messages=[
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "the parrot flies"},
        ],
    )
    assert response.stop_reason == "end_turn"
    assert "the parrot flies" in _text(response)
    assert "first" not in _text(response)


def test_policy_from_header_then_constructor_then_tools() -> None:
    request = {"max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    with Simulator(policy="refuse") as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        assert client.messages.create(model="claude-sonnet-5", **request).stop_reason == "refusal"
        by_header = client.messages.create(
            model="claude-sonnet-5", extra_headers={"x-harness-sim-policy": "sim-echo"}, **request
        )
        assert by_header.stop_reason == "end_turn"
        assert client.messages.create(model="sim-pause-turn", **request).stop_reason == "pause_turn"
    with Simulator() as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        detected = client.messages.create(model="claude-sonnet-5", tools=DAYFLOW_TOOLS, **request)
        assert [b.name for b in detected.content if b.type == "tool_use"] == [
            "read_inbox",
            "read_calendar",
            "read_tasks",
        ]


def test_unknown_sim_model_is_a_404_like_a_misspelt_model(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as caught:
        client.messages.create(
            model="sim-nonsense", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    error = caught.value.body["error"]
    assert error["type"] == "not_found_error"
    assert error["message"].startswith("model: sim-nonsense (")
    assert "sim-auto" in error["message"] and "sim-dayflow" in error["message"]


def test_unknown_policy_header_is_a_400(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError, match="unknown simulator model 'chatty'"):
        client.messages.create(
            model="claude-sonnet-5",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-harness-sim-policy": "chatty"},
        )


def test_thinking_block_comes_first_when_thinking_is_enabled(client: anthropic.Anthropic) -> None:
    request = {
        "model": "sim-dayflow",
        "max_tokens": 4096,
        "tools": DAYFLOW_TOOLS,
        "system": SYSTEM_SKIP,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [{"role": "user", "content": USER}],
    }
    response = client.messages.create(**request)
    assert response.content[0].type == "thinking"
    assert response.content[0].thinking and response.content[0].signature
    with client.messages.stream(**request) as events:
        kinds = [event.delta.type for event in events if event.type == "content_block_delta"]
        streamed = events.get_final_message()
    assert "thinking_delta" in kinds and "signature_delta" in kinds and "input_json_delta" in kinds
    assert streamed.content[0].signature == response.content[0].signature
    # the signed thinking block goes back with the tool results, and the request is still valid
    results = _results(response, dayflow_tool)
    follow_up = client.messages.create(
        **{
            **request,
            "messages": [*request["messages"], _assistant(response), {"role": "user", "content": results}],
        }
    )
    assert follow_up.stop_reason == "end_turn"


def test_stop_sequence_ends_the_text(client: anthropic.Anthropic) -> None:
    response = client.messages.create(
        model="sim-echo",
        max_tokens=100,
        stop_sequences=["STOP"],
        messages=[{"role": "user", "content": "one two STOP three"}],
    )
    assert response.stop_reason == "stop_sequence"
    assert response.stop_sequence == "STOP"
    assert "three" not in _text(response)


def test_tool_choice_none_turns_a_tool_call_into_text() -> None:
    """The loop's best-effort summary at its step limit sends tool_choice none; no model may call a tool then."""
    import anthropic

    from harness.sim import Simulator

    tools = [{"name": "read_inbox", "description": "Read mail", "input_schema": {"type": "object"}}]
    with Simulator() as sim:
        client = anthropic.Anthropic(api_key="sim", base_url=sim.base_url, max_retries=0)
        first = client.messages.create(model="sim-repeat", max_tokens=256, tools=tools,
                                       messages=[{"role": "user", "content": "go"}])
        assert first.stop_reason == "tool_use"
        summary = client.messages.create(
            model="sim-repeat", max_tokens=256, tools=tools, tool_choice={"type": "none"},
            messages=[{"role": "user", "content": "go"},
                      {"role": "assistant", "content": [b.model_dump() for b in first.content]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[-1].id,
                                                    "content": "[]"},
                                                   {"type": "text", "text": "Summarize."}]}])
    assert summary.stop_reason == "end_turn"
    assert [block.type for block in summary.content] == ["text"]
    assert "read_inbox x1" in summary.content[0].text
