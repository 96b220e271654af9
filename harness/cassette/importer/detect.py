"""Which format a foreign cassette is, read from its content (never from its name alone), parsed as data only.

Files are bounded before they are read, then parsed as JSON, or as YAML through the safe loader, where
`!!binary` is a standard tag and any `!!python/...` or `!ruby/...` tag is refused before it can build
anything, except three harmless ones:

- the header keys vcrpy wrote for aiohttp clients, `!!python/object/apply:multidict._multidict.istr
  [Name]` and, from other multidict versions, `!!python/object/new:multidict._multidict.istr [Name]`
  (a case-insensitive string), which one narrow constructor reads as the plain string `Name`;
- Ruby's `!binary` (Psych's name for base64 bytes, in Ruby VCR cassettes), read as bytes.

An httprr trace (Go, golang.org/x/oscar) is not text at all: it is recognised by its first line and
kept as bytes for its reader.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.cassette.format import MAX_CASSETTE_BYTES
from harness.errors import CassetteError, absolute
from harness.files import read_bytes_bounded, read_text_bounded, regular_file_size
from harness.safe_yaml import SafeLoader, parse_yaml
from harness.wire.bodies import GZIP_MAGIC, BodyTooLarge, gunzip_bounded

HARNESS = "harness"  # ours already: loaded, not converted
VCRPY_YAML = "vcrpy-yaml"  # `interactions:` with `body: {string: ...}` (str, or `!!binary` gzip)
VCRPY_JSON = "vcrpy-json"  # the same, written by vcrpy's JSON serializer
PYDANTIC_AI_YAML = "pydantic-ai-yaml"  # vcrpy YAML whose JSON bodies are `parsed_body` mappings
HAR = "har"  # HAR 1.2 (Polly.JS and browsers): `log.entries[]`
LANGCHAIN_YAML_GZ = "langchain-yaml-gz"  # gzip YAML with vcrpy's internal `requests:` / `responses:` lists
LANGCHAIN_YAML = "langchain-yaml"  # the same, not compressed
ONE_EXCHANGE_JSON = "one-exchange-json"  # {"request": {method, url, headers, body}, "response": {status, ...}}
RUBY_VCR = "ruby-vcr"  # Ruby's VCR gem: `http_interactions:`, `recorded_with: VCR 6.x`, `!binary` bodies
R_VCR = "r-vcr"  # R's vcr package: `http_interactions:`, bare or `status_code` statuses, string header values
GO_VCR = "go-vcr"  # go-vcr v4 (cassette version 2): `interactions:` with `url`, `status: 200 OK` and `code`
HTTPRR = "httprr"  # Go's httprr: "httprr trace v1", then length-prefixed raw HTTP requests and responses

FORMATS = (
    HARNESS,
    VCRPY_YAML,
    VCRPY_JSON,
    PYDANTIC_AI_YAML,
    HAR,
    LANGCHAIN_YAML_GZ,
    LANGCHAIN_YAML,
    ONE_EXCHANGE_JSON,
    RUBY_VCR,
    R_VCR,
    GO_VCR,
    HTTPRR,
)
IMPORTABLE_SUFFIXES = (".yaml.gz", ".httprr.gz", ".yaml", ".yml", ".har", ".json", ".httprr")

HTTPRR_MAGIC = b"httprr trace v1\n"
NESTED_TOO_DEEP = "refused: JSON nested too deep to parse (no Messages API body nests this far)"
_UNSAFE_TAG = re.compile(r"constructor for the tag '([^']+)'")
_R_VCR_RECORDER = re.compile(r"(?i)^(?:VCR-)?vcr/|webmockr")  # "VCR-vcr/2.0.0", "vcr/1.2.2, webmockr/0.9.0"


def read_document(path: Path) -> tuple[str, Any]:
    """(format, parsed data) of a cassette file of any format this package knows."""
    gzipped, head = read_head(path)
    if head.startswith(HTTPRR_MAGIC):
        return HTTPRR, read_bytes_bounded(path, MAX_CASSETTE_BYTES)
    if gzipped:
        raw = _gunzip_file(path)
        if raw.startswith(HTTPRR_MAGIC):  # `.httprr.gz`, as langchaingo keeps its traces
            return HTTPRR, raw
        text = _utf8(raw, path)
    else:
        text = read_text_bounded(path)
    data, was_json = _parse_text(text, path)
    return classify(data, path, gzipped=gzipped, was_json=was_json), data


def read_head(path: Path) -> tuple[bool, bytes]:
    """(is it gzip, its first bytes), refusing folders, devices and pipes before anything opens them."""
    if path.is_dir():
        raise CassetteError("a folder, not a cassette file", file=path)
    regular_file_size(path)  # a pipe would block the open below; a device never ends
    try:
        with path.open("rb") as handle:
            head = handle.read(len(HTTPRR_MAGIC))
    except FileNotFoundError:
        raise CassetteError("no such cassette", file=absolute(path)) from None
    except IsADirectoryError:
        raise CassetteError("a folder, not a cassette file", file=path) from None
    return head[:2] == GZIP_MAGIC, head


def _gunzip_file(path: Path) -> bytes:
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
    return raw


def _utf8(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        reason = f"decompressed text is not UTF-8 (byte {err.start})"
        raise CassetteError(reason, file=path, where=f"line {line}") from None


# ---------------------------------------------------------------------------------------------------
# The three harmless tags


ISTR_TAG = "tag:yaml.org,2002:python/object/apply:multidict._multidict.istr"
ISTR_NEW_TAG = "tag:yaml.org,2002:python/object/new:multidict._multidict.istr"
RUBY_BINARY_TAG = "!binary"


class ForeignLoader(SafeLoader):
    """The safe loader plus one constructor per harmless tag a foreign recorder writes (see the docstring)."""


def _refuse(node: yaml.Node, what: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, what, node.start_mark)


def _one_string(items: Any) -> str | None:
    if (
        isinstance(items, list)
        and len(items) == 1
        and isinstance(items[0], yaml.ScalarNode)
        and items[0].tag == "tag:yaml.org,2002:str"
    ):
        return str(items[0].value)
    return None


def _plain_header_name(loader: yaml.BaseLoader, node: yaml.Node) -> str:
    """`!!python/object/apply:multidict._multidict.istr [Content-Type]` -> "Content-Type"; anything else
    under that tag (no list, two items, a nested node) is refused, never built."""
    name = _one_string(node.value) if isinstance(node, yaml.SequenceNode) else None
    if name is None:
        raise _refuse(node, "an istr header name must be a list of one string")
    return name


_PLAIN_SCALAR_TAGS = frozenset({"tag:yaml.org,2002:str", "tag:yaml.org,2002:null"})


def _plain_scalars(node: yaml.Node) -> bool:
    """A string, a null, or a mapping of them: data that builds nothing, whatever a loader does with it."""
    if isinstance(node, yaml.ScalarNode):
        return node.tag in _PLAIN_SCALAR_TAGS
    return isinstance(node, yaml.MappingNode) and all(
        _plain_scalars(key) and isinstance(value, yaml.ScalarNode) and _plain_scalars(value)
        for key, value in node.value
    )


def _plain_header_name_new(loader: yaml.BaseLoader, node: yaml.Node) -> str:
    """The `new:` form: `[Content-Type]`, or `{args: [Content-Type]}` with nothing but scalars beside it."""
    if isinstance(node, yaml.SequenceNode):
        name = _one_string(node.value)
    elif isinstance(node, yaml.MappingNode):
        fields = {key.value: value for key, value in node.value if isinstance(key, yaml.ScalarNode)}
        args = fields.get("args")
        name = _one_string(args.value) if isinstance(args, yaml.SequenceNode) else None
        # A `state:` of plain scalars is the istr's cached case-folded form; anything richer could build something.
        state = fields.get("state")
        if state is not None and not _plain_scalars(state):
            name = None
        if set(fields) - {"args", "state"}:
            name = None
    else:
        name = None
    if name is None:
        raise _refuse(node, "an istr header name must be a list of one string")
    return name


def _ruby_binary(loader: yaml.BaseLoader, node: yaml.Node) -> bytes:
    """Ruby's `!binary |- aGVsbG8=`: base64 bytes, the same as YAML's own `!!binary`."""
    if not isinstance(node, yaml.ScalarNode):
        raise _refuse(node, "a !binary value must be base64 text")
    return loader.construct_yaml_binary(node)


ForeignLoader.add_constructor(ISTR_TAG, _plain_header_name)
ForeignLoader.add_constructor(ISTR_NEW_TAG, _plain_header_name_new)
ForeignLoader.add_constructor(RUBY_BINARY_TAG, _ruby_binary)


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
        return parse_yaml(text, file=path, loader=ForeignLoader), False
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


# ---------------------------------------------------------------------------------------------------
# Which format


def classify(data: Any, path: Path, *, gzipped: bool, was_json: bool) -> str:
    if isinstance(data, dict):
        if "harness" in data:
            return HARNESS
        log = data.get("log")
        if isinstance(log, dict) and isinstance(log.get("entries"), list):
            return HAR
        if isinstance(data.get("http_interactions"), list):
            return _vcr_dialect(data)
        interactions = data.get("interactions")
        if isinstance(interactions, list):
            if _is_go_vcr(interactions):
                return GO_VCR
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
        "VCR's `http_interactions:` (Ruby or R), go-vcr's `interactions:` with `url`, langchain's "
        "`requests:`/`responses:`, a HAR `log.entries` list, a one-exchange `request:`/`response:` pair, an "
        "httprr trace, or our own `harness:` block",
        file=path,
        where="$",
    )


def _vcr_dialect(data: Mapping[str, Any]) -> str:
    """Ruby's VCR gem or R's vcr package: by `recorded_with` ("VCR 6.2.0" or "VCR-vcr/2.0.0", at the top or
    per interaction), else by the shape of the first status (Ruby's is always `{code, message}`)."""
    interactions = [item for item in data["http_interactions"] if isinstance(item, Mapping)]
    recorders = [data.get("recorded_with"), *(item.get("recorded_with") for item in interactions[:1])]
    for recorder in recorders:
        if isinstance(recorder, str):
            return R_VCR if _R_VCR_RECORDER.search(recorder) else RUBY_VCR
    for item in interactions[:1]:
        response = item.get("response")
        found = response.get("status") if isinstance(response, Mapping) else None
        if not (isinstance(found, Mapping) and "code" in found):
            return R_VCR
    return RUBY_VCR


def _is_go_vcr(interactions: list[Any]) -> bool:
    """go-vcr writes `url` where vcrpy writes `uri`, and splits the status into `status` and `code`."""
    first = next((item for item in interactions if isinstance(item, Mapping)), None)
    request = first.get("request") if first else None
    return isinstance(request, Mapping) and "url" in request and "uri" not in request


def _first_keys(data: Any, limit: int = 5) -> str:
    """What the file holds, for a format this package does not know: its first top-level keys."""
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
