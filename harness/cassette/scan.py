"""Find credentials in cassettes and fixtures (the engine of `harness scan`, harness/commands/scan.py).

Every form the importer reads is scanned (`.yaml`, `.yml`, `.json`, `.har`, `.yaml.gz`, `.httprr`, in any
case of extension; and `.txt`, `.md`). Each file is searched twice:

- its raw text (gunzipped when it is gzip), so that a secret in a comment or a folded scalar is found;
- what the raw text hides: base64, `!!binary` and Ruby `!binary` bodies decoded (and gunzipped), a PDF's
  compressed streams inflated, an httprr trace's bodies de-chunked, and each streamed block's text joined
  across its start and deltas, in our events and in foreign SSE bodies alike, since a key cut as
  `sk-an` + `t-api03-...` is whole only once joined.

The shapes are the redactor's (`credentials.find_secrets`), so what scan flags is what the recorder removes,
and prose ("Bearer authentication", a name beside a UUID) is flagged by neither. Placeholders
(`<redacted:kind:n>`, and `[REDACTED]` from earlier versions) are not secrets.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cassette.credential_names import is_credential_name, is_credential_value
from harness.cassette.credentials import field_secret_kind, find_secrets, is_placeholder, stream_blocks
from harness.cassette.headers import credentials_in_query
from harness.cassette.importer import httprr
from harness.cassette.importer.detect import HTTPRR_MAGIC, ForeignLoader
from harness.cassette.pdf_streams import holds_pdf, rewrite_flate_streams
from harness.errors import HarnessError
from harness.safe_yaml import parse_yaml
from harness.wire.bodies import GZIP_MAGIC, BodyTooLarge, gunzip_bounded
from harness.wire.sse import parse_sse

SCANNED_SUFFIXES = (".yaml", ".yml", ".json", ".har", ".txt", ".md", ".yaml.gz", ".yml.gz", ".json.gz", ".har.gz",
                    ".httprr", ".httprr.gz")
_STRUCTURED = (".yaml", ".yml", ".json", ".har")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]{24,}")
_MAX_SCANNED_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Finding:
    file: Path
    line: int
    kind: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.kind}: {self.excerpt}"


def is_scanned(path: Path) -> bool:
    return path.name.lower().endswith(SCANNED_SUFFIXES)


def scanned_files(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file() and is_scanned(p))
        elif path.is_file():
            yield path


def _mask(secret: str) -> str:
    # Never print the secret itself in CI logs: enough to find it, not enough to use it.
    return secret[:10] + "…" if len(secret) > 10 else secret[:3] + "…"


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, max(offset, 0)) + 1


def scan_text(text: str, file: Path) -> list[Finding]:
    """The credentials in `text` as it stands, each with its line."""
    return [Finding(file, _line(text, start), kind, _mask(text[start:end]))
            for kind, start, end in find_secrets(text)]


# ---------------------------------------------------------------------------------------------------
# What the raw text hides


def _decoded(raw: bytes) -> str:
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gunzip_bounded(raw)
        except (BodyTooLarge, OSError, EOFError, ValueError):
            return ""
    if holds_pdf(raw):  # the page text and metadata a PDF keeps deflated, inflated beside its bytes
        streams: list[bytes] = []

        def keep(inflated: bytes) -> bytes:  # collects each stream and changes none
            streams.append(inflated)
            return inflated

        rewrite_flate_streams(raw, keep)
        raw = b"\n".join([raw, *streams])
    return raw.decode("utf-8", errors="replace")


def _from_base64(value: str) -> str | None:
    if not _BASE64.fullmatch(value) or not re.search(r"[0-9+/]", value):
        return None  # words and ids are not base64 bodies
    try:
        raw = base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        return None
    return _decoded(raw)


def _joined_streams(events: list[Any]) -> Iterator[tuple[str, str]]:
    """(a block's joined text, its first non-empty piece) for every streamed block."""
    for parts in stream_blocks(events):
        pieces = [holder[name] for holder, name in parts]
        if len(pieces) > 1:
            yield "".join(pieces), next((piece for piece in pieces if piece), "")


def _hidden(value: Any) -> Iterator[tuple[str, str, str]]:
    """(text, how it was hidden, an anchor to find its line by) for every decoded body and joined stream."""
    if isinstance(value, dict):
        if isinstance(value.get("events"), list):
            for text, anchor in _joined_streams(value["events"]):
                yield text, "joined stream", anchor
        for item in value.values():
            yield from _hidden(item)
    elif isinstance(value, list):
        for item in value:
            yield from _hidden(item)
    elif isinstance(value, bytes):  # YAML !!binary
        text = _decoded(value)
        yield text, "binary body", base64.b64encode(value[:30]).decode("ascii")[:40]
        yield from _sse(text)
    elif isinstance(value, str):
        decoded = _from_base64(value) if len(value) >= 24 else None
        if decoded:
            yield decoded, "base64 body", value.strip()[:40]
            yield from _sse(decoded)
        elif "data:" in value:
            yield from _sse(value)


def _named_fields(value: Any) -> Iterator[tuple[str, str]]:
    """(kind, value) of every field the redactor would remove by its name (`field_secret_kind`), of every HAR
    `{"name": ..., "value": ...}` pair of a query or a form named for a credential, and of every credential
    parameter of a stored `query`."""
    if isinstance(value, dict):
        name, item = value.get("name"), value.get("value")
        if (isinstance(name, str) and isinstance(item, str) and is_credential_name(name, in_query=True)
                and is_credential_value(item, name)):
            yield "credential", item
        for key, item in value.items():
            if not isinstance(key, str):
                continue
            if isinstance(item, str):
                kind = field_secret_kind(key, item, value)
                if kind:
                    yield kind, item
                elif key == "query" and "=" in item:
                    yield from (("credential", found) for found in credentials_in_query(item, at_least=1)
                                if not is_placeholder(found))
            else:
                yield from _named_fields(item)
    elif isinstance(value, list):
        for item in value:
            yield from _named_fields(item)


def _sse(text: str) -> Iterator[tuple[str, str, str]]:
    if "data:" not in text:
        return
    for joined, anchor in _joined_streams(parse_sse(text)):
        yield joined, "joined stream", anchor


def _parsed(text: str, file: Path, raw: bytes, problems: list[HarnessError] | None = None) -> Any:
    """The file's data, or None: not a structured file, or one that does not parse (then its error is added to
    `problems`: a corrupt cassette must not pass as "no secrets" when only its raw text could be searched)."""
    name = file.name.lower().removesuffix(".gz")
    if raw[:2] == GZIP_MAGIC and name.endswith(".httprr"):
        try:
            raw = gunzip_bounded(raw)
        except (BodyTooLarge, OSError, EOFError, ValueError):
            return None
    if raw.startswith(HTTPRR_MAGIC):
        return _httprr_bodies(raw, file, problems)
    if not name.endswith(_STRUCTURED):
        return None
    try:
        if text.lstrip()[:1] in ("{", "["):
            return json.loads(text)
        # The importer's safe loader: it also reads Ruby's `!binary` and aiohttp's `istr` keys as data.
        return parse_yaml(text, file=file, loader=ForeignLoader)  # alias bombs refused
    except json.JSONDecodeError as err:
        problem = HarnessError(f"not valid JSON: {err.msg}", file=file, where=f"line {err.lineno}, column {err.colno}")
    except RecursionError:
        problem = HarnessError("nested too deep to parse", file=file)
    except (ValueError, HarnessError) as err:
        problem = err if isinstance(err, HarnessError) else HarnessError(str(err), file=file)
    if problems is not None:
        problems.append(problem)
    return None  # not parseable: the raw pass still ran


def _httprr_bodies(raw: bytes, file: Path, problems: list[HarnessError] | None = None) -> list[bytes]:
    """Every request and response body of an httprr trace, de-chunked (a stream's deltas then join)."""
    bodies: list[bytes] = []
    try:
        for exchange in httprr.read(raw, file):
            bodies.extend(body.encode("utf-8") if isinstance(body, str) else body
                          for body in (exchange.request_raw, exchange.response_raw) if body)
    except HarnessError as err:  # a corrupt trace: what was read is searched, the raw pass still ran
        if problems is not None:
            problems.append(err)
    return bodies


def _where(raw: str, anchor: str) -> int:
    if anchor:
        for needle in (anchor, json.dumps(anchor)[1:-1]):
            offset = raw.find(needle[:40])
            if offset != -1:
                return _line(raw, offset)
    return 1


def scan_file(file: Path, problems: list[HarnessError] | None = None) -> list[Finding]:
    """The credentials in one file; a structured file that does not parse is added to `problems`, if given."""
    raw_bytes = file.read_bytes()[:_MAX_SCANNED_BYTES]
    text = _decoded(raw_bytes)
    findings = scan_text(text, file)
    seen = {(finding.kind, finding.excerpt) for finding in findings}
    data = _parsed(text, file, raw_bytes, problems)
    for kind, value in _named_fields(data):
        excerpt = _mask(value)
        if (kind, excerpt) not in seen and ("credential", excerpt) not in seen:
            seen.add((kind, excerpt))
            findings.append(Finding(file, _where(text, value), kind, excerpt))
    for hidden, how, anchor in _hidden(data) if data is not None else ():
        for kind, start, end in find_secrets(hidden):
            excerpt = _mask(hidden[start:end])
            if (kind, excerpt) in seen:
                continue
            seen.add((kind, excerpt))
            findings.append(Finding(file, _where(text, anchor), f"{kind} (in a {how})", excerpt))
    return findings


def scan_paths(paths: Iterable[Path], problems: list[HarnessError] | None = None) -> list[Finding]:
    findings: list[Finding] = []
    for file in scanned_files(paths):
        findings.extend(scan_file(file, problems))
    return findings
