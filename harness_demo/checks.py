"""Dayflow checks: what the morning brief leaves out and what it must keep.

The golden names inbox items: the promotional ones must appear nowhere in the final text, the ones
needing a reply must all appear. Matching is deterministic, no judge: an item appears when one of its
terms occurs in the final text as whole words, ignoring case and runs of whitespace. An item's terms
are its `mentions` when the golden gives them, else its id, its subject (and the subject's head before
a colon), the sender's display name, first name and address.

The library finds CHECKS through the entry point group `loop_harness.checks` (pyproject.toml).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from email.utils import parseaddr
from typing import Any

from harness.checks.base import CheckResult, CheckSpec, fail, ok
from harness.trajectory import Trajectory

NAME = "promotions_filtered"
_MIN_TERM = 3  # shorter terms ("K.", "Q3") match too much by accident to count


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("’", "'")).strip().casefold()


def item_terms(item: Mapping[str, Any]) -> list[str]:
    """The strings whose presence in the text means the item is mentioned."""
    if item.get("mentions"):
        terms = [str(term) for term in item["mentions"]]
    else:
        terms = []
        if item.get("id"):
            terms.append(str(item["id"]))
        subject = str(item.get("subject") or "").strip()
        if subject:
            terms.append(subject)
            head = re.split(r"[:|–—]", subject, maxsplit=1)[0].strip()
            if head != subject and len(head.split()) >= 2:
                terms.append(head)
        name, address = parseaddr(str(item.get("sender") or ""))
        if not name and "@" not in address:
            name, address = address, ""
        if name:
            terms.append(name)
            first = name.split()[0].strip(".,")
            if first != name and len(first) >= _MIN_TERM and first.isalpha():
                terms.append(first)
        if address:
            terms.append(address)
    unique = dict.fromkeys(_normal(term) for term in terms if len(term.strip()) >= _MIN_TERM)
    return list(unique)


def find_mention(text: str, item: Mapping[str, Any]) -> str | None:
    """The first term of `item` that occurs in `text`, or None."""
    haystack = _normal(text)
    for term in item_terms(item):
        if re.search(r"(?<!\w)" + re.escape(term) + r"(?!\w)", haystack):
            return term
    return None


def _label(item: Mapping[str, Any]) -> str:
    parts = [str(item[key]) for key in ("id", "subject") if item.get(key)]
    sender = parseaddr(str(item.get("sender") or ""))[0] or item.get("sender")
    if sender:
        parts.append(f"from {sender}")
    if not parts and item.get("mentions"):
        parts.append(repr(item["mentions"][0]))
    return " ".join(parts)


def promotions_filtered(trajectory: Trajectory, params: Mapping[str, Any]) -> CheckResult:
    final = trajectory.final_step
    if final is None:
        outcome = trajectory.outcome
        why = outcome.describe() if outcome else "no Messages API call"
        return fail(NAME, f"no final answer to check: the run ended with {why}")
    text = trajectory.final_text
    leaked: list[dict[str, Any]] = []
    for item in params.get("promotional") or []:
        term = find_mention(text, item)
        if term is not None:
            leaked.append({"item": dict(item), "matched": term})
    missing = [dict(item) for item in params.get("needs_reply") or [] if find_mention(text, item) is None]
    evidence = {"leaked": leaked, "missing": missing, "final_text_chars": len(text)}
    if leaked:
        first = leaked[0]
        return fail(
            NAME,
            f"step {final.index}: the final answer mentions promotional item {_label(first['item'])} "
            f"(matched {first['matched']!r})",
            step=final.index,
            **evidence,
        )
    if missing:
        names = "; ".join(_label(item) for item in missing)
        return fail(
            NAME,
            f"step {final.index}: the final answer leaves out item(s) needing a reply: {names}",
            step=final.index,
            **evidence,
        )
    kept = len(params.get("needs_reply") or [])
    skipped = len(params.get("promotional") or [])
    return ok(
        NAME,
        f"step {final.index}: {skipped} promotional item(s) left out, {kept} needing a reply all present",
        step=final.index,
        **evidence,
    )


_ITEM = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "id": {"type": "string"},
        "subject": {"type": "string"},
        "sender": {"type": "string", "description": "display name and/or address: 'Priya Raman <priya@...>'"},
        "mentions": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "minItems": 1,
            "description": "explicit terms; when given, the only ones matched",
        },
    },
}

CHECKS = (
    CheckSpec(
        name=NAME,
        function=promotions_filtered,
        description="promotional inbox items appear nowhere in the final text; items needing a reply all appear "
        "(case-insensitive whole-word matching on id, subject and sender)",
        params_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "promotional": {"type": "array", "items": _ITEM},
                "needs_reply": {"type": "array", "items": _ITEM},
            },
            "anyOf": [{"required": ["promotional"]}, {"required": ["needs_reply"]}],
        },
    ),
)
