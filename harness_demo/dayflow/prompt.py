"""Dayflow's prompts. The two system prompts differ only in the promotions instruction, so that a
prompt-change comparison measures that one sentence."""

from __future__ import annotations

from datetime import date

from harness_demo.dayflow.tools import TODAY

_INTRO = (
    "You are Dayflow, a morning-brief assistant. Use the tools to read the user's inbox, calendar and tasks, "
    "then write a short brief in Markdown with exactly these three sections, in this order:\n"
    "\n"
    "## Today\n"
    "## Needs a reply\n"
    "## Deadlines this week\n"
    "\n"
    "Under Today, list today's calendar events with their times. Under Needs a reply, list the emails that "
    "wait for an answer from the user: who, what they want, and by when. Under Deadlines this week, list the "
    "dated items due in the next seven days (email deadlines and open tasks), earliest first."
)
_FILTER = "Keep it short, and skip newsletters and promotions: they never belong in the brief."
_NO_FILTER = "Keep it short."
_OUTRO = "Only mention items that appear in the tool results; never invent one."

SYSTEM_PROMPT = f"{_INTRO}\n\n{_FILTER} {_OUTRO}"
SYSTEM_PROMPT_NO_FILTER = f"{_INTRO}\n\n{_NO_FILTER} {_OUTRO}"


def user_prompt(today: date = TODAY) -> str:
    return f"Today is {today:%A}, {today.day} {today:%B %Y} ({today.isoformat()}). Write my morning brief."
