"""The tool sandbox, attacked through the real registry (`registry.run(name, input)`), as a model would.

Every attempt must come back as an `is_error` ToolOutput with a reason, never an exception, never a
hang, and must change nothing: no file read outside the data folder, no byte of the database written,
no file created. tests/test_data_assistant.py covers the plain refusals (../, absolute paths, a symlink
out, INSERT/UPDATE/DELETE/DROP/ATTACH, the basic calculator abuse); this file adds the rest.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.chaos import time_limit
from harness.tools import ToolOutput, ToolRegistry
from harness_demo.data_assistant import build_registry
from harness_demo.data_assistant.calculator import MAX_EXPRESSION_CHARS
from harness_demo.data_assistant.db import ReadOnlyDatabase

SECRET = "TOP SECRET: do not show the model"
CALL_SECONDS = 10  # every refusal here takes milliseconds; a call near this is a hang


@pytest.fixture(scope="module")
def database() -> Iterator[ReadOnlyDatabase]:
    with ReadOnlyDatabase() as database:
        yield database


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory, database: ReadOnlyDatabase) -> tuple[ToolRegistry, Path]:
    """A data folder with hostile neighbours: a secret beside it, links out, a loop, a pipe, a device."""
    base = tmp_path_factory.mktemp("sandbox")
    data = base / "data"
    (data / "notes").mkdir(parents=True)
    (data / "notes" / "ok.txt").write_text("inside", encoding="utf-8")
    (base / "secret.txt").write_text(SECRET, encoding="utf-8")
    (data / "out_dir").symlink_to(base, target_is_directory=True)
    (data / "in_dir").symlink_to(data / "notes", target_is_directory=True)
    (data / "loop_a").symlink_to(data / "loop_b")
    (data / "loop_b").symlink_to(data / "loop_a")
    (data / "zero").symlink_to("/dev/zero")
    (data / "random").symlink_to("/dev/urandom")
    os.mkfifo(data / "pipe")
    with (data / "huge.txt").open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: 50 MB of nothing
    return build_registry(database=database, data_dir=data), data


def call(registry: ToolRegistry, name: str, tool_input: object) -> ToolOutput:
    with time_limit(CALL_SECONDS):
        output = registry.run(name, tool_input)  # the registry promises never to raise
    assert isinstance(output, ToolOutput)
    return output


# ---------------------------------------------------------------------------------------------------
# read_file


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("notes/ok.txt\x00.png", "null byte"),
        ("\x00", "null byte"),
        ("x" * 5000, "too long"),
        ("/".join(["notes"] * 3000) + "/ok.txt", "too long"),
        ("../" * 2000 + "secret.txt", "outside the data folder"),
        ("out_dir/secret.txt", "outside the data folder"),
        ("out_dir/data/out_dir/secret.txt", "outside the data folder"),
        ("loop_a", "loop"),
        ("zero", "outside the data folder"),
        ("random", "outside the data folder"),
        ("pipe", "no file 'pipe'"),
        ("huge.txt", "larger than"),
        ("in_dir", "no file 'in_dir'"),
        ("..\\secret.txt", "no file"),
        ("%2e%2e/secret.txt", "no file"),
        ("file:///etc/passwd", "no file"),
        ("\\\\server\\share\\secret.txt", "no file"),
        ("C:\\Windows\\win.ini", "no file"),
        ("/dev/zero", "absolute paths are refused"),
        ("~root/.ssh/id_rsa", "absolute paths are refused"),
        (" ", "the path is empty"),
    ],
)
def test_read_file_refuses_every_way_out(sandbox: tuple[ToolRegistry, Path], path: str, reason: str) -> None:
    registry, _ = sandbox
    output = call(registry, "read_file", {"path": path})
    assert output.is_error, output.content
    assert reason in output.content, output.content
    assert SECRET not in output.content


def test_read_file_errors_never_tell_the_model_where_the_data_folder_is(sandbox: tuple[ToolRegistry, Path]) -> None:
    """A tool_result is recorded into a committed cassette: the machine's own paths must not be in it."""
    registry, data = sandbox
    for path in ("x" * 5000, "/".join(["notes"] * 3000), "loop_a", "notes/ok.txt\x00", "zero", "missing.txt"):
        output = call(registry, "read_file", {"path": path})
        assert output.is_error
        assert str(data) not in output.content and str(data.parent) not in output.content, output.content[:300]


def test_read_file_follows_a_link_that_stays_inside(sandbox: tuple[ToolRegistry, Path]) -> None:
    registry, _ = sandbox
    output = call(registry, "read_file", {"path": "in_dir/ok.txt"})
    assert not output.is_error and json.loads(output.content)["content"] == "inside"


