"""The tool registry: validation before the call, errors as results, timeouts, windowing."""

from __future__ import annotations

import contextvars
import json
import threading

import pytest
from jsonschema.exceptions import SchemaError

from harness.tools import OFFSET_PROPERTY, Tool, ToolOutput, ToolRegistry, describe_schema, render

LIMIT_SCHEMA = {
    "type": "object",
    "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 50}},
    "required": ["limit"],
    "additionalProperties": False,
}


def make_registry(**tool_options: object) -> tuple[ToolRegistry, list[dict]]:
    """A registry with one `fetch(limit)` tool that records the inputs it was really called with."""
    calls: list[dict] = []

    def fetch(**kwargs: object) -> dict:
        calls.append(kwargs)
        return {"got": kwargs}

    registry = ToolRegistry([Tool("fetch", "Fetch things.", LIMIT_SCHEMA, fetch, **tool_options)])  # type: ignore[arg-type]
    return registry, calls


# ---- definitions and registration -----------------------------------------------------------------


def test_definitions_are_the_api_tools_parameter_in_registration_order() -> None:
    registry = ToolRegistry()

    @registry.tool(input_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    def second(x: int = 0) -> int:
        """Doubles x."""
        return 2 * x

    registry.add(Tool("first", "The first.", {"type": "object", "properties": {}}, lambda: 1))

    definitions = registry.definitions()
    assert [d["name"] for d in definitions] == ["second", "first"]
    assert definitions[0] == {
        "name": "second",
        "description": "Doubles x.",
        "input_schema": {"type": "object", "properties": {"x": {"type": "integer"}}},
    }
    assert all(set(d) == {"name", "description", "input_schema"} for d in definitions)
    assert registry.names == ["second", "first"]
    assert "second" in registry
    assert "third" not in registry
    # The decorator hands the function back unchanged.
    assert second(x=4) == 8


def test_a_paged_tool_gets_an_offset_property_and_a_paging_hint() -> None:
    registry = ToolRegistry([Tool("pages", "Many rows.", LIMIT_SCHEMA, lambda limit: [], paged=True)])
    (definition,) = registry.definitions()
    assert definition["input_schema"]["properties"]["offset"] == OFFSET_PROPERTY
    assert definition["input_schema"]["properties"]["limit"] == LIMIT_SCHEMA["properties"]["limit"]
    assert "next_offset" in definition["description"]
    # The caller's schema object is not modified.
    assert "offset" not in LIMIT_SCHEMA["properties"]


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        (Tool("bad name!", "", {"type": "object"}, print), "must match"),
        (Tool("arrays", "", {"type": "array"}, print), "type 'object'"),
        (Tool("tiny", "", {"type": "object"}, print, max_chars=0), "max_chars"),
    ],
)
def test_bad_definitions_are_refused_at_registration(tool: Tool, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        ToolRegistry([tool])


def test_duplicate_names_and_invalid_schemas_are_refused() -> None:
    registry = ToolRegistry([Tool("once", "", {"type": "object"}, print)])
    with pytest.raises(ValueError, match="already registered"):
        registry.add(Tool("once", "", {"type": "object"}, print))
    with pytest.raises(SchemaError):
        registry.add(Tool("broken", "", {"type": "object", "properties": {"x": {"type": "integr"}}}, print))


# ---- validation -----------------------------------------------------------------------------------


def test_a_wrong_type_names_the_json_path_and_the_expected_shape() -> None:
    registry, calls = make_registry()
    output = registry.run("fetch", {"limit": "ten"})
    assert output.is_error
    assert "input.limit: 'ten' is not of type 'integer' (expected: integer, minimum 1, maximum 50)" in output.content
    assert calls == []  # validated BEFORE the function runs


def test_out_of_range_missing_and_unexpected_properties_are_explained() -> None:
    registry, calls = make_registry()

    too_big = registry.run("fetch", {"limit": 500})
    assert too_big.is_error
    assert "input.limit: 500 is greater than the maximum of 50" in too_big.content

    missing = registry.run("fetch", {})
    assert missing.is_error
    assert "input: 'limit' is a required property" in missing.content
    assert "limit (integer, minimum 1, maximum 50, required)" in missing.content

    unexpected = registry.run("fetch", {"limit": 2, "lmit": 3})
    assert unexpected.is_error
    assert "'lmit' was unexpected" in unexpected.content
    assert "no other properties" in unexpected.content
    assert calls == []


def test_nested_paths_point_at_the_bad_item() -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 3}}},
    }
    registry = ToolRegistry([Tool("tag", "", schema, lambda tags: tags)])
    output = registry.run("tag", {"tags": ["ok", "much too long"]})
    assert output.is_error
    assert "input.tags[1]: 'much too long' is too long (expected: string, at most 3 characters)" in output.content


