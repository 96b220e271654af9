"""The simulator speaks today's API, checked with the installed SDK's own client, parsers and tool runner:
structured outputs, server tools, Anthropic-defined client tools, tool search and defer_loading, chat-first
turns, tool types, compaction and context-management edits, models, rate-limit resets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import jsonschema
import pytest
from anthropic.types.beta.beta_memory_tool_20250818_command import BetaMemoryTool20250818Command
from pydantic import BaseModel, TypeAdapter

from harness import use_cassette
from harness.cassette.format import load_cassette
from harness.sim import RateLimits, Simulator
from harness.sim.models import sdk_model_ids
from harness.sim.server_tools import SERVER_LOOP_LIMIT

OFFLINE = "http://127.0.0.1:9"  # nothing listens there: a replay that tried the network would fail
MODEL = "claude-sonnet-4-6"
ASK = [{"role": "user", "content": "What is the weather in Paris this week?"}]
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather forecast for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


class Forecast(BaseModel):
    city: str
    days: list[str]
    high_c: float


def client(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sim", base_url=base_url, max_retries=0)


@pytest.fixture(scope="module")
def sim() -> Any:
    with Simulator() as running:
        yield running


@pytest.fixture
def c(sim: Simulator) -> anthropic.Anthropic:
    return client(sim.base_url)


# -- structured outputs ----------------------------------------------------------------------------------------------
def test_parse_with_a_model_answers_a_schema_valid_instance_the_same_one_streamed(c: anthropic.Anthropic) -> None:
    parsed = c.messages.parse(model=MODEL, max_tokens=400, messages=ASK, output_format=Forecast)
    assert isinstance(parsed.parsed_output, Forecast)
    again = c.messages.parse(model=MODEL, max_tokens=400, messages=ASK, output_format=Forecast)
    assert again.parsed_output == parsed.parsed_output  # the same request, the same instance
    with c.messages.stream(model=MODEL, max_tokens=400, messages=ASK, output_format=Forecast) as stream:
        streamed = stream.get_final_message()
    assert streamed.parsed_output == parsed.parsed_output
    other = c.messages.parse(
        model=MODEL, max_tokens=400, messages=[{"role": "user", "content": "And Rome?"}], output_format=Forecast
    )
    assert isinstance(other.parsed_output, Forecast)


def test_output_config_format_with_a_schema_dict_validates_formats_and_bounds(c: anthropic.Anthropic) -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["email", "count", "tags"],
        "properties": {
            "email": {"type": "string", "format": "email"},
            "count": {"type": "integer", "minimum": 3, "maximum": 9},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1},
        },
    }
    message = c.messages.create(
        model=MODEL, max_tokens=400, messages=ASK, output_config={"format": {"type": "json_schema", "schema": schema}}
    )
    (block,) = message.content
    jsonschema.validate(json.loads(block.text), schema, format_checker=jsonschema.FormatChecker())


def test_a_parse_with_a_schema_records_against_the_simulator_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "parse.yaml"
    with Simulator() as running, use_cassette(path, mode="once"):
        live = client(running.base_url).messages.parse(
            model=MODEL, max_tokens=400, messages=ASK, output_format=Forecast
        )
    with use_cassette(path, mode="none") as cassette:
        replayed = client(OFFLINE).messages.parse(model=MODEL, max_tokens=400, messages=ASK, output_format=Forecast)
    assert replayed.parsed_output == live.parsed_output and isinstance(replayed.parsed_output, Forecast)
    assert cassette.unplayed == []


# -- server tools ----------------------------------------------------------------------------------------------------
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search"}


def test_web_search_is_played_in_the_response_labelled_and_counted(c: anthropic.Anthropic) -> None:
    message = c.messages.create(model=MODEL, max_tokens=1000, messages=ASK, tools=[WEB_SEARCH])
    kinds = [block.type for block in message.content]
    assert kinds == ["server_tool_use", "web_search_tool_result", "text", "text"]
    use, result, answer, cited = message.content
    assert use.name == "web_search" and use.input == {"query": ASK[0]["content"]}
    assert use.id.startswith("srvtoolu_") and result.tool_use_id == use.id
    assert result.content and all("harness simulator" in hit.title for hit in result.content)
    assert message.usage.server_tool_use is not None
    assert (message.usage.server_tool_use.web_search_requests, message.usage.server_tool_use.web_fetch_requests) == (
        1,
        0,
    )
    assert message.stop_reason == "end_turn" and result.content[0].url in answer.text
    (citation,) = cited.citations
    assert citation.type == "web_search_result_location" and citation.url == result.content[0].url
    with c.messages.stream(model=MODEL, max_tokens=1000, messages=ASK, tools=[WEB_SEARCH]) as stream:
        assert stream.get_final_message().to_dict() == message.to_dict()


def test_web_fetch_fetches_a_url_from_the_question_and_is_counted(c: anthropic.Anthropic) -> None:
    asked = [{"role": "user", "content": "Summarise https://example.org/post please"}]
    tools = [{"type": "web_fetch_20250910", "name": "web_fetch"}]
    message = c.beta.messages.create(
        model=MODEL, max_tokens=1000, messages=asked, tools=tools, betas=["web-fetch-2025-09-10"]
    )
    use, result = message.content[:2]
    assert use.input == {"url": "https://example.org/post"} and result.type == "web_fetch_tool_result"
    assert result.content.url == "https://example.org/post"
    assert "harness simulator" in result.content.content.source.data
    assert message.usage.server_tool_use.web_fetch_requests == 1


@pytest.mark.parametrize(
    ("version", "calls"),
    [
        ("code_execution_20250522", ["code_execution"]),
        ("code_execution_20250825", ["bash_code_execution", "text_editor_code_execution"]),
        ("code_execution_20260120", ["bash_code_execution", "text_editor_code_execution"]),
    ],
)
def test_code_execution_variants_answer_with_their_result_blocks_and_a_container(
    c: anthropic.Anthropic, version: str, calls: list[str]
) -> None:
    message = c.beta.messages.create(
        model=MODEL,
        max_tokens=1000,
        messages=[{"role": "user", "content": "2+2?"}],
        tools=[{"type": version, "name": "code_execution"}],
    )
    uses = [block for block in message.content if block.type == "server_tool_use"]
    assert [use.name for use in uses] == calls
    results = [block for block in message.content if block.type.endswith("_tool_result")]
    assert [result.type for result in results] == [f"{call}_tool_result" for call in calls]
    assert [result.tool_use_id for result in results] == [use.id for use in uses]
    if calls[0] != "text_editor_code_execution":
        assert "harness simulator" in results[0].content.stdout
    assert message.container is not None and message.container.id.startswith("container_sim_")
    assert message.usage.server_tool_use.web_search_requests == 0  # counted, as the API does, though zero


def test_a_use_past_max_uses_gets_the_apis_error_and_is_not_billed(c: anthropic.Anthropic) -> None:
    tool = {**WEB_SEARCH, "max_uses": 2}
    message = c.messages.create(model="sim-auto:rounds=5", max_tokens=2000, messages=ASK, tools=[tool])
    results = [block for block in message.content if block.type == "web_search_tool_result"]
    assert len(results) == 3 and results[2].content.error_code == "max_uses_exceeded"
    assert message.usage.server_tool_use.web_search_requests == 2 and message.stop_reason == "end_turn"


def test_past_the_servers_loop_limit_the_turn_pauses_and_continues_when_sent_back(c: anthropic.Anthropic) -> None:
    model, rounds = f"sim-auto:rounds={SERVER_LOOP_LIMIT + 2}", SERVER_LOOP_LIMIT + 2
    first = c.messages.create(model=model, max_tokens=4000, messages=ASK, tools=[WEB_SEARCH])
    assert first.stop_reason == "pause_turn"
    assert sum(block.type == "server_tool_use" for block in first.content) == SERVER_LOOP_LIMIT
    paused = [*ASK, {"role": "assistant", "content": first.content}]
    second = c.messages.create(model=model, max_tokens=4000, messages=paused, tools=[WEB_SEARCH])
    assert second.stop_reason == "end_turn"
    assert sum(block.type == "server_tool_use" for block in second.content) == rounds - SERVER_LOOP_LIMIT


def test_a_web_search_request_records_against_the_simulator_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "search.yaml"

    def search(base_url: str) -> dict[str, Any]:
        with client(base_url).messages.stream(model=MODEL, max_tokens=1000, messages=ASK, tools=[WEB_SEARCH]) as s:
            return s.get_final_message().to_dict()

    with Simulator() as running, use_cassette(path, mode="once"):
        live = search(running.base_url)
    with use_cassette(path, mode="none") as cassette:
        assert search(OFFLINE) == live
    assert cassette.unplayed == [] and live["usage"]["server_tool_use"]["web_search_requests"] == 1


def test_parse_and_web_search_record_against_the_harness_sim_command_and_replay(tmp_path: Path) -> None:
    """The Done-when of issue 27's simulator item, through `harness sim` itself (the command, in a thread)."""
    import argparse

    from harness.commands import sim as sim_command
    from tests.harness_processes import READY_TIMEOUT, start_serving_thread

    parser = argparse.ArgumentParser(prog="harness sim")
    sim_command.add_arguments(parser)
    url_file, path = tmp_path / "sim.url", tmp_path / "today.yaml"
    args = parser.parse_args(["--port", "0", "--url-file", str(url_file), "--max-requests", "2", "--quiet"])
    thread, result, base_url = start_serving_thread(url_file, lambda: sim_command.run(args))

    def run(url: str) -> tuple[Any, dict[str, Any]]:
        parsed = client(url).messages.parse(model=MODEL, max_tokens=400, messages=ASK, output_format=Forecast)
        searched = client(url).messages.create(model=MODEL, max_tokens=1000, messages=ASK, tools=[WEB_SEARCH])
        return parsed.parsed_output, searched.to_dict()

    with use_cassette(path, mode="once"):
        live = run(base_url)
    thread.join(timeout=READY_TIMEOUT)
    assert result == [0]  # served its two requests and stopped
    with use_cassette(path, mode="none") as cassette:
        assert run(OFFLINE) == live
    assert cassette.unplayed == [] and load_cassette(path).meta["source"] == "simulator"
    assert isinstance(live[0], Forecast) and live[1]["usage"]["server_tool_use"]["web_search_requests"] == 1


