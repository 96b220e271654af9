"""Tool permissions: which tools a run may call, and with which arguments.

    {"check": "tool_permissions", "params": {
        "allow": ["read_inbox", "read_calendar", {"name": "read_file", "path": "$.path", "glob": "notes/*"}],
        "deny": [{"name": "send_email"}, {"name": "*", "path": "$.url", "regex": "^http://"}]}}

A rule is a tool name (a glob: `read_*`, `*`) or an object with `name` and, optionally, an argument pattern: a JSON
path into the call's input (`$.path`, `$.files[*].name`) and a `glob` (the whole value) or a `regex` (searched
in it). A value that is not a string is matched as its canonical JSON. A call is denied when a `deny` rule
matches it (any value at the path), or, when `allow` is given, when no `allow` rule admits it (every value at
the path, and at least one, must match). The first denied call fails the check, naming its step and the rule.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping
from typing import Any

from harness.checks.base import CheckResult, CheckSpec, fail, ok
from harness.jsondata import canonical_json, parse_path
from harness.patterns import compile_pattern, pattern_problem
from harness.run import ToolCall
from harness.trajectory import Trajectory

NAME = "tool_permissions"
_ABSENT = object()


def _values(value: Any, path: tuple[str, ...]) -> Iterator[Any]:
    """Every value `path` names in `value` (`*` for any key or list item); none where the path leads nowhere."""
    if not path:
        yield value
        return
    head, rest = path[0], path[1:]
    if isinstance(value, Mapping):
        keys = list(value) if head == "*" else [head] if head in value else []
        for key in keys:
            yield from _values(value[key], rest)
    elif isinstance(value, list):
        if head == "*":
            for item in value:
                yield from _values(item, rest)
        elif head.lstrip("-").isdigit() and -len(value) <= int(head) < len(value):
            yield from _values(value[int(head)], rest)


def _rule(raw: Any) -> dict[str, Any]:
    return {"name": raw} if isinstance(raw, str) else dict(raw)


def _pattern_hits(rule: Mapping[str, Any], value: Any) -> bool:
    text = value if isinstance(value, str) else canonical_json(value)
    if "glob" in rule:
        return fnmatch.fnmatchcase(text, str(rule["glob"]))
    return compile_pattern(str(rule["regex"])).search(text) is not None


def _describe_rule(rule: Mapping[str, Any]) -> str:
    if "path" not in rule:
        return str(rule["name"])
    how = f"glob {rule['glob']!r}" if "glob" in rule else f"regex {rule['regex']!r}"
    return f"{rule['name']} with {rule['path']} matching {how}"


def _matches(rule: Mapping[str, Any], call: ToolCall, *, every: bool) -> bool:
    """Whether `rule` covers `call`: the name, then the argument pattern (any value for a deny rule, every value and
    at least one for an allow rule)."""
    if not fnmatch.fnmatchcase(call.name, str(rule["name"])):
        return False
    if "path" not in rule:
        return True
    values = list(_values(call.input, parse_path(str(rule["path"]))))
    if every:
        return bool(values) and all(_pattern_hits(rule, value) for value in values)
    return any(_pattern_hits(rule, value) for value in values)


def _call_text(call: ToolCall) -> str:
    text = canonical_json(call.input)
    return f"{call.name}({text if len(text) <= 80 else text[:79] + '…'})"


def violations(trajectory: Trajectory, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every call the rules refuse, in order: the call, its step, and why (the deny rule, or no allow rule)."""
    deny = [_rule(raw) for raw in params.get("deny") or []]
    allow = [_rule(raw) for raw in params["allow"]] if "allow" in params else None
    found = []
    for call in trajectory.tool_calls:
        hit = next((index for index, rule in enumerate(deny) if _matches(rule, call, every=False)), None)
        if hit is not None:
            found.append(
                {
                    "step": call.step,
                    "call": _call_text(call),
                    "id": call.id,
                    "rule": f"deny[{hit}]",
                    "why": f"denied by deny[{hit}] ({_describe_rule(deny[hit])})",
                }
            )
        elif allow is not None and not any(_matches(rule, call, every=True) for rule in allow):
            near = [rule for rule in allow if fnmatch.fnmatchcase(call.name, str(rule["name"]))]
            why = (
                f"its arguments fit no allow rule for it ({'; '.join(map(_describe_rule, near))})"
                if near
                else "not in the allow list"
            )
            found.append({"step": call.step, "call": _call_text(call), "id": call.id, "rule": "allow", "why": why})
    return found


def tool_permissions(trajectory: Trajectory, params: Mapping[str, Any]) -> CheckResult:
    found = violations(trajectory, params)
    calls = len(trajectory.tool_calls)
    if found:
        first = found[0]
        more = f" ({len(found)} denied calls in all)" if len(found) > 1 else ""
        return fail(
            NAME, f"step {first['step']}: {first['call']} is {first['why']}{more}", step=first["step"], denied=found
        )
    return ok(NAME, f"all {calls} tool call(s) are permitted", calls=calls)


def _bad_patterns(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    problems = []
    for key in ("allow", "deny"):
        for index, raw in enumerate(params.get(key) or []):
            if isinstance(raw, Mapping) and "regex" in raw:
                problem = pattern_problem(str(raw["regex"]))
                if problem:
                    problems.append((f"{key}[{index}].regex", problem))
    return problems


_RULE = {
    "oneOf": [
        {"type": "string", "minLength": 1, "description": "a tool name (a glob: read_*, *)"},
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "a tool name (a glob)"},
                "path": {"type": "string", "minLength": 1, "description": "a JSON path into the call's input"},
                "glob": {"type": "string", "description": "the whole value at the path matches this glob"},
                "regex": {"type": "string", "description": "this regular expression is found in the value"},
            },
            "dependentRequired": {"glob": ["path"], "regex": ["path"]},
            "if": {"required": ["path"]},
            "then": {"oneOf": [{"required": ["glob"]}, {"required": ["regex"]}]},
        },
    ]
}

CHECKS = (
    CheckSpec(
        name=NAME,
        function=tool_permissions,
        description="which tools a run may call, and with which arguments: allow and deny rules (a tool name, "
        "optionally a JSON path and a glob or a regular expression); a denied call fails naming its step",
        params_schema={
            "type": "object",
            "additionalProperties": False,
            "anyOf": [{"required": ["allow"]}, {"required": ["deny"]}],
            "properties": {
                "allow": {"type": "array", "items": _RULE, "description": "only these calls may be made"},
                "deny": {"type": "array", "items": _RULE, "description": "these calls may never be made"},
            },
        },
        validate_params=_bad_patterns,
    ),
)
