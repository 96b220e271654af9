"""Final-answer checks: the text of the last step of the (last) run.

contains / not_contains are substrings, regex are Python regular expressions searched with MULTILINE
(each must match; not_regex must not), sections are Markdown headings that must be present (in the
given order unless `sections_in_order` is false). Case is ignored unless `case_sensitive` is true.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness.checks.base import CheckResult, CheckSpec, fail, ok
from harness.patterns import compile_pattern, pattern_problem
from harness.trajectory import Trajectory

NAME = "final_answer"
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)


def headings(text: str) -> list[str]:
    """The Markdown (ATX) headings of `text`, without their #s, in order."""
    return [match.group(2).strip() for match in _HEADING.finditer(text)]


def _section_key(title: str) -> str:
    return re.sub(r"\s+", " ", title.lstrip("#").strip()).casefold()


def final_answer(trajectory: Trajectory, params: Mapping[str, Any]) -> CheckResult:
    final = trajectory.final_step
    if final is None:
        outcome = trajectory.outcome
        return fail(NAME, f"no final answer: the run ended with {outcome.describe() if outcome else 'no call'}")
    step = final.index
    text = trajectory.final_text
    sensitive = bool(params.get("case_sensitive"))

    def fold(value: str) -> str:
        return value if sensitive else value.casefold()

    evidence: dict[str, Any] = {"final_text_chars": len(text), "headings": headings(text)}
    for needle in params.get("contains") or []:
        if fold(needle) not in fold(text):
            return fail(NAME, f"step {step}: the final answer does not contain {needle!r}", step=step, **evidence)
    for needle in params.get("not_contains") or []:
        if fold(needle) in fold(text):
            return fail(NAME, f"step {step}: the final answer contains {needle!r}", step=step, **evidence)
    flags = re.MULTILINE | (0 if sensitive else re.IGNORECASE)
    for pattern in params.get("regex") or []:
        if not compile_pattern(pattern, flags).search(text):
            return fail(NAME, f"step {step}: the final answer does not match /{pattern}/", step=step, **evidence)
    for pattern in params.get("not_regex") or []:
        found = compile_pattern(pattern, flags).search(text)
        if found:
            return fail(
                NAME, f"step {step}: the final answer matches /{pattern}/ at {found.group(0)!r}", step=step, **evidence
            )
    wanted = [str(title) for title in params.get("sections") or []]
    present = [_section_key(title) for title in evidence["headings"]]
    for title in wanted:
        if _section_key(title) not in present:
            have = ", ".join(evidence["headings"]) or "none"
            return fail(
                NAME,
                f"step {step}: the final answer has no {title!r} section (headings: {have})",
                step=step,
                **evidence,
            )
    if wanted and params.get("sections_in_order", True):
        positions = [present.index(_section_key(title)) for title in wanted]
        if positions != sorted(positions):
            return fail(
                NAME,
                f"step {step}: the sections are not in the order {wanted} (found {evidence['headings']})",
                step=step,
                **evidence,
            )
    return ok(NAME, f"step {step}: the final answer ({len(text):,} chars) meets every text rule", step=step, **evidence)


def _bad_patterns(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    problems = []
    for key in ("regex", "not_regex"):
        for index, pattern in enumerate(params.get(key) or []):
            problem = pattern_problem(pattern)
            if problem:
                problems.append((f"{key}[{index}]", problem))
    return problems


_STRINGS = {"type": "array", "items": {"type": "string", "minLength": 1}}

CHECKS = (
    CheckSpec(
        name=NAME,
        function=final_answer,
        description="the final text: contains, not_contains, regex, not_regex, required Markdown sections",
        params_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "contains": _STRINGS,
                "not_contains": _STRINGS,
                "regex": {**_STRINGS, "description": "Python regular expressions (MULTILINE); each must match"},
                "not_regex": _STRINGS,
                "sections": {**_STRINGS, "description": "Markdown headings that must be present, e.g. 'Today'"},
                "sections_in_order": {"type": "boolean", "default": True},
                "case_sensitive": {"type": "boolean", "default": False},
            },
        },
        validate_params=_bad_patterns,
    ),
)
