"""multipart/form-data bodies (Files API uploads): stored part by part, matched by their parts.

The boundary is random on every request, so the bytes of two uploads of one file never agree. A
multipart request is therefore stored as its parts (field name, filename, content type, any other
part headers, a sha256 of the part's bytes and its size) and matched on exactly those, never on the
boundary. The content is stored readably: as `text` when it is UTF-8 text, else as `base64`; a large
binary part may live beside the cassette (`file:`, relative to the cassette's folder) and its sha256
is checked whenever the cassette is loaded.

The body is cut into parts at its delimiters with bytes operations (exact, and linear in the size);
each part's headers are read by the standard library's `email` header parser.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import CassetteError

MULTIPART_FORM = "multipart/form-data"
MATCH_KEY = "$multipart"  # the body as matching sees it: {"$multipart": [part views]}
INLINE_LIMIT = 256 * 1024  # a binary part larger than this is stored beside the cassette, not inline
_PLAIN_SUFFIX = re.compile(r"\.[A-Za-z0-9]+")  # a file's extension, kept on a part stored beside the cassette
_PART_HEADERS_NAMED = frozenset({"content-disposition", "content-type"})  # stored as name/filename/content_type
# RFC 2046: a boundary is 1-70 characters from a small set. The first line is `--boundary`; the next is
# the first part's Content-Disposition (form-data always has one).
_OPENING = re.compile(rb"^--([0-9A-Za-z'()+_,\-./:=? ]{1,70})\r\n(?i:content-disposition:\s*form-data)")


def _boundary(raw: bytes) -> bytes | None:
    """The boundary of a multipart/form-data body, read from the body itself (no header needed)."""
    opening = _OPENING.match(raw[:200])
    if opening is None:
        return None
    boundary = opening.group(1)
    return boundary if raw.rstrip(b"\r\n").endswith(b"--" + boundary + b"--") else None


@dataclass(frozen=True)
class Part:
    """One part of a multipart/form-data body, as sent."""

    name: str
    filename: str | None
    content_type: str | None
    headers: dict[str, str]  # any part headers besides Content-Disposition and Content-Type
    content: bytes


def split_parts(raw: bytes) -> list[Part] | None:
    """The parts of a multipart/form-data body, or None when `raw` is not one.

    The body is cut at its delimiters (RFC 2046: CRLF, "--", the boundary) with bytes operations, which
    keeps a part's content exact and costs milliseconds for a 10 MB upload (the email parser's own
    multipart reading goes line by line: seconds). Each part's headers are read by the standard
    library's email header parser (quoting, RFC 2231 filenames).
    """
    boundary = _boundary(raw)
    if boundary is None:
        return None
    import email.parser  # here, not at the top: every command loads cassettes, few of them hold uploads
    import email.policy

    chunks = (b"\r\n" + raw).split(b"\r\n--" + boundary)
    if len(chunks) < 3 or chunks[0] or not chunks[-1].startswith(b"--"):
        return None  # a preamble, no part, or no close delimiter: not what an HTTP client sends
    headers_of = email.parser.BytesHeaderParser(policy=email.policy.HTTP)
    parts = []
    for chunk in chunks[1:-1]:
        padding, crlf, rest = chunk.partition(b"\r\n")
        if not crlf or padding.strip(b" \t"):
            return None
        if rest.startswith(b"\r\n"):  # a part without headers
            head, content = b"", rest[2:]
        else:
            head, blank, content = rest.partition(b"\r\n\r\n")
            if not blank:
                return None
        part = headers_of.parsebytes(head + b"\r\n\r\n")
        filename = part.get_filename()
        parts.append(Part(
            name=str(part.get_param("name", header="content-disposition") or ""),
            filename=str(filename) if filename is not None else None,
            content_type=str(part["content-type"]) if "content-type" in part else None,
            headers={name.lower(): str(value) for name, value in part.items()
                     if name.lower() not in _PART_HEADERS_NAMED},
            content=content,
        ))
    return parts


def parse_parts(raw: bytes) -> list[dict[str, Any]] | None:
    """The parts of a multipart/form-data body as stored in a cassette (content inline), or None when
    `raw` is not one."""
    parts = split_parts(raw)
    return None if parts is None else [_stored_part(part) for part in parts]


def stored_part(name: str, *, filename: str | None, content_type: str | None, content: bytes,
                headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One part as a cassette stores it, built from what a foreign recorder kept (R vcr's `fields:`)."""
    return _stored_part(Part(name=name, filename=filename, content_type=content_type, headers=dict(headers or {}),
                             content=content))


