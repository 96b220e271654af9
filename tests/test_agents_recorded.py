"""The reference agents tested the way the README tells users to: the pytest plugin replays the bundled
cassette into `anthropic_client` (record mode none: no network), and `assert_trajectory` checks the run
against its golden."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness import assert_trajectory, run_loop_async
from harness_demo.data_assistant import run_question
from harness_demo.dayflow import SYSTEM_PROMPT, build_registry, run_brief, user_prompt
from harness_demo.scenarios import MODEL

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


@pytest.mark.cassette(path="cassettes/dayflow/brief.yaml")
def test_dayflow_brief(anthropic_client) -> None:
    result = run_brief(anthropic_client, model=MODEL)
    assert result.outcome.value == "ended"
    assert_trajectory(result, GOLDEN / "dayflow" / "brief.json")


@pytest.mark.cassette(path="cassettes/dayflow/brief_stream.yaml")
def test_dayflow_brief_streamed(anthropic_client) -> None:
    assert_trajectory(run_brief(anthropic_client, model=MODEL, stream=True), GOLDEN / "dayflow" / "brief.json")


@pytest.mark.cassette(path="cassettes/dayflow/brief_stream.yaml")
def test_dayflow_brief_async(async_anthropic_client) -> None:
    result = asyncio.run(run_loop_async(async_anthropic_client, system=SYSTEM_PROMPT, user=user_prompt(),
                                        tools=build_registry(), model=MODEL, stream=True))
    assert_trajectory(result, {"promotions_filtered": {"promotional": [{"id": "em-003", "subject": "40% off"}]},
                               "tool_ids_matched": {}})


@pytest.mark.cassette(path="cassettes/sql/self_correction.yaml")
def test_sql_assistant_corrects_itself(anthropic_client, cassette) -> None:
    result = run_question(anthropic_client, model=MODEL)
    assert "registration_date" in result.tool_calls[1].input["sql"]
    assert_trajectory(cassette, GOLDEN / "sql" / "self_correction.json")


@pytest.mark.cassette(path="cassettes/guards/max_tokens.yaml")
def test_max_tokens_is_a_typed_failure(anthropic_client) -> None:
    result = run_brief(anthropic_client, model="sim-max-tokens")
    assert result.outcome.value == "max_tokens" and not result.ok
    assert_trajectory(result, ["tool_ids_matched", {"check": "outcome", "params": {"stop_reason": "max_tokens"}}])


@pytest.mark.cassette(path="cassettes/dayflow/brief.yaml")
def test_a_failed_check_reads_as_a_test_failure(anthropic_client) -> None:
    result = run_brief(anthropic_client, model=MODEL)
    with pytest.raises(AssertionError) as caught:
        assert_trajectory(result, {"final_answer": {"contains": ["Brightside"]}, "tool_ids_matched": {},
                                   "budgets": {"max_steps": 1}})
    message = str(caught.value)
    assert message.startswith("2 of 3 check(s) failed on the run:")
    assert "final_answer (step 2):" in message and "budgets (step 2):" in message


def test_an_unknown_check_name_is_refused() -> None:
    from harness.errors import GoldenError  # bad input as harness eval reports it, never a KeyError (issue 26)

    with pytest.raises(GoldenError, match="unknown check 'promotion_filter'"):
        assert_trajectory(GOLDEN.parent / "cassettes" / "dayflow" / "brief.yaml", ["promotion_filter"])
