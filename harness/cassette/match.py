"""Which recorded interaction answers a request, and what changed when none does.

A request matches on method, path (never host or port: a local server's port changes between runs),
query and the canonical JSON body (keys sorted, volatile fields left out). Headers never take part:
they vary by machine and SDK version. The index maps a fingerprint to the recorded positions in
order, so a lookup costs the same at 5,000 interactions as at 10, and identical requests are served
in recorded order.

Parsing a 5 KB request and writing it out canonically costs more per request than everything else the
replay does. So the index also knows each recorded JSON body as the SDK puts it on the wire (compact,
keys in recorded order): a request whose bytes are exactly those is matched by a hash of its bytes,
and only the others are parsed. Same bytes mean the same parsed body, so the answer is the same.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from harness.jsondata import canonical_json, compact_json, drop_paths, parse_path
from harness.wire import multipart


def normalize_query(query: str | None) -> str:
    """Sorted query pairs, without `beta=true`: SDK 1.x marked beta calls with it, SDK 2.x sends none, and
    the call is the same, so a recording made by either replays for both."""
    if not query:
        return ""
    pairs = [pair for pair in parse_qsl(query, keep_blank_values=True) if pair != ("beta", "true")]
    return urlencode(sorted(pairs))


def canonical_body(body: Any, ignore: Sequence[str] = ()) -> str:
    if ignore:
        body = drop_paths(body, [parse_path(dotted) for dotted in ignore])
    return canonical_json(body)


def request_fingerprint(method: str, path: str, query: str | None, body: Any, ignore: Sequence[str] = ()) -> bytes:
    text = f"{method.upper()} {path} {normalize_query(query)}\n{canonical_body(body, ignore)}"
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def stored_request_body(request: Mapping[str, Any]) -> Any:
    if "body" in request:
        return request["body"]
    if "body_text" in request:
        return request["body_text"]
    if "body_base64" in request:
        return {"$base64": request["body_base64"]}
    if "parts" in request:  # multipart/form-data: its parts, never its random boundary
        return multipart.match_body(request["parts"])
    return None


def fingerprint_of_stored(request: Mapping[str, Any], ignore: Sequence[str] = ()) -> bytes:
    return request_fingerprint(
        request["method"], request["path"], request.get("query"), stored_request_body(request), ignore
    )


def wire_body(request: Mapping[str, Any]) -> bytes | None:
    """The bytes an SDK sends for a stored request's body, where they can be known.

    A JSON body is written as the anthropic SDK (and `wire.body_bytes`) writes it: compact, no ASCII
    escaping, keys in recorded order. No body is b"". Text and binary bodies give None: matching
    decides how to read those bytes, so they always take the canonical path.
    """
    if "body" in request:
        return compact_json(request["body"]).encode("utf-8")
    if "body_text" in request or "body_base64" in request or "parts" in request:
        return None
    return b""


def wire_key(method: str, path: str, query: str | None, raw_body: bytes) -> bytes:
    """A hash of a request exactly as sent: no parsing, no normalizing (so equal keys mean equal requests)."""
    digest = hashlib.blake2b(f"{method.upper()}\0{path}\0{query or ''}\0".encode(), digest_size=16)
    digest.update(raw_body)
    return digest.digest()


@dataclass
class RequestIndex:
    """Fingerprint -> positions not yet played, in recorded order; and wire key -> fingerprint."""

    queues: dict[bytes, deque[int]]
    by_wire: dict[bytes, bytes] = field(default_factory=dict)

    @classmethod
    def build(cls, requests: Iterable[Mapping[str, Any]], ignore: Sequence[str] = ()) -> RequestIndex:
        queues: dict[bytes, deque[int]] = {}
        by_wire: dict[bytes, bytes] = {}
        for position, request in enumerate(requests):
            fingerprint = fingerprint_of_stored(request, ignore)
            queues.setdefault(fingerprint, deque()).append(position)
            raw = wire_body(request)
            if raw is not None:
                by_wire[wire_key(request["method"], request["path"], request.get("query"), raw)] = fingerprint
        return cls(queues, by_wire)

    def known_fingerprint(self, method: str, path: str, query: str | None, raw_body: bytes | None) -> bytes | None:
        """The fingerprint of a request whose bytes are exactly a recorded one's, without parsing it."""
        return self.by_wire.get(wire_key(method, path, query, raw_body or b""))

    def peek(self, fingerprint: bytes) -> int | None:
        queue = self.queues.get(fingerprint)
        return queue[0] if queue else None

    def take(self, fingerprint: bytes) -> int | None:
        queue = self.queues.get(fingerprint)
        return queue.popleft() if queue else None

    def discard(self, position: int) -> None:
        """Take one recorded position out of whichever queue holds it (served by other means than its fingerprint)."""
        for queue in self.queues.values():
            if position in queue:
                queue.remove(position)
                return


