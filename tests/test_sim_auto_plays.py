"""sim-auto plays like a model, deterministically (issue 42, item 1): it calls the tools the user's words call for,
answers in text when none fits, fills inputs from the conversation before making any up, calls dependent tools a
turn apart and independent ones together, honours tool_choice, and names what it made up so that bless does not pin
it. Each known bad case of the issue is a test here (each failed on the simulator that called every tool at once).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from harness import use_cassette
from harness.checks.registry import run_check
from harness.commands.bless import bless_golden, invented_inputs
from harness.sim import Simulator
from harness.trajectory import load_cassette_any, load_trajectory

MODEL = "claude-sonnet-5"


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"name": name, "description": description,
            "input_schema": {"type": "object", "properties": properties, "required": required}}


TEXT = {"type": "string"}
WEATHER = _tool("get_weather", "Get the current weather in a city.", {"city": TEXT}, ["city"])
CALCULATOR = _tool("calculator", "Evaluate an arithmetic expression.", {"expression": TEXT}, ["expression"])
# smolagents' ToolCallingAgent offers its tools and a final_answer tool, and asks for a tool every step (any).
LOCATION_WEATHER = _tool("get_weather", "Get the weather in a given location.",
                         {"location": {"type": "string", "description": "The location"}}, ["location"])
FINAL_ANSWER = _tool("final_answer", "Provides a final answer to the given problem.",
                     {"answer": {"type": "string", "description": "The final answer to the problem"}}, ["answer"])
LOOKUP_ORDER = _tool("lookup_order", "Look up the shipping status of an order.",
                     {"order_id": {"type": "string", "description": "The order number, e.g. 4821"}}, ["order_id"])
FIND_USER = _tool("find_user", "Find a user by their name.", {"name": TEXT}, ["name"])
SEND_EMAIL = _tool("send_email", "Send an email to a user.", {"user_id": TEXT, "message": TEXT},
                   ["user_id", "message"])
# A filesystem MCP server's tools (descriptions in the spirit of the reference server's: every one says "file").
FILESYSTEM = [
    _tool("read_text_file", "Read the whole contents of a file from the file system as text.", {"path": TEXT},
          ["path"]),
    _tool("read_multiple_files", "Read the contents of several files at once.",
          {"paths": {"type": "array", "items": TEXT}}, ["paths"]),
    _tool("write_file", "Create a new file or overwrite an existing file with new content.",
          {"path": TEXT, "content": TEXT}, ["path", "content"]),
    _tool("edit_file", "Make line-based edits to a text file and return a diff.",
          {"path": TEXT, "edits": {"type": "array", "items": {"type": "object"}}}, ["path", "edits"]),
    _tool("create_directory", "Create a new directory, or make sure a directory exists.", {"path": TEXT}, ["path"]),
    _tool("list_directory", "Get a detailed listing of all files and directories in a given path, marked [FILE] "
          "and [DIR].", {"path": TEXT}, ["path"]),
    _tool("list_directory_with_sizes", "Get a detailed listing of all files and directories in a given path, with "
          "their sizes.", {"path": TEXT, "sortBy": {"enum": ["name", "size"]}}, ["path"]),
    _tool("directory_tree", "Get a recursive tree view of files and directories as JSON.", {"path": TEXT}, ["path"]),
    _tool("move_file", "Move or rename files and directories.", {"source": TEXT, "destination": TEXT},
          ["source", "destination"]),
    _tool("search_files", "Search for files and directories whose names match a pattern.",
          {"path": TEXT, "pattern": TEXT}, ["path", "pattern"]),
    _tool("get_file_info", "Retrieve metadata about a file or directory: size, times, permissions.", {"path": TEXT},
          ["path"]),
    _tool("list_allowed_directories", "Returns the list of directories this server may access.", {}, []),
]


@pytest.fixture
def sim() -> Any:
    with Simulator() as running:
        yield running


@pytest.fixture
def client(sim: Simulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.base_url, api_key="sim-key", max_retries=0)


def _ask(client: anthropic.Anthropic, text: str, tools: list[dict[str, Any]], **create: Any) -> Any:
    return client.messages.create(model=MODEL, max_tokens=500, tools=tools,
                                  messages=[{"role": "user", "content": text}], **create)


def _calls(message: Any) -> list[tuple[str, Any]]:
    return [(block.name, block.input) for block in message.content if block.type == "tool_use"]


def _answered(message: Any, results: dict[str, str]) -> list[dict[str, Any]]:
    """The assistant turn `message` and the user turn answering each of its calls with results[name]."""
    replies = [{"type": "tool_result", "tool_use_id": block.id, "content": results[block.name]}
               for block in message.content if block.type == "tool_use"]
    return [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
            {"role": "user", "content": replies}]


def test_a_greeting_with_tools_offered_gets_text(client: anthropic.Anthropic) -> None:
    reply = _ask(client, "Hi!", [WEATHER, CALCULATOR])
    assert reply.stop_reason == "end_turn" and not _calls(reply)
    assert [block.type for block in reply.content] == ["text"]


def test_a_greeting_with_a_server_tool_offered_gets_text_and_no_search(client: anthropic.Anthropic) -> None:
    search = {"type": "web_search_20250305", "name": "web_search"}
    reply = client.beta.messages.create(model=MODEL, max_tokens=500, tools=[search, WEATHER],  # type: ignore[list-item]
                                        messages=[{"role": "user", "content": "Hi!"}])
    assert [block.type for block in reply.content] == ["text"] and reply.stop_reason == "end_turn"
    assert reply.usage.server_tool_use is None  # nothing searched, nothing billed


def test_the_weather_in_paris_calls_get_weather_for_paris(client: anthropic.Anthropic) -> None:
    raw = client.messages.with_raw_response.create(
        model=MODEL, max_tokens=500, tools=[CALCULATOR, WEATHER],
        messages=[{"role": "user", "content": "What is the weather in Paris?"}])
    assert _calls(raw.parse()) == [("get_weather", {"city": "Paris"})]
    assert "x-harness-sim-invented" not in raw.headers  # nothing made up


def test_a_question_no_tool_serves_gets_text(client: anthropic.Anthropic) -> None:
    reply = _ask(client, "Write me a haiku about autumn leaves.", [WEATHER, CALCULATOR])
    assert reply.stop_reason == "end_turn" and not _calls(reply)


def test_list_the_files_in_tmp_calls_the_listing_tool_only(client: anthropic.Anthropic) -> None:
    assert _calls(_ask(client, "List the files in /tmp", FILESYSTEM)) == [("list_directory", {"path": "/tmp"})]


def test_an_arithmetic_question_hands_the_calculator_its_expression(client: anthropic.Anthropic) -> None:
    reply = _ask(client, "What is 17 * 23?", [WEATHER, CALCULATOR])
    assert _calls(reply) == [("calculator", {"expression": "17 * 23"})]


def test_a_smolagents_loop_forced_to_call_tools_ends_with_final_answer(client: anthropic.Anthropic) -> None:
    """smolagents' tool-calling agent: tool_choice any every step, until final_answer is called (its step limit 20)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What's the weather like in Paris?"}]
    steps = []
    for _ in range(20):
        reply = client.messages.create(model=MODEL, max_tokens=500, tools=[LOCATION_WEATHER, FINAL_ANSWER],
                                       tool_choice={"type": "any"}, messages=messages)
        steps.append(_calls(reply))
        if any(name == "final_answer" for name, _ in steps[-1]):
            break
        messages += _answered(reply, {"get_weather": "Sunny, 21 C"})
    assert steps == [[("get_weather", {"location": "Paris"})], [("final_answer", {"answer": "Sunny, 21 C"})]]
    greeted = _ask(client, "Hi!", [LOCATION_WEATHER, FINAL_ANSWER], tool_choice={"type": "any"})
    assert [name for name, _ in _calls(greeted)] == ["final_answer"]


