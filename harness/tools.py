"""The tool registry: what the model may call, checked before it runs, answered as data.

Every tool has a name, a description, a JSON Schema for its input and a Python function. `run`
validates the input (Draft 2020-12) before the function runs, calls it (in a worker thread when the
tool has a timeout), serialises the JSON result compactly and cuts large results into windows. Every
failure comes back as `ToolOutput(is_error=True)` with a message the model can act on, so a bad call
is one more turn of the conversation rather than a crash of the loop: `run` never raises.

Windowing: a result longer than the tool's `max_chars` is cut. When the result is a list, or a dict
whose bulk is one list (or one string), the cut keeps whole items (or characters) of that part. A tool
declared `paged=True` gets an `offset` input property from the registry; the registry takes the offset
out of the input, calls the function for the whole result and returns the window that starts there,
with `offset` and `next_offset` (null on the last page) added to the result.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

DEFAULT_MAX_CHARS = 4000
# The Messages API's rule for tool names.
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_MAX_REPORTED_ERRORS = 5

OFFSET_PROPERTY: dict[str, Any] = {
    "type": "integer",
    "minimum": 0,
    "description": "Where the page starts: 0 for the first page, then the next_offset of the previous result.",
}
_PAGING_HINT = " Large results come in pages: when next_offset is not null, call again with offset=next_offset."


@dataclass(frozen=True)
class ToolOutput:
    content: str  # text for tool_result.content; JSON text when the tool returns data
    is_error: bool = False


@dataclass
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]  # JSON Schema of an object
    function: Callable[..., Any]  # called with **input; returns JSON-able data
    timeout: float | None = None  # seconds; None = run in the caller's thread, no limit
    max_chars: int = DEFAULT_MAX_CHARS
    paged: bool = False  # the registry adds an `offset` input and pages the result


@dataclass(frozen=True)
class _Entry:
    tool: Tool
    schema: dict[str, Any]  # the schema the model sees (with `offset` when paged)
    validator: Draft202012Validator


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._entries: dict[str, _Entry] = {}
        for tool in tools:
            self.add(tool)

    @property
    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, tool: Tool) -> None:
        """Register a tool. A bad definition is a programming error and raises ValueError here, once."""
        if not _TOOL_NAME.match(tool.name):
            raise ValueError(f"tool name {tool.name!r} must match {_TOOL_NAME.pattern}")
        if tool.name in self._entries:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        if tool.input_schema.get("type") != "object":
            raise ValueError(f"tool {tool.name!r}: input_schema must have type 'object'")
        if tool.max_chars < 1:
            raise ValueError(f"tool {tool.name!r}: max_chars must be positive")
        Draft202012Validator.check_schema(tool.input_schema)
        schema = _with_offset(tool.input_schema) if tool.paged else tool.input_schema
        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        self._entries[tool.name] = _Entry(tool, schema, validator)

    def tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        timeout: float | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        paged: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: register a function as a tool (name and description default to its own)."""

        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            self.add(
                Tool(
                    name=name or function.__name__,
                    description=description or inspect.getdoc(function) or "",
                    input_schema=input_schema or {"type": "object", "properties": {}},
                    function=function,
                    timeout=timeout,
                    max_chars=max_chars,
                    paged=paged,
                )
            )
            return function

        return register

    def definitions(self) -> list[dict[str, Any]]:
        """The `tools` parameter of a Messages API request, in registration order."""
        return [
            {
                "name": entry.tool.name,
                "description": entry.tool.description + (_PAGING_HINT if entry.tool.paged else ""),
                "input_schema": entry.schema,
            }
            for entry in self._entries.values()
        ]

    def run(self, name: str, tool_input: Any) -> ToolOutput:
        """Validate, call and serialise. Never raises: every failure is an is_error output."""
        try:
            return self._run(name, tool_input)
        except Exception as exc:  # the contract: a tool failure is data for the model, not a crash
            return _error(exc)

    def _run(self, name: str, tool_input: Any) -> ToolOutput:
        entry = self._entries.get(name)
        if entry is None:
            available = ", ".join(self._entries) or "(none)"
            return ToolOutput(
                f"UnknownTool: there is no tool named {name!r}. Available tools: {available}", is_error=True
            )
        problems = _validation_problems(entry.validator, tool_input)
        if problems:
            return ToolOutput(f"InvalidInput for {name}: " + "; ".join(problems), is_error=True)

        tool = entry.tool
        arguments = dict(tool_input)
        offset = arguments.pop("offset", 0) if tool.paged else 0
        result = _call(tool, arguments)
        try:
            windowed = window(result, offset=offset, paged=tool.paged, max_chars=tool.max_chars, tool_name=name)
            return ToolOutput(render(windowed))
        except (TypeError, ValueError) as exc:  # json.dumps: a set, an object, a NaN...
            return ToolOutput(f"{type(exc).__name__}: {name} returned a result that is not JSON ({exc})", is_error=True)


