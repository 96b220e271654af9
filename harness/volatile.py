"""Volatile values: what an agent's tools and clock return that changes on every run, found by its shape.

A tool that returns a fresh id, the time or a temp path sends, on replay, a request that differs from its
recording in exactly those values, and re-recording cannot help: the next run has new ones again. So where
the agent cannot control what a request holds (tool_result content; dates and times in the system prompt),
values of a volatile shape are not compared: matching reads them as their placeholder (`$UUID`, `$DATE`, ...),
and a request that then matches is served its recording, the changed values reported as drift (a warning),
never a miss. Any other change (another city, another number) still misses. What the model itself wrote (a
tool_use input) is the recording's own and replays identically, so it is never read here.

The shapes (`SHAPES`) are one precompiled alternation, scanned only for a request that did not match
exactly first (harness.cassette.tolerant): a replay that matches byte for byte pays nothing. A user adds
shapes as substitutions of kind `volatile` (harness.normalize); `policy = "strict"` turns the built-in
shapes off (the user's own still apply).

Tokens that only look random (hex, base64) are checked before they count: a hex token needs a digit; a
base64 one mixed case, at least a quarter of it capitals or digits, and short runs of lowercase
letters; so `ReadTimeoutError`, `HTTPConnectionPool` or `test_case_2` stay words.
"""

from __future__ import annotations

import functools
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness.patterns import compile_pattern

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
          r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_B64 = r"A-Za-z0-9+/_\-"
# A zone after a time: Z, an offset, or the name strftime's %Z gives (UTC, JST, CEST, -03), which TZ changes.
_ZONE = r"(?:Z|[+-]\d{2}(?::?\d{2})?|\s(?:UTC|GMT|[A-Z]{1,4}T|[+-]\d{2}(?::?\d{2})?)\b)"
_TEMP = re.escape(tempfile.gettempdir().rstrip("/\\") or "/tmp")