def test_independent_calls_come_together_and_serially_when_parallel_use_is_off(client: anthropic.Anthropic) -> None:
    question = "What is (2 + 3) / 4, and what is the weather in Berlin?"
    both = _ask(client, question, [WEATHER, CALCULATOR])
    assert _calls(both) == [("calculator", {"expression": "(2 + 3) / 4"}), ("get_weather", {"city": "Berlin"})]
    one = _ask(client, question, [WEATHER, CALCULATOR], tool_choice={"type": "auto", "disable_parallel_tool_use": True})
    assert _calls(one) == [("calculator", {"expression": "(2 + 3) / 4"})]
    named = _ask(client, question, [WEATHER, CALCULATOR], tool_choice={"type": "tool", "name": "get_weather"})
    assert _calls(named) == [("get_weather", {"city": "Berlin"})] and named.content[0].type == "tool_use"
    assert not _calls(_ask(client, question, [WEATHER, CALCULATOR], tool_choice={"type": "none"}))


def test_a_dependent_call_waits_for_the_result_it_needs(client: anthropic.Anthropic) -> None:
    tools = [FIND_USER, SEND_EMAIL]
    first = _ask(client, "Find the user Ada Lovelace and send her an email saying hello", tools)
    assert _calls(first) == [("find_user", {"name": "Ada Lovelace"})]
    messages = [{"role": "user", "content": "Find the user Ada Lovelace and send her an email saying hello"},
                *_answered(first, {"find_user": json.dumps({"user_id": "u_1815"})})]
    second = client.messages.create(model=MODEL, max_tokens=500, tools=tools, messages=messages)
    ((name, tool_input),) = _calls(second)
    assert name == "send_email" and tool_input["user_id"] == "u_1815"


