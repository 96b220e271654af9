"""langchain's cassettes: vcrpy's internal `requests:` / `responses:` lists, often gzip (`.yaml.gz`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.cassette.importer.exchange import Exchange, headers, mapping, text
from harness.cassette.importer.vcrpy import request_body, response
from harness.errors import CassetteError


def read(data: Mapping[str, Any], path: Path) -> Iterator[Exchange]:
    requests, responses = data["requests"], data["responses"]
    if len(requests) != len(responses):
        raise CassetteError(f"{len(requests)} requests but {len(responses)} responses", file=path, where="$")
    for index, (request, answer) in enumerate(zip(requests, responses, strict=True)):
        where = f"$.requests[{index}]"
        request = mapping(request, where, path)
        exchange = Exchange(
            where=where,
            method=text(request, "method", where, path).upper(),
            uri=text(request, "uri", where, path),
            request_headers=headers(request.get("headers"), f"{where}.headers", path),
        )
        request_body(exchange, request)
        response(exchange, mapping(answer, f"$.responses[{index}]", path), f"$.responses[{index}]", path)
        yield exchange
