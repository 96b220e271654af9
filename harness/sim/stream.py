"""A finished Message as the server-sent events the real API streams, in the real order.

message_start, then per block content_block_start / deltas / content_block_stop (one `ping` after the
first block starts, as in most real recordings), then message_delta with stop_reason and usage, then
message_stop. Text and thinking arrive a few words per delta (a text's citations first, one
citations_delta each); tool and server tool input as input_json_delta chunks of the JSON text, starting
with an empty one like the real API; a thinking block ends with one signature_delta; a compaction block's
summary comes in one compaction_delta; server tool results arrive whole in their start event. As in the
real recordings, `usage.server_tool_use` and `usage.iterations` are sent on message_delta only, with the
`container` (in its delta) and `context_management`. Accumulating the events gives back exactly the
Message they came from.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.sim.responses import dumps

Event = tuple[str, dict[str, Any]]
_WORDS_PER_DELTA = 3
_JSON_CHARS_PER_DELTA = 12


def encode_event(name: str, data: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + dumps(data) + b"\n\n"


def _word_chunks(text: str) -> list[str]:
    pieces = re.findall(r"\s*\S+\s*|\s+", text)
    chunks = ["".join(pieces[i : i + _WORDS_PER_DELTA]) for i in range(0, len(pieces), _WORDS_PER_DELTA)]
    return chunks or [""]


def _block_events(index: int, block: dict[str, Any]) -> list[Event]:
    kind = block.get("type")
    start: dict[str, Any]
    deltas: list[dict[str, Any]]
    if kind == "text" and block.get("citations"):  # citations first, one delta each, then the text
        start = {"citations": [], "type": "text", "text": ""}
        deltas = [{"type": "citations_delta", "citation": citation} for citation in block["citations"]]
        deltas += [{"type": "text_delta", "text": chunk} for chunk in _word_chunks(block["text"])]
    elif kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": chunk} for chunk in _word_chunks(block["text"])]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": chunk} for chunk in _word_chunks(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
    elif kind in ("tool_use", "server_tool_use"):
        start = {"type": kind, "id": block["id"], "name": block["name"], "input": {}}
        raw = json.dumps(block.get("input", {}), ensure_ascii=False)
        parts = [""] + [raw[i : i + _JSON_CHARS_PER_DELTA] for i in range(0, len(raw), _JSON_CHARS_PER_DELTA)]
        deltas = [{"type": "input_json_delta", "partial_json": part} for part in parts]
    elif kind == "compaction":  # the summary arrives in one compaction_delta, as the SDK accumulates it
        start = {**block, "content": None, "encrypted_content": None}
        deltas = [{"type": "compaction_delta", "content": block.get("content"),
                   "encrypted_content": block.get("encrypted_content")}]
    else:  # whole blocks with no delta form (e.g. redacted_thinking) arrive complete in the start event
        start, deltas = dict(block), []
    events: list[Event] = [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
    ]
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        for delta in deltas
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


_LATE_USAGE = ("server_tool_use", "iterations")  # sent on message_delta only, as in the real recordings


def message_events(message: dict[str, Any]) -> list[Event]:
    usage = message["usage"]
    start_usage = {key: value for key, value in usage.items() if key not in _LATE_USAGE}
    start_usage["output_tokens"] = 1
    started = {
        **{key: value for key, value in message.items() if key not in ("container", "context_management")},
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "stop_details": None,
        "usage": start_usage,
    }
    events: list[Event] = [("message_start", {"type": "message_start", "message": started})]
    for index, block in enumerate(message["content"]):
        block_events = _block_events(index, block)
        if index == 0:
            block_events.insert(1, ("ping", {"type": "ping"}))
        events += block_events
    if not message["content"]:
        events.append(("ping", {"type": "ping"}))
    delta: dict[str, Any] = {
        "stop_reason": message["stop_reason"],
        "stop_sequence": message["stop_sequence"],
        "stop_details": message["stop_details"],
    }
    if "container" in message:
        delta["container"] = message["container"]
    delta_usage = {
        key: usage[key]
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    }
    delta_usage.update({key: usage[key] for key in _LATE_USAGE if key in usage})
    finished: dict[str, Any] = {"type": "message_delta", "delta": delta, "usage": delta_usage}
    if "context_management" in message:
        finished["context_management"] = message["context_management"]
    events.append(("message_delta", finished))
    events.append(("message_stop", {"type": "message_stop"}))
    return events
