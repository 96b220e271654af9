"""Instances of a JSON Schema, made up deterministically: the tool inputs `sim-auto` sends.

`instance_for(schema, *seed_parts)` returns a value that validates against `schema` (checked with
jsonschema, formats included, before it is returned), the same value for the same schema and seed
parts, in well under a millisecond for a typical tool schema. It covers what tool schemas use: types
(and lists of types), required and optional properties, additionalProperties, min/maxProperties,
enum, const, formats, pattern, min/max lengths, numeric bounds (exclusive too) and multipleOf, arrays
with items, prefixItems, contains, min/maxItems and uniqueItems, `$ref` into `$defs`/`definitions`
(resolved by `referencing`, as jsonschema does), allOf, anyOf and oneOf.

Why not a library: hypothesis-jsonschema 0.23.1 (its last release, 2024) fails on current Hypothesis
(`'many' object has no attribute 'more'`), and Hypothesis draws are not meant to be taken one at a
time from a seed at request time; jsf 0.11.2 seeds only through the global `random` and Faker state
(unsafe in a threaded server), imports pydantic and Faker (1.2 s), takes 4 ms an instance of the test
agent's create_order schema (this module: 1.6 ms, the validation included; `python -m bench.sim_auto`),
and produced invalid instances for required-but-undeclared properties, minProperties and prefixItems.
What a library does best here, validating and resolving references, is done by jsonschema and
referencing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import random
import re
import string
import threading
from typing import Any

from jsonschema import FormatChecker
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from harness.jsondata import canonical_json

_ATTEMPTS = 12
_MAX_DEPTH = 8
_WORDS = ("alpha", "bravo", "delta", "echo", "kilo", "lima", "oscar", "sierra", "tango", "zulu")


def _date(r: Any) -> str:
    return f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"


def _time(r: Any) -> str:
    return f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:00Z"


_FORMATS: dict[str, Any] = {
    "date": _date,
    "date-time": lambda r: f"{_date(r)}T{_time(r)}",
    "time": _time,
    "email": lambda r: f"{r.choice(_WORDS)}{r.randint(1, 99)}@example.com",
    "idn-email": lambda r: f"{r.choice(_WORDS)}@example.com",
    "hostname": lambda r: f"{r.choice(_WORDS)}.example.com",
    "idn-hostname": lambda r: f"{r.choice(_WORDS)}.example.com",
    "uri": lambda r: f"https://example.com/{r.choice(_WORDS)}/{r.randint(1, 999)}",
    "iri": lambda r: f"https://example.com/{r.choice(_WORDS)}",
    "uri-reference": lambda r: f"/{r.choice(_WORDS)}/{r.randint(1, 999)}",
    "url": lambda r: f"https://example.com/{r.choice(_WORDS)}",
    "uuid": lambda r: f"{r.getrandbits(32):08x}-{r.getrandbits(16):04x}-4{r.getrandbits(12):03x}-"
    f"8{r.getrandbits(12):03x}-{r.getrandbits(48):012x}",
    "ipv4": lambda r: f"192.0.2.{r.randint(1, 254)}",
    "ipv6": lambda r: f"2001:db8::{r.randint(1, 65535):x}",
    "duration": lambda r: f"PT{r.randint(1, 59)}M",
    "json-pointer": lambda r: f"/{r.choice(_WORDS)}",
    "regex": lambda r: "^[a-z]+$",
}


class SchemaUnsatisfied(ValueError):
    """No instance could be made that validates: the reason names the keyword that failed."""


def seed_of(*parts: Any) -> int:
    text = canonical_json(parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def instance_for(schema: Any, *seed_parts: Any) -> Any:
    """A value valid against `schema`, the same for the same schema and seed parts."""
    schema_json = canonical_json(schema)
    rng = random.Random(seed_of(schema_json, *seed_parts))
    validator, resolver = _prepared(schema_json)
    maker = _Maker(rng, resolver)
    reason = "no attempt made"
    for _ in range(_ATTEMPTS):
        try:
            value = maker.value(schema, 0)
        except (Unresolvable, _Impossible) as err:
            reason = str(err)
            continue
        error = next(iter(sorted(validator.iter_errors(value), key=lambda e: e.path)), None)
        if error is None:
            return value
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        reason = f"{where}: {error.message}"
    raise SchemaUnsatisfied(reason)


def validates(schema: Any, value: Any) -> bool:
    """Whether `value` is valid against `schema` (formats checked); False for a schema that is itself invalid."""
    try:
        validator, _ = _prepared(canonical_json(schema))
    except SchemaUnsatisfied:
        return False
    return bool(validator.is_valid(value))


@functools.lru_cache(maxsize=256)
def _prepared(schema_json: str) -> tuple[Any, Any]:
    """The validator and reference resolver of a schema, built once: tools repeat on every turn."""
    schema = json.loads(schema_json)
    try:
        validator_class = validator_for(schema, default=validator_for({}))
        validator_class.check_schema(schema)
    except SchemaError as err:
        raise SchemaUnsatisfied(f"the schema itself is invalid: {err.message}") from None
    validator = validator_class(schema, format_checker=FormatChecker())
    resource = Resource.from_contents(schema, default_specification=DRAFT202012) if isinstance(schema, dict) else None
    registry: Registry[Any] = Registry().with_resource("urn:harness-tool", resource) if resource else Registry()
    return validator, _Resolver(registry.resolver(base_uri="urn:harness-tool"))


class _Resolver:
    """`$ref` lookups from the schema's root, each resolved once (a tool's schema comes on every turn)."""

    def __init__(self, resolver: Any) -> None:
        self._resolver = resolver
        self._found: dict[str, Any] = {}
        self._lock = threading.Lock()

    def lookup(self, ref: str) -> Any:
        with self._lock:
            if ref not in self._found:
                self._found[ref] = self._resolver.lookup(ref).contents
            return self._found[ref]


class _Impossible(Exception):
    pass


class _Maker:
    def __init__(self, rng: random.Random, resolver: Any) -> None:
        self.rng = rng
        self.resolver = resolver

    def value(self, schema: Any, depth: int) -> Any:
        if schema is True or schema == {}:
            return self.rng.choice(_WORDS)
        if schema is False:
            raise _Impossible("a false schema admits nothing")
        if not isinstance(schema, dict):
            raise _Impossible(f"not a schema: {schema!r}")
        schema = _with_described_constraints(self._flatten(schema, depth))
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            if not schema["enum"]:
                raise _Impossible("enum is empty")
            return self.rng.choice(schema["enum"])
        kind = self._kind(schema)
        if depth > _MAX_DEPTH and kind in ("object", "array"):
            return {} if kind == "object" else []
        return getattr(self, f"_{kind}")(schema, depth)

    # -- combinators and references -------------------------------------------------------------------
    def _flatten(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        """One schema with $ref, allOf and a chosen anyOf/oneOf branch merged in."""
        for _ in range(_MAX_DEPTH * 4):
            if "$ref" in schema:
                resolved = self.resolver.lookup(schema["$ref"])
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = _merge(resolved if isinstance(resolved, dict) else {}, rest)
            elif "allOf" in schema:
                parts = schema["allOf"]
                merged = {k: v for k, v in schema.items() if k != "allOf"}
                for part in parts:
                    merged = _merge(merged, part if isinstance(part, dict) else {})
                schema = merged
            elif "anyOf" in schema or "oneOf" in schema:
                key = "anyOf" if "anyOf" in schema else "oneOf"
                branches = [b for b in schema[key] if b is not False]
                if not branches:
                    raise _Impossible(f"{key} has no satisfiable branch")
                # Prefer a branch that is not plain null, so that optional values carry something.
                useful = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
                branch = self.rng.choice(useful or branches)
                rest = {k: v for k, v in schema.items() if k != key}
                schema = _merge(rest, branch if isinstance(branch, dict) else {})
            else:
                return schema
        raise _Impossible("references nest too deeply")

    def _kind(self, schema: dict[str, Any]) -> str:
        declared = schema.get("type")
        if isinstance(declared, list):
            useful = [t for t in declared if t != "null"]
            return self.rng.choice(useful) if useful else "null"
        if isinstance(declared, str):
            return declared
        if any(k in schema for k in ("properties", "required", "additionalProperties", "minProperties")):
            return "object"
        if any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems", "contains")):
            return "array"
        if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
            return "number"
        return "string"

    # -- types --------------------------------------------------------------------------------------------
    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        properties = schema.get("properties") or {}
        required = [name for name in schema.get("required") or [] if isinstance(name, str)]
        extra = schema.get("additionalProperties", True)
        result: dict[str, Any] = {}
        for name in required:
            result[name] = self.value(properties.get(name, extra if isinstance(extra, dict) else True), depth + 1)
        optional = [name for name in properties if name not in result]
        high = schema.get("maxProperties")
        for name in optional:
            if (high is None or len(result) < high) and self.rng.random() < 0.5:
                result[name] = self.value(properties[name], depth + 1)
        low = schema.get("minProperties", 0)
        for name in optional:
            if len(result) >= low:
                break
            result.setdefault(name, self.value(properties[name], depth + 1))
        counter = 1
        while len(result) < low:
            if extra is False:
                raise _Impossible("minProperties needs more properties than the schema allows")
            result[f"key{counter}"] = self.value(extra if isinstance(extra, dict) else True, depth + 1)
            counter += 1
        return result

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        prefix = schema.get("prefixItems") or []
        items = schema.get("items", True)
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems", True)
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        length = max(low, min(len(prefix), high if high is not None else len(prefix)), self.rng.randint(1, 2))
        if high is not None:
            length = min(length, high)
        if items is False:
            length = min(length, len(prefix))
        result: list[Any] = []
        if "contains" in schema and length > 0:
            result.append(self.value(schema["contains"], depth + 1))
        unique = bool(schema.get("uniqueItems"))
        tries = 0
        while len(result) < length:
            position = len(result)
            item_schema = prefix[position] if position < len(prefix) else items
            item = self.value(item_schema, depth + 1)
            tries += 1
            if unique and item in result:
                if tries > length * 10:
                    raise _Impossible("uniqueItems: not enough distinct items")
                continue
            result.append(item)
        return result

    def _string(self, schema: dict[str, Any], depth: int) -> str:
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        if schema.get("format") in _FORMATS:
            return _FORMATS[schema["format"]](self.rng)
        if "pattern" in schema:
            return _from_regex(schema["pattern"], self.rng)
        text = "-".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(1, 2)))
        while len(text) < low:
            text += self.rng.choice(string.ascii_lowercase)
        return text[:high] if high is not None else text

    def _integer(self, schema: dict[str, Any], depth: int) -> int:
        low, high = _bounds(schema, integer=True)
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0:
            first, last = -(-low // step), high // step
            if first > last:
                raise _Impossible("no multiple of multipleOf between the bounds")
            return self.rng.randint(first, last) * step
        if low > high:
            raise _Impossible("minimum is above maximum")
        return self.rng.randint(low, high)

    def _number(self, schema: dict[str, Any], depth: int) -> float | int:
        step = schema.get("multipleOf")
        if step is not None:
            low, high = _bounds(schema, integer=False)
            first, last = int(-(-low // step)), int(high // step)
            if first > last:
                raise _Impossible("no multiple of multipleOf between the bounds")
            value = self.rng.randint(first, last) * step
            return int(value) if float(value).is_integer() else value
        low, high = _bounds(schema, integer=False)
        value = round(self.rng.uniform(low, high), 2)
        return value if low <= value <= high else (low + high) / 2

    def _boolean(self, schema: dict[str, Any], depth: int) -> bool:
        return self.rng.random() < 0.5

    def _null(self, schema: dict[str, Any], depth: int) -> None:
        return None


# The SDK's `transform_schema` (what `messages.parse` and `output_format=` send) moves the constraints the API does
# not take into the description, as "{minimum: 0, maximum: 1}" at its end, "so that the model might follow them".
# sim-auto follows them, as a model reading the description would; the schema's own keywords win.
_DESCRIBED_PART = re.compile(r"(?:^|, )([A-Za-z]+): ")  # "minimum: 0, maximum: 1": where each key starts
_DESCRIBED_KEYS = frozenset(
    ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
     "minItems", "maxItems")
)


def _with_described_constraints(schema: dict[str, Any]) -> dict[str, Any]:
    description = schema.get("description")
    if not isinstance(description, str) or not description.endswith("}"):
        return schema
    # The SDK writes "{...}" as the whole description or after "\n\n"; a value may hold braces itself (a
    # pattern's "{2,}"), so the block is found by where it starts, not by matching braces.
    block = description.rpartition("\n\n")[2]
    if not block.startswith("{"):
        return schema
    inner = block[1:-1]
    starts = list(_DESCRIBED_PART.finditer(inner))
    if not starts or starts[0].start() != 0:
        return schema
    found: dict[str, int | float] = {}
    for index, key in enumerate(starts):
        name = key.group(1)
        text = inner[key.end() : starts[index + 1].start() if index + 1 < len(starts) else len(inner)]
        if name not in _DESCRIBED_KEYS or name in schema:
            continue
        try:
            number = json.loads(text)
        except ValueError:
            continue
        if isinstance(number, int | float) and not isinstance(number, bool):
            found[name] = number
    return {**schema, **found} if found else schema


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if key == "properties" and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        elif key == "required" and isinstance(merged.get(key), list):
            merged[key] = list(dict.fromkeys([*merged[key], *value]))
        elif key in ("minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum") and key in merged:
            merged[key] = max(merged[key], value)
        elif key in ("maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum") and key in merged:
            merged[key] = min(merged[key], value)
        else:
            merged[key] = value
    return merged


def _bounds(schema: dict[str, Any], *, integer: bool) -> tuple[Any, Any]:
    """The inclusive range to draw from: the schema's bounds, else 1..100 around whichever bound is given."""
    epsilon = 1 if integer else 0.01
    low = schema.get("minimum")
    high = schema.get("maximum")
    exclusive_low, exclusive_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(exclusive_low, int | float) and not isinstance(exclusive_low, bool):
        low = exclusive_low + epsilon if low is None else max(low, exclusive_low + epsilon)
    if isinstance(exclusive_high, int | float) and not isinstance(exclusive_high, bool):
        high = exclusive_high - epsilon if high is None else min(high, exclusive_high - epsilon)
    if low is None:
        low = 1 if high is None else high - 99
    if high is None:
        high = low + 99
    if integer:
        low, high = math.ceil(low), math.floor(high)
    return low, high


