"""The way out of a miss whose only change is tool output: the one rule that makes it replay.

Re-recording helps when a person changed something (the prompt, the tools) or the tool's output changed for
good; it cannot help when the output changes on every run (a ticket number, a counter). So for a miss whose
only kind of change is tool_result content, the values that changed are read pair by pair:

- all of a built-in volatile shape, under policy `strict`: the policy is the way out;
- otherwise each changed value is generalized into a regex (`TCK-8812` -> `TCK-\\d+`; a bare number keeps the
  key before it, `"seq": (\\d+)`) that matches both values, and that regex, as a `volatile` substitution, is the
  rule to paste. A change that is not one value for another (text added or removed) has no such rule.

`tool_output_way_out` returns the lines a `CassetteMismatch` shows; the words of the tool in use (pytest, the
proxy) are `CassetteMismatch.describe`'s.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harness.volatile import SHAPE_NAMES, shapes_for

_TOKEN = re.compile(r"[A-Za-z0-9_\-.:/+=]+|\s+|[^\sA-Za-z0-9_\-.:/+=]+")
_RUN = re.compile(r"\d+|[A-Za-z]+|[^A-Za-z\d]+")
_KEY = re.compile(r"""["']?([A-Za-z_][A-Za-z0-9_]*)["']?\s*[:=]\s*["']?$""")
_SPECIAL = re.compile(r"[.^$*+?{}\[\]\\|()]")
CONTEXT_CHARS = 24


@dataclass(frozen=True)
class WayOut:
    """What makes a tool-output miss replay: a policy to loosen, or a volatile rule (placeholder, regex)."""

    shapes: tuple[str, ...] = ()  # built-in volatile shapes that changed (the way out is the policy)
    placeholder: str | None = None
    regex: str | None = None

    def lines(self, tool: str) -> list[str]:
        if self.regex is None:
            return [f"Only volatile values in tool output changed ({', '.join(self.shapes)}), and the matching "
                    "policy is 'strict'. Re-recording would not help: they change on every run. To let them "
                    "vary (reported as drift, not compared), use the default policy: remove policy = \"strict\" "
                    "from [tool.loop-harness.matching], or pass match_policy=\"volatile\"."]
        lines = ["Only tool output changed. If this value changes on every run, re-recording would not help; "
                 "this rule makes it replay (the change is then reported as drift, not compared). "
                 "Add to pyproject.toml:",
                 "    [[tool.loop-harness.matching.substitutions]]",
                 f'    placeholder = "{self.placeholder}"',
                 f"    volatile = {toml_string(self.regex)}"]
        if tool in ("proxy", "serve"):
            lines.append(f"  or start harness {tool} with --substitute '{self.placeholder}=volatile:{self.regex}'")
        return lines

    @property
    def rerecording_helps(self) -> bool:
        """A value the rule would tolerate may also have changed for good; a built-in volatile shape has not."""
        return self.regex is not None


def toml_string(text: str) -> str:
    """A TOML string for a regex: literal ('...') when it can be, so backslashes stay as written."""
    if "'" not in text and "\n" not in text:
        return f"'{text}'"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(item) for item in content)
    if isinstance(content, dict):
        return _text(content.get("text") if "text" in content else content.get("content"))
    return "" if content is None else str(content)


def _tool_results(body: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    for message in (body.get("messages") or []) if isinstance(body, dict) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found[str(block.get("tool_use_id"))] = _text(block.get("content"))
    return found


def _changed_values(old: str, new: str) -> Iterator[tuple[str, str, str] | None]:
    """(text before, recorded value, new value) for each value replaced by one other; None for any other change."""
    before, after = _TOKEN.findall(old), _TOKEN.findall(new)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if tag != "replace" or i2 - i1 != 1 or j2 - j1 != 1:
            yield None
            continue
        yield "".join(before[:i1])[-CONTEXT_CHARS:], before[i1], after[j1]


def _general(old: str, new: str) -> tuple[str, bool] | None:
    """A regex matching both values, and whether it holds a literal part (else it needs the key before it)."""
    runs_old, runs_new = _RUN.findall(old), _RUN.findall(new)
    kinds = [_kind(run) for run in runs_old]
    if kinds != [_kind(run) for run in runs_new]:
        if re.fullmatch(r"[A-Za-z0-9]+", old) and re.fullmatch(r"[A-Za-z0-9]+", new) and len(old) == len(new):
            return f"[A-Za-z0-9]{{{len(old)}}}", False
        return None
    parts, literal = [], False
    for kind, a, b in zip(kinds, runs_old, runs_new, strict=True):
        if a == b:
            parts.append(_escape(a))
            literal = literal or len(a) >= 2 or kind == "other"
        elif kind == "digits":
            parts.append(r"\d+")
        elif kind == "letters":
            parts.append("[a-z]+" if a.islower() and b.islower() else "[A-Z]+" if a.isupper() and b.isupper()
                         else "[A-Za-z]+")
        else:
            return None
    return "".join(parts), literal


def _escape(text: str) -> str:
    """Only what a regex reads as special: the rule a person pastes should read like the value (TCK-\\d+)."""
    return _SPECIAL.sub(r"\\\g<0>", text)


def _kind(run: str) -> str:
    return "digits" if run[0].isdigit() else "letters" if run[0].isalpha() else "other"


def _placeholder(context: str, value: str) -> str:
    key = _KEY.search(context)
    name = key.group(1) if key else (re.match(r"[A-Za-z]{2,}", value) or [None])[0]
    name = re.sub(r"[^A-Z0-9_]", "_", str(name).upper()) if name else "TOOL_VALUE"
    return "$" + (name if name[0].isalpha() else "V_" + name)


def _rule(context: str, old: str, new: str) -> tuple[str, str] | None:
    general = _general(old, new)
    if general is None:
        return None
    regex, literal = general
    if not literal:  # a bare number or id: only where it follows the same key (a number elsewhere still counts)
        key = _KEY.search(context)
        if key is None:
            return None
        regex = _escape(context[key.start():].lstrip()) + f"({regex})"
    if not (re.search(regex, context + old) and re.search(regex, context + new)):
        return None
    return _placeholder(context, old), regex


def tool_output_way_out(recorded: Any, live: Any, *, strict: bool) -> WayOut | None:
    """The way out of a miss whose only change is tool_result content, or None when no rule would do."""
    old_results, new_results = _tool_results(recorded), _tool_results(live)
    builtin = shapes_for(SHAPE_NAMES, (), False)
    shapes: list[str] = []
    rules: list[tuple[str, str]] = []
    for tool_use_id, new in new_results.items():
        old = old_results.get(tool_use_id)
        if old is None or old == new:
            continue
        for change in _changed_values(old, new):
            if change is None:
                return None
            context, a, b = change
            found_a, found_b = builtin.find(a), builtin.find(b)
            if strict and found_a and [f.shape for f in found_a] == [f.shape for f in found_b] \
                    and builtin.mask(a) == builtin.mask(b):
                shapes.extend(f.shape for f in found_a)
                continue
            rule = _rule(context, a, b)
            if rule is None:
                return None
            rules.append(rule)
    if rules:
        distinct = list(dict.fromkeys(rules))
        if len(distinct) > 1:
            return None  # several rules: no one line says it; the diff shows what changed
        return WayOut(placeholder=distinct[0][0], regex=distinct[0][1])
    if shapes:
        return WayOut(shapes=tuple(dict.fromkeys(shapes)))
    return None
