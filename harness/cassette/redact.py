"""What may reach the disk: allow-listed headers, and bodies, queries and streams with every credential out.

Headers are allow-listed rather than deny-listed: SDK 2.x sends the key as `Authorization: Bearer`
where 1.x used `x-api-key`, so a deny-list written for one version leaks under the next.

Everything else is scrubbed of two things, wherever they sit (JSON and text bodies, the query, SSE
events with a block's text joined across its start and deltas, base64 document blocks, binary and
multipart bodies):

- the exact credentials the run sent: the value of any auth-bearing header or query parameter of the
  Anthropic, Bedrock (SigV4, bearer) and Vertex clients, and any header the user names;
- credential shapes: Anthropic's (exact, ours), the vendor shapes detect-secrets knows (AWS ids,
  GitHub, Slack, JWT, private keys, Stripe, ...), and the ones it does not (GCP `ya29.` tokens,
  `AIza` keys, `GOCSPX-` client secrets, Google refresh tokens, AWS secret keys and session tokens
  by their field name, OpenAI project keys, GitHub fine-grained tokens, whole PEM blocks).

A credential becomes a typed placeholder, `<redacted:aws-secret-key:1>`: the number counts distinct
values of that kind within one interaction (its request first), so a reviewer sees that the key the
model echoed is the one the prompt held. The request's numbering depends on the request alone, which
is what lets replay redact a live request the same way and match it (`redact_live_request`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, parse_qsl, quote, urlencode

from harness.cassette.pdf_streams import holds_pdf, rewrite_flate_streams
from harness.wire.multipart import is_match_body, match_body, parse_parts

REQUEST_HEADERS_KEPT = frozenset({"anthropic-version", "anthropic-beta", "content-type"})
RESPONSE_HEADERS_KEPT = frozenset(
    {"content-type", "request-id", "retry-after", "retry-after-ms", "x-should-retry", "x-harness-simulator",
     "x-harness-sim-model"}
)
RESPONSE_HEADER_PREFIXES_KEPT = ("anthropic-ratelimit-",)

# Headers whose value is a credential, for every client of the SDK: the first-party client (x-api-key,
# Authorization: Bearer), Foundry (api-key), the Admin API, Vertex (Authorization: Bearer ya29., or an
# x-goog-api-key), Bedrock (SigV4 Authorization plus x-amz-security-token, or a bearer API key).
AUTH_HEADERS = frozenset({
    "x-api-key", "api-key", "authorization", "proxy-authorization", "anthropic-admin-api-key",
    "x-goog-api-key", "x-amz-security-token", "cookie",
})
# Query parameters that carry a credential (Google's `?key=`, presigned AWS URLs, OAuth).
AUTH_QUERY_PARAMS = frozenset({
    "key", "api_key", "apikey", "api-key", "access_token", "token", "auth", "client_secret", "refresh_token",
    "x-amz-security-token", "x-amz-credential", "x-amz-signature", "x-goog-signature", "x-goog-credential",
    "signature", "sig",
})

MIN_SECRET_LENGTH = 8  # a shorter "credential" (a replay's dummy key "x") would rewrite ordinary text
LEGACY_PLACEHOLDERS = ("[REDACTED]", "[REDACTED-ORG]")  # written by earlier versions; still not a secret
PLACEHOLDER = re.compile(r"<redacted:[a-z0-9-]+:\d+>")


@dataclass(frozen=True)
class Shape:
    """A credential shape: `group` of `regex` is the secret (0: the whole match)."""

    kind: str
    regex: re.Pattern[str]
    group: int = 0


_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_FIELD_SEP = r"""["']?\s*(?:[:=]|=>|>)\s*["']?"""  # `"k": "v"`, `k=v`, `k: v`, `<k>v`

# Ours: Anthropic's shapes (kept exact), the vendors detect-secrets does not know, and the places a live
# run puts an id or a cookie. Each needs something a sentence does not have (a vendor prefix, digits in a
# bearer token, a field name next to the value), so prose is left alone.
OWN_SHAPES: tuple[Shape, ...] = (
    Shape("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")),
    Shape("private-key", re.compile(
        r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----(?:[\s\S]*?-----END \1-----|[A-Za-z0-9+/=\s\\]*)")),
    Shape("openai-key", re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}")),
    Shape("github-token", re.compile(r"\b(?:github_pat_[A-Za-z0-9_]{22,}|gh[pousr]_[A-Za-z0-9_]{36,})")),
    # detect-secrets' JWT pattern stops before the signature; this one takes all three parts.
    Shape("jwt", re.compile(r"\beyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.[A-Za-z0-9_=+/-]*")),
    Shape("gcp-access-token", re.compile(r"\bya29\.[0-9A-Za-z_\-.]{20,}")),
    Shape("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    Shape("google-client-secret", re.compile(r"\bGOCSPX-[0-9A-Za-z_\-]{20,}")),
    Shape("google-refresh-token", re.compile(r"\b1(?://|%2F%2F)0[0-9A-Za-z_\-]{20,}")),
    Shape("aws-secret-key", re.compile(
        rf"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key){_FIELD_SEP}"
        r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"), 1),
    Shape("aws-session-token", re.compile(
        rf"(?i)(?:aws_?session_?token|session_?token|security_?token|\"token\"){_FIELD_SEP}"
        r"([A-Za-z0-9/+=]{100,})"), 1),
    Shape("credential", re.compile(
        rf"(?i)\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|refresh[_-]?token|secret[_-]?key|"
        rf"password|passwd){_FIELD_SEP}(?=[^\s\"'&,;<]*\d)([A-Za-z0-9._~+/\-%]{{16,}})"), 1),
    # A field that is a credential by its name alone (SECRET_FIELDS), in any container: YAML, JSON, a form.
    Shape("credential-field", re.compile(
        r"""(?i)\b(?:authorization[_-]?token|secret[_-]?value|signing[_-]?secret|tunnel[_-]?token)"""
        r"""\\?["']?\s*(?:[:=]|=>|>)\s*\\?["']?"""  # `\"k\": \"v\"` too: JSON inside a JSON string
        r"(?!<redacted:)([A-Za-z0-9._~+/\-%=:]{12,})"), 1),
    # "Bearer authentication" is prose; a token has digits and letters and no spaces.
    Shape("bearer-token", re.compile(
        r"(?i)\bbearer\s+((?=[A-Za-z0-9._~+/=\-]*\d)(?=[A-Za-z0-9._~+/=\-]*[A-Za-z])[A-Za-z0-9._~+/=\-]{16,})"), 1),
    # An organization id next to the word (a 429 message, an `anthropic-organization-id` header in any
    # container); the word must stand alone, so "George ... <uuid>" is left as it is.
    Shape("organization-id", re.compile(
        rf"(?i)\b(?:org|organi[sz]ation)(?:[_-]?id)?\b[^\n]{{0,60}}?(?:\n[\s-]*)?(?<![0-9a-fA-F])({_UUID})"), 1),
    Shape("cookie", re.compile(r"(?i)\b(?:__cf_bm|_cfuvid|cf_clearance|sessionKey)=([^;\s\"'<]{8,})"), 1),
)

# The detect-secrets plugins whose patterns are vendor shapes with a prefix. Left out: keyword and
# entropy detectors (they flag prose and every base64 image), public IPs (not a credential), Artifactory
# (`AP` + 9 letters is an ordinary word often enough), and the shapes with no prefix to pre-check that
# also match ids and hex digests (Discord, Telegram, Twilio, Mailchimp).
_DETECT_SECRETS_PLUGINS = {
    "aws": ("AWSKeyDetector", "aws-key"),
    "azure_storage_key": ("AzureStorageKeyDetector", "azure-storage-key"),
    "basic_auth": ("BasicAuthDetector", "basic-auth"),
    "github_token": ("GitHubTokenDetector", "github-token"),
    "gitlab_token": ("GitLabTokenDetector", "gitlab-token"),
    "jwt": ("JwtTokenDetector", "jwt"),
    "npm": ("NpmDetector", "npm-token"),
    "openai": ("OpenAIDetector", "openai-key"),
    "private_key": ("PrivateKeyDetector", "private-key"),
    "pypi_token": ("PypiTokenDetector", "pypi-token"),
    "sendgrid": ("SendGridDetector", "sendgrid-key"),
    "slack": ("SlackDetector", "slack-token"),
    "square_oauth": ("SquareOAuthDetector", "square-secret"),
    "stripe": ("StripeDetector", "stripe-key"),
}
# detect-secrets' AWS secret-key pattern needs a quote on both sides; ours above needs the field name.
_AWS_SECRET_PATTERN = "aws.{0,20}?"


@functools.cache
def shapes() -> tuple[Shape, ...]:
    """Every shape, ours first (they win a tie). detect-secrets is imported on first use: it costs 0.2 s."""
    import warnings
    from importlib import import_module

    # detect-secrets' logger calls logging.captureWarnings(True) when imported, which would send every later
    # warning of the user's process (pytest's included) to logging instead of where it was going.
    showwarning = warnings.showwarning
    try:
        plugins = {module: getattr(import_module(f"detect_secrets.plugins.{module}"), class_name)()
                   for module, (class_name, _) in _DETECT_SECRETS_PLUGINS.items()}
    finally:
        warnings.showwarning = showwarning
    found = list(OWN_SHAPES)
    for module, (_, kind) in _DETECT_SECRETS_PLUGINS.items():
        plugin = plugins[module]
        for regex in plugin.denylist:
            if regex.pattern.startswith(_AWS_SECRET_PATTERN):
                found.append(Shape("aws-secret-key", regex, 1))
            elif kind == "private-key":
                continue  # it finds the BEGIN line; ours removes the whole block
            else:
                found.append(Shape("aws-access-key-id" if kind == "aws-key" else kind, regex,
                                   1 if regex.groups and kind in ("basic-auth", "npm-token") else 0))
    return tuple(found)


# A cheap test before any shape runs, for every text the redactor sees: text that holds none of these
# anchors is left alone, so an ordinary request costs a few dozen substring searches (a regular-expression
# alternation over the same text costs 40 times as much). Every shape above, and every plugin kept, needs
# one of them (the rarer AWS id prefixes and GitLab token kinds share the anchors of their kin, or are
# left to the scan); none is in an ordinary request.
_ANCHORS = (
    "sk-ant-", "sk-proj-", "sk-svcacct-", "sk-admin-", "T3Blbk", "AKIA", "ASIA", "ya29.", "AIza", "GOCSPX", "1//0",
    "%2F%2F0", "PRIVATE KEY", "ghp_", "gho_", "ghu_",
    "ghs_", "ghr_", "github_pat", "glpat-", "xox", "hooks.slack", "eyJ", "SG.", "sq0csp", "k_live_", "AccountKey",
    "_authToken", "pypi-", "__cf_bm", "_cfuvid", "cf_clearance",
)
# Case-insensitive words that start a shape wherever they are ...
_WORDS = ("bearer", "sessionkey=", "aws")
# ... and field names that do only when a value follows (`"token": `, `password=`; not `max_tokens`).
_FIELD_WORDS = ("token", "secret", "key", "password", "passwd", "secret_value")
_BASIC_AUTH_HINT = re.compile(r"://[^\s/@\"']+@")
_UUID_RE = re.compile(_UUID)
_BYTE_ANCHORS = tuple(anchor.encode() for anchor in _ANCHORS)
_BYTE_WORDS = tuple(word.encode() for word in _WORDS)
_BYTE_FIELD_WORDS = tuple(word.encode() for word in _FIELD_WORDS)


def might_hold_secret(text: str) -> bool:
    if any(anchor in text for anchor in _ANCHORS):
        return True
    lower = text.lower()
    if any(word in lower for word in _WORDS) or _has_field(lower, ":=>", "\"' "):
        return True
    if "://" in text and "@" in text and _BASIC_AUTH_HINT.search(text):
        return True
    return "org" in lower and _UUID_RE.search(text) is not None


def might_hold_secret_bytes(raw: bytes) -> bool:
    """`might_hold_secret` of UTF-8 bytes, without decoding them (every anchor is ASCII)."""
    if any(anchor in raw for anchor in _BYTE_ANCHORS):
        return True
    lower = raw.lower()
    if any(word in lower for word in _BYTE_WORDS) or _has_field(lower, b":=>", b"\"' "):
        return True
    if b"://" in raw and b"@" in raw:
        return True
    return b"org" in lower and _UUID_RE.search(raw.decode("utf-8", errors="replace")) is not None


def _has_field(lower: Any, separators: Any, skipped: Any) -> bool:
    for word in _FIELD_WORDS:
        needle = word if isinstance(lower, str) else word.encode()
        start = lower.find(needle)
        while start != -1:
            after = lower[start + len(needle):start + len(needle) + 4].lstrip(skipped)
            if after[:1] and after[:1] in separators:
                return True
            start = lower.find(needle, start + 1)
    return False


def find_secrets(text: str, known: Mapping[str, str] | None = None) -> list[tuple[str, int, int]]:
    """(kind, start, end) of every credential in `text`, without overlaps, in order.

    `known` maps a credential the run sent to its kind; they are found wherever they appear, whatever
    their shape.
    """
    spans: list[tuple[int, int, str]] = []
    for secret, kind in (known or {}).items():
        start = text.find(secret)
        while start != -1:
            spans.append((start, start + len(secret), kind))
            start = text.find(secret, start + len(secret))
    if might_hold_secret(text):
        for shape in shapes():
            for match in shape.regex.finditer(text):
                start, end = match.span(shape.group)
                if end - start >= MIN_SECRET_LENGTH:
                    spans.append((start, end, shape.kind))
    if not spans:
        return []
    spans.sort(key=lambda span: (span[0], span[0] - span[1]))
    kept: list[tuple[str, int, int]] = []
    reach = -1
    for start, end, kind in spans:
        if start >= reach:
            kept.append((kind, start, end))
            reach = end
        elif end > reach:  # overlapping: widen the one kept, so no tail of a secret is left
            kind0, start0, _ = kept[-1]
            kept[-1] = (kind0, start0, end)
            reach = end
    return kept


def kind_of(value: str) -> str:
    """The kind of a credential value the run sent: its shape's, else plain `credential`."""
    for shape in shapes():
        match = shape.regex.search(value)
        if match and match.span(shape.group) == (0, len(value)):
            return shape.kind
    return "credential"


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
        starts = _anchor_positions(raw, self.known)
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
            kind = secret_field_kind(key, holder)
            if kind and _is_secret_value(value):
                return self.placeholder(self.known.get(value) or _field_kind(value, kind), value)
            if _TOKEN_LIKE.fullmatch(value):
                kind = _CREDENTIAL_FIELDS.get(key.lower().replace("-", "_"))
                if kind:
                    return self.placeholder(self.known.get(value) or _field_kind(value, kind), value)
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
                if kind and isinstance(item, str) and _is_secret_value(item):
                    self.known.setdefault(item, _field_kind(item, kind))
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
            is_credential = name.lower() in AUTH_QUERY_PARAMS and len(value) >= MIN_SECRET_LENGTH
            if is_credential and not PLACEHOLDER.fullmatch(value):
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


def _anchor_positions(raw: bytes, known: Mapping[str, str]) -> list[int]:
    """Sorted offsets in `raw` where a shape's anchor, word or field name, or a known credential, occurs."""
    found: set[int] = set()

    def every(haystack: bytes, needle: bytes) -> None:
        position = haystack.find(needle)
        while position != -1:
            found.add(position)
            position = haystack.find(needle, position + 1)

    for anchor in _BYTE_ANCHORS:
        every(raw, anchor)
    for secret in known:
        every(raw, secret.encode("utf-8"))
    lower = raw.lower()
    for word in (*_BYTE_WORDS, *_BYTE_FIELD_WORDS, b"://", b"org"):
        every(lower, word)
    return sorted(found)


_STREAMED_FIELDS = ("text", "partial_json", "thinking")


def stream_blocks(events: Iterable[Any]) -> list[list[tuple[dict[str, Any], str]]]:
    """Each streamed block's pieces in order, as (the dict holding a piece, its field): the block start's
    text, then each delta's. Joined, they are the text the client puts together."""
    blocks: dict[tuple[Any, str], list[tuple[dict[str, Any], str]]] = {}
    for event in events:
        data = event.get("data") if isinstance(event, dict) else None
        if not isinstance(data, dict):
            continue
        holder: Any = None
        if data.get("type") == "content_block_start":
            holder = data.get("content_block")
        elif data.get("type") == "content_block_delta":
            holder = data.get("delta")
        if isinstance(holder, dict):
            for name in _STREAMED_FIELDS:
                if isinstance(holder.get(name), str):
                    blocks.setdefault((data.get("index"), name), []).append((holder, name))
    return list(blocks.values())


# JSON fields whose value is a credential (a token endpoint's answer, a cloud metadata document, a config
# pasted into a tool result), with the kind their value gets when it has no shape of its own.
_CREDENTIAL_FIELDS = {
    "secretaccesskey": "aws-secret-key", "secret_access_key": "aws-secret-key",
    "aws_secret_access_key": "aws-secret-key", "sessiontoken": "aws-session-token",
    "session_token": "aws-session-token", "aws_session_token": "aws-session-token", "token": "aws-session-token",
    "access_token": "access-token", "refresh_token": "refresh-token", "id_token": "jwt",
    "client_secret": "client-secret",
    "api_key": "credential", "apikey": "credential", "x_api_key": "credential", "password": "password",
    "private_key": "private-key", "secret": "credential",
}


# Fields the SDK's param and response types define whose value is a credential whatever it looks like
# (anthropic 2.15: `mcp_servers[].authorization_token`, a GitHub repository resource's and a session
# resource's `authorization_token`; a vault credential's `access_token`, `refresh_token`,
# `client_secret` and environment-variable `secret_value`; a webhook endpoint's `signing_secret`; a
# tunnel's `tunnel_token`), with their placeholder kind.
SECRET_FIELDS = {
    "authorization_token": "authorization-token",
    "access_token": "access-token",
    "refresh_token": "refresh-token",
    "client_secret": "client-secret",
    "secret_value": "secret-value",
    "signing_secret": "signing-secret",
    "tunnel_token": "tunnel-token",
}
# ... and a field that is one only in a credential object: a vault's `static_bearer` token.
_TYPED_SECRET_FIELDS = {("static_bearer", "token"): "bearer-token"}
# Opaque values the API hands out to be sent back verbatim: redaction never reads or rewrites them (a
# thinking signature is base64 in which `1//0...` or `AIza...` can occur by chance).
OPAQUE_FIELDS = frozenset({"signature", "encrypted_content", "encrypted_stdout", "encrypted_index"})


def secret_field_kind(key: str, holder: Mapping[str, Any]) -> str | None:
    """The placeholder kind of a field that is a credential by its name (in its object's `type`), else None."""
    name = key.lower().replace("-", "_")
    return SECRET_FIELDS.get(name) or _TYPED_SECRET_FIELDS.get((str(holder.get("type")), name))


def _is_secret_value(value: str) -> bool:
    return len(value) >= MIN_SECRET_LENGTH and not PLACEHOLDER.fullmatch(value) and value not in LEGACY_PLACEHOLDERS


def _is_opaque(holder: Mapping[str, Any], key: Any) -> bool:
    """`signature`, `encrypted_*` and a redacted_thinking block's `data`: the API's, kept byte for byte."""
    return key in OPAQUE_FIELDS or (key == "data" and holder.get("type") == "redacted_thinking")


# A value that can be a credential: one word of 16 characters or more with a digit in it, and not one of
# our placeholders (a tool's `{"password": "radiance"}` is an argument, not a credential).
_TOKEN_LIKE = re.compile(r"(?!<redacted:)(?=\S*\d)\S{16,}")


def _field_kind(value: str, fallback: str) -> str:
    kind = kind_of(value)
    return fallback if kind == "credential" else kind


def _copy_event(event: Any) -> Any:
    if isinstance(event, dict):
        return {key: _copy_event(value) for key, value in event.items()}
    if isinstance(event, list):
        return [_copy_event(value) for value in event]
    return event


def _is_base64_source(value: Mapping[str, Any]) -> bool:
    """A Messages API source block of base64 data (an image, a PDF, a text file)."""
    return value.get("type") == "base64" and isinstance(value.get("data"), str)


def credential_kinds(credentials: Iterable[str]) -> dict[str, str]:
    return {value: kind_of(value) for value in credentials if len(value) >= MIN_SECRET_LENGTH}


# ---------------------------------------------------------------------------------------------------
# Headers: what is kept, and which values are credentials


def keep_request_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers if name.lower() in REQUEST_HEADERS_KEPT}


def stored_request_head(method: str, url: SplitResult, headers: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """A request as a cassette stores it, but for its body: method, host, path, query, allow-listed headers."""
    stored: dict[str, Any] = {"method": method, "host": url.hostname or "", "path": url.path or "/"}
    if url.query:
        stored["query"] = url.query
    stored["headers"] = keep_request_headers(headers)
    return stored


def keep_response_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    kept = {}
    for name, value in headers:
        lower = name.lower()
        if lower in RESPONSE_HEADERS_KEPT or lower.startswith(RESPONSE_HEADER_PREFIXES_KEPT):
            kept[lower] = value
    return kept


def placeholder_request_id(position: int) -> str:
    """Only when asked (`rewrite_request_ids`): a request id is not a credential, and the SDK shows it."""
    return f"req_redacted_{position:04d}"


def rewrite_request_id(interaction: dict[str, Any], position: int) -> None:
    """The response's request id (header and error body) as `req_redacted_NNNN`, in place."""
    response = interaction.get("response")
    if not isinstance(response, dict):
        return
    headers = response.get("headers") or {}
    if "request-id" in headers:
        headers["request-id"] = placeholder_request_id(position)
    body = response.get("body")
    if isinstance(body, dict) and isinstance(body.get("request_id"), str):
        body["request_id"] = placeholder_request_id(position)


_SIGV4_CREDENTIAL = re.compile(r"Credential=([A-Za-z0-9]{16,128})/")


def credentials_in(headers: Iterable[tuple[str, str]], extra_headers: Iterable[str] = ()) -> list[str]:
    """The credential values a request carried, so that an echo of them anywhere can be removed.

    `extra_headers`: more header names whose values are credentials (a gateway's own key header).
    """
    names = AUTH_HEADERS | {name.lower() for name in extra_headers}
    found = []
    for name, value in headers:
        lower = name.lower()
        if lower not in names:
            continue
        value = value.strip()
        if lower in ("authorization", "proxy-authorization"):
            scheme, _, rest = value.partition(" ")
            if scheme.upper().startswith("AWS4-"):  # SigV4: the access key id is the credential
                found.extend(_SIGV4_CREDENTIAL.findall(rest))
                continue
            token = rest.strip() or scheme
            found.append(token)
            if scheme.lower() == "basic":
                with contextlib.suppress(binascii.Error, ValueError):
                    found.append(base64.b64decode(token, validate=True).decode("utf-8").partition(":")[2])
        elif lower == "cookie":
            found.extend(part.split("=", 1)[-1].strip() for part in value.split(";"))
        else:
            found.append(value)
    return [secret for secret in found if len(secret) >= MIN_SECRET_LENGTH]


def credentials_in_query(query: str | None) -> list[str]:
    if not query:
        return []
    return [value for name, value in parse_qsl(query, keep_blank_values=True)
            if name.lower() in AUTH_QUERY_PARAMS and len(value) >= MIN_SECRET_LENGTH]


def credentials_sent(headers: Iterable[tuple[str, str]], url: SplitResult,
                     extra_headers: Iterable[str] = ()) -> list[str]:
    """Every credential one request carried: in its headers (`credentials_in`), its query and its URL's userinfo."""
    found = credentials_in(headers, extra_headers) + credentials_in_query(url.query)
    with contextlib.suppress(ValueError):
        if url.password:
            found.append(url.password)
    return found


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


def header_items(headers: Mapping[str, Any] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    if isinstance(headers, Mapping):
        items = []
        for name, value in headers.items():
            if isinstance(value, list | tuple):
                items.extend((name, str(v)) for v in value)
            else:
                items.append((name, str(value)))
        return items
    return list(headers)
