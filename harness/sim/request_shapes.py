"""The request shapes the installed anthropic SDK can send, read from its own param types.

The simulator must accept whatever the SDK's TypedDicts allow (a `role: "system"` message, adaptive
thinking with `display`, `context_management.edits`, `output_config.effort`...) and refuse what the real
API refuses (a field no type declares, a literal no type lists). Hand-copied lists go stale with every
SDK release and turn into silent 400s for clients; reading the types means an SDK upgrade that adds a
shape is accepted at once, and one that changes a shape shows up in tests/test_request_shapes.py.

The walk covers the top-level fields and the option objects (thinking, output_config,
context_management, metadata, tool_choice...): extra keys, literals and discriminated unions (the
`type` tag picks the member). Message and tool contents keep their hand-written checks in
`validation`, which carry the real API's wording.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin

from anthropic.types.beta import message_create_params
from anthropic.types.beta.beta_message_param import BetaMessageParam
from anthropic.types.beta.beta_output_config_param import BetaOutputConfigParam
from anthropic.types.beta.beta_tool_union_param import BetaToolUnionParam

# Fields validated elsewhere with the real API's wording (validation.py), or free-form by nature.
_CHECKED_ELSEWHERE = frozenset({"messages", "tools", "system", "model", "max_tokens"})
# Fields that anthropic 2.14's types no longer declare but that the real API answered in recorded requests
# (shared/real-cassettes: temperature in 11 of them, the older structured-output field output_format in one).
ACCEPTED_BEYOND_TYPES = frozenset({"temperature", "top_p", "top_k", "output_format"})


def _is_typed_dict(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, dict) and hasattr(kind, "__total__")


@cache
def _hints(typed_dict: type) -> dict[str, Any]:
    return typing.get_type_hints(typed_dict, include_extras=False)


def _strip(kind: Any) -> Any:
    """Required[X], NotRequired[X], Annotated[X, ...] -> X."""
    while get_origin(kind) in (typing.Required, typing.NotRequired, typing.Annotated):
        kind = get_args(kind)[0]
    return kind


def _members(kind: Any) -> list[Any]:
    """The alternatives of a union (Optional's None left out); a plain type is its own one member."""
    kind = _strip(kind)
    if get_origin(kind) in (Union, types.UnionType):
        return [_strip(member) for member in get_args(kind) if member is not type(None)]
    return [kind]


def literal_values(kind: Any) -> tuple[Any, ...]:
    """Every literal a (possibly optional, possibly union) type allows; () when it is not literal."""
    values: list[Any] = []
    for member in _members(kind):
        if get_origin(member) is Literal:
            values.extend(get_args(member))
        else:
            return ()
    return tuple(values)


def _type_tag(typed_dict: type) -> tuple[Any, ...]:
    hint = _hints(typed_dict).get("type")
    return literal_values(hint) if hint is not None else ()


def _is_list_type(kind: Any) -> bool:
    origin = get_origin(kind)
    return origin in (list, collections.abc.Iterable, collections.abc.Sequence) or (
        getattr(origin, "__name__", "") == "SequenceNotStr"
    )


def _check(value: Any, kind: Any, where: str) -> str | None:
    """The first way `value` breaks `kind`, as the API words it ("thinking.display: ..."), or None."""
    if value is None:
        return None  # Optional fields; a required null is rare and the API's own problem to word
    literals = literal_values(kind)
    if literals:
        if value not in literals:
            shown = ", ".join(repr(v) for v in literals[:-1]) + (" or " if len(literals) > 1 else "")
            return f"{where}: Input should be {shown}{literals[-1]!r}"
        return None
    dicts = [member for member in _members(kind) if _is_typed_dict(member)]
    if dicts and isinstance(value, dict):
        if len(dicts) > 1:
            tag = value.get("type")
            tagged = [member for member in dicts if tag in _type_tag(member)]
            if not tagged:
                tags = sorted({t for member in dicts for t in _type_tag(member)})
                if tags:
                    return (f"{where}: Input tag {tag!r} found using 'type' does not match any of the expected "
                            f"tags: {', '.join(repr(t) for t in tags)}")
                return None  # an untagged union: leave it to the API's semantic checks
            dicts = tagged
        return _check_typed_dict(value, dicts[0], where)
    lists = [member for member in _members(kind) if _is_list_type(member)]
    if lists and isinstance(value, list):
        item_kind = get_args(lists[0])[0] if get_args(lists[0]) else Any
        for index, item in enumerate(value):
            error = _check(item, item_kind, f"{where}.{index}")
            if error:
                return error
    return None


def _check_typed_dict(value: dict[str, Any], typed_dict: type, where: str) -> str | None:
    hints = _hints(typed_dict)
    for key, item in value.items():
        if key not in hints:
            return f"{where}.{key}: Extra inputs are not permitted"
        error = _check(item, hints[key], f"{where}.{key}")
        if error:
            return error
    return None


def check_request_shape(body: dict[str, Any]) -> str | None:
    """The first field of a Messages request that the SDK's types do not allow, worded as the API does."""
    hints = _hints(message_create_params.MessageCreateParamsBase)
    for key, value in body.items():
        if key in _CHECKED_ELSEWHERE or key in ACCEPTED_BEYOND_TYPES or key == "stream":
            continue
        if key not in hints:
            return f"{key}: Extra inputs are not permitted"
        error = _check(value, hints[key], key)
        if error:
            return error
    return None


def check_tool_shape(tool: dict[str, Any], where: str) -> str | None:
    """The first way a typed `tools` entry (web_search_..., bash_..., memory_...) breaks the SDK's tool union:
    an unknown `type` is the API's "Input tag ... does not match any of the expected tags", a field its type
    does not declare is "Extra inputs are not permitted"."""
    return _check(tool, BetaToolUnionParam, where)


def tool_types() -> tuple[str, ...]:
    """Every tool `type` the installed SDK can send."""
    return tuple(sorted({tag for member in _members(BetaToolUnionParam) for tag in _type_tag(member)}))


def message_roles() -> tuple[str, ...]:
    """The roles an input message may have: ('user', 'assistant', 'system') with anthropic 2.14."""
    return tuple(role for member in _members(BetaMessageParam) for role in literal_values(_hints(member)["role"]))


def effort_levels() -> tuple[str, ...]:
    return tuple(literal_values(_hints(BetaOutputConfigParam)["effort"]))
