"""Between bytes on the wire and what a cassette stores: parsed JSON, SSE events, text or base64.

Used by the recorder (bytes -> stored), the replayers (stored -> bytes and headers: `use_cassette`,
`harness serve`, the proxy and `harness chaos`) and the importer, so that a body is stored, and an
answer replayed, the same way whoever captured or replays it.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
from collections.abc import Mapping
from typing import Any

from harness.jsondata import compact_json
from harness.wire.multipart import store_multipart
from harness.wire.sse import SSE_CONTENT_TYPE, fold_stream, looks_like_sse, parse_sse, render_sse

GZIP_MAGIC = b"\x1f\x8b"
REPLAYED_HEADER = "x-harness-replayed"  # on every answer that came from a cassette
# Headers that describe one connection, not the message: never copied from one hop to the next.
HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te", "trailer",
    "transfer-encoding", "upgrade",
})
# Framing each sender decides for itself (bodies are sent decoded, chunked or with their own length).
FRAMING = frozenset({"content-length", "content-encoding"})
MAX_DECOMPRESSED_BYTES = 32 * 1024 * 1024  # a gzip body that inflates past this is refused, not read


class BodyTooLarge(ValueError):
    pass


def gunzip_bounded(raw: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Decompress without trusting the stream: stop at `limit` bytes (a gzip bomb stays a small read)."""
    with gzip.GzipFile(fileobj=io.BytesIO(raw)) as handle:
        out = handle.read(limit + 1)
    if len(out) > limit:
        raise BodyTooLarge(f"gzip body inflates past {limit:,} bytes")
    return out


def store_body(target: dict[str, Any], raw: bytes | str | None, *, content_type: str | None = None,
               allow_sse: bool = False) -> None:
    """Put `raw` into `target` as `events`, `body` (JSON), `parts` (multipart/form-data), `body_text` or
    `body_base64`."""
    if raw is None:
        return
    # "--boundary" opens a multipart body; "LS" opens one some foreign recorders kept as base64. Parts are a
    # request's form only: a response (stored with allow_sse, such as a downloaded file) keeps its bytes.
    if not allow_sse and raw[:2] in (b"--", "--", "LS") and store_multipart(target, raw):
        return
    if isinstance(raw, str):
        text = raw
    else:
        if raw[:2] == GZIP_MAGIC:
            raw = gunzip_bounded(raw)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            target["body_base64"] = base64.b64encode(raw).decode("ascii")
            return
    if text == "":
        return
    is_sse = (content_type or "").startswith(SSE_CONTENT_TYPE) or looks_like_sse(text)
    if allow_sse and is_sse:
        target["events"] = parse_sse(text)
        return
    try:
        target["body"] = json.loads(text)
    except ValueError:
        target["body_text"] = text


def body_bytes(stored: Mapping[str, Any]) -> bytes:
    """The bytes to put on the wire for a stored request or response."""
    if "events" in stored:
        return render_sse(stored["events"])
    if "body" in stored:
        return compact_json(stored["body"]).encode("utf-8")
    if "body_text" in stored:
        return stored["body_text"].encode("utf-8")
    if "body_base64" in stored:
        return base64.b64decode(stored["body_base64"])
    return b""


def stored_content_type(stored: Mapping[str, Any]) -> str | None:
    if "events" in stored:
        return SSE_CONTENT_TYPE
    if "body" in stored:
        return "application/json"
    return None


def replay_headers(stored: Mapping[str, Any], *, content_type: str | None = None) -> list[tuple[str, str]]:
    """The headers of a replayed answer: the recorded ones less connection and framing headers, a content
    type, and `x-harness-replayed: 1`. The content type is the recorded one (or the stored body's kind);
    `content_type` replaces it when the body sent is not the recorded one (an injected error, say)."""
    dropped = HOP_BY_HOP | FRAMING | ({"content-type"} if content_type else set())
    headers = [(name, value) for name, value in (stored.get("headers") or {}).items()
               if name.lower() not in dropped]
    content_type = content_type or stored_content_type(stored)
    if content_type and not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("content-type", content_type))
    headers.append((REPLAYED_HEADER, "1"))
    return headers


def response_message(response: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Message (or error body) a response carries, whether it was JSON or a stream."""
    if "events" in response:
        return fold_stream(response["events"])
    body = response.get("body")
    return body if isinstance(body, dict) else None
