"""Recording a user's own agent with no key: `pytest --record-mode=once --simulator=auto|FILE`, then
replaying the cassette offline, as a user's project would (inner test files run by pytester)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness.cassette.format import load_cassette
from tests.unseen_agent import SCHEMAS

pytest_plugins = ["pytester"]

AGENT = (Path(__file__).parent / "unseen_agent.py").read_text()

TEST_FILE = '''
import pytest
from unseen_agent import run_agent

@pytest.mark.cassette
def test_order(anthropic_client):
    replies = run_agent(anthropic_client, "Search the products for a rake, order it and schedule the delivery",
                        max_steps=12)
    assert replies[-1].stop_reason == "end_turn"
    assert len(replies) >= 2
'''


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)  # no key, and nothing pointing anywhere
    pytester.makepyfile(unseen_agent=AGENT, test_order=TEST_FILE)
    return pytester


def _tool_uses(cassette: Any) -> list[tuple[str, Any]]:
    calls = []
    for interaction in cassette.interactions:
        body = interaction["response"].get("body") or {}
        calls += [(b["name"], b["input"]) for b in body.get("content", []) if b.get("type") == "tool_use"]
    return calls


def _without_resets(interactions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kept = []
    for interaction in interactions:
        headers = {name: value for name, value in interaction["response"].get("headers", {}).items()
                   if not (name.startswith("anthropic-ratelimit-") and name.endswith("-reset"))}
        kept.append({**interaction, "response": {**interaction["response"], "headers": headers}})
    return kept


@pytest.mark.parametrize("option", ["auto", "auto:serial,rounds=2"])
def test_an_unseen_agent_records_against_sim_auto_with_no_key_and_replays_offline(
    project: pytest.Pytester, option: str
) -> None:
    project.runpytest("--record-mode=once", f"--simulator={option}").assert_outcomes(passed=1)
    cassette = load_cassette(project.path / "cassettes" / "test_order" / "test_order.yaml")
    assert cassette.meta["source"] == "simulator"
    assert cassette.meta["simulator_model"] == f"sim-{option}"
    # each tool the words call for, a turn each (each needs inputs the words do not hold), then the answer; or each
    # twice, then the answer
    assert len(cassette.interactions) == (4 if option == "auto" else 7)
    calls = _tool_uses(cassette)
    assert {name for name, _ in calls} == set(SCHEMAS)
    # what sim-auto made up is named in a header the cassette keeps, for bless
    assert all("x-harness-sim-invented" in interaction["response"]["headers"]
               for interaction in cassette.interactions[:-1])
    for name, tool_input in calls:
        jsonschema.validate(tool_input, SCHEMAS[name], format_checker=jsonschema.FormatChecker())
    models = {interaction["response"]["headers"]["x-harness-sim-model"] for interaction in cassette.interactions}
    assert models == {cassette.meta["simulator_model"]}  # each response says which model answered
    # offline: record mode none, no simulator, every connection but loopback blocked
    project.runpytest().assert_outcomes(passed=1)
    project.runpytest("--record-mode=rewrite", f"--simulator={option}").assert_outcomes(passed=1)
    rerecorded = load_cassette(project.path / "cassettes" / "test_order" / "test_order.yaml")
    # deterministic: the same cassette again, but for the rate-limit reset times, which are real time
    assert _without_resets(rerecorded.interactions) == _without_resets(cassette.interactions)


SCRIPT = """\
turns:
  - tool_use: {name: create_order, input: {customer: {id: C00001, email: a@example.com},
               items: [{sku: SKU-0001, quantity: 9}], shipping: pickup, priority: low}}
  - when: {last_tool_result_is_error: true}
    tool_use: {name: create_order, input: {customer: {id: C00001, email: a@example.com},
               items: [{sku: SKU-0001, quantity: 5}], shipping: pickup, priority: low}}
  - text: Ordered five.
"""


def test_a_script_records_the_error_and_its_correction(project: pytest.Pytester) -> None:
    (project.path / "order.yaml").write_text(SCRIPT)
    project.runpytest("--record-mode=once", "--simulator=order.yaml").assert_outcomes(passed=1)
    cassette = load_cassette(project.path / "cassettes" / "test_order" / "test_order.yaml")
    assert cassette.meta["source"] == "simulator" and cassette.meta["simulator_model"] == "sim-order"
    last_request = cassette.interactions[-1]["request"]["body"]
    results = [block for message in last_request["messages"] if isinstance(message["content"], list)
               for block in message["content"] if block.get("type") == "tool_result"]
    assert len(results) == 2 and results[0]["is_error"] is True and "only 5 in stock" in results[0]["content"]
    assert "is_error" not in results[1] and "ORD-7" in results[1]["content"]
    project.runpytest().assert_outcomes(passed=1)


def test_a_bad_simulator_option_is_a_usage_error_naming_the_file(project: pytest.Pytester) -> None:
    (project.path / "bad.yaml").write_text("turns:\n  - stop_reason: done\n")
    result = project.runpytest("--record-mode=once", "--simulator=bad.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--simulator=bad.yaml*bad.yaml: $.turns[[]0[]].stop_reason: 'done' is not one of*"])
    result = project.runpytest("--simulator=sim-nothing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown simulator model 'sim-nothing'*"])


FUNCTION_TEST = '''
import pytest
from unseen_agent import run_agent

def answer(request):
    return {"content": "Nothing to order today."}

@pytest.mark.simulator(model=answer)
@pytest.mark.cassette
def test_order(anthropic_client, simulator):
    replies = run_agent(anthropic_client, "Order a rake")
    assert replies[-1].content[0].text == "Nothing to order today."
    assert [served.model for served in simulator.served] == ["sim-function"]
'''


def test_the_simulator_fixture_serves_anthropic_client(project: pytest.Pytester) -> None:
    project.makepyfile(test_order=FUNCTION_TEST)
    project.runpytest("--record-mode=once").assert_outcomes(passed=1)
    cassette = load_cassette(project.path / "cassettes" / "test_order" / "test_order.yaml")
    assert cassette.meta["source"] == "simulator" and cassette.meta["simulator_model"] == "sim-function"
