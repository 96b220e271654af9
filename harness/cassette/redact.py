"""What may reach the disk: allow-listed headers, bodies with secrets scrubbed, stable request ids.

Headers are allow-listed rather than deny-listed: SDK 2.x sends the key as `Authorization: Bearer`
where 1.x used `x-api-key`, so a deny-list written for one version leaks under the next. Bodies are
scrubbed for secret shapes (keys echoed into a prompt, organization ids inside 429 messages) and for
the exact credential the recording run used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

REQUEST_HEADERS_KEPT = frozenset({"anthropic-version", "anthropic-beta", "content-type"})
RESPONSE_HEADERS_KEPT = frozenset(
    {"content-type", "request-id", "retry-after", "retry-after-ms", "x-should-retry", "x-harness-simulator",
     "x-harness-sim-model"}
)
RESPONSE_HEADER_PREFIXES_KEPT = ("anthropic-ratelimit-",)

REDACTED = "[REDACTED]"


@dataclass(frozen=True)
class SecretPattern:
    name: str
    regex: re.Pattern[str]
    replacement: str = REDACTED


_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"

SECRET_PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern("anthropic api key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")),
    SecretPattern("bearer token", re.compile(r"(?i)\bbearer\s+(?!\[REDACTED\])[A-Za-z0-9._~+/=\-]{12,}"),
                  "Bearer [REDACTED]"),
    # An organization id next to its name: a 429 message ("... for your organization (uuid) ..."), an
    # `anthropic-organization-id` header in any container (YAML list, HAR name/value pair).
    SecretPattern(
        "organization id",
        re.compile(rf"(?i)(org(?:anization)?[\s\S]{{0,60}}?)(?<![0-9a-fA-F]){_UUID}"),
        r"\1[REDACTED-ORG]",
    ),
    SecretPattern("cookie", re.compile(r"(?i)\b(__cf_bm|_cfuvid|cf_clearance|sessionKey)=(?!\[REDACTED)[^;\s\"']{8,}"),
                  r"\1=[REDACTED]"),
)


def find_secrets(text: str) -> list[tuple[str, int, str]]:
    """(pattern name, offset, matched text) for every secret-shaped string in `text`."""
    hits = []
    for pattern in SECRET_PATTERNS:
        for match in pattern.regex.finditer(text):
            hits.append((pattern.name, match.start(), match.group(0)))
    return sorted(hits, key=lambda hit: hit[1])


def scrub_text(text: str, known_secrets: Iterable[str] = ()) -> str:
    for secret in known_secrets:
        if secret and len(secret) >= 8 and secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in SECRET_PATTERNS:
        text = pattern.regex.sub(pattern.replacement, text)
    return text


def scrub(value: Any, known_secrets: Iterable[str] = ()) -> Any:
    """A copy of JSON-like `value` with every string scrubbed."""
    secrets = tuple(known_secrets)
    if isinstance(value, str):
        return scrub_text(value, secrets)
    if isinstance(value, dict):
        return {key: scrub(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub(item, secrets) for item in value]
    return value


def keep_request_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers if name.lower() in REQUEST_HEADERS_KEPT}


def keep_response_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    kept = {}
    for name, value in headers:
        lower = name.lower()
        if lower in RESPONSE_HEADERS_KEPT or lower.startswith(RESPONSE_HEADER_PREFIXES_KEPT):
            kept[lower] = value
    return kept


def placeholder_request_id(position: int) -> str:
    """Stable across re-recordings, so `message._request_id` still works and diffs stay quiet."""
    return f"req_redacted_{position:04d}"


def credentials_in(headers: Iterable[tuple[str, str]]) -> list[str]:
    """The credential values a request carried, so that an echo of them anywhere can be removed."""
    found = []
    for name, value in headers:
        lower = name.lower()
        if lower == "x-api-key":
            found.append(value.strip())
        elif lower == "authorization":
            found.append(value.split(" ", 1)[-1].strip())
        elif lower == "cookie":
            found.extend(part.split("=", 1)[-1].strip() for part in value.split(";"))
    return [secret for secret in found if len(secret) >= 8]


Scrubber = Callable[[dict[str, Any]], dict[str, Any] | None]
"""A user hook: gets an interaction about to be written, returns it changed (or None to drop it)."""


def redact_interaction(
    interaction: dict[str, Any],
    *,
    position: int,
    known_secrets: Iterable[str] = (),
    scrubbers: Iterable[Scrubber] = (),
) -> dict[str, Any] | None:
    """The interaction as it may be written: secrets scrubbed, request-id made stable, hooks applied."""
    secrets = tuple(known_secrets)
    out = scrub(interaction, secrets)
    response = out.get("response")
    if isinstance(response, dict):
        original = interaction.get("response")
        if isinstance(response.get("events"), list) and isinstance(original, dict):
            _scrub_across_deltas(original["events"], response["events"], secrets)
        headers = response.get("headers") or {}
        if "request-id" in headers:
            headers["request-id"] = placeholder_request_id(position)
        body = response.get("body")
        if isinstance(body, dict) and isinstance(body.get("request_id"), str):
            body["request_id"] = placeholder_request_id(position)
    for hook in scrubbers:
        result = hook(out)
        if result is None:
            return None
        out = result
    return out


_DELTA_FIELDS = ("text", "partial_json", "thinking")


def _scrub_across_deltas(original: list[Any], scrubbed: list[Any], secrets: tuple[str, ...]) -> None:
    """A stream cuts text anywhere, so a key the model echoes can arrive as `sk-an` + `t-api03-...`: no
    single event holds it, and the client joins it back. Join each block's deltas as they arrived (before
    the per-event scrub, which would leave the tail of a key cut after its prefix); where the joined text
    holds a secret, the block's first delta in `scrubbed` carries the scrubbed text, the others none."""
    pieces: dict[tuple[Any, str], list[tuple[str, dict[str, Any]]]] = {}
    for before, after in zip(original, scrubbed, strict=True):
        data = before.get("data") if isinstance(before, dict) else None
        if not (isinstance(data, dict) and data.get("type") == "content_block_delta"):
            continue
        delta, cleaned = data.get("delta"), after["data"].get("delta")
        for name in _DELTA_FIELDS:
            if isinstance(delta, dict) and isinstance(delta.get(name), str):
                pieces.setdefault((data.get("index"), name), []).append((delta[name], cleaned))
    for (_, name), parts in pieces.items():
        joined = "".join(text for text, _ in parts)
        cleaned_text = scrub_text(joined, secrets)
        if cleaned_text != joined:
            for position, (_, target) in enumerate(parts):
                target[name] = cleaned_text if position == 0 else ""


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
