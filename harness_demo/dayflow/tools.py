"""Dayflow's three tools, reading the JSON fixtures shipped with the package.

The fixtures are a fixed Monday (TODAY) so that every run, recorded or replayed, sees the same inbox,
calendar and tasks. Each call reads the files afresh: no tool can change what the next one sees.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from importlib import resources
from typing import Any

from harness.tools import OFFSET_PROPERTY, Tool, ToolRegistry

TODAY = date(2026, 9, 7)  # a Monday; the calendar fixture is the week that starts here
TOOL_TIMEOUT = 2.0  # seconds; reading a small JSON file should never come near it


def load_fixture(name: str) -> dict[str, Any]:
    """One fixture file (inbox, calendar or tasks) as data."""
    text = (resources.files(__package__) / "fixtures" / f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def read_inbox(limit: int = 20, offset: int = 0) -> dict[str, Any]:
    emails = sorted(load_fixture("inbox")["emails"], key=lambda email: email["received"], reverse=True)
    end = offset + limit
    return {
        "emails": emails[offset:end],
        "total": len(emails),
        "offset": offset,
        "next_offset": end if end < len(emails) else None,
    }


def read_calendar(days: int = 7) -> dict[str, Any]:
    calendar = load_fixture("calendar")
    first = date.fromisoformat(calendar["from"])
    last = first + timedelta(days=days)
    events = [event for event in calendar["events"] if first <= _day_of(event["start"]) < last]
    events.sort(key=lambda event: event["start"])
    return {"events": events, "from": first.isoformat(), "days": days}


def read_tasks(include_done: bool = False) -> dict[str, Any]:
    tasks = load_fixture("tasks")["tasks"]
    return {"tasks": [task for task in tasks if include_done or not task["done"]]}


def _day_of(timestamp: str) -> date:
    return datetime.fromisoformat(timestamp).date()


def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "additionalProperties": False}


READ_INBOX = Tool(
    name="read_inbox",
    description=(
        "Read the user's email inbox, newest first. Each email has an id, sender, subject, received time, "
        "body, labels (e.g. promotions, reminder, school), needs_reply and a deadline date or null."
    ),
    input_schema=_object(
        limit={
            "type": "integer",
            "minimum": 1,
            "maximum": 50,
            "default": 20,
            "description": "How many emails to return (1-50).",
        },
        offset=OFFSET_PROPERTY,
    ),
    function=read_inbox,
    timeout=TOOL_TIMEOUT,
)

READ_CALENDAR = Tool(
    name="read_calendar",
    description=(
        "Read the user's calendar events (work and personal) starting today, for the given number of days. "
        "Times are ISO 8601 in UTC."
    ),
    input_schema=_object(
        days={
            "type": "integer",
            "minimum": 1,
            "maximum": 31,
            "default": 7,
            "description": "How many days ahead, today included (1-31).",
        },
    ),
    function=read_calendar,
    timeout=TOOL_TIMEOUT,
)

READ_TASKS = Tool(
    name="read_tasks",
    description="Read the user's to-do list: each task has an id, a title, a due date or null, and done.",
    input_schema=_object(
        include_done={"type": "boolean", "default": False, "description": "Also list tasks already done."},
    ),
    function=read_tasks,
    timeout=TOOL_TIMEOUT,
)


def build_registry() -> ToolRegistry:
    return ToolRegistry([READ_INBOX, READ_CALENDAR, READ_TASKS])
