"""Transport-level cassettes: what the Claude Agent SDK writes to the Claude Code CLI and reads from it.

The SDK's one seam is its `Transport` (connect, write, read_messages, end_input, close). Recording wraps the
SDK's own `SubprocessCLITransport` and keeps every frame in order: the SDK's writes (the prompt, its control
requests such as `initialize`, and its answers to the CLI's control requests: in-process SDK MCP tools, hooks,
`can_use_tool`) and the CLI's frames (messages and control requests). Replay answers the SDK from the file
with no CLI on the machine: the CLI's frames are played back, and each write the app makes is compared with
the recorded one. So the user's own hooks and tools run on the recorded inputs, and an answer that changed is
a `TransportMismatch` with a diff (the same `diff_summary` as an HTTP miss), raised out of the app's `query()`.

The file is YAML with a `harness:` block of its own kind (`kind: agent-sdk-transport`); the machine's paths
(the app's cwd and HOME, the temp folder) are stored as `$CWD`, `$HOME`, `$TMP` and put back in replay,
secrets are redacted, and the file is written atomically when the transport closes.

Matching a write: the CLI's control requests carry ids that replay sends unchanged, so the SDK's answer is
found by that id wherever it comes; the SDK's own control requests carry random ids, so they are matched in
order of the same subtype, and the recorded answer is sent back under the live id; other messages in order.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import anyio
import yaml

from harness.cassette.agent_sdk_frames import (
    END_INPUT,
    FORMAT_VERSION,
    KIND,
    TransportCassetteFile,
    is_transport_cassette,
    load_transport_cassette,
)
from harness.cassette.match import diff_summary
from harness.cassette.redact import Redactor
from harness.errors import HarnessError
from harness.files import atomic_write_text
from harness.normalize import Applied, Machine, Normalization, Substitution

WRITE_WAIT_SECONDS = 60.0  # a guard against an app that never writes what the recording expects, not a pace

try:  # the SDK is an optional extra: this module is importable (show, evals) without it
    from claude_agent_sdk import Transport as _Base
except ImportError:  # pragma: no cover - exercised only without the extra
    _Base = object  # type: ignore[assignment,misc]


class TransportMismatch(HarnessError):
    """A write of the app that the transport cassette does not hold: a changed prompt, hook or tool answer."""


def machine_rules(machine: Machine) -> Applied:
    """This run's paths to placeholders and back: the app's cwd, its HOME, the temp folder."""
    rules = (Substitution("$CWD", fact="cwd"), Substitution("$HOME", fact="home"), Substitution("$TMP", fact="tmp"))
    return Normalization(substitutions=rules, machine=machine).for_request(None)


def _frames_of(data: str) -> list[dict[str, Any]]:
    frames = []
    for line in data.splitlines():
        if line.strip():
            try:
                frames.append(json.loads(line))
            except json.JSONDecodeError:
                frames.append({"type": "unparsed", "text": line})
    return frames


def _write_key(entry: Mapping[str, Any], counts: dict[str, int]) -> tuple[Any, ...]:
    """What identifies a write across runs (see the module docstring); `counts` numbers the ordered kinds."""
    if entry.get(END_INPUT):
        return (END_INPUT,)
    frame = entry["frame"]
    kind = frame.get("type")
    if kind == "control_response":
        return ("response", (frame.get("response") or {}).get("request_id"))
    name = f"request:{(frame.get('request') or {}).get('subtype')}" if kind == "control_request" else f"message:{kind}"
    counts[name] = counts.get(name, 0) + 1
    return (name, counts[name])


def _comparable(entry: Mapping[str, Any]) -> Any:
    if entry.get(END_INPUT):
        return {END_INPUT: True}
    frame = dict(entry["frame"])
    if frame.get("type") == "control_request":
        frame.pop("request_id", None)  # the SDK's random id
    return frame


def _shown(entry: Mapping[str, Any]) -> str:
    if entry.get(END_INPUT):
        return "the end of its input"
    frame = entry["frame"]
    if frame.get("type") == "control_response":
        return f"its answer to the CLI's control request {(frame.get('response') or {}).get('request_id')}"
    if frame.get("type") == "control_request":
        return f"a control request ({(frame.get('request') or {}).get('subtype')})"
    return f"a {frame.get('type')} message"


class RecordingTransport(_Base):
    """The SDK's own transport (the CLI subprocess), with every frame kept and saved when it closes."""

    def __init__(self, inner: Any, path: str | Path, *, machine: Machine, meta: Mapping[str, Any]) -> None:
        self.inner = inner
        self.path = Path(path)
        self.rules = machine_rules(machine)
        self.meta = dict(meta)
        self.frames: list[dict[str, Any]] = []
        self.saved = False

    def _keep(self, source: str, frame: dict[str, Any]) -> None:
        self.frames.append({"from": source, "frame": frame})

    async def connect(self) -> None:
        await self.inner.connect()

    async def write(self, data: str) -> None:
        for frame in _frames_of(data):
            self._keep("sdk", frame)
        await self.inner.write(data)

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        async for message in self.inner.read_messages():
            self._keep("cli", message)
            yield message

    async def end_input(self) -> None:
        self.frames.append({"from": "sdk", END_INPUT: True})
        await self.inner.end_input()

    def is_ready(self) -> bool:
        return bool(self.inner.is_ready())

    async def close(self) -> None:
        try:
            await self.inner.close()
        finally:
            self.save()

    def save(self) -> Path:
        redactor = Redactor()
        frames = [entry if END_INPUT in entry else
                  {"from": entry["from"], "frame": redactor.value(self.rules.request(entry["frame"]))}
                  for entry in self.frames]
        meta = {"format_version": FORMAT_VERSION, "kind": KIND,
                "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"), **self.meta}
        text = yaml.safe_dump(TransportCassetteFile(meta, frames).to_data(), sort_keys=False, allow_unicode=True,
                              width=100)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, text)
        self.saved = True
        return self.path