# -- Anthropic-defined client tools ----------------------------------------------------------------------------------
def test_sim_auto_drives_the_sdks_memory_tool_through_the_beta_tool_runner(
    c: anthropic.Anthropic, tmp_path: Path
) -> None:
    from anthropic.tools.memory import BetaLocalFilesystemMemoryTool

    memory = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path))
    runner = c.beta.messages.tool_runner(
        model="sim-auto:rounds=2",
        max_tokens=2000,
        tools=[memory],
        messages=[{"role": "user", "content": "Remember my name is Ada."}],
    )
    replies = list(runner)
    calls = [block.input for reply in replies for block in reply.content if block.type == "tool_use"]
    assert [call["command"] for call in calls] == ["view", "create"]
    for call in calls:
        TypeAdapter(BetaMemoryTool20250818Command).validate_python(call)
    assert (tmp_path / "memories" / "harness_sim.md").read_text().startswith("Written by sim-auto")
    assert replies[-1].stop_reason == "end_turn"


@pytest.mark.parametrize(
    ("tool", "key", "first", "ask"),
    [
        ({"type": "bash_20250124", "name": "bash"}, "command", None, "Run a shell command that prints the date."),
        ({"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}, "command", "create",
         "Create a text file with my notes in it."),
        (
            {"type": "computer_20250124", "name": "computer", "display_width_px": 1024, "display_height_px": 768},
            "action",
            "screenshot",
            "Take a screenshot of the screen.",
        ),
    ],
)
def test_sim_auto_calls_bash_text_editor_and_computer_with_their_published_inputs(
    c: anthropic.Anthropic, tool: dict[str, Any], key: str, first: str | None, ask: str
) -> None:
    # Each is asked for in words that call for it: sim-auto calls only the tools a request's words call for.
    messages = [{"role": "user", "content": ask}]
    message = c.beta.messages.create(model="sim-auto", max_tokens=500, messages=messages, tools=[tool])
    (call,) = [block for block in message.content if block.type == "tool_use"]
    assert call.name == tool["name"] and isinstance(call.input[key], str)
    if first:
        assert call.input[key] == first
    if first == "create":
        assert {"path", "file_text"} <= set(call.input)


# -- tool search, defer_loading and chat-first -----------------------------------------------------------------------
DEFERRED = {**WEATHER_TOOL, "defer_loading": True}
SEARCH = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}