def test_an_input_that_is_not_an_object_is_an_error_not_a_crash() -> None:
    registry, calls = make_registry()
    for bad in (None, [1, 2], "limit=3", 7):
        output = registry.run("fetch", bad)
        assert output.is_error
        assert "is not of type 'object'" in output.content
    assert calls == []


def test_valid_input_reaches_the_function() -> None:
    registry, calls = make_registry()
    output = registry.run("fetch", {"limit": 3})
    assert output == ToolOutput(content='{"got":{"limit":3}}', is_error=False)
    assert calls == [{"limit": 3}]


def test_describe_schema_covers_enums_and_bounds() -> None:
    assert describe_schema({"enum": ["a", "b"]}) == 'one of "a", "b"'
    assert describe_schema({"type": "string", "minLength": 1, "pattern": "^x"}) == (
        "string, at least 1 characters, matching ^x"
    )
    assert describe_schema({"type": ["integer", "null"], "exclusiveMinimum": 0}) == "integer or null, greater than 0"


# ---- unknown tools and failures ---------------------------------------------------------------------


def test_an_unknown_tool_lists_the_tools_that_exist() -> None:
    registry = ToolRegistry(
        [Tool("read_inbox", "", {"type": "object"}, dict), Tool("read_tasks", "", {"type": "object"}, dict)]
    )
    output = registry.run("read_email", {})
    assert output.is_error
    assert "read_email" in output.content
    assert "Available tools: read_inbox, read_tasks" in output.content


def test_an_exception_in_a_tool_comes_back_with_its_type_and_message() -> None:
    def explode() -> None:
        raise FileNotFoundError("no such mailbox: archive")

    registry = ToolRegistry([Tool("explode", "", {"type": "object"}, explode)])
    assert registry.run("explode", {}) == ToolOutput("FileNotFoundError: no such mailbox: archive", is_error=True)


def test_an_exception_in_a_worker_thread_is_reported_the_same_way() -> None:
    def explode() -> None:
        raise ValueError("bad value")

    registry = ToolRegistry([Tool("explode", "", {"type": "object"}, explode, timeout=30.0)])
    assert registry.run("explode", {}) == ToolOutput("ValueError: bad value", is_error=True)


def test_a_result_that_is_not_json_is_an_error() -> None:
    registry = ToolRegistry(
        [
            Tool("a_set", "", {"type": "object"}, lambda: {1, 2}),
            Tool("nan", "", {"type": "object"}, lambda: {"x": float("nan")}),
        ]
    )
    for name in ("a_set", "nan"):
        output = registry.run(name, {})
        assert output.is_error
        assert f"{name} returned a result that is not JSON" in output.content


def test_a_slow_tool_times_out_as_an_error_result() -> None:
    release = threading.Event()
    finished = threading.Event()

    def read_inbox() -> dict:
        release.wait(30)
        finished.set()
        return {}

    registry = ToolRegistry([Tool("read_inbox", "", {"type": "object"}, read_inbox, timeout=0.05)])
    output = registry.run("read_inbox", {})
    release.set()
    assert output == ToolOutput("TimeoutError: read_inbox took longer than 0.05 s", is_error=True)
    assert finished.wait(30)  # the abandoned worker still ends on its own


def test_a_tool_with_a_timeout_returns_its_result_and_sees_the_callers_context() -> None:
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")
    request_id.set("req-42")
    seen: list[str] = []

    def whoami() -> dict:
        seen.append(threading.current_thread().name)
        return {"request_id": request_id.get()}

    registry = ToolRegistry([Tool("whoami", "", {"type": "object"}, whoami, timeout=30.0)])
    assert registry.run("whoami", {}) == ToolOutput('{"request_id":"req-42"}')
    assert seen == ["tool-whoami"]


# ---- results: rendering and windowing -----------------------------------------------------------------


