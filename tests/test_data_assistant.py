"""The data assistant's tools on their fixtures, refusals included."""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.tools import ToolRegistry
from harness_demo import data_assistant
from harness_demo.data_assistant import QUESTION, SYSTEM_PROMPT, build_registry, cli, db
from harness_demo.data_assistant.calculator import MAX_EXPRESSION_CHARS, calculate
from harness_demo.data_assistant.db import ReadOnlyDatabase
from harness_demo.data_assistant.tools import DATA_DIR

PACKAGE = Path(data_assistant.__file__).resolve().parent
COLUMNS = "id, username, email, registration_date, status"


def fixture_users() -> list[dict[str, str]]:
    """Read the CSV independently of the package code, as the expected truth."""
    with (PACKAGE / "fixtures" / "users.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def database() -> Iterator[ReadOnlyDatabase]:
    with ReadOnlyDatabase() as database:
        yield database


@pytest.fixture(scope="module")
def registry(database: ReadOnlyDatabase) -> ToolRegistry:
    return build_registry(database=database)


def run(registry: ToolRegistry, name: str, **tool_input: object) -> dict:
    output = registry.run(name, tool_input)
    assert not output.is_error, output.content
    return json.loads(output.content)


# ---- the fixture and query_db ---------------------------------------------------------------------------


def test_the_fixture_is_about_twenty_users_over_2025_and_2026() -> None:
    users = fixture_users()
    assert 15 <= len(users) <= 30
    assert list(users[0]) == COLUMNS.split(", ")
    years = {user["registration_date"][:4] for user in users}
    assert years == {"2025", "2026"}
    assert len({user["id"] for user in users}) == len(users)


def test_query_db_answers_the_question_from_the_real_table(registry: ToolRegistry) -> None:
    expected = sum(user["registration_date"].startswith("2026") for user in fixture_users())
    result = run(registry, "query_db", sql="SELECT COUNT(*) AS n FROM users WHERE registration_date LIKE '2026-%'")
    assert result["columns"] == ["n"]
    assert result["rows"] == [[expected]]
    assert result["row_count"] == 1
    assert result["next_offset"] is None


def test_query_db_returns_every_row_as_in_the_fixture(registry: ToolRegistry) -> None:
    result = run(registry, "query_db", sql="SELECT * FROM users ORDER BY id")
    assert result["columns"] == COLUMNS.split(", ")
    expected = [[int(u["id"]), u["username"], u["email"], u["registration_date"], u["status"]] for u in fixture_users()]
    assert result["rows"] == expected


def test_a_wrong_column_names_the_real_ones(registry: ToolRegistry) -> None:
    output = registry.run("query_db", {"sql": "SELECT COUNT(*) FROM users WHERE created_at >= '2026-01-01'"})
    assert output.is_error
    assert output.content == f"OperationalError: no such column: created_at. Table users has columns: {COLUMNS}"


@pytest.mark.parametrize(
    ("sql", "refusal"),
    [
        ("INSERT INTO users VALUES (99, 'mallory', 'm@mail.example', '2026-09-01', 'active')", "readonly database"),
        ("UPDATE users SET status = 'suspended'", "readonly database"),
        ("DELETE FROM users", "readonly database"),
        ("DROP TABLE users", "readonly database"),
        ("CREATE TABLE notes (x TEXT)", "readonly database"),
        ("ATTACH DATABASE ':memory:' AS scratch", "too many attached databases"),
        ("VACUUM INTO 'copy.db'", "too many attached databases"),
        ("CREATE TEMP TABLE scratch AS SELECT * FROM users", "not authorized"),
        ("SELECT 1; DELETE FROM users", "one statement at a time"),
    ],
)
def test_writes_are_refused_by_sqlite(
    registry: ToolRegistry, database: ReadOnlyDatabase, sql: str, refusal: str
) -> None:
    output = registry.run("query_db", {"sql": sql})
    assert output.is_error
    assert refusal in output.content
    assert f"Table users has columns: {COLUMNS}" in output.content
    # Nothing changed, and the connection still works afterwards.
    assert database.query("SELECT COUNT(*) FROM users").rows[0][0] == len(fixture_users())
    assert database.query("SELECT name FROM sqlite_temp_master").rows == []


def test_the_database_file_itself_is_never_written(registry: ToolRegistry, database: ReadOnlyDatabase) -> None:
    before = database.path.read_bytes()
    registry.run("query_db", {"sql": "DELETE FROM users"})
    registry.run("query_db", {"sql": "PRAGMA user_version = 7"})
    assert database.path.read_bytes() == before


def test_a_runaway_query_is_interrupted(registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db, "QUERY_SECONDS", 0.05)
    output = registry.run(
        "query_db",
        {"sql": "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT COUNT(*) FROM n"},
    )
    assert output.is_error
    assert "interrupted" in output.content
    assert "aggregate or add a LIMIT" in output.content


def test_many_rows_come_in_pages_and_are_capped(registry: ToolRegistry) -> None:
    sql = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT 1500) SELECT x FROM n"
    first = run(registry, "query_db", sql=sql)
    assert first["rows_capped_at"] == db.MAX_ROWS
    assert first["row_count"] == db.MAX_ROWS
    assert first["next_offset"] == len(first["rows"])
    values: list[int] = []
    page = first
    while True:
        values += [row[0] for row in page["rows"]]
        if page["next_offset"] is None:
            break
        page = run(registry, "query_db", sql=sql, offset=page["next_offset"])
    assert values == list(range(1, db.MAX_ROWS + 1))