def test_a_deferred_tool_is_called_only_after_a_tool_search_surfaced_it(c: anthropic.Anthropic) -> None:
    unsurfaced = c.messages.create(model=MODEL, max_tokens=500, messages=ASK, tools=[DEFERRED])
    assert all(block.type == "text" for block in unsurfaced.content) and unsurfaced.stop_reason == "end_turn"
    searched = c.beta.messages.create(model=MODEL, max_tokens=500, messages=ASK, tools=[SEARCH, DEFERRED])
    kinds = [block.type for block in searched.content]
    assert kinds == ["text", "server_tool_use", "tool_search_tool_result", "tool_use"]
    reference = searched.content[2].content.tool_references
    assert [ref.tool_name for ref in reference] == ["get_weather"]
    assert searched.content[3].name == "get_weather" and searched.stop_reason == "tool_use"


def test_chat_first_answers_the_first_turn_without_tools_then_calls_them(c: anthropic.Anthropic) -> None:
    hello = c.messages.create(model="sim-auto:chat-first", max_tokens=500, messages=ASK, tools=[WEATHER_TOOL])
    assert [block.type for block in hello.content] == ["text"] and hello.stop_reason == "end_turn"
    follow = [*ASK, {"role": "assistant", "content": hello.content},
              {"role": "user", "content": "Check the weather now."}]
    second = c.messages.create(model="sim-auto:chat-first", max_tokens=500, messages=follow, tools=[WEATHER_TOOL])
    assert second.stop_reason == "tool_use"