@pytest.mark.parametrize("tool_input", [{"path": 7}, {"path": ["ok.txt"]}, {"path": None}, {}, "ok.txt", None,
                                        {"path": "ok.txt", "mode": "w"}])
def test_read_file_input_of_the_wrong_shape_is_refused_by_the_schema(
    sandbox: tuple[ToolRegistry, Path], tool_input: object
) -> None:
    registry, _ = sandbox
    assert call(registry, "read_file", tool_input).is_error


# ---------------------------------------------------------------------------------------------------
# calculator


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("lambda: 1", "Lambda is not allowed"),
        ("(lambda x: x)(1)", "function calls are not allowed"),
        ("[x for x in (1, 2)]", "ListComp is not allowed"),
        ("{x for x in (1, 2)}", "SetComp is not allowed"),
        ("{x: 1 for x in (1, 2)}", "DictComp is not allowed"),
        ("sum(x for x in (1, 2))", "function calls are not allowed"),
        ("(x for x in (1,))", "GeneratorExp is not allowed"),
        ("{1: 2}", "Dict is not allowed"),
        ("{1, 2}", "Set is not allowed"),
        ("1, 2", "Tuple is not allowed"),
        ("(y := 9)", "NamedExpr is not allowed"),
        ('f"{7}"', "JoinedStr is not allowed"),
        ("...", "only numbers are allowed"),
        ("3j", "only numbers are allowed"),
        ("b'1'", "only numbers are allowed"),
        ("1 < 2", "Compare is not allowed"),
        ("1 and 2", "BoolOp is not allowed"),
        ("not 1", "Not is not allowed"),
        ("~1", "Invert is not allowed"),
        ("6 | 1", "BitOr is not allowed"),
        ("6 & 1", "BitAnd is not allowed"),
        ("6 ^ 1", "BitXor is not allowed"),
        ("1 >> 1", "RShift is not allowed"),
        ("1 @ 1", "MatMult is not allowed"),
        ("await x", "Await is not allowed"),
        ("*a", "not an arithmetic expression"),
        ("__builtins__", "names are not allowed"),
        ("().__class__.__base__.__subclasses__()", "not allowed"),
        ("1\nimport os", "not an arithmetic expression"),
        ("1 # comment", None),  # fine: a comment is not code
        ("\x00", "null bytes"),
        ("9**9**9", "too large"),
        ("2**2**2**2**2**2", "too large"),
        ("(10**1000) * (10**1000)", "digits; the limit is"),
        ("2**4000 / 1", "too large"),
        ("2**4000 * 1.0", "too large"),
        ("1e308 * 1e308", "not a finite number"),
        ("(2**4000) ** (2**4000)", "too large"),
        ("(" * 100 + "1" + ")" * 100, "the limit is"),
        ("1" * (MAX_EXPRESSION_CHARS + 1), f"the limit is {MAX_EXPRESSION_CHARS}"),
    ],
)
def test_calculator_refuses_code_and_huge_work(database: ReadOnlyDatabase, expression: str, reason: str | None) -> None:
    registry = build_registry(database=database)
    started = time.monotonic()
    output = call(registry, "calculator", {"expression": expression})
    if reason is None:
        assert not output.is_error, output.content
        return
    assert output.is_error, output.content
    assert reason in output.content, output.content
    assert time.monotonic() - started < CALL_SECONDS


def test_calculator_still_computes_what_sits_inside_its_limits(database: ReadOnlyDatabase) -> None:
    registry = build_registry(database=database)
    deep = "(" * 97 + "6*7" + ")" * 97  # 97 levels of parentheses: as deep as 200 characters allow
    cases = ((deep, 42), ("-" * 198 + "5", 5), ("2**4095 // 2**4094", 2), ("1" * 200, int("1" * 200)))
    for expression, expected in cases:
        assert len(expression) <= MAX_EXPRESSION_CHARS
        output = call(registry, "calculator", {"expression": expression})
        assert not output.is_error, output.content
        assert json.loads(output.content)["result"] == expected


# ---------------------------------------------------------------------------------------------------
# query_db


