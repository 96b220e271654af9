"""The scripted data assistant: a wrong first query, a correction read from the error, then the answer.

It first counts users by `created_at` (a column the users table does not have), reads the is_error
result that names the real columns, retries with the date column it finds there (registration_date),
and answers with the count from the rows. A first query that succeeds is answered directly; a
correction that fails too ends the turn with the error, so a run never loops here.
"""

from __future__ import annotations

import re
from typing import Any

from harness.sim.conversation import Conversation, Reply, ToolExchange, text_block, tool_use_block

WRONG_COLUMN = "created_at"


def _query(column: str, year: str) -> str:
    return f"SELECT COUNT(*) FROM users WHERE strftime('%Y', {column}) = '{year}'"


def _year(conversation: Conversation) -> str:
    match = re.search(r"\b(19|20)\d{2}\b", conversation.last_user_text or conversation.first_user_text)
    return match.group(0) if match else "2026"


def _sql_argument(conversation: Conversation) -> str:
    """The name of query_db's SQL parameter, read from its schema ("sql" unless it says otherwise)."""
    schema = (conversation.tool("query_db") or {}).get("input_schema") or {}
    properties = schema.get("properties") or {}
    if "sql" in properties or not properties:
        return "sql"
    required = schema.get("required") or list(properties)
    return str(required[0])


def _columns_named_in(error_text: str) -> list[str]:
    match = re.search(r"columns?\s*(?:are|:)\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)", error_text)
    return [name.strip() for name in match.group(1).split(",")] if match else []


def _date_column(columns: list[str], failed: str) -> str | None:
    candidates = [name for name in columns if name != failed]
    for pattern in (r"regist", r"date", r"_at$|time|created|joined|signup"):
        found = [name for name in candidates if re.search(pattern, name, re.IGNORECASE)]
        if found:
            return found[0]
    return None


def _count(exchange: ToolExchange) -> Any:
    data = exchange.result_json()
    if isinstance(data, dict) and isinstance(data.get("rows"), list) and data["rows"]:
        first = data["rows"][0]
        return first[0] if isinstance(first, list) and first else first
    return None


def sql(conversation: Conversation) -> Reply:
    year = _year(conversation)
    if "query_db" not in conversation.tool_names:
        return Reply([text_block("I need a query_db tool to look that up.")], "end_turn")
    argument = _sql_argument(conversation)
    calls = conversation.calls_to("query_db")
    if not calls:
        return Reply(
            [
                text_block("Let me count the users registered that year."),
                tool_use_block("query_db", {argument: _query(WRONG_COLUMN, year)}),
            ],
            "tool_use",
        )
    last = calls[-1]
    count = _count(last)
    if count is not None and not last.is_error:
        corrected = len(calls) > 1
        note = (
            f" (The users table has no {WRONG_COLUMN} column, so I counted by "
            f"{_corrected_column(last)} instead.)"
            if corrected
            else ""
        )
        return Reply([text_block(f"{count} users registered in {year}.{note}")], "end_turn")
    error_text = last.result_text or ""
    failed = re.search(r"no such column:\s*(\w+)", error_text)
    column = _date_column(_columns_named_in(error_text), failed.group(1) if failed else WRONG_COLUMN)
    if len(calls) == 1 and column:
        return Reply(
            [
                text_block(f"There is no {WRONG_COLUMN} column; the table has {column}. Retrying with it."),
                tool_use_block("query_db", {argument: _query(column, year)}),
            ],
            "tool_use",
        )
    first_line = error_text.strip().splitlines()[0] if error_text.strip() else "no usable result"
    return Reply([text_block(f"I could not count the users: {first_line}")], "end_turn")


def _corrected_column(exchange: ToolExchange) -> str:
    statement = next(iter(exchange.input.values()), "") if isinstance(exchange.input, dict) else ""
    match = re.search(r"strftime\('%Y',\s*(\w+)\)", str(statement))
    return match.group(1) if match else "another column"