def test_a_client_side_tool_search_surfaces_a_deferred_tool_through_its_tool_result(c: anthropic.Anthropic) -> None:
    searcher = {**WEATHER_TOOL, "name": "search_tools", "description": "Find tools"}
    tools = [searcher, DEFERRED]
    first = c.messages.create(model=MODEL, max_tokens=500, messages=ASK, tools=tools)
    (call,) = [block for block in first.content if block.type == "tool_use"]
    assert call.name == "search_tools"  # the deferred get_weather is not offered yet
    found = [{"type": "tool_reference", "tool_name": "get_weather"}]
    turns = [
        *ASK,
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": found}]},
    ]
    second = c.messages.create(model=MODEL, max_tokens=500, messages=turns, tools=tools)
    assert [block.name for block in second.content if block.type == "tool_use"] == ["get_weather"]


def test_chat_first_2_lets_a_thread_chat_twice_then_hand_over_to_the_tool_runner(sim: Simulator) -> None:
    from anthropic import beta_tool

    @beta_tool
    def lookup_order(order_id: str) -> str:
        """Look up the shipping status of an order."""
        return f"Order {order_id} arrives tomorrow."

    thread = client(sim.base_url).beta.messages.thread(
        model="sim-auto:chat-first=2", max_tokens=1024, tools=[lookup_order]
    )
    assert thread.send({"role": "user", "content": "Hi! A question about an order."}).stop_reason == "end_turn"
    with thread.stream({"role": "user", "content": "How long does shipping take?"}) as stream:
        assert stream.get_final_message().stop_reason == "end_turn"  # a plain send: no tool call left unanswered
    thread.append({"role": "user", "content": "It's order 4821. Where is it?"})
    final = thread.tool_runner().until_done()
    assert final.stop_reason == "end_turn" and "arrives tomorrow" in final.content[-1].text


