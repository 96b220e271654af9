"""Go's httprr traces (golang.org/x/oscar/internal/httprr, rsc.io/httprr; used by the Go LLM clients).

The format, as its source reads and writes it: the line `httprr trace v1`, then one record per
round trip, each a line `N1 N2` followed by N1 bytes of the request and N2 bytes of the response, both
raw HTTP/1.1. The request is written by Go's `Request.WriteProxy` (an absolute URL in the request line,
`Host:`, then the headers and a body of `Content-Length` bytes); the response by `Response.Write`, whose
body is chunked (`Transfer-Encoding: chunked`) when its length was not known, as for a stream, or else
runs to its `Content-Length` or to the end of the record. Go's transport has already undone gzip
unless the client asked for it, so a `Content-Encoding: gzip` body is still gzip and is read as such.
Lengths are bytes, so the trace is read as bytes, never decoded as a whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from harness.cassette.importer.detect import HTTPRR_MAGIC
from harness.cassette.importer.exchange import Exchange
from harness.errors import CassetteError

_CRLF = b"\r\n"


class _Corrupt(ValueError):
    """The record is not what httprr writes; the message says where and what."""


def read(data: bytes, path: Path) -> Iterator[Exchange]:
    rest = data[len(HTTPRR_MAGIC) :]
    offset = len(HTTPRR_MAGIC)
    index = 0
    while rest:
        where = f"record {index + 1} (byte {offset})"
        line, newline, rest = rest.partition(b"\n")
        sizes = line.split(b" ")
        if not newline or len(sizes) != 2 or not all(size.isdigit() for size in sizes):
            raise CassetteError(
                f"corrupt httprr trace: expected a line 'N1 N2' of two byte counts, found {line[:40]!r}",
                file=path,
                where=where,
            )
        request_size, response_size = int(sizes[0]), int(sizes[1])
        if request_size + response_size > len(rest):
            raise CassetteError(
                f"corrupt httprr trace: the record says {request_size} + {response_size} bytes "
                f"but {len(rest)} remain (a truncated file)",
                file=path,
                where=where,
            )
        request, response = rest[:request_size], rest[request_size : request_size + response_size]
        rest = rest[request_size + response_size :]
        try:
            yield _exchange(request, response, where)
        except _Corrupt as err:
            raise CassetteError(f"corrupt httprr trace: {err}", file=path, where=where) from None
        offset += len(line) + 1 + request_size + response_size
        index += 1


def _exchange(request: bytes, response: bytes, where: str) -> Exchange:
    request_line, request_headers, request_body = _message(request, "request")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise _Corrupt(f"the request line {request_line[:60]!r} is not 'METHOD URL HTTP/1.1'")
    method, target = parts[0], parts[1]
    uri = _absolute(target, request_headers)
    status_line, response_headers, response_body = _message(response, "response")
    status = status_line.split(" ", 2)
    if len(status) < 2 or not status[0].startswith("HTTP/") or not status[1].isdigit():
        raise _Corrupt(f"the status line {status_line[:60]!r} is not 'HTTP/1.1 200 OK'")
    return Exchange(
        where=where,
        method=method.upper(),
        uri=uri,
        request_headers=request_headers,
        request_raw=request_body or None,
        status=int(status[1]),
        response_headers=[
            (name, value)
            for name, value in response_headers
            if name.lower() not in ("transfer-encoding", "content-length")
        ],
        response_raw=response_body,
    )


def _absolute(target: str, headers: list[tuple[str, str]]) -> str:
    """WriteProxy writes the absolute URL; a trace written by hand may carry a path and a Host header."""
    url = urlsplit(target)
    if url.scheme and url.netloc:
        return target
    host = next((value for name, value in headers if name.lower() == "host"), "")
    if not host:
        raise _Corrupt(f"the request target {target[:60]!r} has no host, and no Host header names one")
    return urlunsplit(("https", host, url.path or "/", url.query, ""))


def _message(raw: bytes, side: str) -> tuple[str, list[tuple[str, str]], bytes]:
    """(start line, headers, body) of one raw HTTP/1.1 message, the body de-chunked or cut to its length."""
    head, blank, body = raw.partition(_CRLF + _CRLF)
    if not blank:
        raise _Corrupt(f"the {side} has no blank line after its headers")
    # Header bytes are latin-1 in HTTP/1.1; a line may end in a bare LF (Go's reader takes it, and traces
    # whose scrubbers rewrote a header by hand have them).
    lines = re.split(r"\r?\n", head.decode("latin-1"))
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise _Corrupt(f"the {side} header line {line[:60]!r} is not 'Name: value'")
        headers.append((name, value.strip()))
    found = {name.lower(): value for name, value in headers}
    if "chunked" in found.get("transfer-encoding", "").lower():
        body = _dechunk(body, side)
    elif found.get("content-length", "").isdigit():
        length = int(found["content-length"])
        if length > len(body):
            raise _Corrupt(f"the {side} says Content-Length {length} but holds {len(body)} bytes")
        body = body[:length]
    return lines[0], headers, body


def _dechunk(body: bytes, side: str) -> bytes:
    out: list[bytes] = []
    position = 0
    while True:
        end = body.find(_CRLF, position)
        if end == -1:
            raise _Corrupt(f"the {side}'s chunked body ends inside a chunk size line")
        size_text = body[position:end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise _Corrupt(f"the {side}'s chunk size {size_text[:20]!r} is not hexadecimal") from None
        if size == 0:
            return b"".join(out)
        start = end + 2
        if start + size > len(body):
            raise _Corrupt(f"the {side}'s chunk of {size} bytes runs past the record")
        out.append(body[start : start + size])
        position = start + size + 2
