"""Foreign cassettes into ours: vcrpy YAML (plain or gzip `!!binary` bodies; aiohttp's `istr` header keys),
pydantic-ai's parsed bodies, HAR, langchain's gzip `.yaml.gz`, and one-exchange JSON files.

Each reader turns its container into `_Exchange`s, the request and response as they went over the wire;
one converter then stores every exchange exactly as our recorder would (`wire.store_body`, the header
allow-lists, `redact_interaction`), so an imported cassette and a recorded one cannot drift apart.
Files are parsed as data only: JSON, or YAML through the safe loader, where `!!binary` is a standard
tag and any `!!python/...` tag is refused before it can build anything, except one: the header keys vcrpy
wrote for aiohttp clients, `!!python/object/apply:multidict._multidict.istr [Name]` (a case-insensitive
string), which one narrow constructor reads as the plain string `Name` and nothing else.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from harness.cassette.format import (
    FORMAT_VERSION,
    MAX_CASSETTE_BYTES,
    CassetteFile,
    SafeLoader,
    load_cassette,
    parse_yaml,
    read_text_bounded,
    refuse_what_json_cannot_hold,
    regular_file_size,
    save_cassette,
    validate,
)
from harness.cassette.redact import (
    credentials_sent,
    header_items,
    keep_response_headers,
    redact_interaction,
    stored_request_head,
)
from harness.cassette.sse import parse_sse
from harness.cassette.wire import GZIP_MAGIC, BodyTooLarge, gunzip_bounded, store_body
from harness.errors import CassetteError, HarnessError, absolute
from harness.jsondata import run_fingerprints

HARNESS = "harness"  # ours already: loaded, not converted
VCRPY_YAML = "vcrpy-yaml"  # `interactions:` with `body: {string: ...}` (str, or `!!binary` gzip)
VCRPY_JSON = "vcrpy-json"  # the same, written by vcrpy's JSON serializer
PYDANTIC_AI_YAML = "pydantic-ai-yaml"  # vcrpy YAML whose JSON bodies are `parsed_body` mappings
HAR = "har"  # HAR 1.2 (Polly.JS and browsers): `log.entries[]`
LANGCHAIN_YAML_GZ = "langchain-yaml-gz"  # gzip YAML with vcrpy's internal `requests:` / `responses:` lists
LANGCHAIN_YAML = "langchain-yaml"  # the same, not compressed
ONE_EXCHANGE_JSON = "one-exchange-json"  # {"request": {method, url, headers, body}, "response": {status, ...}}

FORMATS = (HARNESS, VCRPY_YAML, VCRPY_JSON, PYDANTIC_AI_YAML, HAR, LANGCHAIN_YAML_GZ, LANGCHAIN_YAML,
           ONE_EXCHANGE_JSON)
IMPORTABLE_SUFFIXES = (".yaml.gz", ".yaml", ".yml", ".har", ".json")

MESSAGES_PATH = "/v1/messages"
_ABSENT: Any = object()  # a parsed body that was not there (a parsed `null` is a body)
_UNSAFE_TAG = re.compile(r"constructor for the tag '([^']+)'")
_SDK_USER_AGENT = re.compile(r"^Anthropic/(\w+) (\S+)")
NESTED_TOO_DEEP = "refused: JSON nested too deep to parse (no Messages API body nests this far)"


@dataclass
class _Exchange:
    """One request and its response as a foreign file holds them, before anything is stored."""

    where: str  # JSON path of the exchange in its file, for errors
    method: str
    uri: str
    request_headers: list[tuple[str, str]]
    request_raw: bytes | str | None = None
    request_parsed: Any = _ABSENT
    status: int = 0
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    response_raw: bytes | str | None = None
    response_parsed: Any = _ABSENT
    response_mime: str | None = None  # HAR's content.mimeType, when the headers say nothing
    started_at: str | None = None
    elapsed_ms: float | None = None


# ---------------------------------------------------------------------------------------------------
# Reading a file: bounded, data only


def _read_document(path: Path) -> tuple[str, Any]:
    """(format, parsed data) of a cassette file of any format this module knows."""
    gzipped = _starts_with_gzip(path)
    text = _gunzip_file(path) if gzipped else read_text_bounded(path)
    data, was_json = _parse_text(text, path)
    return _classify(data, path, gzipped=gzipped, was_json=was_json), data


def _starts_with_gzip(path: Path) -> bool:
    if path.is_dir():
        raise CassetteError("a folder, not a cassette file", file=path)
    regular_file_size(path)  # a pipe would block the open below; a device never ends
    try:
        with path.open("rb") as handle:
            return handle.read(2) == GZIP_MAGIC
    except FileNotFoundError:
        raise CassetteError("no such cassette", file=absolute(path)) from None
    except IsADirectoryError:
        raise CassetteError("a folder, not a cassette file", file=path) from None


def _gunzip_file(path: Path) -> str:
    size = path.stat().st_size
    if size > MAX_CASSETTE_BYTES:
        raise CassetteError(f"{size:,} bytes is over the {MAX_CASSETTE_BYTES:,}-byte limit for a cassette", file=path)
    try:
        raw = gunzip_bounded(path.read_bytes(), MAX_CASSETTE_BYTES)
    except BodyTooLarge:
        reason = f"decompresses past the {MAX_CASSETTE_BYTES:,}-byte limit for a cassette"
        raise CassetteError(reason, file=path) from None
    except (OSError, EOFError, zlib.error) as err:
        raise CassetteError(f"not a readable gzip file ({err})", file=path) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        reason = f"decompressed text is not UTF-8 (byte {err.start})"
        raise CassetteError(reason, file=path, where=f"line {line}") from None


ISTR_TAG = "tag:yaml.org,2002:python/object/apply:multidict._multidict.istr"


class _ForeignLoader(SafeLoader):  # type: ignore[misc, valid-type]
    """The safe loader plus one constructor, for the one tag aiohttp recordings carry (see ISTR_TAG)."""


def _plain_header_name(loader: yaml.BaseLoader, node: yaml.Node) -> str:
    """`!!python/object/apply:multidict._multidict.istr [Content-Type]` -> "Content-Type"; anything else
    under that tag (no list, two items, a nested node) is refused, never built."""
    items = node.value if isinstance(node, yaml.SequenceNode) else None
    plain = bool(items) and len(items) == 1 and isinstance(items[0], yaml.ScalarNode)
    if not plain or items[0].tag != "tag:yaml.org,2002:str":
        raise yaml.constructor.ConstructorError(None, None, "an istr header name must be a list of one string",
                                                node.start_mark)
    return str(items[0].value)


_ForeignLoader.add_constructor(ISTR_TAG, _plain_header_name)


def _parse_text(text: str, path: Path) -> tuple[Any, bool]:
    """JSON when the file is JSON (a HAR), else YAML through the safe loader."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text), True
        except RecursionError:
            raise CassetteError(NESTED_TOO_DEEP, file=path) from None
        except ValueError as err:
            if path.suffix.lower() in (".har", ".json"):
                where = f"line {err.lineno}, column {err.colno}" if isinstance(err, json.JSONDecodeError) else None
                reason = err.msg if isinstance(err, json.JSONDecodeError) else str(err)
                raise CassetteError(f"not valid JSON: {reason}", file=path, where=where) from None
    try:
        return parse_yaml(text, file=path, loader=_ForeignLoader), False
    except CassetteError as err:
        unsafe = _UNSAFE_TAG.search(err.reason)
        if unsafe:
            # A tag the safe loader has no constructor for: in a vcrpy file that means `!!python/...`,
            # which an unsafe loader would have executed. Say so rather than "not valid YAML".
            raise CassetteError(
                f"refused: the tag {unsafe.group(1)!r} would build a Python object; cassettes are read as data only",
                file=path,
                where=err.where,
            ) from None
        raise


