"""R's vcr package (ropensci; the cassettes of ellmer, httr2 and crul clients): `http_interactions:` with
`status: 200` (vcr 2.x, a bare integer) or `status: {status_code: '200', message, explanation}` (1.x),
header values as plain strings (vcr 1.x adds a `status: HTTP/2 200` pseudo-header), bodies as
`{encoding, file, string}` already decoded (the `content-encoding: gzip` header stays, the bytes do not),
a per-interaction `recorded_at` (`2025-11-05 22:58:10`) and `recorded_with: VCR-vcr/2.0.0`.

An upload is kept as its form `fields:`, a file as `{path, type, name}`, never its bytes. The part is
rebuilt from the file when it lies beside the cassette under its name; otherwise it is imported with its
name, filename and content type and the hash of no content, so a replay of the upload is a miss that
names the part ("content changed"). The recorded path itself is never opened: a cassette from elsewhere
must not make the importer copy `/home/you/.aws/credentials` into a file you commit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from harness.cassette.importer.exchange import Exchange, body_string, headers, status, text, vcr_interactions
from harness.errors import CassetteError
from harness.files import read_bytes_bounded
from harness.wire.multipart import stored_part

_PSEUDO_HEADERS = frozenset({"status"})  # vcr 1.x's `status: HTTP/2 200` line, not a header


def read(data: Mapping[str, Any], path: Path) -> Iterator[Exchange]:
    for where, request, response, recorded in vcr_interactions(data, path):
        exchange = Exchange(
            where=where,
            method=text(request, "method", f"{where}.request", path).upper(),
            uri=text(request, "uri", f"{where}.request", path),
            request_headers=headers(request.get("headers"), f"{where}.request.headers", path),
            status=status(response.get("status"), f"{where}.response", path),
            response_headers=[
                (name, value)
                for name, value in headers(response.get("headers"), f"{where}.response.headers", path)
                if name.lower() not in _PSEUDO_HEADERS
            ],
            response_raw=_body(response.get("body"), f"{where}.response.body", path),
            started_at=str(recorded) if recorded is not None else None,
        )
        body = request.get("body")
        fields = body.get("fields") if isinstance(body, Mapping) else None
        if isinstance(fields, Mapping):
            exchange.request_parts = _parts(fields, f"{where}.request.body.fields", path)
        else:
            exchange.request_raw = _body(body, f"{where}.request.body", path) or None
        yield exchange


def _body(body: Any, where: str, path: Path) -> Any:
    if isinstance(body, Mapping) and body.get("file") is True:
        # vcr's `write_disk_path`: the string names a file beside the cassette that holds the body.
        return _file_bytes(str(body.get("string") or ""), path, where)[0] or b""
    return body_string(body)


def _parts(fields: Mapping[str, Any], where: str, path: Path) -> list[dict[str, Any]]:
    """The multipart parts an upload's `fields:` stand for, in their order."""
    parts = []
    for name, value in fields.items():
        if isinstance(value, Mapping) and "path" in value:
            content, _ = _file_bytes(str(value.get("path") or ""), path, f"{where}.{name}.path")
            filename = value.get("name") or _basename(str(value.get("path") or ""))
            part = stored_part(
                str(name), filename=str(filename), content_type=_type(value.get("type")), content=content or b""
            )
            if content is None:
                part.pop("text", None)  # not the file's content: the cassette never held it
                part.pop("base64", None)
                part["sha256"] = hashlib.sha256(b"").hexdigest()
            parts.append(part)
        else:
            parts.append(
                stored_part(
                    str(name),
                    filename=None,
                    content_type=None,
                    content=str(value if value is not None else "").encode("utf-8"),
                )
            )
    return parts


def _type(value: Any) -> str | None:
    return str(value) if isinstance(value, str) and value else None


def _basename(recorded: str) -> str:
    """`/Users/x/apples.pdf` or `C:\\x\\apples.pdf` -> `apples.pdf` (R runs on Windows too)."""
    return PureWindowsPath(recorded).name if "\\" in recorded else PurePosixPath(recorded).name


def _file_bytes(recorded: str, cassette: Path, where: str) -> tuple[bytes | None, Path | None]:
    """The bytes of a file the cassette names, looked for beside the cassette by its name only;
    (None, None) when it is not there."""
    name = _basename(recorded)
    for candidate in [cassette.parent / name] if name and name not in (".", "..") else []:
        if candidate.is_file():
            try:
                return read_bytes_bounded(candidate), candidate
            except CassetteError as err:
                raise CassetteError(f"{recorded!r}: {err.reason}", file=cassette, where=where) from None
    return None, None