# -- tool types --------------------------------------------------------------------------------------------------------
def test_an_unknown_tool_type_is_the_apis_400(c: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        c.messages.create(
            model=MODEL, max_tokens=50, messages=ASK, tools=[{"type": "web_search_20990101", "name": "web_search"}]
        )
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "tools.0: Input tag 'web_search_20990101' found using 'type' does not match" in str(refused.value)
    with pytest.raises(anthropic.BadRequestError, match=r"tools.0.max_results: Extra inputs are not permitted"):
        c.messages.create(model=MODEL, max_tokens=50, messages=ASK, tools=[{**WEB_SEARCH, "max_results": 3}])


# -- compaction and context management ---------------------------------------------------------------------------------
def _history() -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for n in range(4):
        turns += [
            {"role": "user", "content": f"Question {n}: what is the weather in city {n}?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{n}", "name": "get_weather", "input": {"city": f"c{n}"}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "sunny " * 40}],
            },
            {"role": "assistant", "content": f"It is sunny in city {n}."},
        ]
    return [*turns, {"role": "user", "content": "Thanks; what about the weather tomorrow?"}]


def test_a_compaction_request_answers_a_compaction_block_that_later_requests_start_from(
    c: anthropic.Anthropic,
) -> None:
    compacted = c.beta.messages.create(
        model=MODEL, max_tokens=500, messages=_history(), tools=[WEATHER_TOOL], compaction={"type": "summarize"}
    )
    (block,) = compacted.content
    assert block.type == "compaction" and "harness simulator" in block.content and block.signature
    assert compacted.stop_reason == "compaction"
    (iteration,) = compacted.usage.iterations
    assert iteration.type == "compaction" and iteration.input_tokens > compacted.usage.input_tokens
    later = [{"role": "assistant", "content": [block.to_dict()]},
             {"role": "user", "content": "Go on: the weather in Paris?"}]
    answer = c.beta.messages.create(model=MODEL, max_tokens=500, messages=later, tools=[WEATHER_TOOL])
    assert answer.stop_reason == "tool_use"  # a new task after the summary; the conversation starts from it


def test_the_sdks_tool_runner_compacts_before_the_next_turn_and_carries_on(c: anthropic.Anthropic) -> None:
    from anthropic import beta_tool

    @beta_tool
    def lookup_order(order_id: str) -> str:
        """Look up the shipping status of an order."""
        return f"Order {order_id} arrives tomorrow."

    runner = c.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=1000,
        tools=[lookup_order],
        messages=[{"role": "user", "content": "Where is order 4821?"}],
        betas=["compact-2026-09-04"],
    )
    stops = []
    for message in runner:
        stops.append(message.stop_reason)
        if len(stops) == 1:
            runner.compact_before_next_turn()
        if message.stop_reason == "compaction":
            assert message.usage.iterations[0].type == "compaction" and "lookup_order" in message.content[0].content
    assert stops == ["tool_use", "compaction", "end_turn"]


