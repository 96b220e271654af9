"""HAR 1.2 (Polly.JS, browsers' devtools): `log.entries[]`, with each response's `content.text` (base64 when
`content.encoding` says so) and its timing."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.cassette.importer.exchange import Exchange, headers, mapping, status, text
from harness.errors import CassetteError


def read(data: Mapping[str, Any], path: Path) -> Iterator[Exchange]:
    for index, entry in enumerate(data["log"]["entries"]):
        where = f"$.log.entries[{index}]"
        entry = mapping(entry, where, path)
        request = mapping(entry.get("request"), f"{where}.request", path)
        response = mapping(entry.get("response"), f"{where}.response", path)
        post = request.get("postData")
        found = response.get("content")
        content: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        raw: bytes | str | None = content.get("text")
        if isinstance(raw, str) and content.get("encoding") == "base64":
            try:
                raw = base64.b64decode(raw, validate=True)
            except binascii.Error:
                raise CassetteError(
                    "content.text says base64 but is not", file=path, where=f"{where}.response.content.text"
                ) from None
        elapsed = entry.get("time")
        yield Exchange(
            where=where,
            method=text(request, "method", f"{where}.request", path).upper(),
            uri=text(request, "url", f"{where}.request", path),
            request_headers=headers(request.get("headers"), f"{where}.request.headers", path),
            request_raw=post.get("text") if isinstance(post, Mapping) else None,
            status=status(response.get("status"), f"{where}.response", path),
            # HAR's content.text is already decoded even where the headers still say gzip: the
            # encoding header is dropped by the allow-list, so nothing tries to decode it twice.
            response_headers=headers(response.get("headers"), f"{where}.response.headers", path),
            response_raw=raw,
            response_mime=content.get("mimeType") if isinstance(content.get("mimeType"), str) else None,
            started_at=entry.get("startedDateTime") if isinstance(entry.get("startedDateTime"), str) else None,
            elapsed_ms=float(elapsed) if isinstance(elapsed, int | float) and elapsed >= 0 else None,
        )
