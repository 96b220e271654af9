"""Credentials: what one looks like, and where a text, a stream or a JSON field holds one.

Two ways a value is a credential, wherever it sits:

- its shape: Anthropic's (exact, ours), the vendor shapes detect-secrets knows (AWS ids, GitHub, Slack, JWT,
  private keys, Stripe, ...), and the ones it does not (GCP `ya29.` tokens, `AIza` keys, `GOCSPX-` client
  secrets, Google refresh tokens, AWS secret keys and session tokens by their field name, OpenAI project keys,
  GitHub fine-grained tokens, whole PEM blocks); a cheap pre-check on anchors runs before any shape does;
- its name: the fields the SDK's types define as credentials (`SECRET_FIELDS`), whatever their value; and any
  query parameter, JSON field or `name=value` whose name says so (harness.cassette.credential_names, one list
  for every reader and writer) holding a value that looks like one (`field_secret_kind`, `named_values`).

`find_secrets` is what the redactor (harness.cassette.redact) removes and what `harness scan` flags: one set
of shapes for both. A streamed block's text is searched joined across its start and deltas (`stream_blocks`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.cassette.credential_names import is_credential_name, is_credential_value

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
    Shape(
        "private-key",
        re.compile(
            r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----(?:[\s\S]*?-----END \1-----|[A-Za-z0-9+/=\s\\]*)"
        ),
    ),
    Shape("openai-key", re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}")),
    Shape("github-token", re.compile(r"\b(?:github_pat_[A-Za-z0-9_]{22,}|gh[pousr]_[A-Za-z0-9_]{36,})")),
    # detect-secrets' JWT pattern stops before the signature; this one takes all three parts.
    Shape("jwt", re.compile(r"\beyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.[A-Za-z0-9_=+/-]*")),
    Shape("gcp-access-token", re.compile(r"\bya29\.[0-9A-Za-z_\-.]{20,}")),
    Shape("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    Shape("google-client-secret", re.compile(r"\bGOCSPX-[0-9A-Za-z_\-]{20,}")),
    Shape("google-refresh-token", re.compile(r"\b1(?://|%2F%2F)0[0-9A-Za-z_\-]{20,}")),
    Shape(
        "aws-secret-key",
        re.compile(
            rf"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key){_FIELD_SEP}"
            r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        1,
    ),
    Shape(
        "aws-session-token",
        re.compile(
            rf"(?i)(?:aws_?session_?token|session_?token|security_?token|\"token\"){_FIELD_SEP}"
            r"([A-Za-z0-9/+=]{100,})"
        ),
        1,
    ),
    # A field that is a credential by its name alone (SECRET_FIELDS), in any container: YAML, JSON, a form.
    Shape(
        "credential-field",
        re.compile(
            r"""(?i)\b(?:authorization[_-]?token|secret[_-]?value|signing[_-]?secret|tunnel[_-]?token)"""
            r"""\\?["']?\s*(?:[:=]|=>|>)\s*\\?["']?"""  # `\"k\": \"v\"` too: JSON inside a JSON string
            r"(?!<redacted:)([A-Za-z0-9._~+/\-%=:]{12,})"
        ),
        1,
    ),
    # "Bearer authentication" is prose; a token has digits and letters and no spaces.
    Shape(
        "bearer-token",
        re.compile(
            r"(?i)\bbearer\s+((?=[A-Za-z0-9._~+/=\-]*\d)(?=[A-Za-z0-9._~+/=\-]*[A-Za-z])[A-Za-z0-9._~+/=\-]{16,})"
        ),
        1,
    ),
    # HTTP Basic credentials (base64 of user:password) after the scheme's name, as a header or a query value
    # carries them; "Basic authentication" and "the basic plan" are prose (the token needs a digit, 12 characters).
    Shape(
        "basic-auth",
        re.compile(r"(?i)\bbasic(?:\s+|%20|\+)((?=[A-Za-z0-9+/]*\d)[A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])"),
        1,
    ),
    # An organization id next to the word (a 429 message, an `anthropic-organization-id` header in any
    # container); the word must stand alone, so "George ... <uuid>" is left as it is.
    Shape(
        "organization-id",
        re.compile(rf"(?i)\b(?:org|organi[sz]ation)(?:[_-]?id)?\b[^\n]{{0,60}}?(?:\n[\s-]*)?(?<![0-9a-fA-F])({_UUID})"),
        1,
    ),
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
        plugins = {
            module: getattr(import_module(f"detect_secrets.plugins.{module}"), class_name)()
            for module, (class_name, _) in _DETECT_SECRETS_PLUGINS.items()
        }
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
                found.append(
                    Shape(
                        "aws-access-key-id" if kind == "aws-key" else kind,
                        regex,
                        1 if regex.groups and kind in ("basic-auth", "npm-token") else 0,
                    )
                )
    return tuple(found)


