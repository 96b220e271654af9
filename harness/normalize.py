"""Normalization rules: what of a request is this machine's or this run's, and is left out of matching.

A coding agent's requests carry facts of the machine that sent them: the working directory (also in
tool inputs and results), HOME, the temp folder, today's date, the OS version, a device id and a
session id. Matching on them would tie a recording to one folder on one machine on one day. The rules:

- `mask`: JSON paths whose value becomes "$MASKED" (metadata.user_id: a device id and a session id);
- `substitutions`, applied to every string of the body, before matching, on both sides:
  * `fact`: this machine's cwd, home or tmp becomes the placeholder ($CWD, $HOME, $TMP);
  * `capture`: a value the request states itself (group 1 of a regex: "Primary working directory: (.*)")
    becomes the placeholder wherever it appears; so the value is the sending client's, whatever its
    working directory, without the harness being told;
  * `pattern`: what a regex matches (its group 1, if it has one) becomes the placeholder (dates,
    OS-version lines); patterns apply to requests only;
  * `volatile`: a shape of value that changes on every run (a ticket id, a build number): in tool_result
    content and the system prompt it is not compared, like the built-in volatile shapes (harness.volatile),
    and a change of it is reported as drift; it rewrites nothing, so a request that matches exactly pays nothing;
- `ignore`: JSON paths left out of matching but kept as recorded (the `ignore_fields` option);
- `policy`: `volatile` (the default: values of a volatile shape in tool output, and dates and times in the
  system prompt, may change; harness.volatile), `strict` (the normalized body must match; only the user's own
  `volatile` rules are tolerated) or `sequence` (a request whose only difference from the next recording is
  inside tool_result content is served that recording). What a policy tolerates is reported as drift warnings.
  Whatever the policy, the tool_result blocks of one user turn match in any order (by tool_use_id).

The rules are stored in the cassette (`harness.matching`), so a reviewer sees what is ignored, and the
stored bodies hold the placeholders, not the recording machine's paths. Replay puts this machine's
values back into the recorded responses (a tool_use input `$CWD/notes.txt` is sent as this run's path).

`claude-code` is a preset applied when the client says it is the Claude Code CLI (user-agent
`claude-cli/...`), as the Claude Agent SDK's bundled CLI does.
"""

from __future__ import annotations

import copy
import functools
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.errors import HarnessError
from harness.jsondata import parse_path
from harness.patterns import BadPattern, Pattern, compile_pattern

MatchPolicy = Literal["strict", "volatile", "sequence"]
MATCH_POLICIES: tuple[str, ...] = ("strict", "volatile", "sequence")
DEFAULT_POLICY: MatchPolicy = "volatile"
STRING_RULES: tuple[str, ...] = ("fact", "capture", "pattern", "volatile")
FACTS: tuple[str, ...] = ("cwd", "home", "tmp")
MASKED = "$MASKED"
CLAUDE_CODE_PRESET = "claude-code"
PRESETS: tuple[str, ...] = (CLAUDE_CODE_PRESET,)


class RuleError(HarnessError):
    """A normalization rule that cannot be used (bad regex, unknown fact or policy)."""


@dataclass(frozen=True)
class Substitution:
    """One string rule: exactly one of `fact`, `capture`, `pattern` or `volatile` says what becomes `placeholder`."""

    placeholder: str
    fact: str | None = None
    capture: str | None = None
    pattern: str | None = None
    name: str | None = None
    volatile: str | None = None

    def __post_init__(self) -> None:
        where = f"substitution {self.name or self.placeholder!r}"
        if not re.fullmatch(r"\$[A-Z][A-Z0-9_]*", self.placeholder or ""):
            raise RuleError(f"{where}: placeholder {self.placeholder!r} must look like $NAME (capitals)")
        if sum(getattr(self, kind) is not None for kind in STRING_RULES) != 1:
            raise RuleError(f"{where}: give exactly one of fact, capture, pattern or volatile")
        if self.fact is not None and self.fact not in FACTS:
            raise RuleError(f"{where}: fact {self.fact!r} is not one of {', '.join(FACTS)}")
        for regex in (self.capture, self.pattern, self.volatile):
            if regex is not None:
                try:
                    compiled = compile_pattern(regex)
                except BadPattern as err:
                    raise RuleError(f"{where}: regex {regex!r} does not compile: {err}") from None
                if regex is self.capture and compiled.groups < 1:
                    raise RuleError(f"{where}: capture {regex!r} needs a group, (...), around the value")

    def to_data(self) -> dict[str, str]:
        data = {"name": self.name} if self.name else {}
        data["placeholder"] = self.placeholder
        for key in STRING_RULES:
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data