def _classify(data: Any, path: Path, *, gzipped: bool, was_json: bool) -> str:
    if isinstance(data, dict):
        if "harness" in data:
            return HARNESS
        log = data.get("log")
        if isinstance(log, dict) and isinstance(log.get("entries"), list):
            return HAR
        interactions = data.get("interactions")
        if isinstance(interactions, list):
            if was_json:
                return VCRPY_JSON
            if any(_has_parsed_body(item) for item in interactions):
                return PYDANTIC_AI_YAML
            return VCRPY_YAML
        if isinstance(data.get("requests"), list) and isinstance(data.get("responses"), list):
            return LANGCHAIN_YAML_GZ if gzipped else LANGCHAIN_YAML
        if isinstance(data.get("request"), dict) and isinstance(data.get("response"), dict):
            return ONE_EXCHANGE_JSON
    raise CassetteError(
        f"not a cassette format this importer knows ({_first_keys(data)}): expected vcrpy's `interactions:`, "
        "langchain's `requests:`/`responses:`, a HAR `log.entries` list, a one-exchange `request:`/`response:` "
        "pair, or our own `harness:` block",
        file=path,
        where="$",
    )


def _first_keys(data: Any, limit: int = 5) -> str:
    """What the file holds, for a format this module does not know: its first top-level keys."""
    if not isinstance(data, dict):
        return f"its top level is {'a list' if isinstance(data, list) else type(data).__name__}, not a mapping"
    if not data:
        return "its top level is an empty mapping"
    keys = [repr(str(key))[:40] for key in list(data)[:limit]]
    more = f" and {len(data) - limit} more" if len(data) > limit else ""
    return f"top-level keys seen: {', '.join(keys)}{more}"