def test_clear_tool_uses_and_clear_thinking_edits_are_applied_and_reported(c: anthropic.Anthropic) -> None:
    edits = [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 10},
            "keep": {"type": "tool_uses", "value": 1},
        }
    ]
    plain = c.beta.messages.create(model=MODEL, max_tokens=500, messages=_history(), tools=[WEATHER_TOOL])
    edited = c.beta.messages.create(
        model=MODEL, max_tokens=500, messages=_history(), tools=[WEATHER_TOOL], context_management={"edits": edits}
    )
    (applied,) = edited.context_management.applied_edits
    assert applied.type == "clear_tool_uses_20250919" and applied.cleared_tool_uses == 3
    assert applied.cleared_input_tokens > 0
    assert edited.usage.input_tokens == plain.usage.input_tokens - applied.cleared_input_tokens
    thinking = [
        *_history()[:3],
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Let me think " * 30, "signature": "sig"},
                {"type": "text", "text": "ok"},
            ],
        },
        {"role": "user", "content": "again"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Once more", "signature": "sig2"},
                {"type": "text", "text": "ok"},
            ],
        },
        {"role": "user", "content": "last"},
    ]
    cleared = c.beta.messages.create(
        model="sim-echo",
        max_tokens=500,
        messages=thinking,
        tools=[WEATHER_TOOL],
        context_management={"edits": [{"type": "clear_thinking_20251015"}]},
    )
    (applied,) = cleared.context_management.applied_edits
    assert applied.cleared_thinking_turns == 1 and applied.cleared_input_tokens > 0


def test_the_compact_edit_past_its_trigger_starts_the_answer_with_a_summary_and_reports_iterations(
    c: anthropic.Anthropic,
) -> None:
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50}}
    kwargs: dict[str, Any] = dict(
        model=MODEL, max_tokens=500, messages=_history(), tools=[WEATHER_TOOL], context_management={"edits": [edit]}
    )
    message = c.beta.messages.create(**kwargs)
    assert message.content[0].type == "compaction" and message.stop_reason == "tool_use"
    compaction, answered = message.usage.iterations
    assert (compaction.type, answered.type) == ("compaction", "message")
    assert answered.input_tokens == message.usage.input_tokens < compaction.input_tokens
    with c.beta.messages.stream(**kwargs) as stream:
        assert stream.get_final_message().to_dict() == message.to_dict()
    paused = c.beta.messages.create(
        **{**kwargs, "context_management": {"edits": [{**edit, "pause_after_compaction": True}]}}
    )
    assert [block.type for block in paused.content] == ["compaction"] and paused.stop_reason == "compaction"
    untriggered = c.beta.messages.create(
        **{**kwargs, "context_management": {"edits": [{**edit, "trigger": {"type": "input_tokens", "value": 10**6}}]}}
    )
    assert untriggered.content[0].type != "compaction" and untriggered.usage.iterations is None


# -- models and rate limits --------------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_every_claude_model_the_sdk_names_is_listed_retrievable_and_answered(c: anthropic.Anthropic) -> None:
    listed = [model.id for model in c.models.list(limit=1000)]
    assert set(sdk_model_ids()) <= set(listed) and "sim-auto" in listed
    for model_id in [*sdk_model_ids(), "claude-sonnet-4-5-20250929"]:
        retrieved = c.models.retrieve(model_id)
        assert retrieved.id == model_id and retrieved.lifecycle in ("active", "deprecated")
        assert c.messages.create(model=model_id, max_tokens=20, messages=ASK).type == "message"
    for refused in (
        lambda: c.models.retrieve("claude-does-not-exist"),
        lambda: c.messages.create(model="claude-does-not-exist", max_tokens=20, messages=ASK),
    ):
        with pytest.raises(anthropic.NotFoundError):
            refused()


def test_rate_limit_resets_are_real_time_not_a_fixed_past_time() -> None:
    class Clock:
        now = 1_900_000_000.0  # 2030-03-17T17:46:40Z

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    with Simulator(rate_limits=RateLimits(clock=clock)) as running:
        raw = client(running.base_url).messages.with_raw_response
        first = raw.create(model=MODEL, max_tokens=20, messages=ASK).headers
        clock.now += 3600
        later = raw.create(model=MODEL, max_tokens=20, messages=ASK).headers
    assert first["anthropic-ratelimit-tokens-reset"] == "2030-03-17T17:46:40Z"
    assert later["anthropic-ratelimit-tokens-reset"] == "2030-03-17T18:46:40Z"
    assert later["anthropic-ratelimit-requests-reset"] == "2030-03-17T18:46:41Z"  # two of 4,000 back in 30 ms