def test_results_are_compact_stable_json_and_strings_pass_through() -> None:
    data = {"b": [1, 2], "a": "é"}
    assert render(data) == '{"b":[1,2],"a":"é"}'
    assert render(data) == render(json.loads(render(data)))
    registry = ToolRegistry([Tool("say", "", {"type": "object"}, lambda: "plain text")])
    assert registry.run("say", {}) == ToolOutput("plain text")


def test_a_small_result_is_returned_whole() -> None:
    rows = [{"id": i} for i in range(5)]
    registry = ToolRegistry([Tool("rows", "", {"type": "object"}, lambda: {"rows": rows}, max_chars=500)])
    assert json.loads(registry.run("rows", {}).content) == {"rows": rows}


def test_a_large_list_is_cut_to_whole_items_and_says_how_to_see_more() -> None:
    items = [{"id": i, "name": f"item number {i}"} for i in range(100)]
    registry = ToolRegistry([Tool("everything", "", {"type": "object"}, lambda: items, max_chars=300)])
    output = registry.run("everything", {})
    assert not output.is_error
    assert len(output.content) <= 300
    data = json.loads(output.content)
    shown = data["items"]
    assert 0 < len(shown) < 100
    assert shown == items[: len(shown)]
    assert data["total"] == 100
    assert "next_offset" not in data  # this tool has no offset input: paging would be a lie
    assert "does not page" in data["note"]


def test_paged_results_walk_every_item_exactly_once() -> None:
    rows = [[i, f"user{i}", f"user{i}@mail.example"] for i in range(250)]

    def query() -> dict:
        return {"columns": ["id", "username", "email"], "rows": rows, "row_count": len(rows)}

    registry = ToolRegistry([Tool("query", "", {"type": "object"}, query, max_chars=700, paged=True)])
    collected: list[list] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        output = registry.run("query", {"offset": offset})
        assert not output.is_error
        assert len(output.content) <= 700
        page = json.loads(output.content)
        assert page["offset"] == offset
        assert page["columns"] == ["id", "username", "email"]  # the small parts stay whole
        assert page["row_count"] == 250
        if page["next_offset"] is not None:
            assert f"offset={page['next_offset']}" in page["note"]
        collected += page["rows"]
        offset = page["next_offset"]
        pages += 1
    assert collected == rows
    assert pages > 1


def test_a_paged_result_that_fits_still_says_it_is_the_last_page() -> None:
    registry = ToolRegistry([Tool("few", "", {"type": "object"}, lambda: {"rows": [1, 2]}, paged=True)])
    assert json.loads(registry.run("few", {}).content) == {"rows": [1, 2], "offset": 0, "next_offset": None}
    past_the_end = json.loads(registry.run("few", {"offset": 10}).content)
    assert past_the_end["rows"] == []
    assert past_the_end["next_offset"] is None


def test_paged_text_reassembles_exactly() -> None:
    content = "".join(f'line {i}: "quoted" \\ back\n' for i in range(200))
    registry = ToolRegistry(
        [Tool("read", "", {"type": "object"}, lambda: {"path": "f.txt", "content": content}, max_chars=400, paged=True)]
    )
    text, offset = "", 0
    while offset is not None:
        output = registry.run("read", {"offset": offset})
        assert len(output.content) <= 400
        page = json.loads(output.content)
        assert page["path"] == "f.txt"
        text += page["content"]
        offset = page["next_offset"]
    assert text == content


def test_an_item_too_long_for_a_window_is_cut_but_paging_moves_on() -> None:
    items = [{"blob": "x" * 1000}, {"small": 1}]
    registry = ToolRegistry([Tool("blobs", "", {"type": "object"}, lambda: items, max_chars=200, paged=True)])
    first = json.loads(registry.run("blobs", {}).content)
    assert len(render(first)) <= 200
    assert first["items"][0].startswith('{"blob":"xxx')
    assert "too long" in first["note"]
    assert first["next_offset"] == 1
    second = json.loads(registry.run("blobs", {"offset": 1}).content)
    assert second["items"] == [{"small": 1}]
    assert second["next_offset"] is None


def test_a_large_result_with_no_list_or_string_to_window_is_cut_as_text() -> None:
    nested = {"a": {"b": {"c": "y" * 5000}}}
    registry = ToolRegistry([Tool("deep", "", {"type": "object"}, lambda: nested, max_chars=120)])
    output = registry.run("deep", {})
    assert not output.is_error
    assert len(output.content) <= 120
    assert output.content.startswith('{"a":{"b":{"c":"yyy')
    assert "ask for less" in output.content