# A cheap test before any shape runs, for every text the redactor sees: text that holds none of these
# anchors is left alone, so an ordinary request costs a few dozen substring searches (a regular-expression
# alternation over the same text costs 40 times as much). Every shape above, and every plugin kept, needs
# one of them (the rarer AWS id prefixes and GitLab token kinds share the anchors of their kin, or are
# left to the scan); none is in an ordinary request.
_ANCHORS = (
    "sk-ant-",
    "sk-proj-",
    "sk-svcacct-",
    "sk-admin-",
    "T3Blbk",
    "AKIA",
    "ASIA",
    "ya29.",
    "AIza",
    "GOCSPX",
    "1//0",
    "%2F%2F0",
    "PRIVATE KEY",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat",
    "glpat-",
    "xox",
    "hooks.slack",
    "eyJ",
    "SG.",
    "sq0csp",
    "k_live_",
    "AccountKey",
    "_authToken",
    "pypi-",
    "__cf_bm",
    "_cfuvid",
    "cf_clearance",
)
# Case-insensitive words that start a shape wherever they are ...
_WORDS = ("bearer", "basic", "sessionkey=", "aws")
# ... and field names that do only when a value follows (`"token": `, `password=`; not `max_tokens`).
_FIELD_WORDS = ("token", "secret", "key", "password", "passwd", "pwd", "passphrase", "pass", "credential",
                "credentials", "sig", "auth")
_BASIC_AUTH_HINT = re.compile(r"://[^\s/@\"']+@")
_UUID_RE = re.compile(_UUID)
_BYTE_ANCHORS = tuple(anchor.encode() for anchor in _ANCHORS)
_BYTE_WORDS = tuple(word.encode() for word in _WORDS)
_BYTE_FIELD_WORDS = tuple(word.encode() for word in _FIELD_WORDS)


def might_hold_secret(text: str) -> bool:
    if any(anchor in text for anchor in _ANCHORS):
        return True
    lower = text.lower()
    if any(word in lower for word in _WORDS) or _has_field(lower, ":=>", "\"' \\"):
        return True
    if "://" in text and "@" in text and _BASIC_AUTH_HINT.search(text):
        return True
    return "org" in lower and _UUID_RE.search(text) is not None


def might_hold_secret_bytes(raw: bytes) -> bool:
    """`might_hold_secret` of UTF-8 bytes, without decoding them (every anchor is ASCII)."""
    if any(anchor in raw for anchor in _BYTE_ANCHORS):
        return True
    lower = raw.lower()
    # A backslash too: a JSON string inside the body (a tool's output) escapes its quotes, `\"token\": \"...`.
    if any(word in lower for word in _BYTE_WORDS) or _has_field(lower, b":=>", b"\"' \\"):
        return True
    if b"://" in raw and b"@" in raw:
        return True
    return b"org" in lower and _UUID_RE.search(raw.decode("utf-8", errors="replace")) is not None


def _has_field(lower: Any, separators: Any, skipped: Any) -> bool:
    for word in _FIELD_WORDS:
        needle = word if isinstance(lower, str) else word.encode()
        start = lower.find(needle)
        while start != -1:
            after = lower[start + len(needle) : start + len(needle) + 4].lstrip(skipped)
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
        spans.extend(named_values(text))
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