# ---------------------------------------------------------------------------------------------------
# The nearest recorded request, and a diff a person can read


def _similarity(actual: Any, recorded: Any) -> tuple[int, int]:
    if not (isinstance(actual, dict) and isinstance(recorded, dict)):
        return (int(actual == recorded), 0)
    same_fields = sum(1 for key, value in actual.items() if recorded.get(key) == value)
    same_fields -= sum(1 for key in recorded if key not in actual)
    prefix = 0
    mine_all, theirs_all = actual.get("messages"), recorded.get("messages")
    if not (isinstance(mine_all, list) and isinstance(theirs_all, list)):  # any shape may reach a miss
        return (same_fields, prefix)
    for mine, theirs in zip(mine_all, theirs_all, strict=False):
        if mine != theirs:
            break
        prefix += 1
    return (same_fields, prefix)


def nearest_recorded(
    method: str,
    path: str,
    body: Any,
    recorded: Sequence[Mapping[str, Any]],
    expected_position: int | None = None,
) -> int | None:
    """Position of the recorded request closest to this one (same method and path first)."""
    best: tuple[Any, ...] | None = None
    best_position = None
    for position, request in enumerate(recorded):
        same_route = (request.get("method"), request.get("path")) == (method.upper(), path)
        distance = abs(position - expected_position) if expected_position is not None else 0
        score = (same_route, *_similarity(body, stored_request_body(request)), -distance)
        if best is None or score > best:
            best, best_position = score, position
    return best_position


_ROOT_PART = re.compile(r"\[('(?:[^'\\]|\\.)*'|\d+)\]")


def readable_path(deepdiff_path: str) -> str:
    """root['messages'][3]['content'] -> messages[3].content"""
    out = ""
    for part in _ROOT_PART.findall(deepdiff_path):
        if part.startswith("'"):
            out += ("." if out else "") + part[1:-1]
        else:
            out += f"[{part}]"
    return out or "body"


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


_TOKENS = re.compile(r"\s+|\w+|[^\w\s]+")
SHORT_TEXT = 60  # characters: both sides this short read best whole, "from 'x' to 'y'"
CONTEXT_TOKENS = 10  # words and spaces kept either side of a change
CHANGED_CHARS = 160  # of removed or added text, cut at a word boundary
MAX_HUNKS = 3


def _clip(text: str, limit: int = CHANGED_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > 0 else limit] + "…"


def _context(tokens: list[str], *, first: bool, last: bool) -> str:
    """Unchanged text around a change: a few words of it, cut between words, never inside one."""
    if first and last:
        return "".join(tokens)
    if first:
        return ("…" if len(tokens) > CONTEXT_TOKENS else "") + "".join(tokens[-CONTEXT_TOKENS:])
    if last:
        return "".join(tokens[:CONTEXT_TOKENS]) + ("…" if len(tokens) > CONTEXT_TOKENS else "")
    if len(tokens) <= 2 * CONTEXT_TOKENS:
        return "".join(tokens)
    return "".join(tokens[:CONTEXT_TOKENS]) + "…" + "".join(tokens[-CONTEXT_TOKENS:])


