"""Simulator models for a user's own agent: sim-auto, scripts, function models, and how names pick them.

The agent is `tests/unseen_agent.py`, whose tools no scripted policy knows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import anthropic
import jsonschema
import pytest

from harness import cli
from harness.commands import sim as sim_cli
from harness.sim import SimulatedApiError, Simulator
from harness.sim.script import load_script
from tests.harness_processes import READY_TIMEOUT, start_serving_thread
from tests.unseen_agent import SCHEMAS, TOOLS, run_agent

ASK = {"max_tokens": 1024, "tools": TOOLS, "messages": [{"role": "user", "content": "Order a rake"}]}
# Words that call for every tool of the order desk (search, order, schedule the delivery).
EVERY_TOOL = "Search the products for a rake, order it and schedule the delivery"


@pytest.fixture
def sim() -> Any:
    with Simulator() as running:
        yield running


@pytest.fixture
def client(sim: Simulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.base_url, api_key="sim-key", max_retries=0)


def _calls(message: Any) -> list[tuple[str, Any]]:
    return [(block.name, block.input) for block in message.content if block.type == "tool_use"]


def _valid(name: str, tool_input: Any) -> bool:
    validator = jsonschema.Draft202012Validator(SCHEMAS[name], format_checker=jsonschema.FormatChecker())
    return not list(validator.iter_errors(tool_input))


# -- model names ---------------------------------------------------------------------------------------------

def test_an_unclaimed_claude_model_id_is_answered_by_sim_auto_and_says_so(client: anthropic.Anthropic) -> None:
    raw = client.messages.with_raw_response.create(model="claude-sonnet-5", **ASK)
    assert raw.headers["x-harness-sim-model"] == "sim-auto"
    message = raw.parse()
    assert message.stop_reason == "tool_use"
    assert [name for name, _ in _calls(message)] == ["create_order"]  # the tool "Order a rake" calls for
    no_tools = client.messages.create(model="claude-sonnet-5", max_tokens=100,
                                      messages=[{"role": "user", "content": "hello there"}])
    assert no_tools.stop_reason == "end_turn"
    assert "sim-auto" in no_tools.content[0].text and not no_tools.content[0].text.startswith("You said")


def test_a_name_that_is_neither_gets_the_real_404_listing_the_simulator_models(client: anthropic.Anthropic) -> None:
    for name in ("gpt-5", "sim-autopilot", "sim-dayflow:serial", "sim-auto:fast"):
        with pytest.raises(anthropic.NotFoundError) as caught:
            client.messages.create(model=name, **ASK)
        error = caught.value.body["error"]
        assert error["type"] == "not_found_error"
        assert error["message"].startswith(f"model: {name} ")
        assert "sim-auto" in error["message"] and "sim-dayflow" in error["message"]


def test_the_default_model_answers_claude_ids_and_a_bad_one_is_refused() -> None:
    with Simulator(model="sim-auto:serial") as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        raw = client.messages.with_raw_response.create(model="claude-opus-4-1-20250805", **ASK)
        assert raw.headers["x-harness-sim-model"] == "sim-auto:serial"
        assert len(_calls(raw.parse())) == 1
    with pytest.raises(Exception, match="unknown simulator model 'sim-nope'"):
        Simulator(model="sim-nope")


# -- sim-auto -------------------------------------------------------------------------------------------------

def test_sim_auto_calls_each_tool_the_words_call_for_then_quotes_every_result(client: anthropic.Anthropic) -> None:
    # Each call needs inputs the words do not hold (a SKU, a customer): each waits a turn for the one before it.
    replies = run_agent(client, EVERY_TOOL)
    assert [reply.stop_reason for reply in replies] == ["tool_use", "tool_use", "tool_use", "end_turn"]
    assert [_calls(reply)[0][0] for reply in replies[:3]] == ["search_products", "create_order", "schedule_delivery"]
    for reply in replies[:3]:
        for name, tool_input in _calls(reply):
            assert _valid(name, tool_input), (name, tool_input)
    answer = replies[-1].content[0].text
    assert "search_products returned" in answer and "schedule_delivery returned" in answer
    assert "create_order" in answer
    assert run_agent(client, EVERY_TOOL)[0].model_dump() == replies[0].model_dump()  # deterministic


def test_sim_auto_options_serial_rounds_and_until_corrected(client: anthropic.Anthropic) -> None:
    serial = run_agent(client, EVERY_TOOL, model="sim-auto:serial,rounds=2")
    assert [len(_calls(reply)) for reply in serial] == [1, 1, 1, 1, 1, 1, 0]
    assert [_calls(r)[0][0] for r in serial[:3]] == ["search_products", "create_order", "schedule_delivery"]
    for reply in serial[:-1]:
        assert all(_valid(name, tool_input) for name, tool_input in _calls(reply))
    assert serial[-1].stop_reason == "end_turn"



def _after_results(reply: Any, failing: set[str]) -> list[dict[str, Any]]:
    """The assistant turn `reply` and the user turn answering its calls, `failing` tools with is_error."""
    results = []
    for block in reply.content:
        if block.type == "tool_use":
            failed = block.name in failing
            results.append({"type": "tool_result", "tool_use_id": block.id,
                            "content": f"{block.name} {'failed' if failed else 'ok'}",
                            **({"is_error": True} if failed else {})})
    assistant = [block.model_dump(exclude_none=True) for block in reply.content]
    return [{"role": "assistant", "content": assistant}, {"role": "user", "content": results}]


def test_until_corrected_calls_a_failed_tool_again_and_answers_once_it_succeeds(client: anthropic.Anthropic) -> None:
    model = "sim-auto:until-corrected"
    first = client.messages.create(model=model, **ASK)
    messages = [*ASK["messages"], *_after_results(first, {"create_order"})]
    retry = client.messages.create(model=model, **{**ASK, "messages": messages})
    assert [name for name, _ in _calls(retry)] == ["create_order"]
    assert _calls(retry)[0][1] != _calls(first)[0][1] and _valid("create_order", _calls(retry)[0][1])
    corrected = [*messages, *_after_results(retry, set())]
    answer = client.messages.create(model=model, **{**ASK, "messages": corrected})
    assert answer.stop_reason == "end_turn"
    assert "create_order failed (is_error): create_order failed" in answer.content[0].text
    assert answer.content[0].text.endswith("- create_order returned: create_order ok")
    # without the option, a failed call is reported in the answer, not made again
    plain = client.messages.create(model="sim-auto", **{**ASK, "messages": messages})
    assert plain.stop_reason == "end_turn" and "create_order failed (is_error)" in plain.content[0].text
    # a tool that keeps failing is given up after three tries
    for _ in range(2):
        retry = client.messages.create(model=model, **{**ASK, "messages": messages})
        assert [name for name, _ in _calls(retry)] == ["create_order"]
        messages = [*messages, *_after_results(retry, {"create_order"})]
    assert client.messages.create(model=model, **{**ASK, "messages": messages}).stop_reason == "end_turn"


def test_sim_auto_honours_tool_choice_and_disable_parallel_tool_use(client: anthropic.Anthropic) -> None:
    none = client.messages.create(model="claude-sonnet-5", tool_choice={"type": "none"}, **ASK)
    assert none.stop_reason == "end_turn" and not _calls(none)
    named = client.messages.create(model="claude-sonnet-5", tool_choice={"type": "tool", "name": "schedule_delivery"},
                                   **ASK)
    assert [name for name, _ in _calls(named)] == ["schedule_delivery"]
    assert named.content[0].type == "tool_use"  # forced: no text before the call, as the API does
    single = client.messages.create(model="claude-sonnet-5",
                                    tool_choice={"type": "auto", "disable_parallel_tool_use": True}, **ASK)
    assert len(_calls(single)) == 1
    # `any` must call a tool even once every tool has been called
    replies = run_agent(client, "Order a rake", tool_choice={"type": "any"}, max_steps=3)
    assert all(reply.stop_reason == "tool_use" for reply in replies)


def test_sim_auto_thinking_stream_stop_sequences_and_max_tokens(client: anthropic.Anthropic) -> None:
    thinking = {"type": "enabled", "budget_tokens": 1024}
    plain = client.messages.create(model="claude-sonnet-5", thinking=thinking, **{**ASK, "max_tokens": 4096})
    assert plain.content[0].type == "thinking" and plain.content[0].signature
    with client.messages.stream(model="claude-sonnet-5", thinking=thinking, **{**ASK, "max_tokens": 4096}) as events:
        streamed = events.get_final_message()
    assert streamed.model_dump() == plain.model_dump()
    assert plain.usage.input_tokens > 0 and plain.usage.output_tokens > 0

    question = {"role": "user", "content": "What now?"}
    stopped = client.messages.create(model="claude-sonnet-5", max_tokens=200, stop_sequences=["answering"],
                                     messages=[question])
    assert stopped.stop_reason == "stop_sequence" and stopped.stop_sequence == "answering"
    cut = client.messages.create(model="claude-sonnet-5", max_tokens=3, messages=[question])
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens == 3


# -- function models ------------------------------------------------------------------------------------------

def _decide(request: dict[str, Any]) -> dict[str, Any]:
    results = [block for message in request["messages"] if isinstance(message["content"], list)
               for block in message["content"] if block.get("type") == "tool_result"]
    if not results:
        return {"content": [{"type": "tool_use", "name": "create_order",
                             "input": {"customer": {"id": "C00001", "email": "a@example.com"},
                                       "items": [{"sku": "SKU-0001", "quantity": 9}],
                                       "shipping": "pickup", "priority": "low"}}]}
    if results[-1].get("is_error"):
        if "overload" not in json.dumps(request.get("metadata") or {}):
            return {"content": [{"type": "tool_use", "name": "create_order",
                                 "input": {"customer": {"id": "C00001", "email": "a@example.com"},
                                           "items": [{"sku": "SKU-0001", "quantity": 5}],
                                           "shipping": "pickup", "priority": "low"}}]}
        raise SimulatedApiError(529, "overloaded_error", "Overloaded")
    return {"content": f"Ordered: {results[-1]['content']}", "usage": {"output_tokens": 7}}


@pytest.mark.simulator(model=_decide)
def test_a_function_model_decides_each_turn(simulator: Simulator) -> None:
    client = anthropic.Anthropic(base_url=simulator.base_url, api_key="k", max_retries=0)
    replies = run_agent(client, "Order nine rakes")
    assert [reply.stop_reason for reply in replies] == ["tool_use", "tool_use", "end_turn"]
    assert replies[-1].content[0].text == 'Ordered: {"order_id": "ORD-7", "items": 1}'
    assert replies[-1].usage.output_tokens == 7
    assert [served.model for served in simulator.served] == ["sim-function"] * 3
    with pytest.raises(anthropic.InternalServerError, match="Overloaded"):
        run_agent(client, "Order nine rakes", metadata={"user_id": "overload"})


# -- scripts --------------------------------------------------------------------------------------------------

SCRIPT = """\
name: order-fix
turns:
  - fault: 529
  - text: Let me order that.
    tool_use: {name: create_order, input: {customer: {id: C00001, email: a@example.com},
               items: [{sku: SKU-0001, quantity: 9}], shipping: pickup, priority: low}}
  - when: {last_tool_result_is_error: true, last_tool_result_contains: only 5 in stock}
    thinking: Only five are in stock; order five.
    tool_use: {name: create_order, input: {customer: {id: C00001, email: a@example.com},
               items: [{sku: SKU-0001, quantity: 5}], shipping: pickup, priority: low}}
  - when: {tool_offered: create_order}
    text: Ordered five rakes, the most in stock.
    usage: {output_tokens: 9}
