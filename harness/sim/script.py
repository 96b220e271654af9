"""Scripted models from a file: `harness sim --script FILE`, a user's model turns written in YAML.

    name: calculator-fix            # served as sim-calculator-fix (default: the file name)
    turns:
      - tool_use: {name: calculate, input: {expression: "12 * (3 + 4"}}
      - when: {last_tool_result_is_error: true}
        thinking: The expression is missing a parenthesis.
        tool_use: {name: calculate, input: {expression: "12 * (3 + 4)"}}
      - text: "12 * (3 + 4) = 84"
      - fault: 529                  # also 429, 500, disconnect, slow, cut-stream, sse-error
      - error: {status: 400, type: invalid_request_error, message: "prompt is too long"}

Each request to the model takes the first turn, in file order, that is not used yet and whose `when`
holds for the request (all of: `turn` = 1 + the assistant turns in it, `tool_offered`,
`last_tool_result_contains`, `last_tool_result_is_error`). A turn is used once unless it says
`repeat: true`, so turns without `when` play in order, and a fault or error turn fires once: the
client's retry gets the next turn. A new conversation (a request with no assistant turn that is not a
retry of the last one) starts the script over. `stop_reason` defaults to tool_use when the turn calls
a tool, else end_turn; `usage` replaces usage fields. A turn calling a tool the request does not offer
is answered with a 400, as the API refuses it. The file is checked against `script.schema.json`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from harness.errors import HarnessError
from harness.files import read_text_bounded
from harness.jsondata import json_path
from harness.safe_yaml import parse_yaml
from harness.sim import ids
from harness.sim.conversation import Conversation, Reply
from harness.sim.faults import REPLACING_KINDS, Fault
from harness.sim.function_model import BadTurn, reply_from_message, unoffered_tool
from harness.sim.policies import POLICIES
from harness.sim.validation import ApiError

_MAX_BYTES = 4 * 1024 * 1024


class ScriptError(HarnessError):
    """A script file that cannot be used: names the file, the place (a JSON path) and the reason."""


@cache
def script_schema() -> dict[str, Any]:
    return json.loads(resources.files("harness.sim").joinpath("script.schema.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Turn:
    position: int
    when: dict[str, Any]
    repeat: bool
    reply: Reply | None  # None for an error turn
    error: ApiError | None

    def matches(self, conversation: Conversation) -> bool:
        when = self.when
        if "turn" in when and when["turn"] != len(conversation.assistant_turns()) + 1:
            return False
        if "tool_offered" in when and when["tool_offered"] not in conversation.tool_names:
            return False
        last = conversation.exchanges[-1] if conversation.exchanges else None
        if "last_tool_result_contains" in when and (
            last is None or when["last_tool_result_contains"] not in (last.result_text or "")
        ):
            return False
        return not ("last_tool_result_is_error" in when and (
            last is None or last.is_error != when["last_tool_result_is_error"]
        ))


class Script:
    """One loaded script: its turns and which are used. Its `model` answers like any simulator model."""

    def __init__(self, path: Path, name: str, turns: list[Turn]) -> None:
        self.path, self.name, self.turns = path, name, turns
        self._used: set[int] = set()
        self._last_fingerprint: str | None = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Callable[[Conversation], Reply | ApiError]:
        return self.answer

    def answer(self, conversation: Conversation) -> Reply | ApiError:
        fingerprint = ids.request_fingerprint(conversation.body)
        with self._lock:
            if not conversation.assistant_turns() and fingerprint != self._last_fingerprint:
                self._used.clear()  # a new conversation, not a retry of the last request
            self._last_fingerprint = fingerprint
            turn = next((t for t in self.turns if t.position not in self._used and t.matches(conversation)), None)
            if turn is None:
                return ApiError(500, "api_error",
                                f"script {self.path}: no turn left for this request (turn "
                                f"{len(conversation.assistant_turns()) + 1} of the conversation); "
                                f"{len(self._used)} of {len(self.turns)} turns were used")
            if not turn.repeat:
                self._used.add(turn.position)
        if turn.error is not None:
            return turn.error
        assert turn.reply is not None
        return unoffered_tool(conversation, turn.reply, f"script {self.path}, $.turns[{turn.position}]") or turn.reply


def _turn(position: int, raw: dict[str, Any], path: Path) -> Turn:
    where = f"$.turns[{position}]"
    if not set(raw) & {"text", "tool_use", "thinking", "error", "fault"}:
        raise ScriptError("a turn needs at least one of text, tool_use, thinking, error or fault", file=path,
                          where=where)
    when, repeat = dict(raw.get("when") or {}), bool(raw.get("repeat", False))
    if "error" in raw:
        others = sorted(set(raw) - {"error", "when", "repeat"})
        if others:
            raise ScriptError(f"an error turn answers with the error alone; remove {', '.join(others)}",
                              file=path, where=where)
        error = raw["error"]
        return Turn(position, when, repeat, None, ApiError(error["status"], error["type"], error["message"]))
    fault = None
    if "fault" in raw:
        spec = raw["fault"] if isinstance(raw["fault"], dict) else {"kind": raw["fault"]}
        fault = Fault(**{**spec, "kind": str(spec["kind"])})
    content: list[dict[str, Any]] = []
    if "thinking" in raw:
        content.append({"type": "thinking", "thinking": raw["thinking"]})
    if "text" in raw:
        content.append({"type": "text", "text": raw["text"]})
    calls = raw.get("tool_use") or []
    for call in [calls] if isinstance(calls, dict) else calls:
        content.append({"type": "tool_use", "name": call["name"], "input": call.get("input") or {}})
    if fault is not None and fault.kind in REPLACING_KINDS:
        others = sorted(set(raw) - {"fault", "when", "repeat"})
        if others:
            raise ScriptError(f"fault {fault.kind} replaces the answer; remove {', '.join(others)} "
                              "(slow, cut-stream and sse-error carry a turn's content)", file=path, where=where)
        return Turn(position, when, repeat, Reply([], "end_turn", fault=fault), None)
    if not content:
        raise ScriptError(f"fault {fault.kind if fault else ''} needs the turn's content (text, tool_use or "
                          "thinking) to send", file=path, where=where)
    message = {"content": content, "stop_reason": raw.get("stop_reason"), "usage": raw.get("usage")}
    try:
        reply = reply_from_message(message)
    except BadTurn as err:
        raise ScriptError(str(err), file=path, where=where) from None
    return Turn(position, when, repeat, Reply(reply.content, reply.stop_reason, usage=reply.usage, fault=fault), None)


def load_script(path: str | Path) -> Script:
    """Read and check a script; ScriptError names the file, the place and the reason."""
    path = Path(path)
    if not path.is_file():
        raise ScriptError("no such script file" if not path.exists() else "not a regular file", file=path)
    data = parse_yaml(read_text_bounded(path, _MAX_BYTES), file=path)
    validator_class = jsonschema.validators.validator_for(script_schema())
    error = jsonschema.exceptions.best_match(validator_class(script_schema()).iter_errors(data))
    if error is not None:
        raise ScriptError(error.message, file=path, where=json_path(error.absolute_path))
    name = data.get("name") or re.sub(r"[^a-z0-9-]+", "-", path.stem.lower()).strip("-") or "script"
    if name in ("auto", "function", *POLICIES):
        raise ScriptError(f"name {name!r} is a built-in simulator model; choose another", file=path,
                          where="$.name" if data.get("name") else None)
    turns = [_turn(position, raw, path) for position, raw in enumerate(data["turns"])]
    return Script(path, name, turns)
