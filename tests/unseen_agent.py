"""An agent this project has never seen: an order desk with its own tools and its own hand-written loop.

The simulator knows nothing about it (no policy claims its tools), which is the point: sim-auto and
scripts must drive it from the request alone. Its tools have nested, enum, array, `$ref`, `anyOf`,
format and pattern schemas; `create_order` fails (is_error) when more than 5 of an item are ordered.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

MODEL = "claude-sonnet-5"
SYSTEM = "You are an order desk. Use the tools to find products, order them and schedule the delivery."

TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_products",
        "description": "Search the catalogue.",
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 2, "maxLength": 40},
                "category": {"enum": ["tools", "garden", "kitchen"]},
                "filters": {
                    "type": "object",
                    "properties": {
                        "price": {
                            "type": "object",
                            "properties": {
                                "min": {"type": "number", "minimum": 0},
                                "max": {"type": "number", "exclusiveMinimum": 0, "maximum": 500},
                            },
                            "required": ["max"],
                        },
                        "in_stock": {"type": "boolean"},
                    },
                    "required": ["price"],
                    "additionalProperties": False,
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 20},
            },
            "required": ["query", "category", "filters"],
            "additionalProperties": False,
        },
    },
    {
        "name": "create_order",
        "description": "Order items for a customer.",
        "input_schema": {
            "type": "object",
            "$defs": {
                "customer": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "pattern": "^C[0-9]{5}$"},
                        "email": {"type": "string", "format": "email"},
                    },
                    "required": ["id", "email"],
                },
                "country": {"enum": ["DE", "FR", "NL"]},
            },
            "properties": {
                "customer": {"$ref": "#/$defs/customer"},
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {
                        "type": "object",
                        "properties": {
                            "sku": {"type": "string", "pattern": "^SKU-[0-9]{4}$"},
                            "quantity": {"type": "integer", "minimum": 1, "maximum": 10},
                        },
                        "required": ["sku", "quantity"],
                        "additionalProperties": False,
                    },
                },
                "shipping": {
                    "anyOf": [
                        {"const": "pickup"},
                        {
                            "type": "object",
                            "properties": {
                                "street": {"type": "string", "minLength": 3},
                                "country": {"$ref": "#/$defs/country"},
                            },
                            "required": ["street", "country"],
                        },
                    ]
                },
                "priority": {"enum": ["low", "normal", "express"]},
            },
            "required": ["customer", "items", "shipping", "priority"],
        },
    },
    {
        "name": "schedule_delivery",
        "description": "Book a delivery slot.",
        "input_schema": {
            "type": "object",
            "properties": {
                "date": {"type": "string", "format": "date"},
                "window": {"enum": ["morning", "afternoon", "evening"]},
                "notify": {"type": "array", "items": {"type": "string", "format": "email"}, "uniqueItems": True},
                "signature_required": {"type": ["boolean", "null"]},
            },
            "required": ["date", "window", "notify"],
        },
    },
]

SCHEMAS = {tool["name"]: tool["input_schema"] for tool in TOOLS}


class ToolFailed(Exception):
    pass


def run_tool(name: str, tool_input: dict[str, Any]) -> str:
    jsonschema.validate(tool_input, SCHEMAS[name], format_checker=jsonschema.FormatChecker())
    if name == "search_products":
        return json.dumps({"results": [{"sku": "SKU-0042", "name": f"{tool_input['query']} deluxe", "price": 12.5}]})
    if name == "create_order":
        too_many = [item["sku"] for item in tool_input["items"] if item["quantity"] > 5]
        if too_many:
            raise ToolFailed(f"only 5 in stock of {', '.join(too_many)}")
        return json.dumps({"order_id": "ORD-7", "items": len(tool_input["items"])})
    return json.dumps({"booked": tool_input["date"], "window": tool_input["window"]})


def run_agent(client: Any, question: str, *, max_steps: int = 8, **create: Any) -> list[Any]:
    """The agent's loop: ask, run every tool call, send the results back, until the model stops calling.
    Returns every message the model sent."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    replies = []
    model = create.pop("model", MODEL)
    for _ in range(max_steps):
        reply = client.messages.create(model=model, max_tokens=1024, system=SYSTEM, tools=TOOLS,
                                       messages=messages, **create)
        replies.append(reply)
        messages.append({"role": "assistant",
                         "content": [block.model_dump(exclude_none=True) for block in reply.content]})
        calls = [block for block in reply.content if block.type == "tool_use"]
        if reply.stop_reason != "tool_use" or not calls:
            break
        results = []
        for call in calls:
            try:
                output = run_tool(call.name, call.input)
                results.append({"type": "tool_result", "tool_use_id": call.id, "content": output})
            except ToolFailed as err:
                results.append({"type": "tool_result", "tool_use_id": call.id, "content": str(err),
                                "is_error": True})
        messages.append({"role": "user", "content": results})
    return replies
