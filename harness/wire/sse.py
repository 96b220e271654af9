"""Server-sent events as the Messages API sends them: parse, render, and fold into a Message.

A cassette stores a stream as a list of events `{event, data}` with `data` parsed when it is JSON,
so a diff reads like the conversation. Real streams pad their JSON with spaces before closing braces
(see shared/real-cassettes/QUIRKS.md); parsing the JSON and rendering it compactly again keeps the
meaning, which is all the SDK and the evals need.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harness.jsondata import compact_json

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


def _event_text(event: Mapping[str, Any]) -> str:
    data = event.get("data", "")
    payload = data if isinstance(data, str) else compact_json(data)
    name = event.get("event")
    head = "" if name is None else f"event: {name}\n"
    if "\n" not in payload:
        return f"{head}data: {payload}\n\n"
    return head + "".join(f"data: {part}\n" for part in payload.split("\n")) + "\n"


def render_event(event: Mapping[str, Any]) -> bytes:
    return _event_text(event).encode("utf-8")


def render_sse(events: Iterable[Mapping[str, Any]]) -> bytes:
    """The stream's bytes: one text joined and encoded once (a replayed stream is rendered on every play)."""
    return "".join(map(_event_text, events)).encode("utf-8")


MAX_BLOCKS = 4096  # content blocks in one message; an index past this is a damaged stream, not a long answer

# The text fields of the deltas the SDK concatenates. Any other delta type (one a later API version adds) passes:
# the SDK passes it over too.
_DELTA_TEXT = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking",
               "signature_delta": "signature"}


class MalformedStream(ValueError):
    """A stream whose events cannot add up to a message: an index out of range, a delta of the wrong type.

    `event` is the position of the event at fault (once known), `reason` what is wrong with it."""

    def __init__(self, reason: str, event: int | None = None) -> None:
        super().__init__(reason if event is None else f"events[{event}]: {reason}")
        self.reason = reason
        self.event = event


class StreamCheck:
    """The order of a Messages API stream, checked one event at a time, as the SDK's accumulator will read it.

    A message_start first; each content block started at the next index, its deltas while it is open, then its
    stop; a message_delta carrying a delta and usage; a message_stop last. An `error` event ends the stream (the
    SDK raises it). Only ever holds the open blocks and their tool-input text, so a damaged file (an index of
    200,000,000, say) allocates nothing. `fold_stream` (show, eval) and the replay check at load both use it,
    so every reader refuses the same streams for the same reason.
    """

    def __init__(self) -> None:
        self.started = False
        self.blocks = 0  # content blocks so far (the message_start's own, then each content_block_start)
        self.open: dict[int, str | None] = {}  # open block -> its tool input so far (None: no input_json_delta yet)
        self.ended: str | None = None  # "message_stop" or "error"

    def see(self, event: Any) -> str | None:
        """Check one event; its type when the SDK reads it, None when the SDK passes it over (a ping, no data)."""
        if not isinstance(event, Mapping):
            raise MalformedStream("an event is not an object")
        name, data = event.get("event"), event.get("data")
        if name == "ping" or data in ("", None):
            return None  # the SDK skips pings and events with no data; `fold_stream` skips them too
        if self.ended == "error":
            return None  # the SDK raised at the error; nothing after it is read
        if name == "error":
            self.ended = "error"
            return "error"
        if not isinstance(data, Mapping):
            raise MalformedStream(f"the data of a {name or 'nameless'} event is not a JSON object")
        kind = data.get("type")
        if name is None:
            raise MalformedStream(f"a {kind} event has no event name (the SDK would pass over what it carries)")
        if kind != name:
            raise MalformedStream(f"a {name} event carries data of type {kind!r}")
        if self.ended is not None:
            raise MalformedStream(f"{kind} after message_stop")
        if not self.started and kind != "message_start":
            raise MalformedStream(f"{kind} before message_start")
        check = _CHECKS.get(kind)
        if check is not None:
            check(self, data)
        return str(kind)

    def finish(self, *, cut: bool = False) -> None:
        """The end of the stream: a message_stop or an error event, unless it was recorded as cut (`cut`)."""
        if self.ended is None and not cut:
            last = "message_start" if self.started else "any event"
            raise MalformedStream(f"the stream ends without message_stop or an error event (after {last}"
                                  f"{f', with block {min(self.open)} open' if self.open else ''}); a recorded "
                                  "cut says `truncated: true`")

    # -- one method per event type the SDK reads fields of --------------------------------------------------
    def _message_start(self, data: Mapping[str, Any]) -> None:
        if self.started:
            raise MalformedStream("a second message_start")
        message = data.get("message")
        if not isinstance(message, Mapping) or not isinstance(message.get("content"), list):
            raise MalformedStream("message_start carries no message object with a content list")
        self.started = True
        self.blocks = len(message["content"])

    def _content_block_start(self, data: Mapping[str, Any]) -> None:
        index = _block_index(data)
        if index != self.blocks:
            raise MalformedStream(f"content_block_start has index {index}; the next block is {self.blocks}")
        block = data.get("content_block")
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise MalformedStream("content_block_start carries no content_block object with a type")
        self.open[index] = None
        self.blocks += 1

    def _content_block_delta(self, data: Mapping[str, Any]) -> None:
        index = self._open_block(data)
        delta = data.get("delta")
        if not isinstance(delta, Mapping) or not isinstance(delta.get("type"), str):
            raise MalformedStream("content_block_delta carries no delta object with a type")
        field = _DELTA_TEXT.get(delta["type"])
        if field is not None and not isinstance(delta.get(field), str):
            raise MalformedStream(f"a {delta['type']} carries {field} {delta.get(field)!r}, not text")
        if field == "partial_json":  # kept to check at the block's stop, as `fold_stream` parses it there
            self.open[index] = (self.open[index] or "") + delta[field]

    def _content_block_stop(self, data: Mapping[str, Any]) -> None:
        index = self._open_block(data)
        text = self.open.pop(index)
        if text and text.strip():
            try:
                json.loads(text)
            except ValueError as err:
                raise MalformedStream(f"the tool input of block {index} is not JSON: {err}") from None

    def _message_delta(self, data: Mapping[str, Any]) -> None:
        if not isinstance(data.get("delta"), Mapping) or not isinstance(data.get("usage"), Mapping):
            raise MalformedStream("message_delta carries no delta and usage objects")

    def _message_stop(self, data: Mapping[str, Any]) -> None:
        if self.open:
            raise MalformedStream(f"message_stop with block {min(self.open)} still open")
        self.ended = "message_stop"

    def _open_block(self, data: Mapping[str, Any]) -> int:
        index = _block_index(data)
        if index not in self.open:
            state = "was stopped" if index < self.blocks else "was never started"
            raise MalformedStream(f"{data.get('type')} for block {index}, which {state}")
        return index


