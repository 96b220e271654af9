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


def fold_stream(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The Message a stream adds up to, as the JSON a non-streaming call would have returned.

    An `error` event mid-stream gives `{"type": "error", "error": ..., "partial": message}` so that
    evals can see both what failed and what had arrived.
    """
    message: dict[str, Any] = {}
    partial_json: dict[int, str] = {}
    for event in events:
        data = event.get("data")
        if not isinstance(data, Mapping):
            continue
        kind = data.get("type") or event.get("event")
        if kind == "message_start":
            message = copy.deepcopy(dict(data.get("message") or {}))
            message.setdefault("content", [])
        elif kind == "content_block_start":
            index = int(data.get("index", len(message.get("content", []))))
            blocks = message.setdefault("content", [])
            while len(blocks) <= index:
                blocks.append({})
            blocks[index] = copy.deepcopy(dict(data.get("content_block") or {}))
        elif kind == "content_block_delta":
            _apply_delta(message, partial_json, int(data.get("index", 0)), data.get("delta") or {})
        elif kind == "content_block_stop":
            index = int(data.get("index", 0))
            if index in partial_json:
                block = message["content"][index]
                text = partial_json.pop(index)
                block["input"] = json.loads(text) if text.strip() else {}
        elif kind == "message_delta":
            for key, value in (data.get("delta") or {}).items():
                message[key] = value
            usage = data.get("usage")
            if isinstance(usage, Mapping):
                merged = dict(message.get("usage") or {})
                merged.update({k: v for k, v in usage.items() if v is not None})
                message["usage"] = merged
        elif kind == "error":
            return {"type": "error", "error": data.get("error"), "partial": message}
    return message


def _apply_delta(message: dict[str, Any], partial_json: dict[int, str], index: int, delta: Mapping) -> None:
    blocks = message.setdefault("content", [])
    while len(blocks) <= index:
        blocks.append({})
    block = blocks[index]
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + delta.get("text", "")
    elif kind == "input_json_delta":
        partial_json[index] = partial_json.get(index, "") + delta.get("partial_json", "")
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
    elif kind == "signature_delta":
        block["signature"] = delta.get("signature", "")
    elif kind == "citations_delta":
        block.setdefault("citations", [])
        block["citations"] = [*(block["citations"] or []), delta.get("citation")]
