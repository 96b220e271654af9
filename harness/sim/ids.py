"""Deterministic ids: a hash of the seed, the request and a position, so one run always gives one set.

`stream` is left out of the request fingerprint on purpose: a streamed and a non-streamed call with
the same body get the same message, which lets tests compare the two paths byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harness.jsondata import canonical_json

_ALPHABET = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"  # base58, like real ids


def request_fingerprint(body: Any) -> str:
    if isinstance(body, dict):
        body = {key: value for key, value in body.items() if key != "stream"}
    text = canonical_json(body)
    return hashlib.sha256(text.encode()).hexdigest()


def stable_id(prefix: str, seed: int, *parts: object, length: int = 24) -> str:
    """`prefix` + `length` base58 characters derived from seed and parts."""
    digest = hashlib.sha256(json.dumps([seed, *parts], default=str).encode()).digest()
    number = int.from_bytes(digest, "big")
    chars = []
    for _ in range(length):
        number, rest = divmod(number, len(_ALPHABET))
        chars.append(_ALPHABET[rest])
    return prefix + "".join(chars)


def message_id(seed: int, fingerprint: str) -> str:
    return stable_id("msg_sim_", seed, fingerprint, "message")


def tool_use_id(seed: int, fingerprint: str, position: int) -> str:
    return stable_id("toolu_sim_", seed, fingerprint, "tool_use", position)


def server_tool_use_id(seed: int, fingerprint: str, position: int) -> str:
    return stable_id("srvtoolu_sim_", seed, fingerprint, "server_tool_use", position)


def request_id(seed: int, fingerprint: str, index: int) -> str:
    # The request index is part of it: a retry of the same body is a different request, as in the real API.
    return stable_id("req_sim_", seed, fingerprint, "request", index)


def signature(seed: int, fingerprint: str, position: int) -> str:
    """An opaque thinking signature (the real one is a base64 blob the client must echo back)."""
    return stable_id("", seed, fingerprint, "signature", position, length=64)