@dataclass(frozen=True)
class Machine:
    """The facts of the machine a run happens on (defaults: this process's)."""

    cwd: str | None = None
    home: str | None = None
    tmp: str | None = None

    def value(self, fact: str) -> str | None:
        given = getattr(self, fact)
        if given is not None:
            return str(given)
        if fact == "cwd":
            return os.getcwd()
        if fact == "home":
            return os.environ.get("HOME") or str(Path.home())
        return tempfile.gettempdir()


@dataclass(frozen=True)
class Normalization:
    """The rules of one cassette (stored in it) or of one run (use_cassette, proxy and serve options)."""

    mask: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    substitutions: tuple[Substitution, ...] = ()
    policy: MatchPolicy | None = None  # None: not stated here (the default, `volatile`, unless another says)
    presets: tuple[str, ...] = ()
    machine: Machine = field(default_factory=Machine, compare=False)

    def __post_init__(self) -> None:
        if self.policy is not None and self.policy not in MATCH_POLICIES:
            raise RuleError(f"matching policy {self.policy!r}: use one of {', '.join(MATCH_POLICIES)}")
        for preset in self.presets:
            if preset not in PRESETS:
                raise RuleError(f"preset {preset!r}: known presets are {', '.join(PRESETS)}")

    @property
    def rewrites(self) -> bool:
        """True when the rules change bodies (masks or substitutions), so matching must parse every request."""
        return bool(self.mask or any(rule.volatile is None for rule in self.substitutions))

    @property
    def match_policy(self) -> MatchPolicy:
        """The policy in force: the stated one, else the default."""
        return self.policy or DEFAULT_POLICY

    def volatile_rules(self) -> tuple[tuple[str, str], ...]:
        """The user's volatile shapes, as (placeholder, regex)."""
        return tuple((rule.placeholder, rule.volatile) for rule in self.substitutions if rule.volatile is not None)

    def __bool__(self) -> bool:
        return bool(self.mask or self.substitutions or self.ignore or self.policy is not None or self.presets)

    # -- combining ------------------------------------------------------------------------------------
    def merged(self, other: Normalization | None) -> Normalization:
        """These rules, then the other's (duplicates once; the other's policy wins when it states one)."""
        if other is None:
            return self
        return Normalization(
            mask=_unique(self.mask + other.mask),
            ignore=_unique(self.ignore + other.ignore),
            substitutions=_unique(self.substitutions + other.substitutions),
            policy=other.policy if other.policy is not None else self.policy,
            presets=_unique(self.presets + other.presets),
            machine=other.machine if other.machine != Machine() else self.machine,
        )

    def with_preset(self, name: str) -> Normalization:
        if name in self.presets:
            return self
        return self.merged(preset(name))

    # -- stored form -------------------------------------------------------------------------------------
    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"policy": self.policy} if self.policy is not None else {}
        if self.presets:
            data["presets"] = list(self.presets)
        if self.mask:
            data["mask"] = list(self.mask)
        if self.ignore:
            data["ignore"] = list(self.ignore)
        if self.substitutions:
            data["substitutions"] = [rule.to_data() for rule in self.substitutions]
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None, *, where: str = "matching") -> Normalization:
        """Rules from a cassette's `harness.matching` block or a config table; RuleError names the place."""
        if not data:
            return cls()
        if not isinstance(data, Mapping):
            raise RuleError(f"{where}: expected a mapping of rules, got {type(data).__name__}")
        unknown = set(data) - {"policy", "presets", "mask", "ignore", "substitutions"}
        if unknown:
            raise RuleError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        rules = []
        for index, rule in enumerate(data.get("substitutions") or []):
            if not isinstance(rule, Mapping):
                raise RuleError(f"{where}.substitutions[{index}]: expected a mapping")
            extra = set(rule) - {"name", "placeholder", *STRING_RULES}
            if extra:
                raise RuleError(f"{where}.substitutions[{index}]: unknown key(s) {', '.join(sorted(extra))}")
            try:
                rules.append(Substitution(**rule))
            except TypeError as err:
                raise RuleError(f"{where}.substitutions[{index}]: {err}") from None
            except RuleError as err:
                raise RuleError(f"{where}.substitutions[{index}]: {err}") from None
        try:
            return cls(mask=tuple(data.get("mask") or ()), ignore=tuple(data.get("ignore") or ()),
                       substitutions=tuple(rules), policy=data.get("policy"),
                       presets=tuple(data.get("presets") or ()))
        except RuleError as err:
            raise RuleError(f"{where}: {err}") from None

    # -- applying ------------------------------------------------------------------------------------------
    def for_request(self, body: Any) -> Applied:
        """The rules made concrete for one request: the values its captures find and this machine's facts."""
        found: dict[str, str] = {}
        strings = list(_strings(body)) if any(rule.capture for rule in self.substitutions) else []
        for rule in self.substitutions:
            if rule.placeholder in found:
                continue
            if rule.fact is not None:
                value = self.machine.value(rule.fact)
            elif rule.capture is not None:
                value = _first_capture(compile_pattern(rule.capture), strings)
            else:  # patterns are applied below; volatile shapes only where a request did not match exactly
                continue
            if value and _worth_replacing(value):
                found[rule.placeholder] = value
        patterns = [(compile_pattern(rule.pattern), rule.placeholder) for rule in self.substitutions if rule.pattern]
        return Applied(found, patterns, tuple(parse_path(path) for path in self.mask))