# `name: value`, `"name": "value"`, `name=value`, `<name>value` where the name ends in a credential's word
# (harness.cassette.credential_names decides whether the whole name is one).
_NAMED = re.compile(
    r"""(?i)(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]{0,48}?(?:key|token|secret|password|passwd|pwd|passphrase|"""
    r"""credentials?|signature|sig|auth|pass))(?![A-Za-z0-9_.-])(\\?["']?)\s*([:=]|=>|>)\s*\\?["']?"""
    r"""([^\s"'`&,;<>\\()\[\]{}|]+)"""
)


_QUERY_FIELD = re.compile(r"""query["']?\s*[:=]\s*["']?$""")  # a cassette's stored query: its first parameter


def named_values(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every value a credential's name holds in `text`. In a query (`?key=` or `&key=`)
    any value is one; elsewhere a value that looks like one (`is_credential_value`: a digit, 8 characters), or
    any value of 8 characters for a field the SDK's types define as a credential (`SECRET_FIELDS`)."""
    found = []
    for match in _NAMED.finditer(text):
        name, quote, separator, value = match.groups()
        start = match.start(1)
        in_query = separator == "=" and not quote and (
            start == 0 or text[start - 1] in "?&" or _QUERY_FIELD.search(text[max(0, start - 12) : start]) is not None)
        form = separator == "=" and not quote  # `key=value` in a form body or a line of text
        if not is_credential_name(name, in_query=form):
            continue
        sdk_field = SECRET_FIELDS.get(name.lower().replace("-", "_"))  # a credential whatever its shape, as in JSON
        if (in_query and not is_placeholder(value)) or is_credential_value(value, name) or (
                sdk_field and is_secret_value(value)):
            found.append((match.start(4), match.end(4), sdk_field or "credential"))
    return found


def kind_of(value: str) -> str:
    """The kind of a credential value the run sent: its shape's, else plain `credential`."""
    for shape in shapes():
        match = shape.regex.search(value)
        if match and match.span(shape.group) == (0, len(value)):
            return shape.kind
    return "credential"


def anchor_positions(raw: bytes, known: Mapping[str, str]) -> list[int]:
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
CREDENTIAL_FIELDS = {
    "secretaccesskey": "aws-secret-key",
    "secret_access_key": "aws-secret-key",
    "aws_secret_access_key": "aws-secret-key",
    "sessiontoken": "aws-session-token",
    "session_token": "aws-session-token",
    "aws_session_token": "aws-session-token",
    "token": "aws-session-token",
    "access_token": "access-token",
    "refresh_token": "refresh-token",
    "id_token": "jwt",
    "client_secret": "client-secret",
    "api_key": "credential",
    "apikey": "credential",
    "x_api_key": "credential",
    "password": "password",
    "private_key": "private-key",
    "secret": "credential",
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


def field_secret_kind(key: str, value: str, holder: Mapping[str, Any]) -> str | None:
    """The placeholder kind of a JSON field's value when it is a credential, else None: a field of the SDK's types
    that is one whatever its value (`SECRET_FIELDS`), or one whose name says so (`is_credential_name`) holding
    a value that looks like one. The redactor removes what this names, and `harness scan` flags it."""
    kind = secret_field_kind(key, holder)
    if kind and is_secret_value(value):
        return field_kind(value, kind)
    if is_credential_name(key) and is_credential_value(value, key):
        return field_kind(value, CREDENTIAL_FIELDS.get(key.lower().replace("-", "_"), "credential"))
    return None


def secret_field_kind(key: str, holder: Mapping[str, Any]) -> str | None:
    """The placeholder kind of a field that is a credential by its name (in its object's `type`), else None."""
    name = key.lower().replace("-", "_")
    return SECRET_FIELDS.get(name) or _TYPED_SECRET_FIELDS.get((str(holder.get("type")), name))


def is_placeholder(value: str) -> bool:
    return PLACEHOLDER.fullmatch(value) is not None or value in LEGACY_PLACEHOLDERS


def is_secret_value(value: str) -> bool:
    return len(value) >= MIN_SECRET_LENGTH and not is_placeholder(value)


def field_kind(value: str, fallback: str) -> str:
    kind = kind_of(value)
    return fallback if kind == "credential" else kind


def credential_kinds(credentials: Iterable[str]) -> dict[str, str]:
    return {value: kind_of(value) for value in credentials if len(value) >= MIN_SECRET_LENGTH}