def test_a_closed_database_removes_its_files() -> None:
    database = ReadOnlyDatabase()
    path = database.path
    assert path.exists()
    database.close()
    assert not path.exists()
    assert not path.parent.exists()


# ---- calculator ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("(12 * 45) + 18", (12 * 45) + 18),
        ("7 / 2", 7 / 2),
        ("7 // 2", 7 // 2),
        ("-7 % 3", -7 % 3),
        ("2 ** 10", 2**10),
        ("2 ** -2", 2**-2),
        ("-(3 - 5) * +4", -(3 - 5) * +4),
        ("12 / 20 * 100", 12 / 20 * 100),
        ("2 ** 0.5", 2**0.5),
    ],
)
def test_calculator_does_arithmetic(registry: ToolRegistry, expression: str, expected: float) -> None:
    assert run(registry, "calculator", expression=expression) == {"expression": expression, "result": expected}


@pytest.mark.parametrize(
    ("expression", "refusal"),
    [
        ("2**10**10", "too large"),
        ("9**999999", "too large"),
        ("10.0 ** 400", "too large"),
        ("1e308 * 10", "not a finite number"),
        ("__import__('os')", "function calls are not allowed"),
        ("(1).__class__", "attribute access is not allowed"),
        ("x + 1", "names are not allowed ('x')"),
        ("'a'*500", "only numbers are allowed"),
        ("'a' * 500 if True else 0", "IfExp is not allowed"),
        ("[1, 2][0]", "indexing is not allowed"),
        ("1 << 100", "LShift is not allowed"),
        ("True + 1", "not a number"),
        ("(-8) ** 0.5", "not a real number"),
        ("1 +", "not an arithmetic expression"),
        ("1; import os", "not an arithmetic expression"),
        ("a" * 500, f"the limit is {MAX_EXPRESSION_CHARS}"),
        ("1+" * 150 + "1", f"the limit is {MAX_EXPRESSION_CHARS}"),
    ],
)
def test_calculator_refuses_with_a_reason(registry: ToolRegistry, expression: str, refusal: str) -> None:
    output = registry.run("calculator", {"expression": expression})
    assert output.is_error
    assert output.content.startswith("CalculatorError: ")
    assert refusal in output.content


def test_calculator_division_by_zero_is_an_error_result(registry: ToolRegistry) -> None:
    output = registry.run("calculator", {"expression": "1 / (2 - 2)"})
    assert output.is_error
    assert output.content == "ZeroDivisionError: division by zero"


def test_calculator_never_evaluates_python() -> None:
    # If this were eval'd, it would return a str or a class; the walk refuses it instead.
    with pytest.raises(ValueError, match="not allowed"):
        calculate("().__class__.__bases__[0].__subclasses__()")


# ---- read_file --------------------------------------------------------------------------------------------


def test_read_file_reads_the_shipped_notes(registry: ToolRegistry) -> None:
    result = run(registry, "read_file", path="schema.md")
    assert result["path"] == "schema.md"
    assert result["content"] == (DATA_DIR / "schema.md").read_text(encoding="utf-8")
    assert "registration_date" in result["content"]
    assert result["offset"] == 0
    assert result["next_offset"] is None


