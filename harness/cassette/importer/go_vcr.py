"""go-vcr v4 (`gopkg.in/dnaeon/go-vcr.v4`, cassette `version: 2`): `interactions:` whose requests carry
`url` (not vcrpy's `uri`), `method`, `headers` (lists), `body` (a string) and `form` (a POSTed form's
fields), and whose responses split the status into `status: 200 OK` and `code: 200`, with `duration`
(a Go duration, "1.234s" or "850ms") and `uncompressed` (Go already gunzipped the body).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from harness.cassette.importer.exchange import Exchange, headers, mapping, status, text

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_MS_PER_UNIT = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4, "h": 3.6e6}


def duration_ms(value: Any) -> float | None:
    """A Go duration ("1m2.5s", "850ms") in milliseconds; None when it is not one."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) / 1e6  # a bare number: nanoseconds, as time.Duration marshals
    if not isinstance(value, str) or not value or _DURATION.sub("", value):
        return None
    return sum(float(amount) * _MS_PER_UNIT[unit] for amount, unit in _DURATION.findall(value))


def _status(response: Mapping[str, Any], where: str, path: Path) -> int:
    """`code: 200` first; else the number that starts `status: 200 OK`."""
    if response.get("code") not in (None, 0):
        return status(response.get("code"), where, path)
    line = response.get("status")
    number = line.split(" ", 1)[0] if isinstance(line, str) else line
    return status(number, where, path)


def read(data: Mapping[str, Any], path: Path) -> Iterator[Exchange]:
    for index, item in enumerate(data["interactions"]):
        where = f"$.interactions[{index}]"
        item = mapping(item, where, path)
        request = mapping(item.get("request"), f"{where}.request", path)
        response = mapping(item.get("response"), f"{where}.response", path)
        body = request.get("body")
        form = request.get("form")
        if not body and isinstance(form, Mapping) and form:  # a urlencoded POST keeps its fields only
            body = urlencode(
                [
                    (str(k), str(v))
                    for k, values in form.items()
                    for v in (values if isinstance(values, list) else [values])
                ]
            )
        yield Exchange(
            where=where,
            method=text(request, "method", f"{where}.request", path).upper(),
            uri=text(request, "url", f"{where}.request", path),
            request_headers=headers(request.get("headers"), f"{where}.request.headers", path),
            request_raw=body or None,
            status=_status(response, f"{where}.response", path),
            response_headers=headers(response.get("headers"), f"{where}.response.headers", path),
            response_raw=response.get("body"),
            elapsed_ms=duration_ms(response.get("duration")),
        )