def render(data: Any) -> str:
    """Compact, stable JSON text (keys keep the tool's order); a plain string passes through as text."""
    if isinstance(data, str):
        return data
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _error(exc: BaseException) -> ToolOutput:
    return ToolOutput(f"{type(exc).__name__}: {exc}", is_error=True)


def _with_offset(schema: dict[str, Any]) -> dict[str, Any]:
    properties = {**schema.get("properties", {}), "offset": OFFSET_PROPERTY}
    return {**schema, "properties": properties}


# ---- validation messages -------------------------------------------------------------------------


def _validation_problems(validator: Draft202012Validator, tool_input: Any) -> list[str]:
    errors = sorted(validator.iter_errors(tool_input), key=lambda e: (_json_path(e), e.message))
    problems = [f"{_json_path(e)}: {e.message} (expected: {describe_schema(e.schema)})" for e in errors]
    if len(problems) > _MAX_REPORTED_ERRORS:
        hidden = len(problems) - _MAX_REPORTED_ERRORS
        problems = [*problems[:_MAX_REPORTED_ERRORS], f"and {hidden} more"]
    return problems


def _json_path(error: ValidationError) -> str:
    path = "input"
    for part in error.absolute_path:
        if isinstance(part, int):
            path += f"[{part}]"
        elif str(part).isidentifier():
            path += f".{part}"
        else:
            path += f"[{json.dumps(part)}]"
    return path


