"""Ruby's VCR gem: `http_interactions:` whose requests and responses carry `body: {encoding, string}` (the
string is `!binary` base64 when the encoding is ASCII-8BIT: gzip, a PDF, or plain JSON Psych thought
binary), header values as lists, `status: {code, message}`, a per-interaction `recorded_at` (RFC 2822)
and a top-level `recorded_with: VCR 6.2.0`.

A Ruby multipart upload (Faraday, Net::HTTP) is kept as the bytes it sent; its per-part `Content-Length`
and `Content-Transfer-Encoding` headers are transport, which matching leaves out (see `multipart`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.cassette.importer.exchange import Exchange, body_string, headers, status, text, vcr_interactions


def read(data: Mapping[str, Any], path: Path) -> Iterator[Exchange]:
    for where, request, response, recorded in vcr_interactions(data, path):
        yield Exchange(
            where=where,
            method=text(request, "method", f"{where}.request", path).upper(),  # Ruby writes `post`
            uri=text(request, "uri", f"{where}.request", path),
            request_headers=headers(request.get("headers"), f"{where}.request.headers", path),
            request_raw=body_string(request.get("body")) or None,
            status=status(response.get("status"), f"{where}.response", path),
            response_headers=headers(response.get("headers"), f"{where}.response.headers", path),
            response_raw=body_string(response.get("body")),
            started_at=recorded if isinstance(recorded, str) else None,
        )
