"""Token counts and prompt-cache accounting, computed from the text so that they are stable.

A "token" here is ceil(characters / 4) of a content unit serialised as compact, key-sorted JSON with
any `cache_control` removed (so marking a block for caching does not change the count). The input is
the sum over its units in the order the API caches them: tools, then system, then message content.

Prompt caching follows the real rules closely enough for evals: every `cache_control` marks a
breakpoint and its prefix is cached; the longest cached prefix ending at a block boundary before the
last breakpoint is a read, the rest up to the last breakpoint is a write. A breakpoint whose prefix is shorter than
the model's minimum cacheable length (`harness.sim.models.min_cacheable_tokens`: 1024 tokens for most Claude
models, none for the simulator's own `sim-*` models) caches nothing, as in the API: no write, no error.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from dataclasses import dataclass
from typing import Any

from harness.jsondata import canonical_json


def count_text(text: str) -> int:
    return math.ceil(len(text) / 4)


def _strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _strip_cache_control(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache_control(item) for item in value]
    return value


def _canonical(value: Any) -> str:
    return canonical_json(_strip_cache_control(value))


@dataclass(frozen=True)
class _Unit:
    tokens: int
    text: str  # canonical JSON, for prefix hashing
    cache_ttl: str | None  # "5m" or "1h" when this unit carries cache_control


def _ttl(block: Any) -> str | None:
    if isinstance(block, dict) and isinstance(block.get("cache_control"), dict):
        return "1h" if block["cache_control"].get("ttl") == "1h" else "5m"
    return None


def _units(body: dict[str, Any]) -> list[_Unit]:
    # (what is counted, the block whose cache_control marks a breakpoint)
    raw: list[tuple[Any, Any]] = [(tool, tool) for tool in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, list):
        raw.extend((block, block) for block in system)
    elif system:
        raw.append(({"type": "text", "text": system}, None))
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        # A string is shorthand for one text block; counting it as one keeps both spellings' prefixes equal.
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        raw.extend(({"role": role, "block": block}, block) for block in blocks)
    units = []
    for counted, marker in raw:
        text = _canonical(counted)
        units.append(_Unit(count_text(text), text, _ttl(marker)))
    top_level = body.get("cache_control")
    if isinstance(top_level, dict) and units:
        # Automatic caching: a top-level cache_control puts the breakpoint on the last block.
        last = units[-1]
        units[-1] = _Unit(last.tokens, last.text, "1h" if top_level.get("ttl") == "1h" else "5m")
    return units


def count_input(body: dict[str, Any]) -> int:
    """Input tokens of a request (what count_tokens answers), at least 1."""
    return max(1, sum(unit.tokens for unit in _units(body)))


def count_output(content: list[dict[str, Any]]) -> int:
    """Output tokens of response content blocks, at least 1 (the real API never bills 0)."""
    total = 0
    for block in content:
        kind = block.get("type")
        if kind == "text":
            total += count_text(block.get("text", ""))
        elif kind == "thinking":
            total += count_text(block.get("thinking", ""))
        elif kind in ("tool_use", "server_tool_use"):
            total += count_text(block.get("name", "") + json.dumps(block.get("input", {}), sort_keys=True))
    return max(1, total)


@dataclass(frozen=True)
class InputUsage:
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    ephemeral_5m_input_tokens: int
    ephemeral_1h_input_tokens: int


class CacheLedger:
    """The prompt prefixes one simulator instance has cached. Thread-safe; lives as long as the server."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def usage(self, body: dict[str, Any], minimum: int = 0) -> InputUsage:
        """The request's input split into uncached, written and read tokens; `minimum` is the model's shortest
        cacheable prefix."""
        units = _units(body)
        total = max(1, sum(unit.tokens for unit in units))
        prefixes: list[tuple[str, int, str | None]] = []  # (prefix hash, prefix tokens, ttl if a breakpoint)
        digest = hashlib.sha256()
        running = 0
        for unit in units:
            digest.update(unit.text.encode() + b"\x00")
            running += unit.tokens
            # A breakpoint below the minimum cacheable length is no breakpoint at all.
            ttl = unit.cache_ttl if running >= minimum else None
            prefixes.append((digest.copy().hexdigest(), running, ttl))
        last = max((i for i, (_, _, ttl) in enumerate(prefixes) if ttl), default=None)
        if last is None:
            return InputUsage(total, 0, 0, 0, 0)
        with self._lock:
            # Like the real API, a cached prefix is found at any block boundary before the last
            # breakpoint, so moving the breakpoint forward each turn still reads the earlier turns.
            read = max((tokens for key, tokens, _ in prefixes[: last + 1] if key in self._seen), default=0)
            self._seen.update(key for key, _, ttl in prefixes if ttl)
        written = prefixes[last][1] - read
        ttl = prefixes[last][2]
        return InputUsage(
            input_tokens=max(0, total - read - written),
            cache_creation_input_tokens=written,
            cache_read_input_tokens=read,
            ephemeral_5m_input_tokens=written if ttl == "5m" else 0,
            ephemeral_1h_input_tokens=written if ttl == "1h" else 0,
        )
