"""What may reach the disk: bodies, queries and streams with every credential out.

One `Redactor` per interaction scrubs every credential (harness.cassette.credentials finds them: the values the
run sent, picked out by harness.cassette.headers, and the shapes) wherever it sits: JSON and text bodies, the
query, SSE events with a block's text joined across its start and deltas, base64 document blocks, binary and
multipart bodies. What the API hands out to be sent back verbatim (signatures, encrypted content) is left alone.

A credential becomes a typed placeholder, `<redacted:aws-secret-key:1>`: the number counts distinct
values of that kind within one interaction (its request first), so a reviewer sees that the key the
model echoed is the one the prompt held. The request's numbering depends on the request alone, which
is what lets replay redact a live request the same way and match it (`redact_live_request`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from harness.cassette.credential_names import is_credential_name
from harness.cassette.credentials import (
    MIN_SECRET_LENGTH,
    PLACEHOLDER,
    anchor_positions,
    credential_kinds,
    field_kind,
    field_secret_kind,
    find_secrets,
    is_secret_value,
    kind_of,
    might_hold_secret,
    might_hold_secret_bytes,
    secret_field_kind,
    stream_blocks,
)
from harness.cassette.headers import rewrite_request_id
from harness.cassette.pdf_streams import holds_pdf, rewrite_flate_streams
from harness.wire.multipart import is_match_body, match_body, parse_parts

# ---------------------------------------------------------------------------------------------------
# Redacting: one Redactor per interaction, so that a value gets one placeholder all through it


@dataclass
class Redactor:
    """Replaces credentials with `<redacted:kind:n>`, numbering each kind's distinct values in order."""

    known: dict[str, str] = field(default_factory=dict)  # credential value -> kind
    numbers: dict[tuple[str, str], int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def for_credentials(cls, credentials: Iterable[str]) -> Redactor:
        return cls(known=credential_kinds(credentials))

    def placeholder(self, kind: str, value: str) -> str:
        number = self.numbers.get((kind, value))
        if number is None:
            number = self.numbers[(kind, value)] = self.counts.get(kind, 0) + 1
            self.counts[kind] = number
        return f"<redacted:{kind}:{number}>"

    def text(self, text: str) -> str:
        spans = find_secrets(text, self.known)
        if not spans:
            return text
        out, last = [], 0
        for kind, start, end in spans:
            out.append(text[last:start])
            out.append(self.placeholder(kind, text[start:end]))
            last = end
        out.append(text[last:])
        return "".join(out)

    def binary(self, raw: bytes) -> bytes:
        """A binary body (a Files API upload, a multipart part with a file, a base64 source's bytes): its
        printable text searched where a credential could begin; a PDF's compressed streams opened too."""
        if holds_pdf(raw):
            raw = rewrite_flate_streams(raw, self._plain_bytes)
        return self._plain_bytes(raw)

    def _plain_bytes(self, raw: bytes) -> bytes:
        """Every run of printable ASCII that holds an anchor of a shape (or a credential the run sent),
        searched as text, in the order of the bytes. A credential is printable, so it lies inside one run;
        the anchors are found by byte searches, so the megabytes of an image or an archive are never handed
        to the shapes' expressions (a 10 MB random upload: 40 s searched as one latin-1 text)."""
        starts = anchor_positions(raw, self.known)
        if not starts:
            return raw
        printable = raw.translate(_PRINTABLE_MASK)  # b"\x01" where printable, b"\x00" elsewhere: runs by find
        out: list[bytes] = []
        last = 0
        for start in starts:
            if start < last:
                continue  # inside a run already searched
            left = printable.rfind(b"\x00", 0, start) + 1
            right = printable.find(b"\x00", start)
            right = len(raw) if right == -1 else right
            text = raw[left:right].decode("ascii")
            cleaned = self.text(text)
            out += [raw[last:left], cleaned.encode("ascii")]
            last = right
        out.append(raw[last:])
        cleaned_raw = b"".join(out)
        return raw if cleaned_raw == raw else cleaned_raw

    def parts(self, parts: list[Any]) -> list[Any]:
        """A multipart body's parts, each part's bytes searched (text as text, the rest as binary), its
        sha256 and size made those of what is stored, so that matching compares like with like."""
        out = []
        for part in parts:
            if not isinstance(part, dict):
                out.append(self.value(part))
                continue
            done = {key: self.value(value) for key, value in part.items()
                    if key not in ("text", "base64", "sha256", "size")}
            content: bytes | None = None
            if isinstance(part.get("text"), str):
                text = self.text(part["text"])
                if text != part["text"]:
                    content, done["text"] = text.encode("utf-8"), text
                else:
                    done["text"] = text
            elif isinstance(part.get("base64"), str):
                try:
                    raw = base64.b64decode(part["base64"], validate=True)
                except (binascii.Error, ValueError):
                    raw = None
                cleaned = self.binary(raw) if raw is not None else None
                if cleaned is not None and cleaned != raw:
                    content, done["base64"] = cleaned, base64.b64encode(cleaned).decode("ascii")
                else:
                    done["base64"] = part["base64"]
            for key in ("sha256", "size"):
                if key in part:
                    done[key] = part[key]
            if content is not None:
                done["sha256"], done["size"] = hashlib.sha256(content).hexdigest(), len(content)
            out.append({key: done[key] for key in part if key in done})
        return out

    def value(self, value: Any) -> Any:
        """A copy of JSON-like `value` with every string redacted; base64 document data decoded first."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            # Sorted, so that the numbering does not depend on the order the keys were sent in. A field
            # named for a credential ("SecretAccessKey", "refresh_token") is one, whatever its value looks like.
            done = {key: value[key] if _is_opaque(value, key) else self._field(key, value[key], value)
                    for key in sorted(value, key=str)}
            if _is_base64_source(value):
                # Searched decoded: a PDF (its compressed streams opened), a text file, and an image, whose
                # pixels pass the byte pre-check in a few milliseconds unless a key was hidden in them.
                done["data"] = self._base64(value["data"])
            return {key: done[key] for key in value}
        return value

    def _field(self, key: Any, value: Any, holder: Mapping[str, Any]) -> Any:
        if isinstance(value, str) and isinstance(key, str):
            kind = field_secret_kind(key, value, holder)
            if kind:
                return self.placeholder(self.known.get(value) or kind, value)
        return self.value(value)

    def learn_fields(self, value: Any) -> None:
        """Take every value of a field that is a credential by its name alone (an MCP server's
        `authorization_token`, ...) as a credential of this interaction, so that an echo of it anywhere
        else (an MCP tool's error, the model's answer) is removed too. Numbers nothing: both the recorder
        and replay's live redaction learn before they redact, so their placeholders agree."""
        if isinstance(value, list):
            for item in value:
                self.learn_fields(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                kind = secret_field_kind(key, value) if isinstance(key, str) else None
                if kind and isinstance(item, str) and is_secret_value(item):
                    self.known.setdefault(item, field_kind(item, kind))
                elif isinstance(item, dict | list):
                    self.learn_fields(item)

    def _base64(self, data: str) -> str:
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return self.text(data)
        cleaned = self.binary(raw)
        return data if cleaned == raw else base64.b64encode(cleaned).decode("ascii")

    def query(self, query: str) -> str:
        """A query with every auth parameter's value, and any credential elsewhere in it, replaced."""
        pairs = parse_qsl(query, keep_blank_values=True)
        out = []
        for name, value in pairs:
            # Any value of a parameter named for a credential, however short (`?password=hunter2`): a query
            # value is no prose that a short match could rewrite.
            if value and is_credential_name(name, in_query=True) and not PLACEHOLDER.fullmatch(value):
                value = self.placeholder(self.known.get(value) or kind_of(value), value)
            else:
                value = self.text(value)
            out.append((name, value))
        return urlencode(out, safe=":<>/", quote_via=quote)

    def events(self, events: list[Any]) -> list[Any]:
        """SSE events, with each block's text joined (block start and deltas) before it is searched: a stream
        cuts text anywhere, so a key can arrive as `sk-an` + `t-api03-...`, its prefix even in the
        content_block_start. The secret's characters leave every piece; its placeholder goes where it began."""
        events = [_copy_event(event) for event in events]
        for parts in stream_blocks(events):
            texts = [holder[name] for holder, name in parts]
            joined = "".join(texts)
            spans = find_secrets(joined, self.known)
            if spans:
                for (holder, name), piece in zip(parts, self._cut(joined, texts, spans), strict=True):
                    holder[name] = piece
        return [self.value(event) for event in events]

    def _cut(self, joined: str, texts: list[str], spans: list[tuple[str, int, int]]) -> list[str]:
        pieces, offset = [], 0
        for text in texts:
            start, end = offset, offset + len(text)
            out, cursor = [], start
            for kind, s_start, s_end in spans:
                if s_end <= start or s_start >= end:
                    continue
                out.append(joined[cursor:max(cursor, s_start)])
                if s_start >= start:
                    out.append(self.placeholder(kind, joined[s_start:s_end]))
                cursor = min(end, s_end)
            out.append(joined[cursor:end])
            pieces.append("".join(out))
            offset = end
        return pieces


_PRINTABLE_MASK = bytes(1 if byte in (9, 10, 13) or 0x20 <= byte <= 0x7E else 0 for byte in range(256))


# Opaque values the API hands out to be sent back verbatim: redaction never reads or rewrites them (a
# thinking signature is base64 in which `1//0...` or `AIza...` can occur by chance).
OPAQUE_FIELDS = frozenset({"signature", "encrypted_content", "encrypted_stdout", "encrypted_index"})


def _is_opaque(holder: Mapping[str, Any], key: Any) -> bool:
    """`signature`, `encrypted_*` and a redacted_thinking block's `data`: the API's, kept byte for byte."""
    return key in OPAQUE_FIELDS or (key == "data" and holder.get("type") == "redacted_thinking")


def _copy_event(event: Any) -> Any:
    if isinstance(event, dict):
        return {key: _copy_event(value) for key, value in event.items()}
    if isinstance(event, list):
        return [_copy_event(value) for value in event]
    return event


def _is_base64_source(value: Mapping[str, Any]) -> bool:
    """A Messages API source block of base64 data (an image, a PDF, a text file)."""
    return value.get("type") == "base64" and isinstance(value.get("data"), str)


# ---------------------------------------------------------------------------------------------------
# Interactions as they are written, and live requests as they are matched


Scrubber = Callable[[dict[str, Any]], dict[str, Any] | None]
"""A user hook: gets an interaction about to be written, returns it changed (or None to drop it)."""

_BODY_KEYS = ("body", "body_text", "body_base64", "events", "parts")


def _redact_message(redactor: Redactor, message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    for key in ("body", "events"):
        redactor.learn_fields(out.get(key))
    if isinstance(out.get("query"), str):
        out["query"] = redactor.query(out["query"])
    if isinstance(out.get("events"), list):
        out["events"] = redactor.events(out["events"])
    if "body" in out:
        out["body"] = redactor.value(out["body"])
    if isinstance(out.get("body_text"), str):
        out["body_text"] = redactor.text(out["body_text"])
    if isinstance(out.get("body_base64"), str):
        out["body_base64"] = redactor._base64(out["body_base64"])
    if isinstance(out.get("parts"), list):
        out["parts"] = redactor.parts(out["parts"])
    for key, value in list(out.items()):
        if key not in _BODY_KEYS and key != "query":
            out[key] = redactor.value(value)
    return out


def redact_interaction(
    interaction: dict[str, Any],
    *,
    position: int,
    known_secrets: Iterable[str] = (),
    scrubbers: Iterable[Scrubber] = (),
    rewrite_request_ids: bool = False,
) -> dict[str, Any] | None:
    """The interaction as it may be written: credentials out (request first, so its placeholders are the
    ones `redact_live_request` gives), request ids kept unless asked otherwise, hooks applied."""
    redactor = Redactor.for_credentials(known_secrets)
    out: dict[str, Any] = {}
    for key, value in interaction.items():
        if key in ("request", "response") and isinstance(value, dict):
            out[key] = _redact_message(redactor, value)
        else:
            out[key] = redactor.value(value)
    if rewrite_request_ids:
        rewrite_request_id(out, position)
    for hook in scrubbers:
        result = hook(out)
        if result is None:
            return None
        out = result
    return out


def redact_live_request(query: str, body: Any, known_secrets: Iterable[str] = (),
                        raw: bytes | None = None) -> tuple[str, Any]:
    """A live request's query and parsed body (`raw`: its bytes, when known) as the recorder would have
    written them, for matching.

    Costs one pre-check scan of the bytes when nothing in them can be a credential (the common case).
    """
    known = tuple(known_secrets)
    redactor = Redactor.for_credentials(known)  # one numbering, query first: as `redact_interaction` does
    if query:
        query = redactor.query(query)
    if is_match_body(body):
        # An upload: its parts as the recorder stored them (bytes inline), redacted the same way (each part's
        # bytes searched only around the anchors a byte search finds), then seen as matching sees them.
        parts = parse_parts(raw) if raw else None
        if parts is not None:
            body = match_body(redactor.parts(parts))
        return query, body
    if _needs_redaction(body, known, raw):
        redactor.learn_fields(body)
        if isinstance(body, dict) and set(body) == {"$base64"}:
            body = {"$base64": redactor._base64(body["$base64"])}
        else:
            body = redactor.value(body)
    return query, body


_BASE64_SOURCE = re.compile(r"""["']media_type["']:\s*["']""")  # a document or image source: searched decoded


def _needs_redaction(body: Any, known: tuple[str, ...], raw: bytes | None) -> bool:
    if body is None:
        return False
    if raw:
        if might_hold_secret_bytes(raw):
            return True
        return any(secret.encode() in raw for secret in known if len(secret) >= MIN_SECRET_LENGTH) or (
            b"media_type" in raw and _BASE64_SOURCE.search(raw.decode("utf-8", errors="replace")) is not None)
    text = body if isinstance(body, str) else repr(body)
    if might_hold_secret(text) or any(secret in text for secret in known if len(secret) >= MIN_SECRET_LENGTH):
        return True
    # A base64 PDF, text file or image can hide a key that no pre-check sees in the encoded text.
    return _BASE64_SOURCE.search(text) is not None


def redact_target(target: str) -> str:
    """A request target (path and query) fit for a log line or a status page."""
    path, sep, query = target.partition("?")
    if not sep:
        return Redactor().text(path)
    return Redactor().text(path) + "?" + Redactor().query(query)


def shown_url(url: str) -> str:
    """A URL fit to print (a banner, a log line, an error, the recording lock's holder): a user and password in it
    (`http://u:PASS@host`) and credentials in its query left out."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    if parts.username is not None or parts.password is not None:
        netloc = f"***@{netloc}"
    return f"{parts.scheme}://{netloc}" + redact_target(parts.path + (f"?{parts.query}" if parts.query else ""))
