"""JSON data helpers shared by every stage: one canonical spelling, short fingerprints, dotted paths.

- `canonical_json`: one spelling per value (keys sorted, no spaces), what request matching, the
  trajectory, the checks and the simulator compare, hash and count.
- `fingerprint` / `run_fingerprints`: short stable hashes of what defines a run (model, system prompt,
  tools), stored in a cassette's provenance block and compared by reports, so that "the system prompt
  changed" is visible without diffing whole requests.
- `mapping_at`: the object under a key, or an empty one where the key holds anything else (what a reader
  of foreign or partial JSON wants, with a type the checker follows).
- `parse_path` / `drop_paths`: dotted paths into JSON data ("metadata.user_id", "$.filters[*].id"), read
  the same wherever a person names fields to ignore: request matching (`ignore_fields`) and tool-argument
  comparison in evals (`ignore_paths`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

# One encoder each, built once: `json.dumps` with any keyword builds a new JSONEncoder on every call, which on
# the replay path (a JSON body or an SSE event per request) cost more than the encoding of a small value.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""JSON as the anthropic SDK writes it on the wire: compact, no ASCII escaping, keys in their order."""


def mapping_at(container: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """`container[key]` when it is a mapping, else an empty mapping (missing, null, a list, a string...)."""
    value = container.get(key)
    return value if isinstance(value, Mapping) else {}


def canonical_json(value: Any) -> str:
    """One spelling per value: keys sorted, no spaces. Two tool inputs are the same call iff these match.
    A value JSON cannot hold is spelled as its str()."""
    return _CANONICAL(value)


def fingerprint(value: Any) -> str | None:
    if value is None:
        return None
    try:
        text = canonical_json(value)
    except (TypeError, ValueError, RecursionError):  # keys of mixed types: still stable
        text = repr(value)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def run_fingerprints(body: Any) -> dict[str, str | None]:
    if not isinstance(body, dict):
        return {}
    prints = {"model": fingerprint(body.get("model")), "system": fingerprint(body.get("system")),
              "tools": fingerprint(body.get("tools"))}
    if body.get("output_config") is not None:  # structured outputs and effort: a different run when they change
        prints["output_config"] = fingerprint(body["output_config"])
    return prints


def parse_path(path: str) -> tuple[str, ...]:
    """ "$.a.b[0].c" -> ("a", "b", "0", "c"); "[*]" and "*" stay "*" (any list item or key)."""
    text = path.strip()
    text = text[1:] if text.startswith("$") else text
    parts = []
    for index, key in re.findall(r"\[([^\]]*)\]|([^.\[\]]+)", text):
        parts.append((index if index else key).strip("'\""))
    return tuple(parts)


def drop_paths(value: Any, paths: Sequence[tuple[str, ...]]) -> Any:
    """A copy of `value` without what each path names (a list item named by a path is removed)."""
    for path in paths:
        value = _drop(value, path)
    return value


def _drop(value: Any, path: tuple[str, ...]) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        keys = list(value) if head == "*" else [head]
        out = dict(value)
        for key in keys:
            if key in out:
                if rest:
                    out[key] = _drop(out[key], rest)
                else:
                    del out[key]
        return out
    if isinstance(value, list) and (head == "*" or head.isdigit()):
        indexes = set(range(len(value))) if head == "*" else {int(head)}
        if not rest:
            return [item for i, item in enumerate(value) if i not in indexes]
        return [_drop(item, rest) if i in indexes else item for i, item in enumerate(value)]
    return value


def json_path(parts: Any) -> str:
    """`$.interactions[3].response.status` from a jsonschema error path."""
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out
