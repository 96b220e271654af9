"""Dotted paths into JSON data ("metadata.user_id", "$.filters[*].id"), and leaving them out.

Used wherever a person names fields to ignore: request matching (`ignore_fields`) and tool-argument
comparison in evals (`ignore_paths`), so both read a path the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any


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
