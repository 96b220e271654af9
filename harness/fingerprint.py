"""Short stable fingerprints of what defines a run: model, system prompt, tools.

Stored in a cassette's provenance block and compared by reports, so that "the system prompt changed"
is visible without diffing whole requests.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def fingerprint(value: Any) -> str | None:
    if value is None:
        return None
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # keys of mixed types, a value JSON cannot hold: still stable
        text = repr(value)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def run_fingerprints(body: Any) -> dict[str, str | None]:
    if not isinstance(body, dict):
        return {}
    return {"model": fingerprint(body.get("model")), "system": fingerprint(body.get("system")),
            "tools": fingerprint(body.get("tools"))}
