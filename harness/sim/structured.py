"""Structured outputs: a request with `output_config.format` (json_schema) is answered with JSON valid against it.

The API guarantees that the answer of such a request is a JSON document matching the schema, which is what
`client.messages.parse(output_format=Model)` and the streamed `parsed_output` rely on. `sim-auto` (what any
Claude model id gets) keeps that promise: its final answer becomes one text block holding an instance of the
schema made up by `harness.sim.schema_instances`, seeded from the request, so the same request gets the same
instance, streamed or not. An answer whose text already validates is left alone, and so is a turn that calls
tools: the format applies to the answer, not to tool calls. A script's or a function model's answer is the
user's to write (one may rehearse an endpoint that ignores the format), so it is not rewritten.

The older top-level `output_format` field (the beta before `output_config`, still in recorded requests) is
read the same way.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

from harness.sim.conversation import Conversation, Reply, text_block
from harness.sim.schema_instances import SchemaUnsatisfied, instance_for

_CALLS = ("tool_use", "server_tool_use")


class FormatUnsatisfied(ValueError):
    """No JSON instance of the requested schema could be made (the schema is contradictory)."""


def requested_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema the request asks the answer to follow, or None when it asks for none."""
    for holder in (body.get("output_config"), {"format": body.get("output_format")}):
        if not isinstance(holder, dict):
            continue
        wanted = holder.get("format")
        if isinstance(wanted, dict) and wanted.get("type") == "json_schema" and isinstance(wanted.get("schema"), dict):
            return wanted["schema"]
    return None


def _already_valid(text: str, schema: dict[str, Any]) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return not any(Draft202012Validator(schema, format_checker=FormatChecker()).iter_errors(value))


def apply_format(conversation: Conversation, reply: Reply, seed: int, fingerprint: str) -> Reply:
    """`reply` with its answer as a schema instance when the request asks for a format (see the module doc)."""
    schema = requested_schema(conversation.body)
    if schema is None or reply.stop_reason in ("refusal", "max_tokens"):
        return reply
    if any(block.get("type") in _CALLS for block in reply.content):
        return reply
    texts = [block for block in reply.content if block.get("type") == "text"]
    if texts and _already_valid("".join(block.get("text", "") for block in texts), schema):
        return reply
    try:
        instance = instance_for(schema, seed, "output_config.format", fingerprint)
    except SchemaUnsatisfied as err:
        raise FormatUnsatisfied(f"output_config.format: no JSON instance satisfies the schema: {err}") from None
    kept = [block for block in reply.content if block.get("type") not in ("text",)]
    answer = text_block(json.dumps(instance, ensure_ascii=False, separators=(",", ":")))
    return replace(reply, content=[*kept, answer], output_tokens=None)