# name -> (placeholder, regex, a time shape: also read in the system prompt). In this order the alternation
# tries them at each position: a temp path before the hex in it, a timestamp before the date it starts with.
SHAPES: dict[str, tuple[str, str, bool]] = {
    "temp_path": ("$TMP_PATH", r"(?:[A-Za-z]:\\(?:[^\\\s\"']+\\)*?Temp\\|(?:/private)?/(?:var/)?tmp/"
                               r"|(?:/private)?/var/folders/[^\s/\"']+/[^\s/\"']+/[TC]/"
                               # this machine's temp folder too, when TMPDIR puts it elsewhere
                               rf"|{_TEMP}[/\\])[^\s\"'`<>|,;)\]}}]*", False),
    "port": ("$PORT", r"\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]):\d{2,5}\b", False),
    "uuid": ("$UUID", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", False),
    "timestamp": ("$TIMESTAMP",
                  rf"\b\d{{4}}-\d{{2}}-\d{{2}}[T ]\d{{2}}:\d{{2}}(?::\d{{2}}(?:[.,]\d+)?)?{_ZONE}?(?![\d:])"
                  rf"|\b{_DAY}, \d{{1,2}} {_MONTH} \d{{4}} \d{{2}}:\d{{2}}:\d{{2}}(?: (?:GMT|UTC|[+-]\d{{4}}))?"
                  rf"|\b{_DAY} {_MONTH} [ \d]\d \d{{2}}:\d{{2}}:\d{{2}}(?: [A-Z]{{2,5}})? \d{{4}}\b", True),
    # Day or month first with slashes, dots (de, ru) or dashes; a month's name between spaces or dashes (2-Dec-2026).
    "date": ("$DATE", rf"\b(?:{_DAY},? )?{_MONTH}\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b"
                      rf"|\b(?:{_DAY},? )?\d{{1,2}}[ -]{_MONTH}\.?[ -]\d{{4}}\b"
                      r"|\b\d{4}[-/.]\d{2}[-/.]\d{2}\b|\b\d{1,2}[-/.]\d{1,2}[-/.]\d{4}\b", True),
    "time": ("$TIME", rf"\b\d{{1,2}}:\d{{2}}:\d{{2}}(?:\.\d+)?{_ZONE}?\b", True),
    # Seconds (2017-2033), milliseconds, or seconds with a fraction (time.time()).
    "epoch": ("$EPOCH", r"\b1[5-9]\d{8}(?:\d{3}\b|\.\d+|\b)", True),
    # A digit in it (a word like "deadbeefcafebabe" stays a word); 16 digits or more is an id too (snowflakes).
    "hex": ("$HEX", r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{16,}\b", False),
    "base64": ("$BASE64", rf"(?<![{_B64}=])[{_B64}]{{16,}}={{0,2}}(?![{_B64}=])", False),
}
SHAPE_NAMES: tuple[str, ...] = tuple(SHAPES)
_LOWER_RUN = re.compile(r"[a-z]+")


def looks_random(token: str) -> bool:
    """A base64-alphabet token that reads as random rather than as a word or an identifier."""
    lower = sum(c.islower() for c in token)
    upper = sum(c.isupper() for c in token)
    if not (lower and upper) or (upper + sum(c.isdigit() for c in token)) * 4 < len(token):
        return False
    # Words run lowercase letters on (ReadTimeoutError: 4.3 a run); random text breaks them up (1.7 on average;
    # 5 keeps a 22-character token_urlsafe a nonce 999 times in 1,000).
    return lower < 5 * len(_LOWER_RUN.findall(token))


@dataclass(frozen=True)
class Found:
    """One volatile value in a text: its shape (a built-in name, or a user rule's placeholder) and the value."""

    shape: str
    placeholder: str
    value: str


class _Alternation(Protocol):
    def sub(self, replacement: Callable[[Any], str], text: str) -> str: ...
    def finditer(self, text: str) -> Iterator[Any]: ...


def compile_alternation(sources: Sequence[tuple[str, str]], *, users: bool) -> _Alternation:
    """One regex trying each (group name, regex) in order: the one place shapes compile. With a user's regex in
    it, through harness.patterns (every search time-bound: a rule comes from a file in a pull request)."""
    joined = "|".join(f"(?P<{name}>{source})" for name, source in sources)
    return compile_pattern(joined) if users else re.compile(joined)


def _group_numbers(sources: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Each source's group number in the alternation (a source's own groups come after its name's)."""
    numbers, number = {}, 1
    for name, source in sources:
        numbers[name] = number
        number += 1 + compile_pattern(source).groups
    return numbers


class Shapes:
    """The volatile shapes of one rule set, compiled once: built-in ones by name, then the user's (placeholder,
    regex) rules, which are tried first. A user's regex with a group, (...), has only its group 1 as the value
    (`"seq": (\\d+)`: the number, not the key before it)."""

    def __init__(self, builtin: Iterable[str], user: Sequence[tuple[str, str]] = (), *, times_only: bool = False):
        self._names: dict[str, tuple[str, str]] = {}  # group name -> (shape, placeholder)
        sources: list[tuple[str, str]] = []
        for number, (placeholder, regex) in enumerate(user):
            group = f"u{number}"
            self._names[group] = (placeholder, placeholder)
            sources.append((group, regex))
        for name in builtin:
            placeholder, regex, is_time = SHAPES[name]
            if is_time or not times_only:
                self._names[name] = (name, placeholder)
                sources.append((name, regex))
        users = bool(user)
        self._regex = compile_alternation(sources, users=users) if sources else None
        inner = [(group, source) for group, source in sources if group != "base64"]
        self._inner = compile_alternation(inner, users=users) if inner and len(inner) != len(sources) else None
        # The user's regexes with a group: the alternation's number of that group (its own group 1), in both.
        self._value_group = {group: number + 1 for group, number in _group_numbers(sources).items()
                             if group.startswith("u") and compile_pattern(dict(sources)[group]).groups}

    def __bool__(self) -> bool:
        return self._regex is not None

    def mask(self, text: str) -> str:
        """The text with each volatile value replaced by its placeholder."""
        if self._regex is None:
            return text
        return self._regex.sub(self._placeholder, text)

    def _placeholder(self, found: Any) -> str:
        group = found.lastgroup or ""
        shape, placeholder = self._names[group]
        value = found.group(0)
        if shape == "base64" and not looks_random(value):
            # A word, not a nonce: what it holds may still be volatile (a uuid inside an identifier).
            return self._inner.sub(self._placeholder, value) if self._inner is not None else value
        if shape == "port":
            return value.rsplit(":", 1)[0] + ":" + placeholder
        number = self._value_group.get(group)
        if number is not None and found.group(number) is not None:
            start, end = found.span(number)
            return value[: start - found.start()] + placeholder + value[end - found.start():]
        return placeholder

    def find(self, text: str) -> list[Found]:
        """The volatile values of a text, in order (the values `mask` replaces)."""
        return list(self._find(text, self._regex))

    def _find(self, text: str, regex: _Alternation | None) -> Iterator[Found]:
        if regex is None:
            return
        for found in regex.finditer(text):
            shape, placeholder = self._names[found.lastgroup or ""]
            value = found.group(0)
            if shape == "base64" and not looks_random(value):
                yield from self._find(value, self._inner)
                continue
            if shape == "port":
                value = value.rsplit(":", 1)[1]
            number = self._value_group.get(found.lastgroup or "")
            if number is not None and found.group(number) is not None:
                value = found.group(number)
            yield Found(shape, placeholder, value)


@functools.lru_cache(maxsize=64)
def shapes_for(builtin: tuple[str, ...], user: tuple[tuple[str, str], ...], times_only: bool) -> Shapes:
    """Compiled once per process for each rule set (a cassette opened by many tests compiles nothing again)."""
    return Shapes(builtin, user, times_only=times_only)


__all__ = ["SHAPES", "SHAPE_NAMES", "Found", "Shapes", "compile_alternation", "looks_random", "shapes_for"]