def _unique(items: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(items))


def _worth_replacing(value: str) -> bool:
    # "/" or "." (a HOME of "/" in a container) would turn every path into nonsense.
    return len(value.strip().strip("/")) >= 2 and value != MASKED and not value.startswith("$")


def _first_capture(regex: Pattern, strings: Sequence[str]) -> str | None:
    for text in strings:
        found = regex.search(text)
        if found and found.group(1):
            return found.group(1).strip()
    return None


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """`value` with every string in it (at any depth of dicts and lists) replaced by `change(string)`."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: map_strings(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [map_strings(item, change) for item in value]
    return value


def _value_regex(value: str) -> re.Pattern[str]:
    # A whole path, not part of a longer one: "/tmp/a" is not replaced inside "/var/tmp/a" or "/tmp/ab",
    # but is inside "/tmp/a/notes.txt" and at the end of a sentence ("... in /tmp/a.").
    # A value that is no path (a session id) is also replaced as one component of a path: the CLI names
    # its per-session folder by it (".../projects/-work/<session id>/tool-results/...").
    before = r"(?<![\w./-])" if value.startswith("/") else r"(?<![\w.-])"
    return re.compile(before + re.escape(value) + r"(?![\w-]|\.\w)")


@dataclass
class Applied:
    """The rules for one request: values found (placeholder -> value), patterns, and masked paths."""

    values: dict[str, str]
    patterns: list[tuple[Pattern, str]]
    mask: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        forms: list[tuple[str, str]] = []
        for placeholder, value in self.values.items():
            forms.append((value, placeholder))
            real = os.path.realpath(value) if value.startswith("/") else value
            if real != value:
                forms.append((real, placeholder))  # macOS: /var/... is /private/var/...
        forms.sort(key=lambda form: -len(form[0]))  # the working directory before the HOME that holds it
        self._to_placeholders = [(_value_regex(value), placeholder) for value, placeholder in forms]
        self._to_values = [(re.compile(re.escape(placeholder) + r"(?![A-Za-z0-9_])"), value)
                           for placeholder, value in self.values.items()]

    def request(self, body: Any) -> Any:
        """A request body as matching (and the cassette) sees it: masked, values and patterns replaced."""
        body = _mask(copy.deepcopy(body), self.mask) if self.mask else body
        return map_strings(body, self._request_string)

    def response_values(self, data: Any) -> Any:
        """Recorded response data with this run's values replaced by placeholders (patterns are for requests)."""
        return map_strings(data, self._values_only) if self._to_placeholders else data

    def expand(self, data: Any) -> Any:
        """Replayed response data with placeholders replaced by this run's values."""
        return map_strings(data, self._expand_string) if self._to_values else data

    def _values_only(self, text: str) -> str:
        for regex, placeholder in self._to_placeholders:
            if regex.search(text):
                text = regex.sub(placeholder.replace("\\", "\\\\"), text)
        return text

    def _request_string(self, text: str) -> str:
        text = self._values_only(text)
        for regex, placeholder in self.patterns:
            text = regex.sub(functools.partial(_replace_group, placeholder=placeholder), text)
        return text

    def _expand_string(self, text: str) -> str:
        if "$" not in text:
            return text
        for regex, value in self._to_values:
            # A function, not the string itself: a replacement string would read the value's backslashes.
            text = regex.sub(functools.partial(_literal, value), text)
        return text


