"""What matching tolerates when a request is not exactly a recorded one: tool_result order and volatile values.

Two differences between a replayed request and its recording are not the agent's to control:

- the order of the tool_result blocks of one user turn (an async agent appends each result as its tool
  finishes; the API pairs them by tool_use_id), so they match in any order;
- values of a volatile shape in what the agent does not write itself (harness.volatile): a fresh id in a tool's
  output, today's date in the system prompt. They are read as their placeholder.

A request that did not match exactly is looked up once more by a key that sorts its tool_results by id and
masks those values (the index of that key is built on the first such request, so a replay that matches
exactly pays nothing). Found, it is served its recording; a changed volatile value is kept as a
`ToleratedDifference`, the run's warning (`Cassette.drifts`), naming each value that was not compared. The
`sequence` policy (harness.cassette.sequence) keeps its tool output differences in the same record.

"Drift" elsewhere is the change of a request against its recording (harness.cassette.drift); a tolerated
difference is the part of such a change that the matching policy served anyway.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness.cassette.match import request_fingerprint, stored_request_body
from harness.normalize import Normalization, map_strings
from harness.volatile import SHAPE_NAMES, Shapes, shapes_for

MAX_VALUES = 20  # values named per request: enough to review, not a screen of them


class HarnessDriftWarning(UserWarning):
    """A request served its recording although it differs from it in what the matching policy tolerates
    (volatile values, or tool output under `sequence`): the test passes, and this says what was not compared."""


@dataclass(frozen=True)
class VolatileValue:
    """One value that was not compared: where it is, its shape, and the recorded and the sent value."""

    where: str
    shape: str
    recorded: str
    now: str

    def text(self) -> str:
        return f"{self.where}: {self.shape} {_clip(self.recorded)} -> {_clip(self.now)}"

    def to_data(self) -> dict[str, str]:
        return {"where": self.where, "shape": self.shape, "recorded": self.recorded, "now": self.now}


def _clip(value: str, limit: int = 60) -> str:
    return repr(value if len(value) <= limit else value[: limit - 1] + "…")


@dataclass(frozen=True)
class ToleratedDifference:
    """A request served its recording although it differs from it, in what the matching policy tolerates:
    volatile values (policy `volatile`, the default) or any tool output (policy `sequence`)."""

    position_in_run: int  # 0-based, among the run's requests
    recorded_position: int  # 0-based, the interaction that answered it
    differences: tuple[str, ...] = ()  # diff lines (recorded -> now): the `sequence` policy's
    policy: str = "sequence"
    volatile: tuple[VolatileValue, ...] = ()

    @property
    def reported(self) -> bool:
        """Whether there is anything to warn about (tool_results in another order alone are not)."""
        return bool(self.differences or self.volatile)

    def describe(self) -> str:
        served = f"request #{self.position_in_run + 1} was served recording #{self.recorded_position + 1}"
        if self.policy == "sequence":
            lines = [f"{served} although its tool output differs (matching policy 'sequence'):"]
            lines.extend(f"  - {line}" for line in self.differences)
        else:
            lines = [f"{served}; volatile values not compared (matching policy {self.policy!r}):"]
            lines.extend(f"  - {value.text()}" for value in self.volatile)
        return "\n".join(lines)

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"request": self.position_in_run + 1, "recording": self.recorded_position + 1,
                                "policy": self.policy, "differences": list(self.differences)}
        if self.volatile:
            data["volatile"] = [value.to_data() for value in self.volatile]
        return data


# -- the key: tool_results by id, volatile values as placeholders ----------------------------------------------

@dataclass(frozen=True)
class VolatileScope:
    """The shapes a rule set reads: every shape in tool output, times only in the system prompt."""

    tool_output: Shapes
    system: Shapes

    @classmethod
    def of(cls, rules: Normalization) -> VolatileScope:
        builtin = SHAPE_NAMES if rules.match_policy != "strict" else ()
        user = rules.volatile_rules()
        return cls(shapes_for(builtin, user, False), shapes_for(builtin, user, True))



def _is_tool_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _by_id(blocks: list[Any]) -> list[Any]:
    """The blocks with the tool_results among them sorted by tool_use_id, in the places tool_results held."""
    places = [index for index, block in enumerate(blocks) if _is_tool_result(block)]
    if len(places) < 2:
        return blocks
    ordered = sorted((blocks[index] for index in places), key=lambda block: str(block.get("tool_use_id")))
    out = list(blocks)
    for index, block in zip(places, ordered, strict=True):
        out[index] = block
    return out


def key_body(body: Any, scope: VolatileScope | None) -> Any:
    """The body as the tolerant lookup reads it: tool_results by id; volatile values as placeholders."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    if scope is not None and scope.system and "system" in body:
        out["system"] = map_strings(body["system"], scope.system.mask)
    messages = body.get("messages")
    if isinstance(messages, list):
        out["messages"] = [_message_key(message, scope) for message in messages]
    return out


def _message_key(message: Any, scope: VolatileScope | None) -> Any:
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list) or message.get("role") != "user":
        return message
    blocks = _by_id(content)
    if scope is not None and scope.tool_output:
        mask = scope.tool_output.mask
        blocks = [{**block, "content": map_strings(block.get("content"), mask)} if _is_tool_result(block) else block
                  for block in blocks]
    return {**message, "content": blocks} if blocks is not content else message