WRITES = [
    "REPLACE INTO users VALUES (1, 'x', 'x@x.example', '2026-01-01', 'active')",
    "INSERT OR IGNORE INTO users (id, username, email, registration_date, status) "
    "VALUES (500, 'eve', 'e@x.example', '2026-01-01', 'active')",
    "INSERT INTO users (id, username, email, registration_date, status) VALUES (1, 'a', 'b', '2026-01-01', "
    "'active') ON CONFLICT(id) DO UPDATE SET status = 'suspended'",
    "WITH doomed AS (SELECT id FROM users) DELETE FROM users WHERE id IN doomed",
    "UPDATE users SET email = 'pwned' WHERE 1 = 1 RETURNING *",
    "DELETE FROM users RETURNING id",
    "CREATE INDEX sneaky ON users(email)",
    "CREATE TRIGGER t AFTER INSERT ON users BEGIN DELETE FROM users; END",
    "CREATE VIEW v AS SELECT * FROM users",
    "CREATE TEMP VIEW v AS SELECT * FROM users",
    "CREATE TEMP TRIGGER t AFTER UPDATE ON users BEGIN SELECT 1; END",
    "CREATE VIRTUAL TABLE temp.ft USING fts5(body)",
    "ALTER TABLE users ADD COLUMN owned INTEGER",
    "ALTER TABLE users RENAME TO gone",
    "REINDEX",
    "ANALYZE",
    "VACUUM",
    "PRAGMA user_version = 7",
    "PRAGMA application_id = 1234",
    "PRAGMA schema_version = 99",
    "PRAGMA journal_mode = WAL",
    "PRAGMA incremental_vacuum",
    "PRAGMA temp.user_version = 3",
    "PRAGMA main.user_version = 3",
    "SELECT load_extension('/tmp/evil')",
    "SELECT 1; PRAGMA user_version = 7",
]


@pytest.mark.parametrize("sql", WRITES)
def test_every_write_is_refused_and_nothing_changes(database: ReadOnlyDatabase, sql: str) -> None:
    registry = build_registry(database=database)
    before = database.path.read_bytes()
    schema = database.query("SELECT type, name, sql FROM sqlite_master").rows
    output = call(registry, "query_db", {"sql": sql})
    assert output.is_error, f"{sql!r} was not refused: {output.content}"
    assert "Table users has columns" in output.content  # the refusal still tells the model what it can read
    assert database.path.read_bytes() == before
    assert database.query("SELECT COUNT(*) FROM users").rows[0][0] > 0
    assert database.query("SELECT type, name, sql FROM sqlite_master").rows == schema
    assert database.query("SELECT name FROM sqlite_temp_master").rows == []


@pytest.mark.parametrize("sql", [
    "ATTACH DATABASE '{target}' AS copy",
    "ATTACH DATABASE 'file:{target}?mode=rwc' AS copy",
    "VACUUM INTO '{target}'",
])
def test_attach_and_vacuum_into_create_no_file(database: ReadOnlyDatabase, tmp_path: Path, sql: str) -> None:
    registry = build_registry(database=database)
    target = tmp_path / "exfiltrated.db"
    output = call(registry, "query_db", {"sql": sql.format(target=target)})
    assert output.is_error, output.content
    assert not target.exists()


def test_writable_schema_cannot_rewrite_the_schema(database: ReadOnlyDatabase) -> None:
    registry = build_registry(database=database)
    before = database.path.read_bytes()
    call(registry, "query_db", {"sql": "PRAGMA writable_schema = ON"})
    output = call(registry, "query_db", {"sql": "UPDATE sqlite_master SET sql = 'CREATE TABLE users(x)'"})
    assert output.is_error and "readonly" in output.content
    call(registry, "query_db", {"sql": "PRAGMA writable_schema = OFF"})
    assert database.path.read_bytes() == before


@pytest.mark.parametrize("tool_input", [{"sql": ""}, {"sql": "SELECT 1 " + " " * 5000}, {"sql": 1}, {},
                                        {"sql": "SELECT 1", "database": "other.db"}])
def test_query_input_of_the_wrong_shape_is_refused_by_the_schema(database: ReadOnlyDatabase,
                                                                 tool_input: object) -> None:
    assert call(build_registry(database=database), "query_db", tool_input).is_error


@pytest.mark.parametrize("sql", [
    "SELECT zeroblob(999999999) FROM users",
    "SELECT randomblob(500000000)",
    "SELECT group_concat(printf('%.*c', 100000, 'x')) FROM users",
    "SELECT printf('%.*c', 900000, 'x') FROM users",  # each value is allowed; together they are too many bytes
])
def test_query_db_is_bounded_in_bytes(database: ReadOnlyDatabase, sql: str) -> None:
    """A value or a result over its byte cap is a tool error, refused before it is built or as it arrives."""
    registry = build_registry(database=database)
    output = call(registry, "query_db", {"sql": sql})
    assert output.is_error, output.content[:200]
    assert "too large" in output.content and "Table users has columns" in output.content


def test_query_db_is_interrupted_at_its_deadline(database: ReadOnlyDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness_demo.data_assistant import db

    monkeypatch.setattr(db, "QUERY_SECONDS", 0.2)
    registry = build_registry(database=database)
    output = call(registry, "query_db", {"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                                                "SELECT count(*) FROM c"})
    assert output.is_error and "ran too long and was stopped" in output.content
