"""One request and its response as a foreign file holds them, and the small readers every format shares.

A reader (one module per foreign format) turns its container into `Exchange`s; the converter
(`convert.py`) stores each one exactly as our recorder would. The helpers here name the file and the
JSON path of anything malformed, so a bad foreign file is an error a person can act on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cassette.headers import header_items
from harness.errors import CassetteError

ABSENT: Any = object()  # a parsed body that was not there (a parsed `null` is a body)


@dataclass
class Exchange:
    """One request and its response as a foreign file holds them, before anything is stored."""

    where: str  # JSON path of the exchange in its file, for errors
    method: str
    uri: str
    request_headers: list[tuple[str, str]]
    request_raw: bytes | str | None = None
    request_parsed: Any = ABSENT
    request_parts: list[dict[str, Any]] | None = None  # a multipart upload a recorder kept as its fields
    status: int = 0
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    response_raw: bytes | str | None = None
    response_parsed: Any = ABSENT
    response_mime: str | None = None  # HAR's content.mimeType, when the headers say nothing
    started_at: str | None = None
    elapsed_ms: float | None = None


def mapping(value: Any, where: str, path: Path) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise CassetteError(f"expected a mapping, found {type(value).__name__}", file=path, where=where)
    return value


def text(container: Mapping[str, Any], key: str, where: str, path: Path) -> str:
    value = container.get(key)
    if not isinstance(value, str) or not value:
        raise CassetteError(f"`{key}` is missing or not text", file=path, where=f"{where}.{key}")
    return value


def status(value: Any, where: str, path: Path) -> int:
    """An HTTP status from `{code: 200}`, `200`, `'200'` or `{status_code: '200'}` (R vcr 1.x)."""
    code = value.get("code", value.get("status_code")) if isinstance(value, Mapping) else value
    try:
        found = int(code)
    except (TypeError, ValueError):
        found = 0
    if not 100 <= found <= 599:
        raise CassetteError(f"no HTTP status here (found {code!r})", file=path, where=f"{where}.status")
    return found


def headers(value: Any, where: str, path: Path) -> list[tuple[str, str]]:
    """Headers as (name, value) pairs from a mapping (values a string or a list of strings) or HAR's list."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [(str(name), item) for name, item in header_items(value)]
    if isinstance(value, list):  # HAR: [{name, value}]
        items = []
        for index, entry in enumerate(value):
            entry = mapping(entry, f"{where}[{index}]", path)
            items.append((str(entry.get("name", "")), str(entry.get("value", ""))))
        return items
    raise CassetteError(f"headers must be a mapping or a list, found {type(value).__name__}", file=path, where=where)


def body_string(body: Any) -> Any:
    """A VCR-style `{string: ..., encoding: ...}` body's content; anything else as it is."""
    return body.get("string") if isinstance(body, Mapping) else body


def vcr_interactions(
    data: Mapping[str, Any], path: Path
) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, Any], Any]]:
    """Each of a VCR-style cassette's `http_interactions` (Ruby's VCR gem, R's vcr): its JSON path, request,
    response and `recorded_at`, each checked to be a mapping where one is expected."""
    for index, item in enumerate(data["http_interactions"]):
        where = f"$.http_interactions[{index}]"
        item = mapping(item, where, path)
        request = mapping(item.get("request"), f"{where}.request", path)
        response = mapping(item.get("response"), f"{where}.response", path)
        yield where, request, response, item.get("recorded_at")