# The event types the SDK reads fields of, each with its check; any other type passes, as the SDK passes it over.
_CHECKS: dict[str, Callable[[StreamCheck, Mapping[str, Any]], None]] = {
    kind: getattr(StreamCheck, f"_{kind}") for kind in (
        "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
        "message_stop")}


def _block_index(data: Mapping[str, Any]) -> int:
    """The event's content-block index, checked before anything is indexed or allocated with it."""
    index = data.get("index")
    if isinstance(index, bool) or not isinstance(index, int):
        raise MalformedStream(f"{data.get('type')} has index {index!r}; an index is a whole number")
    if not 0 <= index < MAX_BLOCKS:
        raise MalformedStream(f"{data.get('type')} has index {index}, outside 0..{MAX_BLOCKS - 1}")
    return index


def check_stream(events: Iterable[Any], *, cut: bool = False) -> None:
    """Raise MalformedStream, naming the event (`events[12]: ...`), unless the SDK can read `events` to its end.

    `cut`: the stream was recorded as cut off (`truncated: true`), so it may end anywhere; what it has is checked.
    """
    check = StreamCheck()
    position = -1
    for position, event in enumerate(events):
        try:
            check.see(event)
        except MalformedStream as err:
            raise MalformedStream(err.reason, position) from None
    try:
        check.finish(cut=cut)
    except MalformedStream as err:
        raise MalformedStream(err.reason, max(position, 0)) from None


def fold_stream(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The Message a stream adds up to, as the JSON a non-streaming call would have returned.

    An `error` event mid-stream gives `{"type": "error", "error": ..., "partial": message}` so that
    evals can see both what failed and what had arrived. A stream that the SDK could not read (see
    `StreamCheck`) raises MalformedStream, with the place: the event's position. One that stops early
    folds into what had arrived (no stop_reason): the trajectory calls it a cut stream.
    """
    check = StreamCheck()
    message: dict[str, Any] = {}
    partial_json: dict[int, str] = {}
    for position, event in enumerate(events):
        try:
            kind = check.see(event)
        except MalformedStream as err:
            raise MalformedStream(err.reason, position) from None
        data = event["data"] if kind is not None else None
        if kind == "error":
            return {"type": "error", "error": data.get("error") if isinstance(data, Mapping) else data,
                    "partial": message}
        if isinstance(data, Mapping):
            message = _fold_one(message, partial_json, str(kind), data)
    return message


def _fold_one(message: dict[str, Any], partial_json: dict[int, str], kind: str,
              data: Mapping[str, Any]) -> dict[str, Any]:
    """One event that `StreamCheck` passed, folded into the message so far."""
    if kind == "message_start":
        message = copy.deepcopy(dict(data["message"]))
    elif kind == "content_block_start":
        message["content"].append(copy.deepcopy(dict(data["content_block"])))
    elif kind == "content_block_delta":
        index, delta = data["index"], data["delta"]
        block = message["content"][index]
        kind = delta["type"]
        if kind == "input_json_delta":
            partial_json[index] = partial_json.get(index, "") + delta["partial_json"]
        elif kind in ("text_delta", "thinking_delta"):
            field = _DELTA_TEXT[kind]
            before = block.get(field, "")
            block[field] = (before if isinstance(before, str) else "") + delta[field]
        elif kind == "compaction_delta":  # a compaction's summary, sent whole (null when the compaction failed)
            for field in ("content", "encrypted_content"):
                if isinstance(delta.get(field), str):
                    before = block.get(field)
                    block[field] = (before if isinstance(before, str) else "") + delta[field]
        elif kind == "signature_delta":
            block["signature"] = delta["signature"]
        elif kind == "citations_delta":
            before = block.get("citations")
            block["citations"] = [*(before if isinstance(before, list) else []), delta.get("citation")]
    elif kind == "content_block_stop":
        index = data["index"]
        if index in partial_json:
            text = partial_json.pop(index)
            message["content"][index]["input"] = json.loads(text) if text.strip() else {}
    elif kind == "message_delta":
        message.update(data["delta"])
        usage = data["usage"]
        merged = dict(message["usage"]) if isinstance(message.get("usage"), Mapping) else {}
        merged.update({k: v for k, v in usage.items() if v is not None})
        message["usage"] = merged
    return message