def _stored_part(part: Part, *, content: bool = True) -> dict[str, Any]:
    stored: dict[str, Any] = {"name": part.name}
    if part.filename is not None:
        stored["filename"] = part.filename
    if part.content_type is not None:
        stored["content_type"] = part.content_type
    if part.headers:
        stored["headers"] = part.headers
    stored["sha256"] = hashlib.sha256(part.content).hexdigest()
    stored["size"] = len(part.content)
    if not content:
        return stored
    text = _as_text(part.content)
    if text is not None:
        stored["text"] = text
    else:
        stored["base64"] = base64.b64encode(part.content).decode("ascii")
    return stored


def _as_text(content: bytes) -> str | None:
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # Control characters other than tab and line ends would make YAML escape the text: keep it as bytes.
    return None if re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text) else text


def store_multipart(target: dict[str, Any], raw: bytes | str) -> bool:
    """Store a multipart/form-data body as `parts` in `target`; False (nothing stored) when it is not one.

    Some foreign recorders keep the body as a base64 string of its bytes: that is read too. The stored
    content-type header loses its random boundary, so re-recording the same upload changes nothing.
    """
    data = raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else raw
    parts = parse_parts(data)
    if parts is None and isinstance(raw, str) and not raw.startswith("--"):
        decoded = _base64_or_none(raw)
        parts = parse_parts(decoded) if decoded is not None else None
    if parts is None:
        return False
    target["parts"] = parts
    headers = target.get("headers")
    if isinstance(headers, dict) and str(headers.get("content-type", "")).lower().startswith(MULTIPART_FORM):
        headers["content-type"] = MULTIPART_FORM
    return True


def _base64_or_none(text: str) -> bytes | None:
    compact = "".join(text.split())
    if len(compact) < 8:
        return None
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None


# ---------------------------------------------------------------------------------------------------
# Matching: what identifies a part, and a diff that names the part


# Per-part headers that describe how the bytes travelled, not what the API is sent: Ruby's and R's clients
# write `Content-Length` and `Content-Transfer-Encoding: binary` on each part, the Python SDK neither.
TRANSPORT_PART_HEADERS = frozenset({"content-length", "content-transfer-encoding"})


def _view(part: Mapping[str, Any]) -> dict[str, Any]:
    """What the API sees of a part: its name, filename, content type, other headers and bytes (by hash)."""
    view = {key: part[key] for key in ("name", "filename", "content_type") if key in part}
    headers = {name: value for name, value in (part.get("headers") or {}).items()
               if str(name).lower() not in TRANSPORT_PART_HEADERS}
    if headers:
        view["headers"] = headers
    view["sha256"], view["size"] = _content_hash(part)
    return view


def _content_hash(part: Mapping[str, Any]) -> tuple[Any, Any]:
    """(sha256, size) of the bytes a part holds inline, else the ones it records (a part kept beside the
    cassette is checked against its hash on load). Earlier recorders redacted a part's text but kept the
    hash of what was sent; hashed from what is stored, such a part matches today's live redaction."""
    if isinstance(part.get("text"), str):
        content = part["text"].encode("utf-8")
    elif isinstance(part.get("base64"), str):
        try:
            content = base64.b64decode(part["base64"], validate=True)
        except (binascii.Error, ValueError):
            return part.get("sha256"), part.get("size")
    else:
        return part.get("sha256"), part.get("size")
    return hashlib.sha256(content).hexdigest(), len(content)