def test_an_identifier_nobody_gave_is_asked_for_not_made_up(client: anthropic.Anthropic) -> None:
    """The SDK's message_threads example: its first turns must be text, or the next `send` gets a 400."""
    for text in ("Hi! I have a question about an order.",
                 "Before I find the order number: how long does standard shipping usually take?"):
        reply = _ask(client, text, [LOOKUP_ORDER])
        assert reply.stop_reason == "end_turn" and not _calls(reply), text
    given = _ask(client, "It's order #4821 and it hasn't arrived. Can you check where it is?", [LOOKUP_ORDER])
    assert _calls(given) == [("lookup_order", {"order_id": "4821"})]


def test_the_same_request_gets_the_same_answer(sim: Simulator, client: anthropic.Anthropic) -> None:
    question = "Search the products for a rake and order two"
    tools = [_tool("search_products", "Search the catalogue.", {"query": TEXT, "limit": {"type": "integer"}},
                   ["query"]),
             _tool("create_order", "Order items.", {"sku": {"type": "string", "pattern": "^SKU-[0-9]{4}$"},
                                                     "quantity": {"type": "integer"}}, ["sku", "quantity"])]
    first, again = (_ask(client, question, tools).model_dump() for _ in range(2))
    assert first == again
    with Simulator() as other:  # another simulator with the same seed: the same answer too
        elsewhere = anthropic.Anthropic(base_url=other.base_url, api_key="k", max_retries=0)
        assert _ask(elsewhere, question, tools).model_dump() == first


def test_made_up_inputs_are_named_and_bless_compares_them_by_shape(sim: Simulator, tmp_path: Path) -> None:
    units = {"type": "string", "enum": ["celsius", "fahrenheit"]}
    tool = _tool("get_forecast", "The weather forecast for a city.", {"city": TEXT, "units": units}, ["city", "units"])
    cassette = tmp_path / "forecast.yaml"
    with use_cassette(cassette, mode="once"):
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        reply = _ask(client, "What's the forecast for Paris?", [tool])
    ((_, tool_input),) = _calls(reply)
    assert tool_input["city"] == "Paris" and tool_input["units"] in units["enum"]
    marked = invented_inputs(load_cassette_any(cassette))
    assert marked == {reply.content[-1].id: ["$.units"]}  # the city came from the user, the units did not

    trajectory = load_trajectory(cassette)
    golden = bless_golden(None, trajectory, name="forecast", cassette_label="forecast.yaml", invented=marked).golden
    (match,) = [check for check in golden["checks"] if check["check"] == "trajectory_match"]
    (expected,) = match["params"]["expected"]
    assert expected == {"name": "get_forecast", "input": tool_input, "shape_paths": ["$.units"]}
    # Another made-up unit passes; another city, or a unit that is not a string, fails.
    other_units = "fahrenheit" if tool_input["units"] == "celsius" else "celsius"
    for changed, passes in (({"units": other_units}, True), ({"city": "Lyon"}, False), ({"units": 3}, False)):
        params = {**match["params"], "expected": [{**expected, "input": {**tool_input, **changed}}]}
        assert run_check("trajectory_match", trajectory, params).passed is passes, changed