_CONSTRAINTS: tuple[tuple[str, str], ...] = (
    ("minimum", "minimum {}"),
    ("maximum", "maximum {}"),
    ("exclusiveMinimum", "greater than {}"),
    ("exclusiveMaximum", "less than {}"),
    ("multipleOf", "a multiple of {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("pattern", "matching {}"),
    ("format", "format {}"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
)


def describe_schema(schema: Any, *, nested: bool = False) -> str:
    """A schema in a few words, for error messages: 'integer, minimum 1, maximum 50'."""
    if schema is True:
        return "any value"
    if not isinstance(schema, dict):
        return "no value at all"
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    if "const" in schema:
        return f"exactly {json.dumps(schema['const'])}"
    kind = schema.get("type")
    parts = [" or ".join(kind) if isinstance(kind, list) else kind] if kind else []
    parts += [template.format(schema[key]) for key, template in _CONSTRAINTS if key in schema]
    if "items" in schema and isinstance(schema["items"], dict) and not nested:
        parts.append(f"items: {describe_schema(schema['items'], nested=True)}")
    if kind == "object" and not nested:
        parts.append(_describe_properties(schema))
    return ", ".join(parts) if parts else "see the tool's input_schema"


def _describe_properties(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", []))
    properties = schema.get("properties", {})
    if not properties:
        return "no properties"
    described = [
        f"{name} ({describe_schema(sub, nested=True)}{', required' if name in required else ''})"
        for name, sub in properties.items()
    ]
    text = "properties " + "; ".join(described)
    if schema.get("additionalProperties") is False:
        text += "; no other properties"
    return text


# ---- calling -------------------------------------------------------------------------------------


def _call(tool: Tool, arguments: dict[str, Any]) -> Any:
    if tool.timeout is None:
        return tool.function(**arguments)
    # A worker thread, so a slow tool cannot hold the loop. Python cannot kill a thread: a tool that
    # times out keeps running in the background (daemon, so it never blocks interpreter exit).
    outcome: dict[str, Any] = {}
    finished = threading.Event()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            outcome["value"] = context.run(tool.function, **arguments)
        except Exception as exc:
            outcome["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=work, name=f"tool-{tool.name}", daemon=True).start()
    if not finished.wait(tool.timeout):
        raise TimeoutError(f"{tool.name} took longer than {float(tool.timeout)} s")
    if "error" in outcome:
        raise outcome["error"]
    if "value" not in outcome:
        raise RuntimeError(f"{tool.name} stopped without returning a result")
    return outcome["value"]


# ---- windowing -----------------------------------------------------------------------------------


def window(
    data: Any, *, offset: int = 0, paged: bool = False, max_chars: int = DEFAULT_MAX_CHARS, tool_name: str = "the tool"
) -> Any:
    """The part of `data` to send back: all of it when it fits, else a window of at most max_chars.

    A paged result always carries `offset` and `next_offset`. Progress is guaranteed: a window holds
    at least one item (cut to size when that single item is too long) or one character.
    """
    if not paged and len(render(data)) <= max_chars:
        return data
    key = _bulk_key(data)
    if key is _NO_BULK:
        return _cut_text(render(data), max_chars)
    bulk = data if key is None else data[key]
    if isinstance(bulk, str):
        return _window_text(data, key, bulk, offset, paged, max_chars, tool_name)
    return _window_items(data, key, bulk, offset, paged, max_chars, tool_name)


_NO_BULK = object()


def _bulk_key(data: Any) -> Any:
    """Which part to window: None for the value itself, a dict key for its biggest list or string."""
    if isinstance(data, list | str):
        return None
    if isinstance(data, dict):
        candidates = [(len(render(v)), k) for k, v in data.items() if isinstance(v, list | str)]
        if candidates:
            return max(candidates, key=lambda pair: pair[0])[1]
    return _NO_BULK


def _envelope(data: Any, key: Any, part: Any, default_key: str) -> dict[str, Any]:
    if key is None:
        return {default_key: part}
    return {**data, key: part}


def _window_items(
    data: Any, key: Any, items: list[Any], offset: int, paged: bool, max_chars: int, tool_name: str
) -> dict[str, Any]:
    start = offset if paged else 0
    total = len(items)

    def build(count: int, cut_single: str | None = None) -> dict[str, Any]:
        page = [cut_single] if cut_single is not None else items[start : start + count]
        end = start + len(page)
        result = _envelope(data, key, page, "items")
        if key is None:
            result["total"] = total
        if paged:
            result["offset"] = start
            result["next_offset"] = end if end < total else None
        if end < total or cut_single is not None:
            result["note"] = _items_note(start, end, total, paged, tool_name, cut_single is not None)
        return result

    # Greedy estimate from the item sizes, then adjust on the real envelope (its note varies with the count).
    budget = max_chars - len(render(build(0)))
    count, used = 0, 0
    for item in items[start:]:
        used += len(render(item)) + 1
        if used > budget:
            break
        count += 1
    while start + count < total and len(render(build(count + 1))) <= max_chars:
        count += 1
    while count > 0 and len(render(build(count))) > max_chars:
        count -= 1
    if count == 0 and start < total:
        # One item alone is too long: send it as cut JSON text so the model still sees something.
        text = render(items[start])
        room = max(1, max_chars - len(render(build(1, cut_single=""))) - 1)
        while room > 1 and len(render(build(1, cut_single=text[:room] + "…"))) > max_chars:
            room -= 1  # escaping made the cut text longer than its character count
        return build(1, cut_single=text[:room] + "…")
    return build(count)


def _items_note(start: int, end: int, total: int, paged: bool, tool_name: str, cut: bool) -> str:
    shown = f"items {start}..{end - 1} of {total}" if end > start else f"no items (offset {start} of {total})"
    if cut:
        shown += " (that item is too long: it was cut)"
    if end >= total:
        return f"showing {shown}"
    if paged:
        return f"showing {shown}; call {tool_name} again with offset={end} for the next page"
    return f"showing {shown}; {tool_name} does not page, so ask for less to see the rest"


def _window_text(data: Any, key: Any, text: str, offset: int, paged: bool, max_chars: int, tool_name: str) -> Any:
    start = offset if paged else 0
    total = len(text)
    if key is None and not paged:
        return _cut_text(text, max_chars)

    def build(length: int) -> dict[str, Any]:
        end = min(total, start + length)
        result = _envelope(data, key, text[start:end], "text")
        if paged:
            result["offset"] = start
            result["next_offset"] = end if end < total else None
        if end < total:
            where = f"characters {start}..{end - 1} of {total}"
            result["note"] = (
                f"showing {where}; call {tool_name} again with offset={end} for the next page"
                if paged
                else f"showing {where}; {tool_name} does not page, so ask for less to see the rest"
            )
        return result

    length = max(1, max_chars - len(render(build(0))))
    # Escaping (quotes, newlines) makes the JSON longer than the text: shrink by the overflow.
    while length > 1 and len(render(build(length))) > max_chars:
        length = max(1, length - (len(render(build(length))) - max_chars))
    return build(length)


def _cut_text(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    marker = f"… [cut: {len(text)} characters, showing the first {{}}; ask for less to see the rest]"
    keep = max(1, max_chars - len(marker.format(max_chars)))
    return text[:keep] + marker.format(keep)