def match_body(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The body as matching sees it: each part's headers and the hash of its bytes, in order."""
    return {MATCH_KEY: [_view(part) for part in parts]}


def match_body_of(raw: bytes) -> dict[str, Any] | None:
    """`match_body` of a request's raw bytes, or None when they are not multipart/form-data."""
    parts = split_parts(raw)  # no text or base64 form: matching needs the headers and the hash only
    if parts is None:
        return None
    return match_body(_stored_part(part, content=False) for part in parts)


def is_match_body(value: Any) -> bool:
    return isinstance(value, dict) and value.keys() == {MATCH_KEY}


def _label(index: int, part: Mapping[str, Any]) -> str:
    label = f"part {index + 1} {part.get('name')!r}"
    return label + (f" (file {part['filename']!r})" if part.get("filename") is not None else "")


def diff_parts(recorded: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """What changed between two multipart bodies, part by part: "part 1 'file' (file 'a.txt'): content
    changed (sha256 1a2b3c4d5e6f… -> 9f8e7d6c5b4a…, 6 -> 7 bytes)"."""
    old, new = recorded[MATCH_KEY], actual[MATCH_KEY]
    lines = []
    for index, (before, after) in enumerate(zip(old, new, strict=False)):  # views: transport headers left out
        label = _label(index, after)
        for key in ("name", "filename", "content_type", "headers"):
            if before.get(key) != after.get(key):
                lines.append(f"{label}: {key} changed from {before.get(key)!r} to {after.get(key)!r}")
        if before.get("sha256") != after.get("sha256"):
            lines.append(f"{label}: content changed (sha256 {str(before.get('sha256'))[:12]}… -> "
                         f"{str(after.get('sha256'))[:12]}…, {before.get('size')} -> {after.get('size')} bytes)")
    lines.extend(f"{_label(index, part)} added" for index, part in enumerate(new) if index >= len(old))
    lines.extend(f"{_label(index, part)} removed" for index, part in enumerate(old) if index >= len(new))
    return lines


# ---------------------------------------------------------------------------------------------------
# Large binary parts beside the cassette


def parts_folder(cassette_path: Path) -> Path:
    """`runs/upload.yaml` keeps its large parts in `runs/upload.parts/`."""
    return cassette_path.with_name(cassette_path.stem + ".parts")


def _multipart_requests(interactions: Iterable[Mapping[str, Any]]) -> Iterable[tuple[int, list[dict[str, Any]]]]:
    for position, interaction in enumerate(interactions):
        parts = interaction.get("request", {}).get("parts") if isinstance(interaction, Mapping) else None
        if isinstance(parts, list):
            yield position, parts


def externalize_large_parts(interactions: list[dict[str, Any]], cassette_path: Path) -> dict[Path, bytes]:
    """Move each inline binary part over INLINE_LIMIT out of the interactions (in place) into a file
    reference; returns the files to write, {path: bytes}, named by the hash of their content."""
    to_write: dict[Path, bytes] = {}
    folder = parts_folder(cassette_path)
    for _, parts in _multipart_requests(interactions):
        for part in parts:
            encoded = part.get("base64")
            if not isinstance(encoded, str) or len(encoded) * 3 // 4 <= INLINE_LIMIT:
                continue
            content = base64.b64decode(encoded)
            suffix = Path(str(part.get("filename") or "")).suffix[:16]
            if not _PLAIN_SUFFIX.fullmatch(suffix):
                suffix = ""
            target = folder / f"{part['sha256']}{suffix}"
            to_write[target] = content
            del part["base64"]
            part["file"] = target.relative_to(cassette_path.parent).as_posix()
    return to_write


def check_part_files(interactions: Iterable[Mapping[str, Any]], cassette_path: Path,
                     read: Any) -> None:
    """Every `file:` part must stay in the cassette's parts folder and hash to its sha256.

    `read(path) -> bytes` is the caller's bounded reader (which refuses devices, pipes and huge files).
    """
    folder = parts_folder(cassette_path).resolve()
    for position, parts in _multipart_requests(interactions):
        for index, part in enumerate(parts):
            reference = part.get("file")
            if reference is None:
                continue
            where = f"$.interactions[{position}].request.parts[{index}].file"
            target = (cassette_path.parent / str(reference)).resolve()
            if folder not in target.parents:
                raise CassetteError(f"{reference!r} is outside {folder.name}/, the only place a part may be kept",
                                    file=cassette_path, where=where)
            try:
                content = read(target)
            except CassetteError as err:
                raise CassetteError(f"{reference!r}: {err.reason}", file=cassette_path, where=where) from None
            if hashlib.sha256(content).hexdigest() != part.get("sha256"):
                raise CassetteError(f"{reference!r} does not hash to the part's sha256: the file changed since "
                                    "it was recorded; re-record the cassette", file=cassette_path, where=where)
