"""One foreign exchange -> one interaction in our format, stored exactly as our recorder would store it
(`wire.store_body`, the header allow-lists, `redact_interaction`), so that an imported cassette and a
recorded one cannot drift apart; and the provenance a foreign file gives (when, which SDK).
"""

from __future__ import annotations

import contextlib
import re
import zlib
from collections.abc import Iterable
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness.cassette.headers import keep_response_headers, stored_request_head
from harness.cassette.importer.detect import NESTED_TOO_DEEP
from harness.cassette.importer.exchange import ABSENT, Exchange
from harness.cassette.redact import redact_interaction
from harness.errors import CassetteError
from harness.wire.bodies import BodyTooLarge, store_body
from harness.wire.multipart import MULTIPART_FORM
from harness.wire.sse import parse_sse

MESSAGES_PATH = "/v1/messages"
_SDK_USER_AGENT = re.compile(r"^Anthropic/(\w+) (\S+)")


_BEDROCK_INVOKE = re.compile(r"^/model/[^/]+/(?:invoke|invoke-with-response-stream)$")
_VERTEX_PREDICT = re.compile(r"/publishers/anthropic/models/[^/:]+:(?:rawPredict|streamRawPredict)$")


def is_anthropic(host: str, path: str) -> bool:
    """The Messages API (or a stand-in for it, such as a proxy or the simulator, or Claude on Bedrock or
    Vertex) rather than, say, an image host, a token refresh or a cloud metadata fetch."""
    if host == "anthropic.com" or host.endswith(".anthropic.com") or path.startswith(MESSAGES_PATH):
        return True
    if host.startswith("bedrock-runtime.") and _BEDROCK_INVOKE.match(path):
        return True
    return _VERTEX_PREDICT.search(path) is not None


def _plain(value: Any) -> Any:
    """YAML-parsed JSON back to JSON types: an unquoted timestamp in a parsed body loads as a date."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def _store(
    target: dict[str, Any],
    raw: bytes | str | None,
    parsed: Any,
    *,
    content_type: str | None,
    allow_sse: bool,
    where: str,
    path: Path,
) -> None:
    if parsed is not ABSENT:
        if parsed is not None and parsed != "":
            try:
                target["body"] = _plain(parsed)
            except RecursionError:
                raise CassetteError(NESTED_TOO_DEEP, file=path, where=where) from None
        return
    if raw is not None and not isinstance(raw, str | bytes):
        raise CassetteError(f"a body must be text or binary, found {type(raw).__name__}", file=path, where=where)
    try:
        store_body(target, raw, content_type=content_type, allow_sse=allow_sse)
    except BodyTooLarge as err:
        reason = f"refused: {err} (a gzip bomb, or not a Messages API body)"
        raise CassetteError(reason, file=path, where=where) from None
    except RecursionError:
        raise CassetteError(NESTED_TOO_DEEP, file=path, where=where) from None
    except (OSError, EOFError, zlib.error) as err:
        reason = f"the body starts like gzip but does not decompress ({err})"
        raise CassetteError(reason, file=path, where=where) from None


def convert(
    exchange: Exchange, position: int, path: Path, secrets: Iterable[str], *, rewrite_request_ids: bool = False
) -> dict[str, Any]:
    request = stored_request_head(exchange.method, urlsplit(exchange.uri), exchange.request_headers)
    if exchange.request_parts is not None:  # an upload a recorder kept as its fields, not its bytes
        request["parts"] = exchange.request_parts
        request["headers"]["content-type"] = MULTIPART_FORM
    else:
        _store(
            request,
            exchange.request_raw,
            exchange.request_parsed,
            content_type=None,
            allow_sse=False,
            where=f"{exchange.where}.request.body",
            path=path,
        )

    response_headers = {name.lower(): value for name, value in exchange.response_headers}
    content_type = response_headers.get("content-type") or exchange.response_mime
    response: dict[str, Any] = {"status": exchange.status, "headers": keep_response_headers(exchange.response_headers)}
    _store(
        response,
        exchange.response_raw,
        exchange.response_parsed,
        content_type=content_type,
        allow_sse=True,
        where=f"{exchange.where}.response.body",
        path=path,
    )
    encoding = response_headers.get("content-encoding", "identity").strip().lower()
    if "body_base64" in response and encoding not in ("identity", "gzip", "x-gzip", ""):
        # Stored as is, these bytes would replay as garbage to a client that no longer sees the header.
        raise CassetteError(
            f"the body is {encoding}-encoded; only gzip bodies can be imported",
            file=path,
            where=f"{exchange.where}.response.body",
        )
    streamed = isinstance(request.get("body"), dict) and request["body"].get("stream") is True
    if "body_text" in response and streamed and not content_type:
        # No headers to go by (some recorders strip them all) and a body that is not JSON, on a
        # request that asked for a stream: an event stream whose first line the prefix test missed.
        events = parse_sse(response["body_text"])
        if events:
            del response["body_text"]
            response["events"] = events

    interaction: dict[str, Any] = {"request": request, "response": response}
    if exchange.elapsed_ms is not None:
        interaction["elapsed_ms"] = exchange.elapsed_ms
    redacted = redact_interaction(
        interaction, position=position, known_secrets=secrets, rewrite_request_ids=rewrite_request_ids
    )
    assert redacted is not None  # no scrubber hooks here, so nothing is dropped
    return redacted


# ---------------------------------------------------------------------------------------------------
# Provenance


def _iso(moment: datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def recorded_at(exchange: Exchange) -> str | None:
    """When the first exchange happened, where the file says so (HAR's startedDateTime, VCR's recorded_at in
    ISO form or RFC 2822, a Date header)."""
    if exchange.started_at:
        with contextlib.suppress(ValueError):
            return _iso(datetime.fromisoformat(exchange.started_at.replace("Z", "+00:00")))
        with contextlib.suppress(TypeError, ValueError):
            return _iso(parsedate_to_datetime(exchange.started_at))
    for name, value in exchange.response_headers:
        if name.lower() == "date":
            try:
                return _iso(parsedate_to_datetime(value))
            except (TypeError, ValueError):
                return None
    return None


def sdk_version(headers: Iterable[tuple[str, str]]) -> str | None:
    """ "anthropic-python 0.21.3" from the SDK's own headers; None for any other client."""
    found = {name.lower(): value for name, value in headers}
    lang, version = found.get("x-stainless-lang"), found.get("x-stainless-package-version")
    if lang and version:
        return f"anthropic-{lang.lower()} {version}"
    user_agent = _SDK_USER_AGENT.match(found.get("user-agent", ""))
    if user_agent:
        return f"anthropic-{user_agent.group(1).lower()} {user_agent.group(2)}"
    return None
