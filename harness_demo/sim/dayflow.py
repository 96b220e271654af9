"""The scripted Dayflow model: asks for inbox, calendar and tasks in one turn, then writes the brief.

The brief is built only from the tool results found in the request, so a tool or fixture change shows
up in the output. It follows the system prompt in one respect that evals can see: promotions (and
newsletters) are left out only when the prompt asks to skip them, and listed under "## Offers"
otherwise. A tool result with is_error (or one that is not JSON) is reported, never a crash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from harness.sim.conversation import Conversation, Reply, ToolExchange, text_block, tool_use_block

# tool -> (input the model asks with, what the brief calls it when it fails)
DAYFLOW_CALLS: dict[str, tuple[dict[str, Any], str]] = {
    "read_inbox": ({"limit": 20}, "inbox"),
    "read_calendar": ({"days": 7}, "calendar"),
    "read_tasks": ({"include_done": False}, "task list"),
}
DEFAULT_TODAY = date(2026, 9, 7)
_DEADLINE_WORDS = re.compile(r"\b(deadline|due|submit|submission|cut-?off)\b", re.IGNORECASE)


def asks_to_skip(system_text: str, label: str) -> bool:
    """True when the system prompt says to skip `label` ("promotion", "newsletter") in the same sentence."""
    return re.search(rf"\bskip\b[^.]*\b{label}", system_text, re.IGNORECASE) is not None


def dayflow(conversation: Conversation) -> Reply:
    wanted = [name for name in DAYFLOW_CALLS if name in conversation.tool_names]
    answered = {name: conversation.calls_to(name)[-1] for name in wanted if conversation.calls_to(name)}
    if wanted and not answered:
        blocks = [text_block("I'll check your inbox, calendar and tasks for today.")]
        blocks += [tool_use_block(name, dict(DAYFLOW_CALLS[name][0])) for name in wanted]
        return Reply(blocks, "tool_use")
    return Reply([text_block(_brief(conversation, answered))], "end_turn")


@dataclass(frozen=True)
class _Deadline:
    day: date
    order: int  # emails, then tasks, then calendar on the same day
    text: str


def _day(value: Any) -> date | None:
    if not isinstance(value, str) or len(value) < 10:
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


def _label(day: date) -> str:
    return f"{day:%a} {day.isoformat()}"


def _sender(email: dict[str, Any]) -> str:
    sender = str(email.get("from") or "unknown sender")
    return sender.split("<", 1)[0].strip().strip('"') or sender


def _today(conversation: Conversation, calendar: dict[str, Any] | None) -> date:
    match = re.search(r"\b(\d{4}-\d{2}-\d{2})\b", conversation.first_user_text)
    return _day(match.group(1) if match else None) or _day((calendar or {}).get("from")) or DEFAULT_TODAY


def _payload(exchange: ToolExchange | None, key: str) -> tuple[dict[str, Any] | None, str | None]:
    """(parsed result, problem): the problem says in words what went wrong, for the brief."""
    if exchange is None:
        return None, None
    if exchange.is_error:
        lines = (exchange.result_text or "").strip().splitlines()
        return None, lines[0] if lines else "the tool reported an error"
    data = exchange.result_json()
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        return None, f"the result was not the expected JSON with a {key!r} list"
    return data, None


def _utc_time(value: Any) -> str:
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return str(value)
    return f"{moment.astimezone(UTC) if moment.tzinfo else moment:%H:%M}"


@dataclass(frozen=True)
class _Facts:
    """What the tool results say, already filtered by what the system prompt asks to skip."""

    today: date
    emails: list[dict[str, Any]]  # without skipped offers
    offers: list[dict[str, Any]]  # offers the prompt did not ask to skip
    events: list[dict[str, Any]]
    open_tasks: list[dict[str, Any]]
    have_inbox: bool
    have_calendar: bool
    problems: list[tuple[str, str]]  # (what, problem)


def _facts(conversation: Conversation, answered: dict[str, ToolExchange]) -> _Facts:
    loaded: dict[str, dict[str, Any] | None] = {}
    problems = []
    for name, key in (("read_inbox", "emails"), ("read_calendar", "events"), ("read_tasks", "tasks")):
        loaded[name], problem = _payload(answered.get(name), key)
        if problem:
            problems.append((DAYFLOW_CALLS[name][1], problem))

    def items(name: str, key: str) -> list[dict[str, Any]]:
        return [item for item in (loaded[name] or {}).get(key, []) if isinstance(item, dict)]

    skipped = [
        label for label in ("promotion", "newsletter") if asks_to_skip(conversation.system_text, label)
    ]
    emails = items("read_inbox", "emails")
    return _Facts(
        today=_today(conversation, loaded["read_calendar"]),
        emails=[email for email in emails if _offer_kind(email) not in skipped],
        offers=[email for email in emails if _offer_kind(email) not in (None, *skipped)],
        events=items("read_calendar", "events"),
        open_tasks=[task for task in items("read_tasks", "tasks") if not task.get("done")],
        have_inbox=loaded["read_inbox"] is not None,
        have_calendar=loaded["read_calendar"] is not None,
        problems=problems,
    )


def _today_section(facts: _Facts) -> list[str]:
    todays = sorted(
        (e for e in facts.events if _day(e.get("start")) == facts.today), key=lambda e: str(e["start"])
    )
    lines = ["## Today"]
    for event in todays:
        where = f" ({event['calendar']})" if event.get("calendar") else ""
        start, end = _utc_time(event.get("start")), _utc_time(event.get("end"))
        lines.append(f"- {start}–{end} UTC — {event.get('title')}{where}")
    if not todays:
        lines.append(
            "- Nothing on the calendar today." if facts.have_calendar else "- Calendar not available."
        )
    return lines


def _reply_section(facts: _Facts) -> list[str]:
    lines = ["## Needs a reply"]
    for email in (email for email in facts.emails if email.get("needs_reply")):
        by = f", reply by {_label(day)}" if (day := _day(email.get("deadline"))) else ""
        lines.append(f"- **{email.get('subject')}** — {_sender(email)}{by}")
    if len(lines) == 1:
        lines.append("- Nothing needs a reply." if facts.have_inbox else "- Inbox not available.")
    return lines


def _deadline_section(facts: _Facts) -> list[str]:
    week_end = facts.today + timedelta(days=6)
    deadlines: list[_Deadline] = []
    for email in facts.emails:
        if (day := _day(email.get("deadline"))) and day <= week_end:
            deadlines.append(_Deadline(day, 0, f"{email.get('subject')} (email from {_sender(email)})"))
    for task in facts.open_tasks:
        if (day := _day(task.get("due"))) and day <= week_end:
            overdue = ", overdue" if day < facts.today else ""
            deadlines.append(_Deadline(day, 1, f"{task.get('title')} (task{overdue})"))
    for event in facts.events:
        day = _day(event.get("start"))
        if day and facts.today <= day <= week_end and _DEADLINE_WORDS.search(str(event.get("title", ""))):
            deadlines.append(_Deadline(day, 2, f"{event.get('title')} (calendar)"))
    lines = ["## Deadlines this week"]
    lines += [
        f"- {_label(d.day)} — {d.text}" for d in sorted(deadlines, key=lambda d: (d.day, d.order, d.text))
    ]
    if not deadlines:
        lines.append("- No deadlines this week.")
    return lines


def _brief(conversation: Conversation, answered: dict[str, ToolExchange]) -> str:
    facts = _facts(conversation, answered)
    sections = [
        [f"Good morning! Here is your brief for {facts.today:%A} {facts.today.isoformat()}."],
        _today_section(facts),
        _reply_section(facts),
        _deadline_section(facts),
    ]
    if facts.offers:
        sections.append(
            ["## Offers"] + [f"- {email.get('subject')} — {_sender(email)}" for email in facts.offers]
        )
    if facts.problems:
        sections.append(
            ["## Could not check"] + [f"- Your {what}: {problem}" for what, problem in facts.problems]
        )
    return "\n\n".join("\n".join(section) for section in sections)


def _offer_kind(email: dict[str, Any]) -> str | None:
    labels = {str(label).lower() for label in email.get("labels") or []}
    if labels & {"promotions", "promotion"}:
        return "promotion"
    if labels & {"newsletter", "newsletters"}:
        return "newsletter"
    return None
