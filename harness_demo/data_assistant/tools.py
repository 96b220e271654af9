"""The data assistant's tools: query_db (read-only SQLite), calculator (AST walk) and read_file (data folder)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.tools import Tool, ToolRegistry
from harness_demo.data_assistant.calculator import calculate
from harness_demo.data_assistant.db import MAX_ROWS, TABLE, ReadOnlyDatabase

DATA_DIR = Path(__file__).resolve().parent / "data"  # what read_file may read
MAX_FILE_BYTES = 1_000_000
QUERY_TIMEOUT = 5.0  # the database interrupts a query after db.QUERY_SECONDS; this is the backstop
QUICK_TIMEOUT = 2.0


def make_query_db(database: ReadOnlyDatabase) -> Callable[..., dict[str, Any]]:
    def query_db(sql: str) -> dict[str, Any]:
        try:
            result = database.query(sql)
        except sqlite3.Error as exc:
            # Same exception type, so the model reads "OperationalError: no such column: created_at. ..."
            raise type(exc)(f"{exc}. {_database_hint(database, exc)}") from None
        answer: dict[str, Any] = {
            "columns": result.columns,
            "rows": [_jsonable_row(r) for r in result.rows],
            "row_count": len(result.rows),
        }
        if result.capped:
            answer["rows_capped_at"] = MAX_ROWS  # more rows matched: aggregate or add a LIMIT
        return answer

    return query_db


def _database_hint(database: ReadOnlyDatabase, exc: sqlite3.Error) -> str:
    hint = f"Table {TABLE} has columns: {', '.join(database.columns())}"
    text = str(exc)
    if "readonly" in text or "attached" in text or "not authorized" in text:
        hint += ". The database is read-only: only SELECT queries work"
    elif "interrupted" in text:
        hint += ". The query ran too long and was stopped: aggregate or add a LIMIT"
    elif "too big" in text or "bytes and was refused" in text:
        hint += ". The result is too large: aggregate, select fewer or shorter columns, or add a LIMIT"
    return hint


def _jsonable_row(row: list[Any]) -> list[Any]:
    return [f"<{len(value)} bytes>" if isinstance(value, bytes) else value for value in row]


def calculator(expression: str) -> dict[str, Any]:
    return {"expression": expression, "result": calculate(expression)}


def make_read_file(root: Path) -> Callable[..., dict[str, Any]]:
    """read_file confined to `root`: the resolved path (symlinks followed) must stay inside it."""
    root = root.resolve(strict=True)

    def read_file(path: str) -> dict[str, Any]:
        readable = f"Files you can read: {', '.join(_listing(root)) or '(none)'}"
        if not path.strip():
            raise ValueError(f"the path is empty. {readable}")
        if Path(path).is_absolute() or path.startswith("~"):
            raise PermissionError(f"absolute paths are refused: give a path inside the data folder. {readable}")
        try:
            target = (root / path).resolve()
            inside = target.is_relative_to(root)
            is_file = inside and target.is_file()
        except (OSError, RuntimeError) as exc:
            # A name too long, a symlink loop: the OS's own message names this machine's absolute paths,
            # and a tool_result ends up in a committed cassette. Say what went wrong without them.
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "it is a symlink loop"
            raise OSError(f"{path!r} cannot be read: {reason}. {readable}") from None
        if not inside:
            raise PermissionError(f"{path!r} leads outside the data folder. {readable}")
        if not is_file:
            raise FileNotFoundError(f"there is no file {path!r} in the data folder. {readable}")
        if target.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"{path!r} is larger than {MAX_FILE_BYTES:,} bytes")
        # O_NOFOLLOW: if the last component became a symlink since the check above, refuse to follow it.
        descriptor = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with open(descriptor, encoding="utf-8") as handle:
            return {"path": path, "content": handle.read()}

    return read_file


def _listing(root: Path) -> list[str]:
    files = []
    for candidate in sorted(root.rglob("*")):
        if candidate.is_file() and candidate.resolve().is_relative_to(root):
            files.append(candidate.relative_to(root).as_posix())
    return files


def _object(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def build_registry(*, database: ReadOnlyDatabase | None = None, data_dir: Path = DATA_DIR) -> ToolRegistry:
    """The three tools. Without `database`, a fresh read-only database is built (deleted when unused)."""
    database = database or ReadOnlyDatabase()
    return ToolRegistry(
        [
            Tool(
                name="query_db",
                description=(
                    "Run one read-only SQL query (SQLite dialect) on the users database and get the columns and "
                    "rows. Writes are refused."
                ),
                input_schema=_object(
                    ["sql"],
                    sql={
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 5000,
                        "description": "One SQL SELECT statement.",
                    },
                ),
                function=make_query_db(database),
                timeout=QUERY_TIMEOUT,
                paged=True,
            ),
            Tool(
                name="calculator",
                description=(
                    "Evaluate an arithmetic expression: numbers, + - * / // % ** and parentheses, "
                    "at most 200 characters."
                ),
                input_schema=_object(
                    ["expression"],
                    expression={"type": "string", "minLength": 1, "description": "For example (12 * 45) + 18"},
                ),
                function=calculator,
                timeout=QUICK_TIMEOUT,
            ),
            Tool(
                name="read_file",
                description="Read a text file from the data folder (notes about the database), by relative path.",
                input_schema=_object(["path"], path={"type": "string", "description": "Relative path, e.g. schema.md"}),
                function=make_read_file(data_dir),
                timeout=QUICK_TIMEOUT,
                paged=True,
            ),
        ]
    )
