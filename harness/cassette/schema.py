"""The cassette's schema, version 1 (schema.json), and `validate`: the first problem with its JSON path.

A quick yes for what plainly follows schema v1 comes first (jsonschema walks every interaction through its
generic machinery: about 3 s for 5,000 recorded agent steps); anything else, and every error message, is left
to jsonschema, which stays the authority.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import CassetteError

if TYPE_CHECKING:
    import jsonschema
from harness.jsondata import json_path

FORMAT_VERSION = 1


@cache
def cassette_schema() -> dict[str, Any]:
    text = resources.files("harness.cassette").joinpath("schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@cache
def _validator() -> jsonschema.protocols.Validator:
    import jsonschema  # here: a replay whose cassettes take the quick check never pays for importing it

    schema = cassette_schema()
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def newer_hint(version: object) -> str:
    """What to do about a cassette of a later format: it was written by a newer loop-harness."""
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        return (f" (version {version} was written by a newer loop-harness: upgrade it, "
                "pip install --upgrade loop-harness)")
    return ""


def validate(data: Any, *, file: str | Path | None = None) -> None:
    """Raise CassetteError naming the JSON path of the first (deepest, most relevant) problem."""
    if not isinstance(data, dict):
        raise CassetteError("not a cassette: the top level must be a mapping", file=file, where="$")
    block = data.get("harness")
    version = block.get("format_version") if isinstance(block, dict) else None
    if "harness" in data and version != FORMAT_VERSION:
        raise CassetteError(
            f"unknown format_version {version!r}; this harness reads version {FORMAT_VERSION}"
            + newer_hint(version),
            file=file,
            where="$.harness.format_version",
        )
    if "harness" not in data and "interactions" in data:
        raise CassetteError(
            "no `harness:` block: this looks like a foreign (vcrpy) cassette; convert it with `harness import`",
            file=file,
            where="$",
        )
    if _schema_is_v1() and _plainly_valid_v1(data):
        return
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(data))
    if error is not None:
        raise CassetteError(error.message, file=file, where=json_path(error.absolute_path))


# The matching block (its policies, its volatile rules) is checked by jsonschema alone: a change there leaves
# _plainly_valid_v1 as it is.
_SCHEMA_V1_SHA256 = "c78d323ab58cd6f0db09c506741896be1e805168308e8142648b15b185643460"


_METHOD = re.compile(r"^[A-Z]+$")  # schema.json's own patterns, applied as jsonschema does (re.search)


_PATH = re.compile(r"^/")


_INTERACTION_KEYS = frozenset({"request", "response", "error", "elapsed_ms"})


_REQUEST_KEYS = frozenset({"method", "host", "path", "query", "headers", "body", "body_text", "body_base64"})


_RESPONSE_KEYS = frozenset({"status", "reason", "headers", "body", "body_text", "body_base64", "events", "truncated"})


_EVENT_KEYS = frozenset({"event", "data", "offset_ms"})


_ERROR_KEYS = frozenset({"kind", "message"})


_ERROR_KINDS = frozenset({"timeout", "disconnect", "connect"})


_BODY_FORMS = ("body", "body_text", "body_base64", "events")


@cache
def _schema_is_v1() -> bool:
    canonical = json.dumps(cassette_schema(), sort_keys=True).encode("utf-8")
    return hashlib.sha256(canonical).hexdigest() == _SCHEMA_V1_SHA256


def _plainly_valid_v1(data: dict[str, Any]) -> bool:
    interactions = data.get("interactions")
    if data.keys() != {"harness", "interactions"} or type(interactions) is not list:
        return False
    # The provenance block is open-ended: what plainly follows its rules passes here; anything else (a
    # `matching:` block, an odd value) is checked by jsonschema on its own, which takes a fraction of a millisecond.
    if not _plain_harness(data["harness"]) and not _validator().is_valid(
        {"harness": data["harness"], "interactions": []}
    ):
        return False
    return all(_plain_interaction(interaction) for interaction in interactions)


_SOURCES = frozenset({"live", "simulator", "imported"})


_TEXT_OR_NULL = ("recorded_at", "endpoint", "sdk_version")


def _text_or_null(value: Any) -> bool:
    return value is None or type(value) is str


def _plain_harness(block: Any) -> bool:
    if type(block) is not dict or "matching" in block or not all(type(key) is str for key in block):
        return False
    version, source = block.get("format_version"), block.get("source")
    if type(version) is not int or version != 1 or type(source) is not str or source not in _SOURCES:
        return False
    if not all(_text_or_null(block[key]) for key in _TEXT_OR_NULL if key in block):
        return False
    if type(block.get("note", "")) is not str:
        return False
    fingerprints = block.get("fingerprints", {})
    if type(fingerprints) is not dict or not all(
        type(name) is str and _text_or_null(value) for name, value in fingerprints.items()
    ):
        return False
    imported_from = block.get("imported_from", {})
    return type(imported_from) is dict and all(
        type(imported_from[key]) is str for key in ("path", "format") if key in imported_from
    )


def _is_number(value: Any, minimum: float) -> bool:
    return type(value) in (int, float) and value >= minimum


def _plain_headers(headers: Any) -> bool:
    return type(headers) is dict and all(type(value) is str for value in headers.values())


def _one_body_at_most(stored: dict[str, Any]) -> bool:
    return sum(form in stored for form in _BODY_FORMS) <= 1


def _plain_interaction(interaction: Any) -> bool:
    if type(interaction) is not dict or not interaction.keys() <= _INTERACTION_KEYS:
        return False
    if ("response" in interaction) == ("error" in interaction):  # oneOf: exactly one of the two
        return False
    if "elapsed_ms" in interaction and not _is_number(interaction["elapsed_ms"], 0):
        return False
    if not _plain_request(interaction.get("request")):
        return False
    if "response" in interaction:
        return _plain_response(interaction["response"])
    error = interaction["error"]
    return (
        type(error) is dict
        and error.keys() <= _ERROR_KEYS
        and type(error.get("kind")) is str
        and error["kind"] in _ERROR_KINDS
        and type(error.get("message", "")) is str
    )


def _plain_request(request: Any) -> bool:
    if type(request) is not dict or not request.keys() <= _REQUEST_KEYS:
        return False
    method, path = request.get("method"), request.get("path")
    return (
        type(method) is str
        and _METHOD.search(method) is not None
        and type(path) is str
        and _PATH.search(path) is not None
        and all(type(request.get(key, "")) is str for key in ("host", "query", "body_text", "body_base64"))
        and ("headers" not in request or _plain_headers(request["headers"]))
        and _one_body_at_most(request)
    )


def _plain_response(response: Any) -> bool:
    if type(response) is not dict or not response.keys() <= _RESPONSE_KEYS:
        return False
    status = response.get("status")
    if type(status) is not int or not 100 <= status <= 599:
        return False
    if not all(type(response.get(key, "")) is str for key in ("reason", "body_text", "body_base64")):
        return False
    if "headers" in response and not _plain_headers(response["headers"]):
        return False
    if type(response.get("truncated", False)) is not bool or not _one_body_at_most(response):
        return False
    events = response.get("events", [])
    return type(events) is list and all(_plain_event(event) for event in events)


def _plain_event(event: Any) -> bool:
    return (
        type(event) is dict
        and "data" in event
        and event.keys() <= _EVENT_KEYS
        and type(event.get("event", "")) is str
        and ("offset_ms" not in event or _is_number(event["offset_ms"], 0))
    )
