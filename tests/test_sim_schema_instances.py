"""sim-auto's tool inputs: made up from a JSON Schema, valid against it, the same for the same seed."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from harness.sim.schema_instances import SchemaUnsatisfied, instance_for
from tests.unseen_agent import TOOLS

SCHEMAS: dict[str, Any] = {
    "types and enums": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"enum": [1, "x", None]},
                                                       "c": {"const": {"k": [1]}}, "d": {"type": "boolean"}},
                        "required": ["a", "b", "c", "d"]},
    "numeric bounds": {"type": "object", "required": ["i", "n", "m"],
                       "properties": {"i": {"type": "integer", "exclusiveMinimum": 5, "exclusiveMaximum": 7},
                                      "n": {"type": "number", "minimum": -3.5, "maximum": -3.25},
                                      "m": {"type": "number", "multipleOf": 0.25, "minimum": 1, "maximum": 2}}},
    "formats": {"type": "object", "required": ["d", "t", "e", "u", "id", "ip"],
                "properties": {"d": {"format": "date", "type": "string"}, "t": {"format": "date-time"},
                               "e": {"format": "email"}, "u": {"format": "uri"}, "id": {"format": "uuid"},
                               "ip": {"format": "ipv4"}}},
    "patterns and lengths": {"type": "object", "required": ["p", "s"],
                             "properties": {"p": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}(x|y)?$"},
                                            "s": {"type": "string", "minLength": 30, "maxLength": 31}}},
    "nested arrays": {"type": "array", "minItems": 3, "maxItems": 3, "uniqueItems": True,
                      "items": {"type": "object", "required": ["tags"],
                                "properties": {"tags": {"type": "array", "items": {"enum": ["a", "b"]},
                                                        "maxItems": 2, "uniqueItems": True}}}},
    "refs, defs and definitions": {"$defs": {"pt": {"type": "object", "required": ["x"],
                                                    "properties": {"x": {"$ref": "#/definitions/n"}}}},
                                   "definitions": {"n": {"type": "integer", "minimum": 10, "maximum": 10}},
                                   "type": "object", "required": ["a"],
                                   "properties": {"a": {"type": "array", "items": {"$ref": "#/$defs/pt"}}}},
    "anyOf, oneOf, allOf": {"type": "object", "required": ["any", "one", "all"],
                            "properties": {"any": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 3}]},
                                           "one": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                                           "all": {"allOf": [{"type": "string"}, {"minLength": 12}]}}},
    "undeclared required and minProperties": {"type": "object", "required": ["free"], "minProperties": 3,
                                              "additionalProperties": {"type": "integer"}},
    "tuples": {"type": "array", "prefixItems": [{"type": "integer"}, {"enum": ["x"]}], "items": False,
               "minItems": 2},
    "type lists": {"type": "object", "required": ["v"], "properties": {"v": {"type": ["null", "number"]}}},
    **{tool["name"]: tool["input_schema"] for tool in TOOLS},
}


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS.keys())
def test_every_instance_validates_and_the_same_seed_gives_the_same_instance(schema: Any) -> None:
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    instances = [instance_for(schema, "seed", n) for n in range(25)]
    for instance in instances:
        assert not list(validator.iter_errors(instance)), instance
    assert instances == [instance_for(schema, "seed", n) for n in range(25)]


def test_other_seeds_give_other_instances() -> None:
    schema = SCHEMAS["create_order"]
    assert len({repr(instance_for(schema, n)) for n in range(20)}) > 10


def test_a_schema_nothing_satisfies_is_refused_with_the_reason() -> None:
    with pytest.raises(SchemaUnsatisfied, match="minimum"):
        instance_for({"type": "integer", "minimum": 5, "maximum": 1}, 0)
    with pytest.raises(SchemaUnsatisfied, match="invalid"):
        instance_for({"type": "object", "properties": {"a": {"type": 7}}}, 0)


def test_bounds_the_sdk_wrote_into_a_description_are_followed() -> None:
    # anthropic.transform_schema (messages.parse) moves what the API does not take into the description,
    # "{minimum: 0, maximum: 1}"; a model reading it keeps to it, and so does sim-auto.
    import anthropic

    schema = anthropic.transform_schema(
        {
            "type": "object",
            "properties": {
                "score": {"type": "number", "minimum": 0, "maximum": 1},
                "count": {"type": "integer", "minimum": 3, "maximum": 5, "description": "how many"},
            },
            "required": ["score", "count"],
        }
    )
    assert "minimum" not in schema["properties"]["score"]  # the SDK did move them
    for seed in range(40):
        made = instance_for(schema, seed)
        assert 0 <= made["score"] <= 1 and 3 <= made["count"] <= 5, made
    # The schema's own keyword wins over its description; text that only looks like it is left alone.
    own = {"type": "integer", "minimum": 50, "maximum": 60, "description": "{minimum: 0, maximum: 1}"}
    assert all(50 <= instance_for(own, seed) <= 60 for seed in range(20))
    prose = {"type": "integer", "minimum": 10, "maximum": 20, "description": "a set like {a, b}"}
    assert all(10 <= instance_for(prose, seed) <= 20 for seed in range(20))
    # A described value may hold braces (a pattern's "{2,}"): the numeric ones beside it still count.
    worded = anthropic.transform_schema({"type": "string", "minLength": 12, "pattern": "^[a-z]{2,}$"})
    assert "{2,}" in worded["description"]
    assert all(len(instance_for(worded, seed)) >= 12 for seed in range(20))
