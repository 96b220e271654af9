"""tool_ids_matched: every way a loop can break the tool_use / tool_result pairing, each named by step."""

from __future__ import annotations

from typing import Any

import pytest

from harness.checks import run_check
from harness.trajectory import Exchange, Trajectory, load_trajectory
from tests.test_checks_support import (
    REAL,
    conversation,
    message,
    text,
    tool_result,
    tool_use,
    turn,
)


def check(trajectory: Trajectory) -> Any:
    return run_check("tool_ids_matched", trajectory)


def test_a_well_formed_parallel_run_passes() -> None:
    a, b = tool_use("read", {"p": 1}, id="toolu_a"), tool_use("read", {"p": 2}, id="toolu_b")
    result = check(conversation(turn(a, b), turn(text("done"))))
    assert result.passed, result.reason
    assert result.evidence["tool_uses_checked"] == 2


def test_a_missing_tool_result_names_the_step_that_sent_the_turn() -> None:
    a, b = tool_use("read", id="toolu_a"), tool_use("read", id="toolu_b")
    result = check(conversation(turn(a, b, results=[tool_result("toolu_a")]), turn(text("done"))))
    assert not result.passed
    assert result.step == 2
    assert result.reason.startswith("step 2: tool_use toolu_b (step 1) has no tool_result in the next user turn")


def test_results_out_of_order_fail() -> None:
    a, b = tool_use("read", id="toolu_a"), tool_use("read", id="toolu_b")
    result = check(
        conversation(turn(a, b, results=[tool_result("toolu_b"), tool_result("toolu_a")]), turn(text("done")))
    )
    assert not result.passed and result.step == 2
    assert "order ['toolu_b', 'toolu_a']" in result.reason


def test_a_duplicate_result_fails() -> None:
    a = tool_use("read", id="toolu_a")
    result = check(conversation(turn(a, results=[tool_result("toolu_a"), tool_result("toolu_a")]), turn(text("done"))))
    assert not result.passed and "answered by 2 tool_results" in result.reason


def test_an_orphan_result_fails() -> None:
    a = tool_use("read", id="toolu_a")
    result = check(
        conversation(turn(a, results=[tool_result("toolu_a"), tool_result("toolu_zzz")]), turn(text("done")))
    )
    assert not result.passed and "toolu_zzz answers no tool_use" in result.reason


def test_results_must_open_the_user_turn() -> None:
    a = tool_use("read", id="toolu_a")
    result = check(conversation(turn(a, results=[text("here you go"), tool_result("toolu_a")]), turn(text("done"))))
    assert not result.passed and "not at the start of the user turn" in result.reason


def test_is_error_belongs_on_tool_result_only() -> None:
    a = tool_use("read", id="toolu_a")
    odd = {"type": "text", "text": "note", "is_error": True}
    result = check(conversation(turn(a, results=[tool_result("toolu_a"), odd]), turn(text("done"))))
    assert not result.passed and "text block in a user turn carries is_error" in result.reason


def test_stop_reason_tool_use_without_a_tool_use_block_fails() -> None:
    result = check(conversation(turn(text("I will call a tool"), stop_reason="tool_use")))
    assert not result.passed and result.step == 1
    assert "stop_reason tool_use but the response has no tool_use block" in result.reason


def test_a_reused_tool_use_id_fails() -> None:
    first, again = tool_use("read", id="toolu_same"), tool_use("read", {"x": 1}, id="toolu_same")
    result = check(conversation(turn(first), turn(again), turn(text("done"))))
    assert not result.passed and result.step == 2
    assert "toolu_same was already used at step 1" in result.reason


def test_dropping_the_assistant_turn_is_caught() -> None:
    call = tool_use("read", id="toolu_a")
    user = {"role": "user", "content": "go"}
    results = {"role": "user", "content": [tool_result("toolu_a")]}
    trajectory = Trajectory.from_exchanges(
        [
            Exchange(request={"model": "m", "messages": [user]}, message=message([call]), status=200),
            Exchange(request={"model": "m", "messages": [user, results]}, message=message([text("ok")]), status=200),
        ]
    )
    result = check(trajectory)
    assert not result.passed and result.step == 2
    assert "does not send back step 1's assistant turn" in result.reason


def test_a_run_ending_on_tool_use_passes_and_says_so() -> None:
    result = check(conversation(turn(tool_use("read", id="toolu_end"))))
    assert result.passed
    assert result.evidence["unanswered_at_end"] == ["toolu_end"]


@pytest.mark.real_cassettes
def test_hand_written_history_in_the_first_request_is_checked() -> None:
    path = REAL / "openllmetry/test_messages/test_anthropic_tools_history_legacy.yaml"
    trajectory = load_trajectory(path)
    assert check(trajectory).passed
    history = trajectory.steps[0].delta
    history[-1]["content"][0]["tool_use_id"] = "call_wrong"  # break the recorded pairing
    broken = check(trajectory)
    assert not broken.passed and broken.step == 1
    assert "tool_use call_1 has no tool_result" in broken.reason
    assert any("call_wrong answers no tool_use" in p["problem"] for p in broken.evidence["problems"])
