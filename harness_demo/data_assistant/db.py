"""The data assistant's database: real SQLite, built from the CSV fixture, then opened read-only.

Read-only is enforced by SQLite, not by inspecting the SQL: the connection is opened with the URI
`mode=ro`, so any write fails with "attempt to write a readonly database", and the limit on attached
databases is zero, so ATTACH (and VACUUM INTO, which attaches) fails too; an authorizer refuses temp
tables, which the read-only flag does not cover. A progress handler stops
runaway queries at their deadline; SQLite's own length limit refuses any one value over
`MAX_VALUE_BYTES` before it is built (so `zeroblob(999999999)` allocates nothing), and a row cap and a
byte cap bound what a whole result can pull into memory.
"""

from __future__ import annotations

import csv
import sqlite3
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

TABLE = "users"
QUERY_SECONDS = 2.0  # a query running longer than this is interrupted
MAX_ROWS = 1000  # rows fetched per query; more means the query should aggregate or LIMIT
MAX_VALUE_BYTES = 1_000_000  # the longest string or blob (and row) SQLite will build for a query
MAX_RESULT_BYTES = 4_000_000  # a result larger than this is refused: aggregate, select less, or LIMIT
_PROGRESS_EVERY = 10_000  # SQLite VM instructions between deadline checks

_CREATE_USERS = """
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    email TEXT NOT NULL,
    registration_date TEXT NOT NULL,  -- ISO 8601 day, YYYY-MM-DD
    status TEXT NOT NULL CHECK (status IN ('active', 'inactive', 'suspended', 'pending'))
)
"""


def fixture_rows() -> list[dict[str, str]]:
    """The users fixture as CSV rows (strings), as shipped in the package."""
    text = (resources.files(__package__) / "fixtures" / "users.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


def build_database(path: Path) -> None:
    """Write the users table from the fixture into a new SQLite file at `path`."""
    rows = fixture_rows()
    with sqlite3.connect(path) as connection:
        connection.execute(_CREATE_USERS)
        connection.executemany(
            "INSERT INTO users (id, username, email, registration_date, status) "
            "VALUES (:id, :username, :email, :registration_date, :status)",
            rows,
        )
    connection.close()


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[list[Any]]
    capped: bool  # more than MAX_ROWS rows matched; only the first MAX_ROWS are here


class ReadOnlyDatabase:
    """The users database in a private temporary directory, behind one read-only connection."""

    def __init__(self) -> None:
        self._directory = tempfile.TemporaryDirectory(prefix="data-assistant-")
        self.path = Path(self._directory.name) / "users.db"
        build_database(self.path)
        # check_same_thread=False: tools with a timeout run in worker threads; the lock serialises them.
        # isolation_level=None: no implicit BEGIN, so a refused write leaves no transaction open behind it.
        self._connection = sqlite3.connect(
            f"{self.path.as_uri()}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
        )
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        self._connection.set_authorizer(_refuse_temp_objects)
        self._lock = threading.Lock()
        self._deadline = 0.0
        self._connection.set_progress_handler(self._past_deadline, _PROGRESS_EVERY)
        self._finalizer = weakref.finalize(self, _close, self._connection, self._directory)

    def query(self, sql: str) -> QueryResult:
        """Run one SQL statement; sqlite3 errors propagate (the tool turns them into is_error results)."""
        with self._lock:
            self._deadline = time.monotonic() + QUERY_SECONDS
            cursor = self._connection.execute(sql)
            try:
                rows = _fetch_bounded(cursor)
            finally:
                cursor.close()
        columns = [column[0] for column in cursor.description or ()]
        return QueryResult(columns, [list(row) for row in rows[:MAX_ROWS]], capped=len(rows) > MAX_ROWS)

    def columns(self, table: str = TABLE) -> list[str]:
        with self._lock:
            self._deadline = time.monotonic() + QUERY_SECONDS
            return [row[1] for row in self._connection.execute(f"PRAGMA table_info({table})")]

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> ReadOnlyDatabase:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _past_deadline(self) -> int:
        # A non-zero return makes SQLite abort the statement with OperationalError("interrupted").
        return int(time.monotonic() > self._deadline)


def _fetch_bounded(cursor: sqlite3.Cursor) -> list[Any]:
    """Up to MAX_ROWS + 1 rows, refusing the result once it passes MAX_RESULT_BYTES (counted as it comes)."""
    rows: list[Any] = []
    size = 0
    while len(rows) <= MAX_ROWS and (batch := cursor.fetchmany(min(100, MAX_ROWS + 1 - len(rows)))):
        for row in batch:
            size += sum(len(value) if isinstance(value, str | bytes) else 8 for value in row)
        if size > MAX_RESULT_BYTES:
            raise sqlite3.DataError(f"the result is over {MAX_RESULT_BYTES:,} bytes and was refused")
        rows.extend(batch)
    return rows


_TEMP_OBJECTS = {
    sqlite3.SQLITE_CREATE_TEMP_TABLE,
    sqlite3.SQLITE_CREATE_TEMP_VIEW,
    sqlite3.SQLITE_CREATE_TEMP_INDEX,
    sqlite3.SQLITE_CREATE_TEMP_TRIGGER,
}


def _refuse_temp_objects(action: int, _arg1: object, _arg2: object, database: str | None, _source: object) -> int:
    # mode=ro covers the database file, not the connection's private temp schema: without this a query
    # could create temp tables that the next query sees, and one tool call would leak state into the next.
    refused = action in _TEMP_OBJECTS or (database == "temp" and action != sqlite3.SQLITE_READ)
    return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK


def _close(connection: sqlite3.Connection, directory: tempfile.TemporaryDirectory[str]) -> None:
    connection.close()
    directory.cleanup()
