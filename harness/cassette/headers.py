"""Headers as a cassette keeps them, and the credentials a request sent.

Headers are allow-listed rather than deny-listed: SDK 2.x sends the key as `Authorization: Bearer`
where 1.x used `x-api-key`, so a deny-list written for one version leaks under the next.

The credentials a request carried (the value of any auth-bearing header or query parameter of the Anthropic,
Bedrock (SigV4, bearer) and Vertex clients, any header the user names, a URL's userinfo) are picked out here,
so that the redactor (harness.cassette.redact) removes them wherever they are echoed, whatever their shape. A
response's request id is kept unless asked otherwise (`rewrite_request_id`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import SplitResult, parse_qsl

from harness.cassette.credential_names import is_credential_name
from harness.cassette.credentials import MIN_SECRET_LENGTH

# The tool inputs a simulator model made up, by tool_use id (harness sim sends it; `harness bless` compares those
# inputs by shape). Named here, on the cassette's floor, so that bless reads it without loading the simulator.
INVENTED_HEADER = "x-harness-sim-invented"
REQUEST_HEADERS_KEPT = frozenset({"anthropic-version", "anthropic-beta", "content-type"})
RESPONSE_HEADERS_KEPT = frozenset(
    {
        "content-type",
        "request-id",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "x-harness-simulator",
        "x-harness-sim-model",
        INVENTED_HEADER,  # the tool inputs a simulator model made up: bless compares them by shape
    }
)
RESPONSE_HEADER_PREFIXES_KEPT = ("anthropic-ratelimit-",)

# Headers whose value is a credential, for every client of the SDK: the first-party client (x-api-key,
# Authorization: Bearer), Foundry (api-key), the Admin API, Vertex (Authorization: Bearer ya29., or an
# x-goog-api-key), Bedrock (SigV4 Authorization plus x-amz-security-token, or a bearer API key).
AUTH_HEADERS = frozenset(
    {
        "x-api-key",
        "api-key",
        "authorization",
        "proxy-authorization",
        "anthropic-admin-api-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "cookie",
    }
)
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


def credentials_in_query(query: str | None, at_least: int = MIN_SECRET_LENGTH) -> list[str]:
    """The values of a query's parameters named for a credential (harness.cassette.credential_names), of
    `at_least` characters: the ones a request sent are then removed wherever they are echoed, so a shorter one
    would rewrite ordinary text."""
    if not query:
        return []
    return [
        value
        for name, value in parse_qsl(query, keep_blank_values=True)
        if is_credential_name(name, in_query=True) and len(value) >= max(at_least, 1)
    ]


def credentials_sent(
    headers: Iterable[tuple[str, str]], url: SplitResult, extra_headers: Iterable[str] = ()
) -> list[str]:
    """Every credential one request carried: in its headers (`credentials_in`), its query and its URL's userinfo."""
    found = credentials_in(headers, extra_headers) + credentials_in_query(url.query)
    with contextlib.suppress(ValueError):
        if url.password:
            found.append(url.password)
    return found


def header_items(headers: Mapping[str, Any] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    if isinstance(headers, Mapping):
        items: list[tuple[str, str]] = []
        for name, value in headers.items():
            if isinstance(value, list | tuple):
                items.extend((name, str(v)) for v in value)
            else:
                items.append((name, str(value)))
        return items
    return list(headers)