class ReplayTransport(_Base):
    """Answers the SDK from a transport cassette: no CLI, no subprocess, no network."""

    def __init__(self, path: str | Path, *, machine: Machine, wait_seconds: float = WRITE_WAIT_SECONDS) -> None:
        self.path = Path(path)
        self.cassette = load_transport_cassette(self.path)
        self.rules = machine_rules(machine)
        self.wait_seconds = wait_seconds
        self.mismatch: TransportMismatch | None = None
        self.played = 0  # frames played or matched
        self._send, self._receive = anyio.create_memory_object_stream[dict[str, Any]](max_buffer_size=1000)
        self._ids: dict[str, str] = {}  # recorded id of an SDK control request -> this run's
        counts: dict[str, int] = {}
        self._keys = {index: _write_key(entry, counts) for index, entry in enumerate(self.cassette.frames)
                      if entry["from"] == "sdk"}
        self._live_counts: dict[str, int] = {}
        self._ready = False

    async def connect(self) -> None:
        self._ready = True

    def is_ready(self) -> bool:
        return self._ready

    async def write(self, data: str) -> None:
        for frame in _frames_of(data):
            self._send.send_nowait({"from": "sdk", "frame": frame})

    async def end_input(self) -> None:
        self._send.send_nowait({"from": "sdk", END_INPUT: True})

    async def close(self) -> None:
        self._ready = False
        self._send.close()

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        frames = self.cassette.frames
        done: set[int] = set()
        position = 0
        while position < len(frames):
            entry = frames[position]
            if position in done:
                position += 1
            elif entry["from"] == "cli":
                yield self._live(entry["frame"])
                self.played += 1
                position += 1
            else:
                done.add(self._match(await self._next_write(position), position, done))
                self.played += 1

    async def _next_write(self, position: int) -> dict[str, Any]:
        with anyio.move_on_after(self.wait_seconds):
            try:
                return await self._receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                pass
        self._fail(f"frame #{position + 1}: the app never wrote {_shown(self.cassette.frames[position])}, "
                   "which the recording has next; re-record if the app changed")
        raise AssertionError("unreachable")  # pragma: no cover

    def _match(self, written: dict[str, Any], position: int, done: set[int]) -> int:
        key = _write_key(written, self._live_counts)
        live = _comparable(written) if written.get(END_INPUT) else self.rules.request(_comparable(written))
        found = next((index for index, recorded in self._keys.items() if recorded == key and index not in done
                      and index >= position), None)
        if found is None:
            expected = self.cassette.frames[position]
            self._fail(f"frame #{position + 1}: the app wrote {_shown(written)}, which the recording does not "
                       f"have; it has {_shown(expected)} next", _comparable(expected), live)
        recorded = _comparable(self.cassette.frames[found])
        if recorded != live:
            self._fail(f"frame #{found + 1}: the app wrote {_shown(written)} unlike the recording", recorded, live)
        frame = written.get("frame") or {}
        if frame.get("type") == "control_request":  # a control request names its id (the protocol's rule)
            recorded_id, live_id = self.cassette.frames[found]["frame"].get("request_id"), frame.get("request_id")
            if isinstance(recorded_id, str) and isinstance(live_id, str):
                self._ids[recorded_id] = live_id
        return found

    def _live(self, frame: dict[str, Any]) -> dict[str, Any]:
        live = self.rules.expand(frame)
        response = live.get("response") if live.get("type") == "control_response" else None
        if isinstance(response, dict) and response.get("request_id") in self._ids:
            live = {**live, "response": {**response, "request_id": self._ids[response["request_id"]]}}
        return live

    def _fail(self, reason: str, recorded: Any = None, live: Any = None) -> NoReturn:
        lines = [f"{self.path}: {reason}"]
        if recorded is not None or live is not None:
            lines.append("What changed (recorded -> now):")
            lines += [f"  - {line}" for line in diff_summary(recorded, live)] or ["  - (no difference shown)"]
        lines.append("If the change is intended, re-record: pytest --record-mode=rewrite (or "
                     "AgentSdkSession(..., mode='rewrite')).")
        self.mismatch = TransportMismatch("\n".join(lines))
        raise self.mismatch


def machine_of(options: Any) -> Machine:
    """The facts of the run an app's `ClaudeAgentOptions` describe: its cwd and the HOME the CLI gets."""
    env = dict(getattr(options, "env", None) or {})
    cwd = getattr(options, "cwd", None)
    return Machine(cwd=str(cwd) if cwd else os.getcwd(), home=env.get("HOME") or os.environ.get("HOME"))


__all__ = ["KIND", "RecordingTransport", "ReplayTransport", "TransportCassetteFile", "TransportMismatch",
           "is_transport_cassette", "load_transport_cassette", "machine_of"]