def _literal(value: str, _found: re.Match[str]) -> str:
    return value


def _replace_group(found: re.Match[str], placeholder: str) -> str:
    if found.re.groups < 1 or found.group(1) is None:
        return placeholder
    start, end = found.span(1)
    whole_start = found.start()
    text = found.group(0)
    return text[: start - whole_start] + placeholder + text[end - whole_start:]


def _mask(value: Any, paths: Sequence[tuple[str, ...]]) -> Any:
    for path in paths:
        _mask_one(value, path)
    return value


def _mask_one(value: Any, path: tuple[str, ...]) -> None:
    if not path:
        return
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        for key in (list(value) if head == "*" else [head]):
            if key in value:
                if rest:
                    _mask_one(value[key], rest)
                else:
                    value[key] = MASKED
    elif isinstance(value, list) and (head == "*" or head.isdigit()):
        for index in (range(len(value)) if head == "*" else [int(head)]):
            if index < len(value):
                if rest:
                    _mask_one(value[index], rest)
                else:
                    value[index] = MASKED


# -- SSE: a placeholder must not be cut across two deltas ------------------------------------------------

_DELTA_FIELDS = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}


def response_events(events: list[dict[str, Any]], applied: Applied) -> list[dict[str, Any]]:
    """Stored SSE events with this run's values replaced by placeholders.

    A value (a path) can be split across deltas (`{"file_path": "/tmp/wo` + `rk/notes.txt"}`), so a
    content block whose joined deltas change is stored as one delta holding the joined, replaced text;
    blocks that do not change keep their events as they came.
    """
    if not applied._to_placeholders:
        return events
    blocks: dict[Any, list[int]] = {}
    for position, event in enumerate(events):
        data = event.get("data")
        if isinstance(data, dict) and data.get("type") == "content_block_delta":
            delta = data.get("delta") or {}
            if delta.get("type") in _DELTA_FIELDS:
                blocks.setdefault((data.get("index"), delta["type"]), []).append(position)
    out = [dict(event, data=applied.response_values(event.get("data"))) for event in events]
    dropped: set[int] = set()
    for (_, kind), positions in blocks.items():
        key = _DELTA_FIELDS[kind]
        joined = "".join(str(events[p]["data"]["delta"].get(key, "")) for p in positions)
        replaced = applied._values_only(joined)
        if replaced == joined:
            for p in positions:  # unchanged: undo any per-event replacement of a partial value
                out[p] = dict(events[p])
            continue
        first = positions[0]
        out[first] = copy.deepcopy(events[first])
        out[first]["data"]["delta"][key] = replaced
        dropped.update(positions[1:])
    return [event for position, event in enumerate(out) if position not in dropped]


# -- the Claude Code preset --------------------------------------------------------------------------------

