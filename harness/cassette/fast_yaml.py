"""A reader for exactly the YAML our dumper writes; anything else is left to the safe loader.

`dump_cassette` writes one dialect only: PyYAML's block style (width 100, no aliases, no flow collections but
`{}` and `[]`), plain scalars where PyYAML's emitter allows them, quoted ones where it does not, literal
blocks (`|`, `|-`, `|+`, an indentation digit when the text starts with a space or a line break) for
multi-line text. Even libyaml builds every node through PyYAML's Python constructor, so a large cassette
parses some 20 times slower than its JSON; this reader walks the lines once and builds the data directly.

It is a strict subset reader, never a second YAML implementation: whatever is not in the dialect (a
comment, a tab, an anchor, a tag, a flow collection, a folded block, a plain scalar YAML would read as a
date or a `yes`, a line break other than `\\n`, ...) raises `NotOurDialect`, and the caller parses the file
with the safe loader instead, which then decides (and words any error). On everything it accepts it gives
what the safe loader gives: tests/test_fast_yaml.py compares the two on every bundled cassette and on fuzzed
ones. A multi-line quoted scalar, rare in our output, is handed to the safe loader on its own.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["NotOurDialect", "load"]

MAX_DEPTH = 100  # as harness.safe_yaml: deeper files go to the safe loader, whose checks word the refusal


class NotOurDialect(Exception):
    """The text is not in the dialect our dumper writes; parse it with the safe loader."""


# Characters outside the dialect anywhere in the text: a tab, a carriage return, YAML's other line breaks
# (NEL, LS, PS), a byte-order mark, and whatever YAML's reader refuses as non-printable.
_OUTSIDE = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_SINGLE = re.compile(r"'((?:[^']|'')*+)'(?!')")
_DOUBLE = re.compile(r'"((?:[^"\\]|\\.)*+)"', re.DOTALL)
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")
_ESCAPES = {
    "0": "\0",
    "a": "\x07",
    "b": "\x08",
    "t": "\t",
    "n": "\n",
    "v": "\x0b",
    "f": "\x0c",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_LITERAL = re.compile(r"\|([1-9])?([-+])?$")
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]*(?:e[-+][0-9]+)?$")
_RESOLVERS = yaml.resolver.Resolver.yaml_implicit_resolvers  # what the safe loader reads a plain scalar as
_BOOLS = yaml.constructor.SafeConstructor.bool_values
_STR, _NULL, _BOOL, _INT_TAG, _FLOAT_TAG = (f"tag:yaml.org,2002:{t}" for t in ("str", "null", "bool", "int", "float"))
# Starts of a plain scalar the emitter never writes (indicators); '-', '?' and ':' only before a space.
_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")
# Keys and short one-line plain scalars already checked (they repeat: `type`, `role`, `text`, `end_turn`).
_KEYS: set[str] = set()
_PLAINS: dict[str, Any] = {}
_UNSEEN = object()
_MEMO_LIMIT = 20_000
_MEMO_TEXT = 64


def load(text: str) -> Any:
    """The data of `text`, exactly as the safe loader would build it; NotOurDialect if it is not ours."""
    if not text.endswith("\n") or " \n" in text or _outside_the_dialect(text):
        raise NotOurDialect
    lines = text.split("\n")
    lines.pop()  # after the final line break
    if lines and lines[-1] == "...":
        lines.pop()  # the document end marker PyYAML writes after a `|+` block that ends the file
    rests = [line.lstrip(" ") for line in lines]
    indents = [len(line) - len(rest) for line, rest in zip(lines, rests, strict=True)]
    if not lines or indents[0] != 0:
        raise NotOurDialect
    reader = _Reader(lines, rests, indents)
    value, end = reader.block(0, 0, 0)
    if end != len(lines):
        raise NotOurDialect
    return value


def _outside_the_dialect(text: str) -> bool:
    """A character our dumper never writes. Python calls every such character unprintable, and `isprintable`
    scans twice as fast as the regular expression, which then decides only for a text with an unprintable
    character (a no-break space, a zero-width one)."""
    return not text.replace("\n", " ").isprintable() and _OUTSIDE.search(text) is not None


def _plain(text: str) -> Any:
    """A plain scalar as the safe loader resolves it: text, or one of the forms our representer writes."""
    tag = _STR
    for candidate, pattern in _RESOLVERS.get(text[0], ()):
        if pattern.match(text):
            tag = candidate
            break
    if tag == _STR:
        return text
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return _BOOLS[text.lower()]
    if tag == _INT_TAG and _INT.match(text):
        return int(text)
    if tag == _FLOAT_TAG and _FLOAT.match(text):
        return float(text)
    raise NotOurDialect  # a date, a hex or sexagesimal number, `.inf`, `<<`: the safe loader's business


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) > 1:
        point = int(code[1:], 16)
        if 0xD800 <= point <= 0xDFFF:  # half of a UTF-16 pair is no text: the safe loader's checks name its place
            raise NotOurDialect
        return chr(point)
    try:
        return _ESCAPES[code]
    except KeyError:
        raise NotOurDialect from None


class _Reader:
    def __init__(self, lines: list[str], rests: list[str], indents: list[int]) -> None:
        self.lines = lines
        self.rests = rests  # each line without its indentation; an item's line is rewritten to its content
        self.indents = indents
        self.count = len(lines)

    def block(self, i: int, n: int, depth: int) -> tuple[Any, int]:
        """The mapping or sequence whose first line is `i`, at indent `n`; the value and the line after it."""
        if depth >= MAX_DEPTH:
            raise NotOurDialect
        rest = self.rests[i]
        if rest.startswith("- "):
            return self.sequence(i, n, depth)
        return self.mapping(i, n, depth)

    def _key(self, rest: str) -> tuple[str, str] | None:
        """(key, what follows `key:`) if `rest` is a mapping entry."""
        first = rest[:1]
        if first == "'" or first == '"':
            match = (_SINGLE if first == "'" else _DOUBLE).match(rest)
            if match is None:
                return None
            end = match.end()
            if rest[end : end + 1] != ":" or rest[end + 1 : end + 2] not in ("", " "):
                return None
            key = match.group(1).replace("''", "'") if first == "'" else _ESCAPE.sub(_unescape, match.group(1))
            if "\n" in match.group(0):
                raise NotOurDialect
            return key, rest[end + 2 :]
        at = rest.find(": ")
        if at < 0:
            if not rest.endswith(":"):
                return None
            at = len(rest) - 1
        key = rest[:at]
        if (
            not key
            or key[0] in _INDICATORS
            or key[0] in "?:-"
            or key.startswith(("---", "..."))
            or " #" in key
            or key[-1] == " "
        ):
            raise NotOurDialect
        if not isinstance(_plain(key), str):
            raise NotOurDialect  # a number, true or null as a key: the safe loader's checks refuse it by name
        if len(_KEYS) < _MEMO_LIMIT:
            _KEYS.add(key)
        return key, rest[at + 2 :]

    def mapping(self, i: int, n: int, depth: int) -> tuple[dict[str, Any], int]:
        rests, indents, count = self.rests, self.indents, self.count
        out: dict[str, Any] = {}
        while i < count:
            indent = indents[i]
            if indent < n:
                break
            rest = rests[i]
            if indent > n or not rest:
                raise NotOurDialect
            at = rest.find(": ")
            if at > 0 and rest[:at] in _KEYS:  # a key seen before: checked then
                key, after = rest[:at], rest[at + 2 :]
            elif rest[-1] == ":" and rest[:-1] in _KEYS:
                key, after = rest[:-1], ""
            else:
                entry = self._key(rest)
                if entry is None:
                    raise NotOurDialect
                key, after = entry
            if after:
                out[key], i = self.scalar(after, i, n)
                continue
            i += 1
            if i < count and indents[i] > n and rests[i]:
                out[key], i = self.block(i, indents[i], depth + 1)
            elif i < count and indents[i] == n and rests[i].startswith("- "):
                out[key], i = self.sequence(i, n, depth + 1)  # an indentless sequence, as PyYAML writes one
            else:
                out[key] = None
        return out, i

    def sequence(self, i: int, n: int, depth: int) -> tuple[list[Any], int]:
        rests, indents, count = self.rests, self.indents, self.count
        out: list[Any] = []
        while i < count and indents[i] == n and rests[i].startswith("- "):
            item = rests[i][2:]
            at = item.find(": ")
            if (at > 0 and item[:at] in _KEYS) or item.startswith("- ") or self._key(item) is not None:
                rests[i], indents[i] = item, n + 2  # the item's content, as a block of its own at n + 2
                value, i = self.block(i, n + 2, depth + 1)
            else:
                value, i = self.scalar(item, i, n)
            out.append(value)
        if i < count and indents[i] > n:
            raise NotOurDialect
        return out, i

    def scalar(self, text: str, i: int, n: int) -> tuple[Any, int]:
        """The scalar that starts as `text` on line `i`, inside a block at indent `n`; the value, the next line."""
        first = text[0]
        if first == "'":
            inner = text[1:-1]
            if len(text) > 1 and text[-1] == "'" and "'" not in inner.replace("''", ""):
                return inner.replace("''", "'"), i + 1  # on one line: only doubled quotes inside
            return self._multiline_quoted(_SINGLE, text, i, n)
        if first == '"':
            if len(text) > 1 and text[-1] == '"' and "\\" not in text and '"' not in text[1:-1]:
                return text[1:-1], i + 1
            match = _DOUBLE.match(text)
            if match is not None and match.end() == len(text):
                return _ESCAPE.sub(_unescape, match.group(1)), i + 1
            return self._multiline_quoted(_DOUBLE, text, i, n)
        if first == "|":
            return self._literal(text, i, n)
        if text == "{}":
            return {}, i + 1
        if text == "[]":
            return [], i + 1
        if first in _INDICATORS or (first in "?:-" and text[1:2] in ("", " ")) or first == " ":
            raise NotOurDialect
        i += 1
        rests, indents, count = self.rests, self.indents, self.count
        if i >= count or indents[i] <= n or not rests[i]:  # on one line
            value = _PLAINS.get(text, _UNSEEN)
            if value is not _UNSEEN:
                return value, i
        if " #" in text or ": " in text or text[-1] in ": ":
            raise NotOurDialect
        if i < count and indents[i] > n and rests[i]:
            parts = [text]
            while i < count and indents[i] > n and rests[i]:
                part = rests[i]
                if part[0] == "#" or " #" in part or ": " in part or part[-1] in ": ":
                    raise NotOurDialect
                parts.append(part)
                i += 1
            text = " ".join(parts)  # a long plain scalar, split at single spaces
            return _plain(text), i
        value = _plain(text)
        if len(text) <= _MEMO_TEXT and len(_PLAINS) < _MEMO_LIMIT:
            _PLAINS[text] = value
        return value, i

    def _multiline_quoted(self, pattern: re.Pattern[str], text: str, i: int, n: int) -> tuple[str, int]:
        """A quoted scalar over several lines: its lines handed to the safe loader alone (PyYAML's folding)."""
        raw = [text]
        j = i + 1
        while j < self.count:
            if self.rests[j] and self.indents[j] <= n:
                raise NotOurDialect
            raw.append(self.lines[j])
            j += 1
            if pattern is _SINGLE:  # whether this line closes it, without matching everything so far again
                lone = self.rests[j - 1].replace("''", "")
                if "'" not in lone:
                    continue
                if lone.index("'") != len(lone) - 1 or self.rests[j - 1][-1] != "'":
                    raise NotOurDialect
            joined = "\n".join(raw)
            match = pattern.match(joined)
            if match is not None:
                if match.end() != len(joined):
                    raise NotOurDialect
                try:
                    value = yaml.load(joined, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
                except yaml.YAMLError:
                    raise NotOurDialect from None
                if not isinstance(value, str):
                    raise NotOurDialect
                return value, j
        raise NotOurDialect

    def _literal(self, text: str, i: int, n: int) -> tuple[str, int]:
        header = _LITERAL.match(text)
        if header is None:
            raise NotOurDialect
        digit, chomp = header.groups()
        lines, rests, indents, count = self.lines, self.rests, self.indents, self.count
        j = i + 1
        if digit:
            inner = n + int(digit)
        else:
            if j >= count or not rests[j] or indents[j] <= n:
                raise NotOurDialect  # our dumper writes a digit before leading blank lines
            inner = indents[j]
        content: list[str] = []
        blanks = 0  # blank lines since the last one with text
        while j < count:
            line = lines[j]
            if not line:
                blanks += 1
            elif indents[j] < inner:
                if not rests[j]:
                    raise NotOurDialect  # a line of spaces only: never ours
                break
            else:
                if not rests[j]:
                    raise NotOurDialect
                content.extend([""] * blanks)
                blanks = 0
                content.append(line[inner:])
            j += 1
        if not content:
            raise NotOurDialect
        value = "\n".join(content)
        if chomp == "-":
            return value, j
        if chomp == "+":
            return value + "\n" * (1 + blanks), j
        return value + "\n", j
