"""self_correction, outcome, budgets, no_repeated_calls, and the registry's contract."""

from __future__ import annotations

from typing import Any

import pytest

from harness.checks import CHECKS, run_check
from harness.checks.base import CheckSpec
from harness.trajectory import Trajectory, load_trajectory
from tests.test_checks_support import (
    REAL,
    TOOL_ERROR_HAR,
    TOOL_SEARCH,
    conversation,
    text,
    tool_result,
    tool_use,
    turn,
)


def failing_then(*, retry_input: dict[str, Any], retry_ok: bool, final: str = "done") -> Trajectory:
    first = tool_use("query_db", {"sql": "SELECT created_at FROM users"}, id="toolu_1")
    second = tool_use("query_db", retry_input, id="toolu_2")
    error = "OperationalError: no such column: created_at. Table users has columns: id, registration_date"
    return conversation(
        turn(first, results=[tool_result("toolu_1", error, is_error=True)]),
        turn(second, results=[tool_result("toolu_2", "[[42]]" if retry_ok else error, is_error=not retry_ok)]),
        turn(text(final)),
    )


# --- self_correction ------------------------------------------------------------------------------------------------


def test_a_corrected_retry_passes() -> None:
    result = run_check(
        "self_correction", failing_then(retry_input={"sql": "SELECT registration_date FROM users"}, retry_ok=True)
    )
    assert result.passed, result.reason
    assert result.evidence["errors"] == [{"step": 1, "tool": "query_db", "id": "toolu_1", "recovered": True}]


def test_an_identical_retry_fails_naming_the_step_that_repeated() -> None:
    result = run_check(
        "self_correction", failing_then(retry_input={"sql": "SELECT created_at FROM users"}, retry_ok=False)
    )
    assert not result.passed and result.step == 2
    assert result.reason.startswith("step 2: query_db was called again with the identical input")
    assert "failed with is_error at step 1" in result.reason


def test_key_order_does_not_make_a_retry_different() -> None:
    first = tool_use("search", {"a": 1, "b": 2}, id="toolu_1")
    again = tool_use("search", {"b": 2, "a": 1}, id="toolu_2")
    trajectory = conversation(
        turn(first, results=[tool_result("toolu_1", "bad", is_error=True)]), turn(again), turn(text("done"))
    )
    assert not run_check("self_correction", trajectory).passed


def test_giving_up_plainly_is_accepted_and_silence_is_not() -> None:
    other = {"sql": "SELECT 1"}
    silent = failing_then(retry_input=other, retry_ok=False, final="Here is the answer: 42.")
    result = run_check("self_correction", silent)
    assert not result.passed and result.step == 1
    assert "no later call of it succeeded" in result.reason
    honest = failing_then(retry_input=other, retry_ok=False, final="I can't answer this: the column is missing.")
    assert run_check("self_correction", honest).passed
    custom = failing_then(retry_input=other, retry_ok=False, final="Giving up on this one.")
    assert run_check("self_correction", custom, {"accept_phrases": ["giving up"]}).passed


def test_require_error_fails_a_run_without_any_failure() -> None:
    clean = conversation(turn(tool_use("search", {"q": 1})), turn(text("done")))
    assert run_check("self_correction", clean).passed
    result = run_check("self_correction", clean, {"require_error": True})
    assert not result.passed and result.step == 2 and "no tool_result with is_error" in result.reason


@pytest.mark.real_cassettes
def test_real_recordings_with_is_error_self_correct() -> None:
    for path in (TOOL_ERROR_HAR, TOOL_SEARCH):
        result = run_check("self_correction", load_trajectory(path), {"require_error": True})
        assert result.passed, (path.name, result.reason)


# --- outcome ----------------------------------------------------------------------------------------------------------


def test_outcome_expects_end_turn_by_default() -> None:
    assert run_check("outcome", conversation(turn(text("hi")))).passed
    cut = conversation(turn(text("partial"), stop_reason="max_tokens"))
    result = run_check("outcome", cut)
    assert not result.passed and result.step == 1
    assert result.reason == "step 1: run 1 ended on stop_reason max_tokens, expected end_turn"
    assert run_check("outcome", cut, {"stop_reason": ["end_turn", "max_tokens"]}).passed


@pytest.mark.real_cassettes
def test_outcome_for_recorded_errors() -> None:
    trajectory = load_trajectory(
        REAL / "mirascope/input/cassettes/test_authentication_error/anthropic_claude_sonnet_4_0.yaml"
    )
    assert run_check("outcome", trajectory, {"error": {"status": 401, "type": "authentication_error"}}).passed
    assert run_check("outcome", trajectory, {"error": True}).passed
    wrong = run_check("outcome", trajectory, {"error": {"status": 529}})
    assert not wrong.passed and "ended with HTTP 401 authentication_error, expected HTTP 529" in wrong.reason
    expected_stop = run_check("outcome", trajectory)
    assert not expected_stop.passed and "ended before any step with error HTTP 401" in expected_stop.reason


