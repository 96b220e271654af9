"""Partial credit and order in trajectory_match (score, in_order, threshold, parallel and sequential turns), and
tool_permissions (allow and deny rules with argument patterns)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.checks import run_check
from harness.checks.registry import get_check
from harness.evals.golden import GoldenError, load_golden
from harness.trajectory import Trajectory
from tests.test_checks_support import conversation, text, tool_use, turn


def run_with(*steps: list[tuple[str, dict[str, Any]]]) -> Trajectory:
    """A trajectory whose step i makes the calls in steps[i] (one assistant turn each); then a final text step."""
    turns = [turn(*(tool_use(name, args) for name, args in calls)) for calls in steps]
    return conversation(*turns, turn(text("done")))


def match(trajectory: Trajectory, expected: list[dict[str, Any]], **params: Any) -> Any:
    return run_check("trajectory_match", trajectory, {"expected": expected, **params})


FIVE = [{"name": name} for name in ("search", "open", "read", "summarize", "cite")]


# --- score -------------------------------------------------------------------------------------------------------


def test_a_near_miss_scores_between_0_and_1_not_0() -> None:
    # Four of the five expected calls, plus one the golden does not expect: precision 4/5, recall 4/5.
    near = run_with([("search", {})], [("open", {})], [("read", {})], [("translate", {})], [("cite", {})])
    result = match(near, FIVE, mode="unordered")
    assert not result.passed
    assert 0 < result.score < 1
    assert result.score == pytest.approx(0.8)
    assert result.evidence["score"] == {
        "precision": 0.8,
        "recall": 0.8,
        "f1": 0.8,
        "matched": 4,
        "expected": 5,
        "calls": 5,
    }
    assert result.reason == "step 6: the run ended without calling summarize"  # still names where it went wrong


def test_every_mode_scores_and_a_full_match_scores_1() -> None:
    exact = run_with(*[[(item["name"], {})] for item in FIVE])
    for mode in ("strict", "in_order", "unordered", "subset", "superset"):
        result = match(exact, FIVE, mode=mode)
        assert result.passed and result.score == 1.0, mode
    nothing = run_with()
    assert match(nothing, FIVE, mode="superset").score == 0.0


def test_ordered_modes_score_the_longest_order_keeping_matching() -> None:
    swapped = run_with([("open", {})], [("search", {})], [("read", {})], [("summarize", {})], [("cite", {})])
    assert match(swapped, FIVE, mode="unordered").score == 1.0
    strict = match(swapped, FIVE, mode="strict")
    assert not strict.passed and strict.score == pytest.approx(0.8)  # 4 of 5 keep their order


def test_threshold_turns_the_score_into_pass_or_fail() -> None:
    near = run_with([("search", {})], [("open", {})], [("read", {})], [("translate", {})], [("cite", {})])
    passed = match(near, FIVE, mode="unordered", threshold=0.75)
    assert passed.passed and passed.score == pytest.approx(0.8)
    assert passed.reason.startswith("score 0.80 (precision 0.80, recall 0.80) reaches the threshold 0.75; step 6")
    failed = match(near, FIVE, mode="unordered", threshold=0.9)
    assert not failed.passed and "is below the threshold 0.9" in failed.reason


# --- in_order ------------------------------------------------------------------------------------------------------


def test_in_order_allows_calls_between_but_not_a_changed_order() -> None:
    expected = [{"name": "search"}, {"name": "read"}, {"name": "cite"}]
    between = run_with([("search", {})], [("open", {})], [("read", {})], [("log", {})], [("cite", {})])
    assert match(between, expected, mode="in_order").passed
    assert not match(between, expected, mode="strict").passed

    reordered = run_with([("search", {})], [("cite", {})], [("read", {})])
    result = match(reordered, expected, mode="in_order")
    assert not result.passed
    assert result.step == 2
    assert result.reason == (
        "step 2: expected call 3, cite, comes too early: it was made at step 2, expected after step 3"
    )
    assert result.score == pytest.approx(2 / 3)


def test_in_order_names_the_nearest_call_when_arguments_differ() -> None:
    run = run_with([("search", {"q": "a"})], [("read", {"id": 1})])
    result = match(
        run, [{"name": "search", "input": {"q": "a"}}, {"name": "read", "input": {"id": 2}}], mode="in_order"
    )
    assert not result.passed and result.step == 2
    assert 'nearest is read({"id":1}): argument $.id is 1, expected 2' in result.reason


# --- parallel and sequential turns -----------------------------------------------------------------------------------


def test_calls_labelled_one_turn_must_be_parallel() -> None:
    expected = [{"name": "read_inbox", "turn": "gather"}, {"name": "read_calendar", "turn": "gather"}]
    parallel = run_with([("read_inbox", {}), ("read_calendar", {})])
    sequential = run_with([("read_inbox", {})], [("read_calendar", {})])
    assert match(parallel, expected, mode="unordered").passed
    result = match(sequential, expected, mode="unordered")
    assert not result.passed and result.step == 2
    assert "expected in one assistant turn (parallel), made in steps 1, 2" in result.reason


def test_calls_with_different_labels_must_be_sequential() -> None:
    expected = [{"name": "search", "turn": 1}, {"name": "read", "turn": 2}]
    assert match(run_with([("search", {})], [("read", {})]), expected, mode="in_order").passed
    together = match(run_with([("search", {}), ("read", {})]), expected, mode="in_order")
    assert not together.passed and together.step == 1
    assert "expected in a later turn than turn '1' (step 1, sequential), but came in the same assistant turn" in (
        together.reason
    )


# --- tool_permissions ---------------------------------------------------------------------------------------------


def permitted(trajectory: Trajectory, **params: Any) -> Any:
    return run_check("tool_permissions", trajectory, params)


def test_a_denied_call_fails_naming_its_step() -> None:
    run = run_with([("read_file", {"path": "notes/a.md"})], [("read_file", {"path": "/etc/passwd"})])
    result = permitted(run, deny=[{"name": "read_file", "path": "$.path", "glob": "/etc/*"}])
    assert not result.passed and result.step == 2
    assert result.reason == (
        'step 2: read_file({"path":"/etc/passwd"}) is denied by deny[0] '
        "(read_file with $.path matching glob '/etc/*')"
    )
    assert permitted(
        run_with([("read_file", {"path": "notes/a.md"})]),
        deny=[{"name": "read_file", "path": "$.path", "glob": "/etc/*"}],
    ).passed


def test_a_call_outside_the_allow_list_fails() -> None:
    run = run_with([("read_inbox", {})], [("send_email", {"to": "x@example.com"})])
    result = permitted(run, allow=["read_*"])
    assert not result.passed and result.step == 2
    assert result.reason == 'step 2: send_email({"to":"x@example.com"}) is not in the allow list'
    assert permitted(run, allow=["read_*", "send_email"]).passed


def test_allow_rules_with_a_regex_must_fit_every_value_at_the_path() -> None:
    run = run_with([("fetch", {"urls": ["https://a.example", "http://b.example"]})])
    rule = {"name": "fetch", "path": "$.urls[*]", "regex": "^https://"}
    result = permitted(run, allow=[rule])
    assert not result.passed and result.step == 1
    assert "its arguments fit no allow rule for it (fetch with $.urls[*] matching regex '^https://')" in result.reason
    assert permitted(run, deny=[rule]).step == 1  # a deny rule is hit by any value: here the first URL
    assert permitted(run_with([("fetch", {"urls": ["https://a.example"]})]), allow=[rule]).passed


def test_a_bad_regex_in_a_golden_is_refused_naming_the_place(tmp_path: Any) -> None:
    assert get_check("tool_permissions").validate_params is not None
    golden = tmp_path / "g.json"
    golden.write_text(
        '{"name": "g", "cassettes": ["c.yaml"], "checks": [{"check": "tool_permissions", '
        '"params": {"deny": [{"name": "x", "path": "$.a", "regex": "("}]}}]}',
        encoding="utf-8",
    )
    with pytest.raises(GoldenError) as caught:
        load_golden(golden)
    assert "$.checks[0].params.deny[0].regex" in str(caught.value)
