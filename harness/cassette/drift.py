"""What kind of change a request made against its recording: the first question after a miss.

A miss says *that* a request differs from the recording; the kind says what a person changed, and so
which cassettes one edit invalidates: the system prompt, the tool definitions (a tool added, removed,
or its description or schema changed, by name), the message history (which message and block), a
tool_result's content (which tool_use id), the model or sampling parameters, or some other field.

`classify(recorded, live)` is a pure function of the two request bodies as matching reads them
(parsed JSON). It names each change; how the text of a change is rendered (the diff lines) is
`harness.cassette.match.diff_summary`'s business, not this module's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.cassette.match import normalize_query, stored_request_body
from harness.jsondata import drop_paths, parse_path

__all__ = ["KINDS", "Change", "Drift", "classify", "classify_request", "kind_label"]

# Kind id -> the words a person reads. In this order a drift names its kinds: what a person edits
# (prompt, tools, parameters) before what follows from running (tool output, history).
KINDS: dict[str, str] = {
    "system_prompt": "system prompt",
    "tool_definitions": "tool definitions",
    "model_parameters": "model or sampling parameters",
    "tool_result": "tool_result content",
    "message_history": "message history",
    "other": "other fields",
}

# Request fields that choose the model or shape its sampling.
MODEL_FIELDS = ("model", "max_tokens", "temperature", "top_p", "top_k", "thinking", "tool_choice",
                "stop_sequences", "output_config")
_OWN_FIELDS = frozenset({"system", "tools", "messages", *MODEL_FIELDS})


def kind_label(kind: str) -> str:
    return KINDS.get(kind, kind)


@dataclass(frozen=True)
class Change:
    """One change: its kind, what it is about (a tool name, a tool_use id, a field), and what happened."""

    kind: str
    subject: str
    what: str

    def text(self) -> str:
        return f"{self.subject}: {self.what}" if self.subject else self.what

    def to_data(self) -> dict[str, str]:
        return {"kind": self.kind, "subject": self.subject, "what": self.what}


@dataclass(frozen=True)
class Drift:
    """Every change of one request against its recording, most telling kind first."""

    changes: tuple[Change, ...]

    @property
    def kinds(self) -> list[str]:
        return list(dict.fromkeys(change.kind for change in self.changes))

    @property
    def kind(self) -> str:
        """The first kind (see KINDS for the order): what to fix, or what to re-record for."""
        return self.kinds[0] if self.changes else "other"

    def of_kind(self, kind: str) -> list[Change]:
        return [change for change in self.changes if change.kind == kind]

    def summary(self) -> str:
        """One line: "tool definitions (read_calendar: description changed); message history (...)"."""
        parts = []
        for kind in self.kinds:
            texts = [change.text() for change in self.of_kind(kind)]
            shown = "; ".join(texts[:3]) + (f"; and {len(texts) - 3} more" if len(texts) > 3 else "")
            parts.append(f"{kind_label(kind)} ({shown})")
        return "; ".join(parts) if parts else "no change in the request body"

    def to_data(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "kinds": self.kinds,
            "label": kind_label(self.kind),
            "summary": self.summary(),
            "changes": [change.to_data() for change in self.changes],
        }

    @classmethod
    def of(cls, *changes: Change) -> Drift:
        order = list(KINDS)
        return cls(tuple(sorted(changes, key=lambda c: order.index(c.kind) if c.kind in order else len(order))))


def classify(recorded: Any, live: Any) -> Drift:
    """The changes from the recorded request body to the live one (an empty Drift when they are equal)."""
    if recorded == live:
        return Drift(())
    if not (isinstance(recorded, Mapping) and isinstance(live, Mapping)):
        return Drift.of(Change("other", "body", "not the same JSON object"))
    changes: list[Change] = []
    if recorded.get("system") != live.get("system"):
        changes.append(Change("system_prompt", "system", _presence(recorded, live, "system")))
    if recorded.get("tools") != live.get("tools"):
        changes.extend(_tool_changes(recorded.get("tools"), live.get("tools")))
    for name in MODEL_FIELDS:
        if recorded.get(name) != live.get(name):
            changes.append(Change("model_parameters", name, _value_change(recorded, live, name)))
    if recorded.get("messages") != live.get("messages"):
        changes.extend(_message_changes(recorded.get("messages"), live.get("messages")))
    for name in sorted((set(recorded) | set(live)) - _OWN_FIELDS):
        if recorded.get(name) != live.get(name):
            changes.append(Change("other", name, _presence(recorded, live, name)))
    return Drift.of(*changes)


def classify_request(recorded: Mapping[str, Any], method: str, path: str, query: str | None, body: Any,
                     ignore: Sequence[str] = ()) -> Drift:
    """`classify` of a stored request against a live one, as matching sees them: the fields matching leaves out
    (`ignore_fields`) left out here too, and a changed route or query named as other fields."""
    before, after = stored_request_body(recorded), body
    if ignore:
        paths = [parse_path(dotted) for dotted in ignore]
        before, after = drop_paths(before, paths), drop_paths(after, paths)
    changes = list(classify(before, after).changes)
    route = (str(recorded.get("method", "")).upper(), recorded.get("path"))
    if route != (method.upper(), path):
        changes.append(Change("other", "route", f"{route[0]} {route[1]} -> {method.upper()} {path}"))
    if normalize_query(recorded.get("query")) != normalize_query(query):
        changes.append(Change("other", "query", f"{recorded.get('query') or '(none)'!r} -> {query or '(none)'!r}"))
    return Drift.of(*changes)


# -- the parts --------------------------------------------------------------------------------------------


def _presence(recorded: Mapping[str, Any], live: Mapping[str, Any], name: str) -> str:
    if name not in recorded:
        return "added"
    if name not in live:
        return "removed"
    return "changed"


def _value_change(recorded: Mapping[str, Any], live: Mapping[str, Any], name: str) -> str:
    presence = _presence(recorded, live, name)
    if presence != "changed":
        return presence
    old, new = recorded[name], live[name]
    if all(isinstance(v, str | int | float | bool) or v is None for v in (old, new)):
        return f"{old!r} -> {new!r}"
    return "changed"


def _tool_name(tool: Any, index: int) -> str:
    if isinstance(tool, Mapping):
        name = tool.get("name") or tool.get("type")
        if isinstance(name, str) and name:
            return name
    return f"tools[{index}]"


def _tool_changes(recorded: Any, live: Any) -> list[Change]:
    old = recorded if isinstance(recorded, list) else []
    new = live if isinstance(live, list) else []
    if (recorded is not None and not isinstance(recorded, list)) or (live is not None and not isinstance(live, list)):
        return [Change("tool_definitions", "tools", "changed")]
    before = {_tool_name(tool, i): tool for i, tool in enumerate(old)}
    after = {_tool_name(tool, i): tool for i, tool in enumerate(new)}
    changes = [Change("tool_definitions", name, "added") for name in after if name not in before]
    changes += [Change("tool_definitions", name, "removed") for name in before if name not in after]
    for name, tool in after.items():
        if name in before and before[name] != tool:
            changes.append(Change("tool_definitions", name, _fields_changed(before[name], tool)))
    if not changes:  # same tools, another order (the order is part of the prompt the model reads)
        changes.append(Change("tool_definitions", "tools", "order changed"))
    return changes


def _fields_changed(old: Any, new: Any) -> str:
    if not (isinstance(old, Mapping) and isinstance(new, Mapping)):
        return "changed"
    names = [name for name in dict.fromkeys([*old, *new]) if old.get(name) != new.get(name)]
    return " and ".join(names) + " changed" if names else "changed"


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _role(message: Any) -> str:
    role = message.get("role") if isinstance(message, Mapping) else None
    return role if isinstance(role, str) else "?"


def _message_changes(recorded: Any, live: Any) -> list[Change]:
    old = recorded if isinstance(recorded, list) else []
    new = live if isinstance(live, list) else []
    changes: list[Change] = []
    for index in range(max(len(old), len(new))):
        where = f"messages[{index}]"
        if index >= len(old):
            changes.append(Change("message_history", where, f"added ({_role(new[index])})"))
        elif index >= len(new):
            changes.append(Change("message_history", where, f"removed (was {_role(old[index])})"))
        elif old[index] != new[index]:
            changes.extend(_one_message(where, old[index], new[index]))
    return changes


def _one_message(where: str, old: Any, new: Any) -> list[Change]:
    if _role(old) != _role(new):
        return [Change("message_history", where, f"role {_role(old)} -> {_role(new)}")]
    changes: list[Change] = []
    before, after = _blocks(old), _blocks(new)
    for index in range(max(len(before), len(after))):
        place = f"{where}.content[{index}]"
        a = before[index] if index < len(before) else None
        b = after[index] if index < len(after) else None
        if a == b:
            continue
        result = _tool_result_id(a) or _tool_result_id(b)
        if result is not None and _block_type(a) in ("tool_result", None) and _block_type(b) in ("tool_result", None):
            what = "added" if a is None else "removed" if b is None else "content changed"
            changes.append(Change("tool_result", result, f"{place} {what}"))
        elif a is None:
            changes.append(Change("message_history", place, f"{_role(new)} {_block_type(b)} block added"))
        elif b is None:
            changes.append(Change("message_history", place, f"{_role(old)} {_block_type(a)} block removed"))
        else:
            changes.append(Change("message_history", place, f"{_role(new)} {_block_type(b)} block changed"))
    if not changes:  # the blocks are equal: another key of the message differs (cache_control and the like)
        changes.append(Change("message_history", where, f"{_role(new)} message changed"))
    return changes


def _block_type(block: Any) -> str | None:
    if block is None:
        return None
    kind = block.get("type") if isinstance(block, Mapping) else None
    return kind if isinstance(kind, str) else "?"


def _tool_result_id(block: Any) -> str | None:
    if isinstance(block, Mapping) and block.get("type") == "tool_result":
        return str(block.get("tool_use_id") or "tool_result")
    return None