"""


def test_a_script_drives_the_agent_through_an_error_and_its_correction(tmp_path: Path) -> None:
    script = tmp_path / "order_fix.yaml"
    script.write_text(SCRIPT)
    with Simulator(scripts=[script]) as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=2)
        replies = run_agent(client, "Order nine rakes")
        again = run_agent(client, "Order nine rakes")  # a new conversation plays the script again
    assert [reply.stop_reason for reply in replies] == ["tool_use", "tool_use", "end_turn"]
    first, second = _calls(replies[0])[0][1], _calls(replies[1])[0][1]
    assert first["items"][0]["quantity"] == 9 and second["items"][0]["quantity"] == 5
    assert replies[1].content[0].type == "thinking"
    assert replies[-1].content[0].text == "Ordered five rakes, the most in stock."
    assert replies[-1].usage.output_tokens == 9
    assert [r.model_dump() for r in again] == [r.model_dump() for r in replies]
    assert [(s.status, s.fault, s.model) for s in sim.served[:2]] == [(529, "529", "sim-order-fix"),
                                                                      (200, None, "sim-order-fix")]


def test_a_script_with_no_turn_left_says_so_and_is_not_retried(tmp_path: Path) -> None:
    script = tmp_path / "short.yaml"
    script.write_text("turns:\n  - tool_use: {name: search_products,\n"
                      "               input: {query: rake, category: garden, filters: {price: {max: 10}}}}\n")
    with Simulator(scripts=[script]) as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=2)
        with pytest.raises(anthropic.InternalServerError) as caught:
            run_agent(client, "Find a rake", model="sim-short")
    assert "no turn left for this request (turn 2 of the conversation)" in caught.value.body["error"]["message"]
    assert str(script) in caught.value.body["error"]["message"]
    assert len(sim.served) == 2  # x-should-retry: false, so the SDK did not retry


def test_a_script_turn_calling_a_tool_not_offered_is_refused_like_the_api(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("turns:\n  - tool_use: {name: launch_rocket}\n")
    with Simulator(scripts=[script]) as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.BadRequestError) as caught:
            client.messages.create(model="sim-s", **ASK)
    message = caught.value.body["error"]["message"]
    assert "$.turns[0]" in message and "'launch_rocket'" in message and "create_order" in message


BAD_SCRIPTS = {
    "turns: []\n": ("$.turns", "should be non-empty"),
    "turns:\n  - text: hi\n  - stop_reason: done\n    text: x\n": ("$.turns[1].stop_reason", "'done' is not one of"),
    "turns:\n  - fault: 529\n    text: hi\n": ("$.turns[0]", "replaces the answer; remove text"),
    "turns:\n  - tool_use: {input: {}}\n": ("$.turns[0].tool_use", "'name' is a required property"),
    "turns:\n  - when: {turn: 2}\n": ("$.turns[0]", "a turn needs at least one of text"),
    "turns:\n  - text: [unclosed\n": ("line 3", "not valid YAML"),
    "name: dayflow\nturns:\n  - text: hi\n": ("$.name", "built-in simulator model"),
}


@pytest.mark.parametrize("text", BAD_SCRIPTS, ids=range(len(BAD_SCRIPTS)))
def test_a_bad_script_exits_2_naming_the_file_the_place_and_the_reason(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text(text)
    assert cli.main(["sim", "--port", "0", "--quiet", "--script", str(script)]) == 2
    err = capsys.readouterr().err
    place, reason = BAD_SCRIPTS[text]
    assert str(script) in err and place in err and reason in err, err


def test_the_readme_script_example_is_a_valid_script(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "simulator.md").read_text()
    section = page.split("Simulator models for your own agent", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "example.yaml"
    script.write_text("\n".join(line.removeprefix("  ") for line in example.splitlines()))
    loaded = load_script(script)
    assert loaded.name == "order-fix" and len(loaded.turns) == 5


def test_harness_sim_serves_scripts_and_a_default_model(tmp_path: Path) -> None:
    script = tmp_path / "greeter.yaml"
    script.write_text("turns:\n  - text: Hello from the script.\n    repeat: true\n")
    url_file = tmp_path / "sim.url"
    parser = argparse.ArgumentParser()
    sim_cli.add_arguments(parser)
    args = parser.parse_args(["--port", "0", "--url-file", str(url_file), "--max-requests", "2", "--quiet",
                              "--script", str(script), "--default-model", "sim-auto:serial"])
    thread, _, url = start_serving_thread(url_file, lambda: sim_cli.run(args))
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    by_default = client.messages.with_raw_response.create(model="claude-haiku-4-5", **ASK)
    assert by_default.headers["x-harness-sim-model"] == "sim-auto:serial" and len(_calls(by_default.parse())) == 1
    scripted = client.messages.create(model="sim-greeter", **ASK)
    assert scripted.content[0].text == "Hello from the script." and scripted.stop_reason == "end_turn"
    thread.join(timeout=READY_TIMEOUT)
    assert not thread.is_alive()
