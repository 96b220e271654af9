"""One-exchange JSON files: `{"request": {method, url, headers, body}, "response": {status, headers, body}}`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.cassette.importer.exchange import Exchange, headers, mapping, status, text


def read(data: Mapping[str, Any], path: Path) -> Iterator[Exchange]:
    """`{"request": {method, url, headers, body}, "response": {status: {code, message}, headers, body}}`."""
    request = mapping(data["request"], "$.request", path)
    response = mapping(data["response"], "$.response", path)
    exchange = Exchange(
        where="$",
        method=text(request, "method", "$.request", path).upper(),
        uri=text(request, "url" if "url" in request else "uri", "$.request", path),
        request_headers=headers(request.get("headers"), "$.request.headers", path),
        status=status(response.get("status"), "$.response", path),
        response_headers=headers(response.get("headers"), "$.response.headers", path),
    )
    for side, body in (("request", request.get("body")), ("response", response.get("body"))):
        if isinstance(body, Mapping) and set(body) <= {"string", "encoding"}:  # vcrpy's {string: ...}
            body = body.get("string")
        if isinstance(body, dict | list):  # stored parsed
            setattr(exchange, f"{side}_parsed", body)
        else:
            setattr(exchange, f"{side}_raw", body)
    yield exchange