def volatile_values(recorded: Any, live: Any, scope: VolatileScope) -> list[VolatileValue]:
    """The volatile values in which two bodies with the same key differ, tool_results paired by id."""
    found: list[VolatileValue] = []
    if isinstance(recorded, dict) and isinstance(live, dict):
        found.extend(_changed("system", recorded.get("system"), live.get("system"), scope.system))
        old, new = recorded.get("messages"), live.get("messages")
        if isinstance(old, list) and isinstance(new, list):
            for index, (before, after) in enumerate(zip(old, new, strict=False)):
                found.extend(_message_values(index, before, after, scope.tool_output))
    return found[:MAX_VALUES]


def _message_values(index: int, before: Any, after: Any, shapes: Shapes) -> Iterator[VolatileValue]:
    if before == after or not (isinstance(before, dict) and isinstance(after, dict)):
        return
    old = {block.get("tool_use_id"): block for block in before.get("content") or [] if _is_tool_result(block)}
    for place, block in enumerate(after.get("content") or []):
        if _is_tool_result(block) and block.get("tool_use_id") in old:
            where = f"messages[{index}].content[{place}] (tool_result {block.get('tool_use_id')})"
            yield from _changed(where, old[block["tool_use_id"]].get("content"), block.get("content"), shapes)


def _changed(where: str, recorded: Any, live: Any, shapes: Shapes) -> Iterator[VolatileValue]:
    if recorded == live or not shapes:
        return
    if isinstance(recorded, str) and isinstance(live, str):
        for old, new in zip(shapes.find(recorded), shapes.find(live), strict=False):
            if old.value != new.value:
                yield VolatileValue(where, old.shape, old.value, new.value)
    elif isinstance(recorded, list) and isinstance(live, list):
        for old_item, new_item in zip(recorded, live, strict=False):
            yield from _changed(where, old_item, new_item, shapes)
    elif isinstance(recorded, dict) and isinstance(live, dict):
        for key in recorded.keys() & live.keys():
            yield from _changed(where, recorded[key], live[key], shapes)


def volatile_in(body: Any, scope: VolatileScope) -> list[tuple[str, str, str]]:
    """(where, shape, value) of each volatile value a request holds where matching would not compare it:
    what `harness show` lists, so a reviewer sees what a replay leaves out."""
    found: list[tuple[str, str, str]] = []
    if not isinstance(body, dict):
        return found
    for text in _texts(body.get("system")):
        found.extend(("system prompt", value.shape, value.value) for value in scope.system.find(text))
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) and message.get("role") == "user" else []:
            if _is_tool_result(block):
                where = f"tool_result {block.get('tool_use_id')}"
                for text in _texts(block.get("content")):
                    found.extend((where, value.shape, value.value) for value in scope.tool_output.find(text))
    return found


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)


# -- the lookup ------------------------------------------------------------------------------------------------

class AskedRequest(Protocol):
    """What the matchers (this one and harness.cassette.sequence) read of a request being replayed."""

    method: str
    path: str
    query: str
    position_in_run: int

    @property
    def body(self) -> Any: ...


class TolerantMatcher:
    """Recorded requests by their tolerant key, in recorded order; the index is built when first asked."""

    def __init__(self, requests: Sequence[Mapping[str, Any]], ignore: Sequence[str], rules: Normalization) -> None:
        self._requests = list(requests)
        self._ignore = tuple(ignore)
        self.policy = rules.match_policy
        scope = VolatileScope.of(rules)
        self.scope: VolatileScope | None = scope if scope.tool_output or scope.system else None
        self._queues: dict[bytes, deque[int]] | None = None

    def _key(self, method: str, path: str, query: str | None, body: Any) -> bytes:
        return request_fingerprint(method, path, query, key_body(body, self.scope), self._ignore)

    def _index(self) -> dict[bytes, deque[int]]:
        if self._queues is None:
            self._queues = {}
            for position, request in enumerate(self._requests):
                key = self._key(request["method"], request["path"], request.get("query"), stored_request_body(request))
                self._queues.setdefault(key, deque()).append(position)
        return self._queues

    def alike(self, request: AskedRequest) -> list[int]:
        """Every recorded position with this request's key (a miss asks: was it recorded, and played already?)."""
        body = request.body
        keyed = key_body(body, self.scope)
        if keyed == body:
            return []
        return list(self._index().get(request_fingerprint(request.method, request.path, request.query, keyed,
                                                          self._ignore), ()))

    def matched(self, request: AskedRequest, play_counts: Sequence[int]) -> ToleratedDifference | None:
        """The tolerated difference that lets `request` be served the next unplayed recording with its key, or
        None (then it is a miss, or for the `sequence` policy to judge)."""
        body = request.body
        keyed = key_body(body, self.scope)
        if keyed == body:  # nothing to tolerate: its key is its own fingerprint, which matched nothing
            return None
        key = request_fingerprint(request.method, request.path, request.query, keyed, self._ignore)
        position = next((p for p in self._index().get(key, ()) if play_counts[p] == 0), None)
        if position is None:
            return None
        recorded = stored_request_body(self._requests[position])
        values = volatile_values(recorded, body, self.scope) if self.scope is not None else []
        return ToleratedDifference(request.position_in_run, position, policy=self.policy, volatile=tuple(values))