# -- strings from a regular expression --------------------------------------------------------------------

_REPEAT_CAP = 4


def _from_regex(pattern: str, rng: random.Random) -> str:
    """A string that `re.search(pattern, ...)` matches, built from the parsed pattern."""
    try:
        parsed = _parse_regex(pattern)
    except re.error as err:
        raise _Impossible(f"pattern {pattern!r} is not a regular expression: {err}") from None
    return "".join(_emit(parsed, rng))


@functools.lru_cache(maxsize=512)
def _parse_regex(pattern: str) -> Any:
    return re._parser.parse(pattern)  # type: ignore[attr-defined]


def _category_chars(category: Any) -> str:
    name = str(category)
    if "DIGIT" in name:
        return "0123456789" if "NOT" not in name else "abcxyz"
    if "WORD" in name:
        return string.ascii_letters + string.digits + "_" if "NOT" not in name else "-.,"
    if "SPACE" in name:
        return " " if "NOT" not in name else "abc"
    return "abc"


def _emit(parsed: Any, rng: random.Random) -> list[str]:
    out: list[str] = []
    for op, arg in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append(rng.choice(string.ascii_lowercase))
        elif name == "IN":
            out.append(_pick_in(arg, rng))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, inner = arg
            high = low + _REPEAT_CAP if str(high) == "MAXREPEAT" or high > low + _REPEAT_CAP else high
            for _ in range(rng.randint(low, high)):
                out.extend(_emit(inner, rng))
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            out.extend(_emit(arg[-1], rng))
        elif name == "BRANCH":
            out.extend(_emit(rng.choice(arg[1]), rng))
        elif name == "CATEGORY":
            out.append(rng.choice(_category_chars(arg)))
        elif name in ("AT", "ASSERT", "ASSERT_NOT", "GROUPREF"):
            continue  # anchors and lookarounds add no characters; validation catches a miss
        else:
            raise _Impossible(f"pattern construct {name} is not supported")
    return out


def _pick_in(items: Any, rng: random.Random) -> str:
    negate = any(str(op) == "NEGATE" for op, _ in items)
    choices: list[str] = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            choices.append(chr(arg))
        elif name == "RANGE":
            choices.extend(chr(code) for code in range(arg[0], min(arg[1], arg[0] + 50) + 1))
        elif name == "CATEGORY":
            choices.extend(_category_chars(arg))
    if negate:
        pool = [c for c in string.ascii_letters + string.digits if c not in choices]
        return rng.choice(pool or ["~"])
    return rng.choice(choices or ["a"])
