"""The file format of an Agent SDK transport cassette, and its reading as a cassette of Messages API calls.

A transport cassette (recorded by harness.agent_sdk.transport) holds the frames the Claude Agent SDK wrote to
the Claude Code CLI and read from it, in order, under a `harness:` block of its own kind
(`kind: agent-sdk-transport`). It lives on the cassette floor, with no SDK import, so that `harness show`,
trajectories, evals and exports read it as they read any cassette: `as_cassette` turns the CLI's assistant
messages into Messages API interactions (the request: the conversation so far, one per agent: the main
thread and each subagent, told apart by `parent_tool_use_id`; the response: the message with its usage).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.cassette.format import CassetteFile
from harness.cassette.schema import newer_hint, validate
from harness.errors import CassetteError
from harness.files import read_text_bounded
from harness.safe_yaml import parse_yaml

KIND = "agent-sdk-transport"
FORMAT_VERSION = 1
END_INPUT = "end_input"  # the SDK closed the CLI's stdin
MESSAGES_PATH = "/v1/messages"


class TransportCassetteFile:
    """The frames of one Agent SDK session, in the order the SDK saw them, and the `harness:` block."""

    def __init__(self, meta: dict[str, Any], frames: list[dict[str, Any]], path: Path | None = None) -> None:
        self.meta = meta
        self.frames = frames  # {"from": "sdk"|"cli", "frame": {...}} or {"from": "sdk", "end_input": true}
        self.path = path

    def to_data(self) -> dict[str, Any]:
        return {"harness": self.meta, "frames": self.frames}


def is_transport_cassette(data: Any) -> bool:
    return isinstance(data, Mapping) and isinstance(data.get("harness"), Mapping) and \
        data["harness"].get("kind") == KIND


def load_transport_cassette(path: str | Path) -> TransportCassetteFile:
    """The file, checked: CassetteError names the file and the place that is wrong."""
    path = Path(path)
    data = parse_yaml(read_text_bounded(path), file=path)
    if not is_transport_cassette(data):
        raise CassetteError(f"not an Agent SDK transport cassette (its harness block needs kind: {KIND})", file=path)
    if data["harness"].get("format_version") != FORMAT_VERSION:
        raise CassetteError(f"format_version {data['harness'].get('format_version')!r}: this harness reads "
                            f"{FORMAT_VERSION}{newer_hint(data['harness'].get('format_version'))}", file=path,
                            where="harness")
    frames = data.get("frames")
    if not isinstance(frames, list):
        raise CassetteError("frames: expected a list of frames", file=path)
    for index, entry in enumerate(frames):
        if not isinstance(entry, Mapping) or entry.get("from") not in ("sdk", "cli") or not (
                isinstance(entry.get("frame"), Mapping) or entry.get(END_INPUT) is True):
            raise CassetteError("expected {from: sdk|cli, frame: {...}} (or end_input: true)", file=path,
                                where=f"frames[{index}]")
    return TransportCassetteFile(dict(data["harness"]), [dict(entry) for entry in frames], path)


def as_cassette(path: str | Path) -> CassetteFile:
    """The session's model calls as a cassette in memory (validated), for show, trajectories, evals, exports."""
    transport = load_transport_cassette(path)
    conversations: dict[Any, list[dict[str, Any]]] = {}  # parent_tool_use_id (None: the main thread) -> messages
    interactions: list[dict[str, Any]] = []
    open_message: dict[str, Any] | None = None  # the CLI sends one frame per content block of a message
    model = None

    def close_message() -> None:
        nonlocal open_message
        if open_message is None:
            return
        thread, message = open_message["thread"], open_message["message"]
        history = conversations.setdefault(thread, [])
        content = message["content"]
        stop = "tool_use" if any(block.get("type") == "tool_use" for block in content) else "end_turn"
        body = {"model": message.get("model") or model, "max_tokens": 0, "messages": [dict(m) for m in history]}
        response = {"id": message.get("id"), "type": "message", "role": "assistant", "model": message.get("model"),
                    "content": content, "stop_reason": message.get("stop_reason") or stop,
                    "stop_sequence": None, "usage": message.get("usage") or {}}
        interactions.append({"request": {"method": "POST", "path": MESSAGES_PATH, "body": body},
                             "response": {"status": 200, "body": response}})
        history.append({"role": "assistant", "content": content})
        open_message = None

    for entry in transport.frames:
        frame = entry.get("frame") or {}
        kind = frame.get("type")
        if kind == "system" and frame.get("subtype") == "init":
            model = frame.get("model")
        if kind not in ("user", "assistant"):
            continue
        message = frame.get("message") or {}
        thread = frame.get("parent_tool_use_id")
        if kind == "assistant":
            if open_message is not None and (open_message["message"].get("id") != message.get("id")
                                             or open_message["thread"] != thread):
                close_message()
            if open_message is None:
                open_message = {"thread": thread, "message": {**message, "content": []}}
            open_message["message"]["content"] += [dict(b) for b in message.get("content") or []]
            open_message["message"]["usage"] = message.get("usage") or open_message["message"].get("usage")
            continue
        close_message()
        content = message.get("content")
        conversations.setdefault(thread, []).append(
            {"role": "user", "content": content if isinstance(content, str) else list(content or [])})
    close_message()
    meta = {"format_version": 1, "source": transport.meta.get("source") or "imported",
            "recorded_at": transport.meta.get("recorded_at"), "sdk_version": transport.meta.get("sdk_version"),
            "imported_from": {"path": Path(path).as_posix(), "format": KIND}}
    cassette = CassetteFile(meta=meta, interactions=interactions, path=None)
    validate(cassette.to_data(), file=path)
    return cassette


__all__ = ["END_INPUT", "FORMAT_VERSION", "KIND", "TransportCassetteFile", "as_cassette", "is_transport_cassette",
           "load_transport_cassette"]
