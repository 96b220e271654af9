"""trajectory_match: sequence modes, argument modes, overrides, ignored paths; the bipartite matching."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from harness.checks import run_check
from harness.checks.matching import maximum_matching
from harness.checks.tool_calls import argument_mismatches
from harness.jsondata import drop_paths, parse_path
from harness.trajectory import Trajectory
from tests.test_checks_support import conversation, text, tool_use, turn


def run_with(*steps: list[tuple[str, dict[str, Any]]]) -> Trajectory:
    """A trajectory whose step i makes the calls in steps[i]; then a final text step."""
    turns = [turn(*(tool_use(name, args) for name, args in calls)) for calls in steps]
    return conversation(*turns, turn(text("done")))


def match(trajectory: Trajectory, expected: list[dict[str, Any]], **params: Any) -> Any:
    return run_check("trajectory_match", trajectory, {"expected": expected, **params})


DAY = run_with([("read_inbox", {"limit": 20}), ("read_calendar", {"days": 7})], [("read_tasks", {})])
EXPECTED = [
    {"name": "read_inbox", "input": {"limit": 20}},
    {"name": "read_calendar", "input": {"days": 7}},
    {"name": "read_tasks", "input": {}},
]


# --- the matching itself ------------------------------------------------------------------------------------------


def _brute_force(adjacency: list[list[int]], right: int) -> int:
    best = 0
    for size in range(len(adjacency), 0, -1):
        for lefts in itertools.combinations(range(len(adjacency)), size):
            for rights in itertools.permutations(range(right), size):
                if all(r in adjacency[left] for left, r in zip(lefts, rights, strict=True)):
                    return size
    return best


@pytest.mark.parametrize("seed", range(40))
def test_hopcroft_karp_finds_a_maximum_matching(seed: int) -> None:
    rng = random.Random(seed)
    left, right = rng.randint(1, 5), rng.randint(1, 5)
    adjacency = [[r for r in range(right) if rng.random() < 0.4] for _ in range(left)]
    matching = maximum_matching(adjacency, right)
    assert len(set(matching.values())) == len(matching)  # one-to-one
    assert all(r in adjacency[l_] for l_, r in matching.items())  # along edges only
    assert len(matching) == _brute_force(adjacency, right)


def test_matching_an_empty_graph() -> None:
    assert maximum_matching([[], []], 3) == {}
    assert maximum_matching([], 0) == {}


def _greedy(adjacency: list[list[int]]) -> dict[int, int]:
    used: set[int] = set()
    out = {}
    for left, rights in enumerate(adjacency):
        for right in rights:
            if right not in used:
                used.add(right)
                out[left] = right
                break
    return out


def test_unordered_matching_passes_where_greedy_first_fit_would_fail() -> None:
    # The loose expected call (any read) comes first; greedy gives it the only call the strict one accepts.
    trajectory = run_with([("read", {"path": "a"}), ("read", {"path": "b"})])
    expected = [{"name": "read", "input": {}}, {"name": "read", "input": {"path": "a"}}]
    adjacency = [[0, 1], [0]]  # expected 0 fits both calls (superset of {}); expected 1 only the first
    assert len(_greedy(adjacency)) == 1  # greedy leaves expected 1 unmatched: a false failure
    result = match(trajectory, expected, mode="unordered", args="superset")
    assert result.passed, result.reason
    assert {(m["expected"], m["call"]) for m in result.evidence["matching"]} == {(0, 1), (1, 0)}


# --- sequence modes -------------------------------------------------------------------------------------------------


def test_strict_passes_on_the_same_calls_in_order() -> None:
    assert match(DAY, EXPECTED, mode="strict").passed


def test_strict_names_the_step_and_position_of_a_wrong_call() -> None:
    swapped = [EXPECTED[1], EXPECTED[0], EXPECTED[2]]
    result = match(DAY, swapped, mode="strict")
    assert not result.passed and result.step == 1
    assert result.reason.startswith("step 1: tool call 1 is read_inbox")
    assert "tool is read_inbox, expected read_calendar" in result.reason


def test_strict_extra_and_missing_calls() -> None:
    extra = match(DAY, EXPECTED[:2], mode="strict")
    assert not extra.passed and extra.step == 2 and "unexpected extra tool call read_tasks" in extra.reason
    missing = match(DAY, [*EXPECTED, {"name": "send_email"}], mode="strict")
    assert not missing.passed and missing.step == 3  # the final step: the run ended without it
    assert "ended without tool call 4, send_email" in missing.reason


def test_unordered_accepts_any_order_and_rejects_extras() -> None:
    assert match(DAY, list(reversed(EXPECTED)), mode="unordered").passed
    result = match(DAY, EXPECTED[1:], mode="unordered")
    assert not result.passed and result.step == 1
    assert result.reason == 'step 1: unexpected tool call read_inbox({"limit":20})'


def test_unordered_reports_the_nearest_call_and_the_argument() -> None:
    wrong = [EXPECTED[0], {"name": "read_calendar", "input": {"days": 1}}, EXPECTED[2]]
    result = match(DAY, wrong, mode="unordered")
    assert not result.passed and result.step == 1
    assert "argument $.days is 7, expected 1" in result.reason


def test_subset_allows_expected_calls_to_be_left_out() -> None:
    generous = [*EXPECTED, {"name": "send_email"}]
    assert match(DAY, generous, mode="subset").passed
    assert not match(DAY, EXPECTED[:2], mode="subset").passed  # read_tasks was not expected


def test_superset_allows_other_calls() -> None:
    assert match(DAY, EXPECTED[:1], mode="superset").passed
    result = match(DAY, [*EXPECTED, {"name": "send_email"}], mode="superset")
    assert not result.passed and "ended without calling send_email" in result.reason


def test_a_repeated_expected_call_needs_two_actual_calls() -> None:
    result = match(DAY, [*EXPECTED, EXPECTED[2]], mode="superset")
    assert not result.passed
    assert "each read_tasks call (step 2) matches another expected call" in result.reason


# --- argument modes -------------------------------------------------------------------------------------------------


def test_exact_arguments_name_the_path() -> None:
    trajectory = run_with([("search", {"query": "x", "filters": {"year": 2026, "lang": "en"}})])
    want = [{"name": "search", "input": {"query": "x", "filters": {"year": 2025, "lang": "en"}}}]
    result = match(trajectory, want)
    assert not result.passed and result.step == 1
    assert "argument $.filters.year is 2026, expected 2025" in result.reason


def test_superset_and_subset_arguments() -> None:
    trajectory = run_with([("search", {"query": "x", "limit": 5})])
    assert match(trajectory, [{"name": "search", "input": {"query": "x"}}], args="superset").passed
    assert not match(trajectory, [{"name": "search", "input": {"query": "x"}}], args="subset").passed
    both = {"query": "x", "limit": 5, "page": 1}
    assert match(trajectory, [{"name": "search", "input": both}], args="subset").passed
    assert not match(trajectory, [{"name": "search", "input": both}], args="superset").passed


def test_ignore_arguments_and_name_only_expectations() -> None:
    trajectory = run_with([("search", {"query": "anything"})])
    assert match(trajectory, [{"name": "search", "input": {"query": "else"}}], args="ignore").passed
    assert match(trajectory, [{"name": "search"}]).passed


def test_per_tool_overrides() -> None:
    want = [{"name": "read_inbox", "input": {"limit": 5}}, EXPECTED[1], EXPECTED[2]]
    assert not match(DAY, want).passed
    assert match(DAY, want, tools={"read_inbox": {"args": "ignore"}}).passed
    assert match(DAY, want, tools={"read_inbox": {"ignore_paths": ["limit"]}}).passed


def test_ignored_paths_with_wildcards() -> None:
    trajectory = run_with(
        [("tag", {"items": [{"id": "x1", "name": "a"}, {"id": "x2", "name": "b"}], "meta": {"trace": "t-1"}})]
    )
    want = [
        {
            "name": "tag",
            "input": {"items": [{"id": "y", "name": "a"}, {"id": "z", "name": "b"}], "meta": {"trace": "t-2"}},
        }
    ]
    assert not match(trajectory, want).passed
    assert match(trajectory, want, ignore_paths=["$.items[*].id", "meta.trace"]).passed


def test_argument_comparison_details() -> None:
    assert argument_mismatches({"a": True}, {"a": 1}, "exact") == ["argument $.a is true, expected 1"]
    assert argument_mismatches({"a": 1.0}, {"a": 1}, "exact") == []
    assert argument_mismatches([1, 2], [1], "exact") == ["argument $ has 2 item(s), expected 1"]
    assert argument_mismatches({}, {"b": 2}, "superset") == ["argument $.b is missing (expected 2)"]
    assert parse_path("$.a[0].b") == ("a", "0", "b")
    assert drop_paths({"a": [{"b": 1, "c": 2}]}, [parse_path("a[*].b")]) == {"a": [{"c": 2}]}