def _has_parsed_body(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    return any(isinstance(item.get(side), dict) and "parsed_body" in item[side] for side in ("request", "response"))


# ---------------------------------------------------------------------------------------------------
# Readers: one per container format, each yielding _Exchanges


def _mapping(value: Any, where: str, path: Path) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise CassetteError(f"expected a mapping, found {type(value).__name__}", file=path, where=where)
    return value


def _text(container: Mapping[str, Any], key: str, where: str, path: Path) -> str:
    value = container.get(key)
    if not isinstance(value, str) or not value:
        raise CassetteError(f"`{key}` is missing or not text", file=path, where=f"{where}.{key}")
    return value


def _status(value: Any, where: str, path: Path) -> int:
    code = value.get("code") if isinstance(value, Mapping) else value
    try:
        status = int(code)
    except (TypeError, ValueError):
        status = 0
    if not 100 <= status <= 599:
        raise CassetteError(f"no HTTP status here (found {code!r})", file=path, where=f"{where}.status")
    return status


def _headers(value: Any, where: str, path: Path) -> list[tuple[str, str]]:
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [(str(name), item) for name, item in header_items(value)]
    if isinstance(value, list):  # HAR: [{name, value}]
        items = []
        for index, entry in enumerate(value):
            entry = _mapping(entry, f"{where}[{index}]", path)
            items.append((str(entry.get("name", "")), str(entry.get("value", ""))))
        return items
    raise CassetteError(f"headers must be a mapping or a list, found {type(value).__name__}", file=path, where=where)


def _vcr_request(exchange: _Exchange, request: Mapping[str, Any]) -> None:
    if "parsed_body" in request:
        exchange.request_parsed = request["parsed_body"]
    else:
        body = request.get("body")
        if isinstance(body, Mapping):  # some vcrpy versions nest it like a response body
            body = body.get("string")
        exchange.request_raw = body


def _vcr_response(exchange: _Exchange, response: Mapping[str, Any], where: str, path: Path) -> None:
    exchange.status = _status(response.get("status"), where, path)
    exchange.response_headers = _headers(response.get("headers"), f"{where}.headers", path)
    if "parsed_body" in response:
        exchange.response_parsed = response["parsed_body"]
    else:
        body = response.get("body")
        exchange.response_raw = body.get("string") if isinstance(body, Mapping) else body


def _read_vcrpy(data: Mapping[str, Any], path: Path) -> Iterator[_Exchange]:
    for index, item in enumerate(data["interactions"]):
        where = f"$.interactions[{index}]"
        item = _mapping(item, where, path)
        request = _mapping(item.get("request"), f"{where}.request", path)
        response = _mapping(item.get("response"), f"{where}.response", path)
        exchange = _Exchange(
            where=where,
            method=_text(request, "method", f"{where}.request", path).upper(),
            uri=_text(request, "uri", f"{where}.request", path),
            request_headers=_headers(request.get("headers"), f"{where}.request.headers", path),
        )
        _vcr_request(exchange, request)
        _vcr_response(exchange, response, f"{where}.response", path)
        yield exchange


def _read_langchain(data: Mapping[str, Any], path: Path) -> Iterator[_Exchange]:
    requests, responses = data["requests"], data["responses"]
    if len(requests) != len(responses):
        raise CassetteError(f"{len(requests)} requests but {len(responses)} responses", file=path, where="$")
    for index, (request, response) in enumerate(zip(requests, responses, strict=True)):
        where = f"$.requests[{index}]"
        request = _mapping(request, where, path)
        exchange = _Exchange(
            where=where,
            method=_text(request, "method", where, path).upper(),
            uri=_text(request, "uri", where, path),
            request_headers=_headers(request.get("headers"), f"{where}.headers", path),
        )
        _vcr_request(exchange, request)
        _vcr_response(exchange, _mapping(response, f"$.responses[{index}]", path), f"$.responses[{index}]", path)
        yield exchange


def _read_har(data: Mapping[str, Any], path: Path) -> Iterator[_Exchange]:
    for index, entry in enumerate(data["log"]["entries"]):
        where = f"$.log.entries[{index}]"
        entry = _mapping(entry, where, path)
        request = _mapping(entry.get("request"), f"{where}.request", path)
        response = _mapping(entry.get("response"), f"{where}.response", path)
        post = request.get("postData")
        content = response.get("content") if isinstance(response.get("content"), Mapping) else {}
        raw: bytes | str | None = content.get("text")
        if isinstance(raw, str) and content.get("encoding") == "base64":
            try:
                raw = base64.b64decode(raw, validate=True)
            except binascii.Error:
                raise CassetteError("content.text says base64 but is not", file=path,
                                    where=f"{where}.response.content.text") from None
        elapsed = entry.get("time")
        yield _Exchange(
            where=where,
            method=_text(request, "method", f"{where}.request", path).upper(),
            uri=_text(request, "url", f"{where}.request", path),
            request_headers=_headers(request.get("headers"), f"{where}.request.headers", path),
            request_raw=post.get("text") if isinstance(post, Mapping) else None,
            status=_status(response.get("status"), f"{where}.response", path),
            # HAR's content.text is already decoded even where the headers still say gzip: the
            # encoding header is dropped by the allow-list, so nothing tries to decode it twice.
            response_headers=_headers(response.get("headers"), f"{where}.response.headers", path),
            response_raw=raw,
            response_mime=content.get("mimeType") if isinstance(content.get("mimeType"), str) else None,
            started_at=entry.get("startedDateTime") if isinstance(entry.get("startedDateTime"), str) else None,
            elapsed_ms=float(elapsed) if isinstance(elapsed, int | float) and elapsed >= 0 else None,
        )


def _read_one_exchange(data: Mapping[str, Any], path: Path) -> Iterator[_Exchange]:
    """`{"request": {method, url, headers, body}, "response": {status: {code, message}, headers, body}}`."""
    request = _mapping(data["request"], "$.request", path)
    response = _mapping(data["response"], "$.response", path)
    exchange = _Exchange(
        where="$",
        method=_text(request, "method", "$.request", path).upper(),
        uri=_text(request, "url" if "url" in request else "uri", "$.request", path),
        request_headers=_headers(request.get("headers"), "$.request.headers", path),
        status=_status(response.get("status"), "$.response", path),
        response_headers=_headers(response.get("headers"), "$.response.headers", path),
    )
    for side, body in (("request", request.get("body")), ("response", response.get("body"))):
        if isinstance(body, Mapping) and set(body) <= {"string", "encoding"}:  # vcrpy's {string: ...}
            body = body.get("string")
        if isinstance(body, dict | list):  # stored parsed
            setattr(exchange, f"{side}_parsed", body)
        else:
            setattr(exchange, f"{side}_raw", body)
    yield exchange


_READERS = {
    VCRPY_YAML: _read_vcrpy,
    VCRPY_JSON: _read_vcrpy,
    PYDANTIC_AI_YAML: _read_vcrpy,
    HAR: _read_har,
    LANGCHAIN_YAML_GZ: _read_langchain,
    LANGCHAIN_YAML: _read_langchain,
    ONE_EXCHANGE_JSON: _read_one_exchange,
}


# ---------------------------------------------------------------------------------------------------
# One exchange -> one interaction in our format


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


def _store(target: dict[str, Any], raw: bytes | str | None, parsed: Any, *, content_type: str | None,
           allow_sse: bool, where: str, path: Path) -> None:
    if parsed is not _ABSENT:
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


def _convert(exchange: _Exchange, position: int, path: Path, secrets: Iterable[str], *,
             rewrite_request_ids: bool = False) -> dict[str, Any]:
    request = stored_request_head(exchange.method, urlsplit(exchange.uri), exchange.request_headers)
    _store(request, exchange.request_raw, exchange.request_parsed, content_type=None, allow_sse=False,
           where=f"{exchange.where}.request.body", path=path)

    response_headers = {name.lower(): value for name, value in exchange.response_headers}
    content_type = response_headers.get("content-type") or exchange.response_mime
    response: dict[str, Any] = {"status": exchange.status, "headers": keep_response_headers(exchange.response_headers)}
    _store(response, exchange.response_raw, exchange.response_parsed, content_type=content_type, allow_sse=True,
           where=f"{exchange.where}.response.body", path=path)
    encoding = response_headers.get("content-encoding", "identity").strip().lower()
    if "body_base64" in response and encoding not in ("identity", "gzip", "x-gzip", ""):
        # Stored as is, these bytes would replay as garbage to a client that no longer sees the header.
        raise CassetteError(f"the body is {encoding}-encoded; only gzip bodies can be imported", file=path,
                            where=f"{exchange.where}.response.body")
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
    redacted = redact_interaction(interaction, position=position, known_secrets=secrets,
                                  rewrite_request_ids=rewrite_request_ids)
    assert redacted is not None  # no scrubber hooks here, so nothing is dropped
    return redacted


# ---------------------------------------------------------------------------------------------------
# Provenance


def _iso(moment: datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def _recorded_at(exchange: _Exchange) -> str | None:
    """When the first exchange happened, where the file says so (HAR's startedDateTime, a Date header)."""
    if exchange.started_at:
        try:
            return _iso(datetime.fromisoformat(exchange.started_at.replace("Z", "+00:00")))
        except ValueError:
            pass
    for name, value in exchange.response_headers:
        if name.lower() == "date":
            try:
                return _iso(parsedate_to_datetime(value))
            except (TypeError, ValueError):
                return None
    return None


def _sdk_version(headers: Iterable[tuple[str, str]]) -> str | None:
    """"anthropic-python 0.21.3" from the SDK's own headers; None for any other client."""
    found = {name.lower(): value for name, value in headers}
    lang, version = found.get("x-stainless-lang"), found.get("x-stainless-package-version")
    if lang and version:
        return f"anthropic-{lang.lower()} {version}"
    user_agent = _SDK_USER_AGENT.match(found.get("user-agent", ""))
    if user_agent:
        return f"anthropic-{user_agent.group(1).lower()} {user_agent.group(2)}"
    return None


# ---------------------------------------------------------------------------------------------------
# Public surface


@contextlib.contextmanager
def _unexpected_shape(path: Path, where: str) -> Iterator[None]:
    """A foreign file shaped in a way no check above foresaw is still bad input, named, never a crash."""
    try:
        yield
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise CassetteError(f"unexpected structure ({type(err).__name__}: {err})", file=path, where=where) from None


def detect_format(path: str | Path) -> str:
    """One of FORMATS, read from the file's content (never from its name alone)."""
    return _read_document(Path(path))[0]


def import_file(path: str | Path, *, keep_foreign_hosts: bool = False, secret_headers: Iterable[str] = (),
                rewrite_request_ids: bool = False) -> CassetteFile:
    """A foreign cassette as ours, in memory and validated. Exchanges with hosts other than the Messages
    API are left out (the count and hosts go in `harness.note`) unless `keep_foreign_hosts`; kept, they
    are scrubbed like the rest."""
    path = Path(path)
    kind, data = _read_document(path)
    if kind == HARNESS:
        return load_cassette(path)
    with _unexpected_shape(path, "$"):
        exchanges = list(_READERS[kind](data, path))

    # Every credential any request of the file carried, scrubbed from every exchange (as the recorder
    # does): a key sent as one request's x-api-key may be pasted into another's prompt, and a token a
    # left-out refresh call obtained may be echoed in a kept one.
    headers = tuple(secret_headers)
    secrets = sorted({
        secret
        for exchange in exchanges
        for secret in credentials_sent(exchange.request_headers, urlsplit(exchange.uri), headers)
    })
    interactions: list[dict[str, Any]] = []
    skipped_hosts: list[str] = []
    first_api: _Exchange | None = None
    for exchange in exchanges:
        url = urlsplit(exchange.uri)
        if not is_anthropic(url.hostname or "", url.path):
            if not keep_foreign_hosts:
                skipped_hosts.append(url.hostname or exchange.uri)
                continue
        elif first_api is None:
            first_api = exchange
        with _unexpected_shape(path, exchange.where):
            interactions.append(_convert(exchange, len(interactions), path, secrets,
                                         rewrite_request_ids=rewrite_request_ids))

    first_messages_body = next(
        (i["request"].get("body") for i in interactions if i["request"]["path"] == MESSAGES_PATH), None
    )
    first = first_api or (exchanges[0] if exchanges else None)
    meta: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "source": "imported",
        "recorded_at": _recorded_at(first) if first else None,
        "endpoint": (urlsplit(first.uri).hostname or None) if first else None,
        "sdk_version": _sdk_version(first_api.request_headers) if first_api else None,
        "fingerprints": run_fingerprints(first_messages_body),
        "imported_from": {"path": path.as_posix(), "format": kind},
    }
    if skipped_hosts:
        meta["note"] = skipped_note(skipped_hosts)
    cassette = CassetteFile(meta=meta, interactions=interactions, path=None)
    refuse_what_json_cannot_hold(cassette.to_data(), file=path)  # a !!set or !!binary inside a parsed body
    validate(cassette.to_data(), file=path)
    return cassette


SKIPPED_NOTE = re.compile(r"^skipped (\d+) non-Anthropic interaction\(s\) on import: (.*)$")


def skipped_note(hosts: list[str]) -> str:
    return f"skipped {len(hosts)} non-Anthropic interaction(s) on import: {', '.join(sorted(set(hosts)))}"


def load_any_cassette(path: str | Path) -> CassetteFile:
    """Ours through `load_cassette`; anything else this module can read, imported in memory."""
    path = Path(path)
    if not _starts_with_gzip(path) and re.search(r"(?m)^harness:", read_text_bounded(path)):
        return load_cassette(path)
    # In memory only (show, trajectories, evals): other hosts stay, redacted, so a trajectory can say why
    # it skipped them; `harness import` is what leaves them out of a written file.
    return import_file(path, keep_foreign_hosts=True)


@dataclass(frozen=True)
class ImportOutcome:
    """One source file: where its import went, or why it could not be imported."""

    source: Path
    target: Path | None = None
    cassette: CassetteFile | None = None
    error: HarnessError | None = None

    @property
    def interactions(self) -> int:
        return len(self.cassette.interactions) if self.cassette else 0

    @property
    def skipped(self) -> tuple[int, str]:
        """(interactions left out because they went to other hosts, those hosts)."""
        note = SKIPPED_NOTE.match(str((self.cassette.meta if self.cassette else {}).get("note") or ""))
        return (int(note.group(1)), note.group(2)) if note else (0, "")

    @property
    def streamed(self) -> int:
        if not self.cassette:
            return 0
        return sum(1 for i in self.cassette.interactions if "events" in (i.get("response") or {}))


class ImportFailed(CassetteError):
    """Some sources could not be imported; the others were written. `failures` says which and why."""

    def __init__(self, failures: list[ImportOutcome], written: list[Path]) -> None:
        self.failures = failures
        self.written = written
        lines = [f"{len(failures)} file(s) could not be imported ({len(written)} imported):"]
        lines.extend(f"  {outcome.error}" for outcome in failures)
        super().__init__("\n".join(lines))


def _is_importable(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(IMPORTABLE_SUFFIXES)


def _target_name(relative: Path) -> Path:
    name = relative.name
    lower = name.lower()
    if lower.endswith(".yaml.gz"):
        name = name[: -len(".gz")]
    elif lower.endswith((".har", ".json")):
        name = name[: name.rfind(".")] + ".yaml"
    return relative.with_name(name)


def _unique(target: Path, source: Path, taken: set[Path]) -> Path:
    """Two sources that would land on one name (x.har beside x.yaml) keep their own suffix, then a number."""
    if target not in taken:
        return target
    candidate = target.with_name(source.name + ".yaml")
    number = 2
    while candidate in taken:
        candidate = target.with_name(f"{target.name.removesuffix('.yaml')}-{number}.yaml")
        number += 1
    return candidate


def _sources(sources: Iterable[str | Path], out_dir: Path) -> Iterator[tuple[Path, Path | None, str | None]]:
    """(file, path relative to the output folder, problem) for every file to import, in a stable order."""
    out_resolved = out_dir.resolve()
    for source in map(Path, sources):
        if source.is_dir():
            root = source.resolve()
            inside = out_resolved != root and root in out_resolved.parents
            files = sorted(p for p in source.rglob("*") if _is_importable(p))
            if inside:  # earlier imports written into a folder below the source are not sources
                files = [p for p in files if out_resolved not in p.resolve().parents]
            if not files:
                yield source, None, f"no cassette files ({', '.join(IMPORTABLE_SUFFIXES)}) in this folder"
            for file in files:
                yield file, _target_name(file.relative_to(source)), None
        elif source.is_file():
            yield source, _target_name(Path(source.name)), None
        elif source.exists():
            yield source, None, "not a regular file (a device or a pipe); a cassette is a file"
        else:
            yield source, None, "no such file or folder"


def iter_imports(sources: Iterable[str | Path], out_dir: str | Path, *,
                 keep_foreign_hosts: bool = False, secret_headers: Iterable[str] = (),
                 rewrite_request_ids: bool = False) -> Iterator[ImportOutcome]:
    """Import each source file (folders recursively) into `out_dir`, one outcome per file; never raises
    for a bad file, so one broken cassette does not stop the rest."""
    out_dir = Path(out_dir)
    secret_headers = tuple(secret_headers)
    taken: set[Path] = set()
    for source, relative, problem in list(_sources(sources, out_dir)):
        if relative is None:
            yield ImportOutcome(source=source, error=CassetteError(problem or "cannot import", file=source))
            continue
        target = _unique(out_dir / relative, source, taken)
        taken.add(target)
        try:
            cassette = import_file(source, keep_foreign_hosts=keep_foreign_hosts, secret_headers=secret_headers,
                                   rewrite_request_ids=rewrite_request_ids)
            cassette.path = save_cassette(cassette, target)
        except HarnessError as err:
            yield ImportOutcome(source=source, error=err)
        except OSError as err:
            yield ImportOutcome(source=source, error=CassetteError(f"cannot write {target}: {err.strerror or err}",
                                                                   file=source))
        else:
            yield ImportOutcome(source=source, target=target, cassette=cassette)


def import_paths(sources: Iterable[str | Path], out_dir: str | Path, *, keep_foreign_hosts: bool = False,
                 secret_headers: Iterable[str] = (), rewrite_request_ids: bool = False) -> list[Path]:
    """Import files and folders into `out_dir`, keeping the layout below each folder; the written paths.

    Every importable file is written even when some fail; then `ImportFailed` (a CassetteError) names
    each failed file with its reason.
    """
    written: list[Path] = []
    failures: list[ImportOutcome] = []
    for outcome in iter_imports(sources, out_dir, keep_foreign_hosts=keep_foreign_hosts,
                                secret_headers=secret_headers, rewrite_request_ids=rewrite_request_ids):
        if outcome.target is not None:
            written.append(outcome.target)
        else:
            failures.append(outcome)
    if failures:
        raise ImportFailed(failures, written)
    return written


__all__ = [
    "FORMATS",
    "HAR",
    "HARNESS",
    "IMPORTABLE_SUFFIXES",
    "LANGCHAIN_YAML",
    "LANGCHAIN_YAML_GZ",
    "ONE_EXCHANGE_JSON",
    "PYDANTIC_AI_YAML",
    "VCRPY_JSON",
    "VCRPY_YAML",
    "ImportFailed",
    "ImportOutcome",
    "detect_format",
    "import_file",
    "import_paths",
    "is_anthropic",
    "iter_imports",
    "load_any_cassette",
]
