"""Server-sent events as the Messages API sends them: parse, render, and fold into a Message.

A cassette stores a stream as a list of events `{event, data}` with `data` parsed when it is JSON,
so a diff reads like the conversation. Real streams pad their JSON with spaces before closing braces
(see shared/real-cassettes/QUIRKS.md); parsing the JSON and rendering it compactly again keeps the
meaning, which is all the SDK and the evals need.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

SSE_CONTENT_TYPE = "text/event-stream"


def looks_like_sse(text: str) -> bool:
    """True when a body is an event stream: it opens with an `event:` or `data:` field."""
    head = text.lstrip()[:16]
    return head.startswith(("event:", "data:"))


def parse_sse(text: str) -> list[dict[str, Any]]:
    """Split an event stream into `{event, data}` dicts; `data` is parsed when it is JSON."""
    events: list[dict[str, Any]] = []
    name: str | None = None
    data_lines: list[str] = []

    def flush() -> None:
        nonlocal name, data_lines
        if name is None and not data_lines:
            return
        raw = "\n".join(data_lines)
        event: dict[str, Any] = {}
        if name is not None:
            event["event"] = name
        try:
            event["data"] = json.loads(raw) if raw.strip() else raw
        except ValueError:
            event["data"] = raw
        events.append(event)
        name, data_lines = None, []

    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line:
            flush()
        elif line.startswith(":"):
            continue  # a comment line keeps the connection alive; it carries nothing
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data_lines.append(line[5:].removeprefix(" "))
        # id: and retry: fields are not used by the Messages API
    flush()
    return events


def render_event(event: Mapping[str, Any]) -> bytes:
    data = event.get("data", "")
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    lines = []
    if event.get("event") is not None:
        lines.append(f"event: {event['event']}")
    lines.extend(f"data: {part}" for part in payload.split("\n"))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def render_sse(events: Iterable[Mapping[str, Any]]) -> bytes:
    return b"".join(render_event(event) for event in events)


MAX_BLOCKS = 4096  # content blocks in one message; an index past this is a damaged stream, not a long answer


class MalformedStream(ValueError):
    """A stream whose events cannot add up to a message: an index out of range, a delta of the wrong type."""


def _block_index(data: Mapping[str, Any], default: int) -> int:
    """The event's content-block index, checked before anything is indexed or allocated with it."""
    index = data.get("index", default)
    if isinstance(index, bool) or not isinstance(index, int):
        raise MalformedStream(f"{data.get('type')} has index {index!r}; an index is a whole number")
    if not 0 <= index < MAX_BLOCKS:
        raise MalformedStream(f"{data.get('type')} has index {index}, outside 0..{MAX_BLOCKS - 1}")
    return index


def fold_stream(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The Message a stream adds up to, as the JSON a non-streaming call would have returned.

    An `error` event mid-stream gives `{"type": "error", "error": ..., "partial": message}` so that
    evals can see both what failed and what had arrived. A stream that cannot add up to a message (an
    index out of range or of the wrong type, a delta that is not text, tool input that is not JSON)
    raises MalformedStream, with the place: the event's position.
    """
    message: dict[str, Any] = {}
    partial_json: dict[int, str] = {}
    for position, event in enumerate(events):
        try:
            message = _fold_one(message, partial_json, event)
        except MalformedStream as err:
            raise MalformedStream(f"events[{position}]: {err}") from None
        if message.get("type") == "error" and "partial" in message:
            return message
    return message


def _fold_one(message: dict[str, Any], partial_json: dict[int, str], event: Any) -> dict[str, Any]:
    data = event.get("data") if isinstance(event, Mapping) else None
    if not isinstance(data, Mapping):
        return message
    kind = data.get("type") or event.get("event")
    if kind == "message_start":
        start = data.get("message") or {}
        if not isinstance(start, Mapping):
            raise MalformedStream("message_start carries no message object")
        message = copy.deepcopy(dict(start))
        if not isinstance(message.setdefault("content", []), list):
            message["content"] = []
    elif kind == "content_block_start":
        blocks = _blocks(message)
        index = _block_index(data, len(blocks))
        block = data.get("content_block") or {}
        if not isinstance(block, Mapping):
            raise MalformedStream("content_block_start carries no content_block object")
        while len(blocks) <= index:
            blocks.append({})
        blocks[index] = copy.deepcopy(dict(block))
    elif kind == "content_block_delta":
        delta = data.get("delta") or {}
        if not isinstance(delta, Mapping):
            raise MalformedStream("content_block_delta carries no delta object")
        _apply_delta(message, partial_json, _block_index(data, 0), delta)
    elif kind == "content_block_stop":
        index = _block_index(data, 0)
        if index in partial_json:
            block = _blocks(message)[index]
            text = partial_json.pop(index)
            try:
                block["input"] = json.loads(text) if text.strip() else {}
            except ValueError as err:
                raise MalformedStream(f"the tool input of block {index} is not JSON: {err}") from None
    elif kind == "message_delta":
        delta = data.get("delta") or {}
        if not isinstance(delta, Mapping):
            raise MalformedStream("message_delta carries no delta object")
        for key, value in delta.items():
            message[key] = value
        usage = data.get("usage")
        if isinstance(usage, Mapping):
            merged = dict(message.get("usage") or {}) if isinstance(message.get("usage"), Mapping) else {}
            merged.update({k: v for k, v in usage.items() if v is not None})
            message["usage"] = merged
    elif kind == "error":
        return {"type": "error", "error": data.get("error"), "partial": message}
    return message


def _blocks(message: dict[str, Any]) -> list[Any]:
    blocks = message.setdefault("content", [])
    if not isinstance(blocks, list):
        raise MalformedStream("the message's content is not a list")
    return blocks


def _text(delta: Mapping[str, Any], field: str) -> str:
    value = delta.get(field, "")
    if not isinstance(value, str):
        raise MalformedStream(f"a {delta.get('type')} carries {field} {value!r}, not text")
    return value


def _apply_delta(message: dict[str, Any], partial_json: dict[int, str], index: int, delta: Mapping) -> None:
    blocks = _blocks(message)
    while len(blocks) <= index:
        blocks.append({})
    block = blocks[index]
    if not isinstance(block, dict):
        raise MalformedStream(f"content block {index} is not an object")
    kind = delta.get("type")

    def grown(field: str) -> str:
        before = block.get(field, "")
        return (before if isinstance(before, str) else "") + _text(delta, field)

    if kind == "text_delta":
        block["text"] = grown("text")
    elif kind == "input_json_delta":
        partial_json[index] = partial_json.get(index, "") + _text(delta, "partial_json")
    elif kind == "thinking_delta":
        block["thinking"] = grown("thinking")
    elif kind == "compaction_delta":  # a compaction block's summary (and its opaque state), sent whole
        block["content"] = grown("content")
        if isinstance(delta.get("encrypted_content"), str):
            block["encrypted_content"] = delta["encrypted_content"]
    elif kind == "signature_delta":
        block["signature"] = _text(delta, "signature")
    elif kind == "citations_delta":
        before = block.get("citations")
        block["citations"] = [*(before if isinstance(before, list) else []), delta.get("citation")]
