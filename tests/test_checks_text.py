"""final_answer and promotions_filtered: deterministic text rules on the final answer, step named."""

from __future__ import annotations

from typing import Any

import pytest

from harness.checks import run_check
from harness.checks.answer import headings
from harness.trajectory import Trajectory, load_trajectory
from harness_demo.checks import find_mention, item_terms
from tests.test_checks_support import DAYFLOW_BRIEF, REAL, conversation, dayflow_items, message, text, tool_use, turn


def brief(final: str) -> Trajectory:
    return conversation(turn(tool_use("read_inbox", {"limit": 20})), turn(text(final)))


def answer(trajectory: Trajectory, **params: Any) -> Any:
    return run_check("final_answer", trajectory, params)


def promotions(final: str) -> Any:
    promotional, needs_reply = dayflow_items()
    return run_check("promotions_filtered", brief(final), {"promotional": promotional, "needs_reply": needs_reply})


SECTIONS = ["Today", "Needs a reply", "Deadlines this week"]


def test_headings_are_read_from_markdown() -> None:
    assert headings(DAYFLOW_BRIEF) == SECTIONS
    assert headings("# Title #\ntext\n   ### Deep  \n####### not a heading") == ["Title", "Deep"]


def test_required_sections_pass_and_fail_naming_the_step() -> None:
    assert answer(brief(DAYFLOW_BRIEF), sections=SECTIONS).passed
    cut = DAYFLOW_BRIEF.split("## Deadlines")[0]
    result = answer(brief(cut), sections=SECTIONS)
    assert not result.passed and result.step == 2
    assert result.reason == (
        "step 2: the final answer has no 'Deadlines this week' section (headings: Today, Needs a reply)"
    )


def test_sections_in_order_unless_told_otherwise() -> None:
    backwards = list(reversed(SECTIONS))
    result = answer(brief(DAYFLOW_BRIEF), sections=backwards)
    assert not result.passed and "not in the order" in result.reason
    assert answer(brief(DAYFLOW_BRIEF), sections=backwards, sections_in_order=False).passed


def test_contains_not_contains_and_case() -> None:
    assert answer(brief(DAYFLOW_BRIEF), contains=["weekly staff sync"]).passed
    assert not answer(brief(DAYFLOW_BRIEF), contains=["weekly staff sync"], case_sensitive=True).passed
    result = answer(brief(DAYFLOW_BRIEF), not_contains=["Priya"])
    assert not result.passed and result.reason == "step 2: the final answer contains 'Priya'"


def test_regex_rules() -> None:
    assert answer(brief(DAYFLOW_BRIEF), regex=[r"^- \*\*Sam K\.\*\*"]).passed
    result = answer(brief(DAYFLOW_BRIEF), regex=[r"Sep 1[2-9]"])
    assert not result.passed and "does not match /Sep 1[2-9]/" in result.reason
    assert not answer(brief(DAYFLOW_BRIEF), not_regex=[r"\d\d:\d\d"]).passed


@pytest.mark.real_cassettes
def test_no_final_answer_when_the_run_errored() -> None:
    path = REAL / "mirascope/input/cassettes/test_authentication_error/anthropic_claude_sonnet_4_0.yaml"
    result = answer(load_trajectory(path), contains=["x"])
    assert not result.passed and "HTTP 401 authentication_error" in result.reason


def test_item_terms_come_from_subject_and_sender() -> None:
    promotional, needs_reply = dayflow_items()
    assert item_terms(promotional[0]) == [
        "em-003",
        "40% off everything: this weekend only",
        "40% off everything",
        "brightside deals",
        "brightside",
        "deals@brightside.example",
    ]
    assert "sam" in item_terms(needs_reply[1])  # first names count; "K." is too short to
    assert find_mention("Reply to SAM about the one-pager", needs_reply[1]) == "sam"
    assert find_mention("the same day", needs_reply[1]) is None  # whole words only


def test_the_brief_keeps_replies_and_drops_promotions() -> None:
    result = promotions(DAYFLOW_BRIEF)
    assert result.passed, result.reason
    assert result.evidence["leaked"] == [] and result.evidence["missing"] == []


def test_a_promotion_in_the_brief_fails_naming_the_item_and_step() -> None:
    result = promotions(DAYFLOW_BRIEF + "\n\n## Offers\n- 40% off everything at BRIGHTSIDE DEALS this weekend")
    assert not result.passed and result.step == 2
    assert result.reason.startswith("step 2: the final answer mentions promotional item em-003")
    assert result.evidence["leaked"][0]["item"]["id"] == "em-003"


def test_a_missing_reply_fails() -> None:
    without_sam = "\n".join(line for line in DAYFLOW_BRIEF.splitlines() if "Sam" not in line)
    result = promotions(without_sam)
    assert not result.passed
    assert "leaves out item(s) needing a reply: em-002" in result.reason


def test_explicit_mentions_replace_the_derived_terms() -> None:
    params = {"promotional": [{"subject": "Weekly deals", "mentions": ["coupon"]}]}
    assert run_check("promotions_filtered", brief("Weekly deals are here"), params).passed
    assert not run_check("promotions_filtered", brief("Use the coupon"), params).passed


def test_the_final_answer_is_the_last_runs_even_when_it_failed() -> None:
    from harness.trajectory import Exchange

    first = {"model": "m", "messages": [{"role": "user", "content": "one"}]}
    second = {"model": "m", "messages": [{"role": "user", "content": "two"}]}
    trajectory = Trajectory.from_exchanges(
        [
            Exchange(request=first, message=message([text("## Today\nall good")]), status=200),
            Exchange(request=second, message=None, status=529, error_type="overloaded_error"),
        ]
    )
    assert trajectory.final_step is None and trajectory.final_text == ""
    result = answer(trajectory, sections=["Today"])
    assert not result.passed and result.reason == "no final answer: the run ended with error HTTP 529 overloaded_error"