def is_claude_code(headers: Iterable[tuple[str, str]] | Mapping[str, str] | None) -> bool:
    """Whether a request comes from the Claude Code CLI (the Claude Agent SDK's bundled CLI included)."""
    if not headers:
        return False
    if isinstance(headers, Mapping):  # httpx2.Headers finds any case at once: this runs on every replayed request
        agent = headers.get("user-agent")
        if agent is None:  # a plain dict may spell the name in another case
            agent = next((value for name, value in headers.items() if name.lower() == "user-agent"), None)
        agents = agent if isinstance(agent, list | tuple) else [agent]  # stored headers may hold a list
    else:
        agents = [value for name, value in headers if name.lower() == "user-agent"]
    return any(isinstance(value, str) and value.lower().startswith("claude-cli/") for value in agents)


def preset(name: str) -> Normalization:
    if name != CLAUDE_CODE_PRESET:
        raise RuleError(f"preset {name!r}: known presets are {', '.join(PRESETS)}")
    rules = (
        # metadata.user_id is a JSON string: {"device_id": ..., "account_uuid": ..., "session_id": ...}
        Substitution("$SESSION_ID", capture=r'"session_id"\s*:\s*"([^"]+)"', name="session id"),
        # The same id as the CLI names its per-session folder, for a request whose metadata does not say it.
        Substitution("$SESSION_ID", capture=r"/projects/[^/\s`'\"]+/([0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})/",
                     name="session folder"),
        Substitution("$DEVICE_ID", capture=r'"device_id"\s*:\s*"([^"]+)"', name="device id"),
        Substitution("$CWD", capture=r"Primary working directory: (\S[^\n]*)", name="working directory"),
        # The CLI's config folder as the CLI names it (~/.claude, or CLAUDE_CONFIG_DIR): the HOME the CLI was
        # given is not this process's, so it is read from the memory folder's path the system prompt states.
        Substitution("$CLAUDE_CONFIG_DIR", capture=r"([^\s`'\"]+)/projects/[^/\s`'\"]+/memory/",
                     name="claude config folder"),
        # Or from the per-session folder a tool result names (a system prompt of the app's own names no memory).
        Substitution("$CLAUDE_CONFIG_DIR", name="claude config folder (session)",
                     capture=r"([^\s`'\"]+)/projects/-[A-Za-z0-9-]+/[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-"),
        Substitution("$HOME", fact="home", name="home folder"),
        Substitution("$TMP", fact="tmp", name="temp folder"),
        Substitution("$DATE", pattern=r"Today's date is (\d{4}-\d{2}-\d{2})", name="date"),
        # The per-project folder is the cwd with every other character than a letter or digit turned to "-"
        # (/tmp/x_A -> -tmp-x-A), which the $CWD rule cannot see as a path.
        Substitution("$PROJECT_SLUG", pattern=r"/projects/(-[A-Za-z0-9-]+)/", name="project folder"),
        # What the CLI keeps in its per-session folder (a tool's output too large to send, saved under a name
        # it draws per call, "tool-results/b2oy6al89.txt"; subagent journals) is its own bookkeeping.
        Substitution("$SESSION_FILE", pattern=r"/\$SESSION_ID/([^\s`'\"<>]+)", name="session file"),
        Substitution("$OS_VERSION", pattern=r"OS Version: ([^\n]+)", name="os version"),
        Substitution("$PLATFORM", pattern=r"\bPlatform: (\S+)", name="platform"),
        Substitution("$SHELL", pattern=r"\bShell: (\S+)", name="shell"),
        Substitution("$IS_GIT", pattern=r"Is a git repository: (\S+)", name="git repository"),
        # The snapshot of the checkout the CLI attaches in a git repository (branch, status, recent commits): it
        # changes with every commit, the one that adds the cassette too, and a CI checkout has another branch.
        Substitution("$GIT_STATUS", name="git status", pattern=r"(Current branch: [^\n]*\n[\s\S]*?\nRecent commits:\n"
                     r"[0-9a-f]{6,40} [^\n]*(?:\n[0-9a-f]{6,40} [^\n]*)*)"),
    )
    return Normalization(mask=("metadata.user_id",), substitutions=rules, presets=(name,))


__all__ = [
    "CLAUDE_CODE_PRESET", "DEFAULT_POLICY", "MATCH_POLICIES", "STRING_RULES", "Applied", "Machine", "MatchPolicy",
    "Normalization", "RuleError",
    "Substitution", "is_claude_code", "preset", "response_events",
]
