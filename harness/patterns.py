"""Regular expressions a user writes, compiled and run with a time bound: the one way to run them.

A golden's `regex` / `not_regex`, a `tool_permissions` rule's `regex` and a matching rule's `capture` and
`pattern` come from files in a pull request: with Python's `re`, `(a+)+$` or `(x+x+)+y` against a long text
backtracks for hours and `harness eval` hangs. They go through `compile_pattern` instead, which compiles them
with the `regex` package: its engine is a superset of `re`'s syntax (lookarounds, backreferences and named
groups keep working, where RE2 refuses them), it avoids most catastrophic backtracking by itself (both
patterns above answer at once), and every search takes a `timeout`. A search that runs out of time raises
`PatternTimeout`, naming the pattern; the caller says where it was written. A structured-output schema's
`pattern` and `patternProperties` (from a recorded request) are searched the same way (`schema_validator`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import regex

from harness.errors import HarnessError

# Seconds one search may take. A pattern a person writes answers in microseconds on an agent's text; one that
# needs a second is backtracking, and would need days. (The engine checks its clock now and then, so a
# search that runs out may stop a little later than this.)
SEARCH_SECONDS = 1.0

_FLAGS = {re.IGNORECASE: regex.IGNORECASE, re.MULTILINE: regex.MULTILINE, re.DOTALL: regex.DOTALL,
          re.VERBOSE: regex.VERBOSE, re.ASCII: regex.ASCII}


class BadPattern(ValueError):
    """A pattern that does not compile."""


class PatternTimeout(HarnessError):
    """A pattern whose search ran out of time (catastrophic backtracking)."""

    def __init__(self, pattern: str, chars: int, *, file: str | None = None, where: str | None = None) -> None:
        self.pattern = pattern
        super().__init__(
            f"the regular expression {pattern!r} took more than {SEARCH_SECONDS:g} s on {chars:,} characters "
            "(catastrophic backtracking: nested repeats such as (a+)+); rewrite it", file=file, where=where)


class Pattern:
    """A compiled user pattern; every search is bounded by `SEARCH_SECONDS`."""

    def __init__(self, source: str, flags: int = 0) -> None:
        engine_flags = 0
        for flag, engine_flag in _FLAGS.items():
            if flags & flag:
                engine_flags |= engine_flag
        try:
            self._compiled = regex.compile(source, engine_flags)
        except (regex.error, TypeError, ValueError, OverflowError, RecursionError) as err:
            raise BadPattern(str(err)) from None
        self.pattern = source

    @property
    def groups(self) -> int:
        return int(self._compiled.groups)

    def _bounded(self, call: Callable[..., Any], text: str, *args: Any) -> Any:
        try:
            return call(*args, timeout=SEARCH_SECONDS)
        except TimeoutError:
            raise PatternTimeout(self.pattern, len(text)) from None

    def search(self, text: str) -> Any:
        """The first match (a `regex.Match`: `.group()`, `.span()`, as `re`'s) or None."""
        return self._bounded(self._compiled.search, text, text)

    def fullmatch(self, text: str) -> Any:
        return self._bounded(self._compiled.fullmatch, text, text)

    def finditer(self, text: str) -> Iterator[Any]:
        return iter(self._bounded(lambda t, timeout: list(self._compiled.finditer(t, timeout=timeout)), text, text))

    def sub(self, replacement: str | Callable[[Any], str], text: str) -> str:
        return str(self._bounded(self._compiled.sub, text, replacement, text))


@functools.lru_cache(maxsize=512)  # a golden's patterns, compiled once for every case and trial
def compile_pattern(source: str, flags: int = 0) -> Pattern:
    """`source` compiled for bounded searches; `flags` are `re`'s. Raises BadPattern when it does not compile."""
    return Pattern(source, flags)


def pattern_problem(source: str, flags: int = 0) -> str | None:
    """Why `source` does not compile, or None: for the checks that validate a golden before any run."""
    try:
        compile_pattern(source, flags)
    except BadPattern as err:
        return f"not a valid regular expression: {err}"
    return None


# ---------------------------------------------------------------------------------------------------------
# JSON Schema: a structured-output schema comes from a recorded request, as untrusted as a golden


def _schema_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _schema_pattern_properties(validator: Any, properties: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            if compile_pattern(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


@functools.cache
def _bounded_validator_class() -> Any:
    from jsonschema import Draft202012Validator, validators

    return validators.extend(Draft202012Validator, {"pattern": _schema_pattern,
                                                    "patternProperties": _schema_pattern_properties})


def schema_validator(schema: Any) -> Any:
    """A JSON Schema 2020-12 validator (jsonschema's) whose `pattern` and `patternProperties` search through
    `compile_pattern`: a pattern that runs out of time raises PatternTimeout instead of hanging."""
    return _bounded_validator_class()(schema)
