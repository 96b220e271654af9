"""vcrpy cassettes (YAML or JSON) and pydantic-ai's variant with parsed bodies: `interactions:` whose
bodies are `body: {string: ...}` (text, or `!!binary` gzip) or `parsed_body` mappings."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.cassette.importer.exchange import Exchange, headers, mapping, status, text


def request_body(exchange: Exchange, request: Mapping[str, Any]) -> None:
    if "parsed_body" in request:
        exchange.request_parsed = request["parsed_body"]
    else:
        body = request.get("body")
        if isinstance(body, Mapping):  # some vcrpy versions nest it like a response body
            body = body.get("string")
        exchange.request_raw = body


def response(exchange: Exchange, answer: Mapping[str, Any], where: str, path: Path) -> None:
    exchange.status = status(answer.get("status"), where, path)
    exchange.response_headers = headers(answer.get("headers"), f"{where}.headers", path)
    if "parsed_body" in answer:
        exchange.response_parsed = answer["parsed_body"]
    else:
        body = answer.get("body")
        exchange.response_raw = body.get("string") if isinstance(body, Mapping) else body


def read(data: Mapping[str, Any], path: Path) -> Iterator[Exchange]:
    for index, item in enumerate(data["interactions"]):
        where = f"$.interactions[{index}]"
        item = mapping(item, where, path)
        request = mapping(item.get("request"), f"{where}.request", path)
        answer = mapping(item.get("response"), f"{where}.response", path)
        exchange = Exchange(
            where=where,
            method=text(request, "method", f"{where}.request", path).upper(),
            uri=text(request, "uri", f"{where}.request", path),
            request_headers=headers(request.get("headers"), f"{where}.request.headers", path),
        )
        request_body(exchange, request)
        response(exchange, answer, f"{where}.response", path)
        yield exchange