@pytest.fixture
def sandbox(tmp_path: Path, database: ReadOnlyDatabase) -> tuple[ToolRegistry, Path]:
    """A data folder in tmp_path, with a secret next to it and symlinks leading in and out."""
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "notes.txt").write_text("inside", encoding="utf-8")
    (data / "sub" / "deep.txt").write_text("deeper", encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET", encoding="utf-8")
    (data / "escape.txt").symlink_to(secret)
    (data / "escape_dir").symlink_to(tmp_path)
    (data / "alias.txt").symlink_to(data / "notes.txt")
    return build_registry(database=database, data_dir=data), secret


@pytest.mark.parametrize(
    ("path", "refusal"),
    [
        ("../secret.txt", "leads outside the data folder"),
        ("sub/../../secret.txt", "leads outside the data folder"),
        ("../../../../../../etc/passwd", "leads outside the data folder"),
        ("escape.txt", "leads outside the data folder"),
        ("escape_dir/secret.txt", "leads outside the data folder"),
        ("~/secret.txt", "absolute paths are refused"),
        ("", "the path is empty"),
        ("missing.txt", "there is no file 'missing.txt'"),
        ("sub", "there is no file 'sub'"),
    ],
)
def test_read_file_refuses_paths_out_of_its_folder(sandbox: tuple[ToolRegistry, Path], path: str, refusal: str) -> None:
    registry, _ = sandbox
    output = registry.run("read_file", {"path": path})
    assert output.is_error
    assert refusal in output.content
    assert "TOP SECRET" not in output.content
    assert "Files you can read: alias.txt, notes.txt, sub/deep.txt" in output.content


def test_read_file_refuses_an_absolute_path_even_inside_its_folder(sandbox: tuple[ToolRegistry, Path]) -> None:
    registry, secret = sandbox
    for path in (str(secret), str(secret.parent / "data" / "notes.txt"), os.path.abspath("/etc/passwd")):
        output = registry.run("read_file", {"path": path})
        assert output.is_error
        assert output.content.startswith("PermissionError: absolute paths are refused")


def test_read_file_follows_links_and_dots_that_stay_inside(sandbox: tuple[ToolRegistry, Path]) -> None:
    registry, _ = sandbox
    assert run(registry, "read_file", path="alias.txt")["content"] == "inside"
    assert run(registry, "read_file", path="sub/../sub/deep.txt")["content"] == "deeper"


def test_read_file_pages_a_long_file(tmp_path: Path, database: ReadOnlyDatabase) -> None:
    content = "".join(f"note {i}: registration_date is the day of sign-up\n" for i in range(300))
    (tmp_path / "long.txt").write_text(content, encoding="utf-8")
    registry = build_registry(database=database, data_dir=tmp_path)
    text, offset, pages = "", 0, 0
    while offset is not None:
        output = registry.run("read_file", {"path": "long.txt", "offset": offset})
        assert len(output.content) <= 4000
        page = json.loads(output.content)
        text += page["content"]
        offset = page["next_offset"]
        pages += 1
    assert text == content
    assert pages >= 4


# ---- the agent's surface -----------------------------------------------------------------------------------


def test_the_agent_exposes_its_tools_prompt_and_question(registry: ToolRegistry) -> None:
    assert registry.names == ["query_db", "calculator", "read_file"]
    assert "2026" in QUESTION
    for name in registry.names:
        assert name in SYSTEM_PROMPT
    # The prompt does not give the schema away: the self-correction scenario depends on it.
    assert "registration_date" not in SYSTEM_PROMPT
    schemas = {d["name"]: d["input_schema"] for d in registry.definitions()}
    assert schemas["query_db"]["required"] == ["sql"]
    assert schemas["calculator"]["required"] == ["expression"]
    assert schemas["read_file"]["required"] == ["path"]


# ---- the command, end to end through the local simulator ----------------------------------------------


def test_data_assistant_ask_verbose_corrects_its_sql(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    expected = sum(user["registration_date"].startswith("2026") for user in fixture_users())

    assert cli.main(["ask", "-v"]) == 0
    captured = capsys.readouterr()
    tool_lines = [line for line in captured.err.splitlines() if line.startswith("    -> query_db(")]
    assert len(tool_lines) >= 2
    assert "created_at" in tool_lines[0]
    assert tool_lines[0].endswith("(error)")
    assert "registration_date" in tool_lines[-1]
    assert not tool_lines[-1].endswith("(error)")
    assert captured.err.splitlines()[-1].startswith("[3 steps · 2 tool calls · ")
    assert re.search(rf"\b{expected}\b", captured.out)