@pytest.mark.real_cassettes
def test_outcome_checks_every_run() -> None:
    result = run_check("outcome", load_trajectory(TOOL_SEARCH))
    assert result.passed and len(result.evidence["endings"]) == 4


# --- budgets ----------------------------------------------------------------------------------------------------------


def three_steps() -> Trajectory:
    usage = {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 500}
    return conversation(
        turn(tool_use("a"), usage=usage), turn(tool_use("b"), usage=usage), turn(text("done"), usage=usage)
    )


def test_budgets_within_limits() -> None:
    result = run_check(
        "budgets",
        three_steps(),
        {"max_steps": 3, "max_tool_calls": 2, "max_tokens": {"input": 3000, "cache_read": 1500}},
    )
    assert result.passed, result.reason


def test_budgets_name_the_step_where_a_limit_was_crossed() -> None:
    steps = run_check("budgets", three_steps(), {"max_steps": 2})
    assert not steps.passed and steps.step == 3 and steps.reason == "step 3: 3 steps, over the limit of 2"
    tokens = run_check("budgets", three_steps(), {"max_tokens": {"output": 150}})
    assert not tokens.passed and tokens.step == 2
    assert tokens.reason == "step 2: output tokens reached 200, over the budget of 150"
    total = run_check("budgets", three_steps(), {"max_tokens": {"total": 3199}})
    assert not total.passed and total.step == 2


def test_budgets_cost() -> None:
    cost = three_steps().cost_usd
    assert cost is not None and cost > 0
    assert run_check("budgets", three_steps(), {"max_cost_usd": cost * 2}).passed
    over = run_check("budgets", three_steps(), {"max_cost_usd": cost / 2})
    assert not over.passed and over.step == 3 and "over the budget" in over.reason


@pytest.mark.real_cassettes
def test_unknown_cost_passes_unless_told_to_fail() -> None:
    old = load_trajectory(REAL / "openllmetry/test_messages/test_anthropic_message_create_legacy.yaml")
    assert old.cost_usd is None  # claude-3-opus has no price in harness.pricing
    assert run_check("budgets", old, {"max_cost_usd": 0.01}).passed
    assert not run_check("budgets", old, {"max_cost_usd": 0.01, "unknown_cost": "fail"}).passed


# --- no_repeated_calls ------------------------------------------------------------------------------------------------


def test_a_call_repeated_past_the_limit_is_a_loop() -> None:
    same = {"path": "config.json"}
    looping = conversation(*(turn(tool_use("read_file", same)) for _ in range(3)), turn(text("done")))
    result = run_check("no_repeated_calls", looping)
    assert not result.passed and result.step == 3
    assert result.reason == 'step 3: read_file({"path":"config.json"}) called 3 times in a row (limit 2)'
    assert run_check("no_repeated_calls", looping, {"max_in_a_row": 3}).passed


def test_different_arguments_break_the_streak() -> None:
    calls = [turn(tool_use("read_file", {"path": p})) for p in ("a", "a", "b", "a", "a")]
    assert run_check("no_repeated_calls", conversation(*calls, turn(text("done")))).passed


# --- the registry -----------------------------------------------------------------------------------------------------


def test_every_check_has_a_valid_params_schema() -> None:
    import jsonschema

    assert set(CHECKS) == {
        "tool_ids_matched",
        "self_correction",
        "promotions_filtered",
        "trajectory_match",
        "final_answer",
        "outcome",
        "budgets",
        "no_repeated_calls",
        "tool_permissions",
        "rubric",
        "output_schema",
    }
    for spec in CHECKS.values():
        jsonschema.Draft202012Validator.check_schema(spec.params_schema)


def test_a_crashing_check_is_a_failed_result_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(trajectory: Trajectory, params: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setitem(CHECKS, "outcome", CheckSpec("outcome", broken, "x", {"type": "object"}))
    result = run_check("outcome", conversation(turn(text("hi"))), label="my-outcome")
    assert not result.passed and result.name == "my-outcome"
    assert result.reason == "the check itself crashed: RuntimeError: boom"


def test_an_unknown_check_name_is_a_key_error_listing_the_known_ones() -> None:
    with pytest.raises(KeyError, match="known checks: budgets"):
        run_check("no_such_check", conversation(turn(text("hi"))))