def word_diff(old: str, new: str) -> str:
    """Where two texts differ, word by word: "…and skip [-newsletters-]{+everything+} in the brief…"."""
    old_tokens, new_tokens = _TOKENS.findall(old), _TOKENS.findall(new)
    opcodes = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False).get_opcodes()
    parts: list[str] = []
    hunks = 0
    for number, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            parts.append(_context(old_tokens[i1:i2], first=number == 0, last=number == len(opcodes) - 1))
            continue
        hunks += 1
        if hunks > MAX_HUNKS:
            parts.append(f" … and {sum(op[0] != 'equal' for op in opcodes) - MAX_HUNKS} more changes")
            break
        removed, added = "".join(old_tokens[i1:i2]), "".join(new_tokens[j1:j2])
        if removed:
            parts.append(f"[-{_clip(removed)}-]")
        if added:
            parts.append(f"{{+{_clip(added)}+}}")
    return "".join(parts).replace("\n", "⏎")  # one line per difference, line breaks still visible


def _string_change(old: str, new: str) -> str:
    if len(old) <= SHORT_TEXT and len(new) <= SHORT_TEXT:
        return f"from {old!r} to {new!r}"
    return f"([-recorded-]{{+now+}}): {word_diff(old, new)}"


def diff_summary(recorded: Any, actual: Any, limit: int = 12) -> list[str]:
    """Lines such as "system changed from '…' to '…'" or "tools[0].input_schema.required added"."""
    if multipart.is_match_body(recorded) and multipart.is_match_body(actual):
        return multipart.diff_parts(recorded, actual)[:limit]
    from deepdiff import DeepDiff  # only for a miss: importing it costs every replayed session 0.14 s

    lines: list[str] = []
    tools_before, tools_after = _tools_by_name(recorded), _tools_by_name(actual)
    if tools_before is not None and tools_after is not None:
        # Tools diffed by name: a tool removed or renamed is that, not "tools[1].name changed" down the list.
        if list(tools_before) != list(tools_after) and tools_before.keys() == tools_after.keys():
            lines.append(f"tools order changed from {list(tools_before)} to {list(tools_after)}")
        recorded, actual = {**recorded, "tools": tools_before}, {**actual, "tools": tools_after}
    diff = DeepDiff(recorded, actual, verbose_level=2, view="tree")
    for kind, items in diff.items():
        for item in items:
            path = readable_path(item.path())
            if kind in ("values_changed", "type_changes"):
                old, new = item.t1, item.t2
                if isinstance(old, str) and isinstance(new, str):
                    lines.append(f"{path} changed {_string_change(old, new)}")
                else:
                    lines.append(f"{path} changed from {_short(old)} to {_short(new)}")
            elif kind in ("dictionary_item_added", "iterable_item_added"):
                lines.append(f"{path} added: {_short(item.t2)}")
            elif kind in ("dictionary_item_removed", "iterable_item_removed"):
                lines.append(f"{path} removed (was {_short(item.t1)})")
            else:
                lines.append(f"{path}: {kind.replace('_', ' ')}")
    lines.sort(key=_path_order)
    if len(lines) > limit:
        lines = [*lines[:limit], f"… and {len(lines) - limit} more differences"]
    return lines


def _tools_by_name(body: Any) -> dict[str, Any] | None:
    """A request's tools keyed by name (in their order), or None when they are not a list of uniquely named tools."""
    tools = body.get("tools") if isinstance(body, dict) else None
    if not isinstance(tools, list):
        return None
    names = [name for tool in tools if isinstance(tool, dict) and isinstance(name := tool.get("name"), str) and name]
    if len(names) != len(tools) or len(set(names)) != len(names):
        return None
    return dict(zip(names, tools, strict=True))


def _path_order(line: str) -> tuple[int, ...]:
    # The earliest place in the conversation first: system and tools before messages[n].
    numbers = [int(n) for n in re.findall(r"\[(\d+)\]", line.split(" ", 1)[0])]
    return (0 if not line.startswith("messages") else 1, *numbers)
