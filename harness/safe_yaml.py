"""YAML read safely: libyaml's safe loader, no alias bombs, nothing JSON cannot hold.

`parse_yaml` loads through the safe loader (C when present: no tag constructs a Python object) with the cyclic
GC paused while the document is built, and refuses an alias expansion past MAX_ALIAS_EXPANSION nodes;
`refuse_what_json_cannot_hold` refuses dates, bytes, sets, keys that are not text and nesting past MAX_DEPTH,
each with its place. Every error is a CassetteError naming the file and the place. Cassettes, goldens, suites
and simulator scripts are read through it.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from harness.errors import CassetteError
from harness.jsondata import json_path

SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str, *, file: str | Path | None = None, loader: type | None = None) -> Any:
    """YAML through the safe loader (or `loader`, a subclass of it that knows one more harmless tag)."""
    try:
        with collector_paused():
            data = yaml.load(text, Loader=loader or SafeLoader)  # a safe loader, C or Python
        if _MAYBE_ANCHOR.search(text):
            _refuse_alias_bombs(data, limit=max(len(text), MAX_ALIAS_EXPANSION), file=file)
        return data
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        raise CassetteError(f"not valid YAML: {err.problem or err}", file=file, where=where) from None
    except yaml.YAMLError as err:
        raise CassetteError(f"not valid YAML: {err}", file=file) from None
    except RecursionError:
        raise CassetteError("nesting too deep to be a cassette", file=file) from None
    except (ValueError, TypeError, AttributeError, OverflowError) as err:
        # A tagged or implicit scalar the loader fails to build: `!!timestamp 2001-12-14`, `2026-13-45`.
        raise CassetteError(
            f"not valid YAML: a value cannot be read ({type(err).__name__}: {err})", file=file
        ) from None


# An anchor (`&name`) starts a node: after a line start, a space or a flow indicator. Text without one
# has no aliases, and most cassettes are checked by this one regular expression only.
_MAYBE_ANCHOR = re.compile(r"(?:^|[\s\[{,])&[^\s\[\]{},]", re.MULTILINE)


MAX_ALIAS_EXPANSION = 1_000_000  # nodes; above this (and above the text's length) aliases are refused


def _refuse_alias_bombs(data: Any, *, limit: int, file: str | Path | None) -> None:
    """Refuse aliases that expand past `limit` nodes, or that contain themselves.

    A safe loader builds an alias as a second reference to one object, so ten nested lists of ten
    aliases load in microseconds as 10**9 strings, and whatever walks or serializes them next (the
    request index, the parse cache, a save) never finishes. Our own writer never uses aliases; a foreign
    file may (PyYAML writes `&id001` for an object it meets twice), harmlessly when the expansion is small.
    """
    sizes: dict[int, int] = {}  # expanded node count of each container, by id, once finished
    open_: set[int] = set()  # containers being counted (an alias back to one of these is a cycle)
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, children_done = stack.pop()
        if not isinstance(node, dict | list):
            continue
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        if children_done:
            open_.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes.get(id(child), 1) for child in children)
            if sizes[id(node)] > limit:
                raise CassetteError(
                    f"refused: YAML aliases expand this file past {limit:,} nodes (an alias bomb)", file=file
                )
            continue
        if id(node) in sizes:
            continue
        open_.add(id(node))
        stack.append((node, True))
        for child in children:
            if isinstance(child, dict | list):
                if id(child) in open_:
                    raise CassetteError("refused: a YAML alias refers to a node that contains it", file=file)
                stack.append((child, False))


MAX_DEPTH = 100  # levels of nesting; no Messages API body comes near it, and every reader recurses

_SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse_surrogates(text: str, *, file: str | Path | None, path: tuple[Any, ...]) -> None:
    """A `"\\ud800"` escape gives half of a UTF-16 pair, which no UTF-8 text can hold: every reader that encodes
    the string (a request's fingerprint, a report, a replayed body) would fail on it, so it fails here, once."""
    found = _SURROGATE.search(text)
    if found:
        raise CassetteError(f"a lone surrogate (\\u{ord(found.group()):04x}) is not text; write the character itself",
                            file=file, where=json_path(path))


def refuse_what_json_cannot_hold(data: Any, *, file: str | Path | None) -> None:
    """Refuse what YAML can say and JSON cannot: a date or timestamp (an unquoted `2026-09-07`), bytes
    (`!!binary`), a set (`!!set`), a key that is not text, and nesting past MAX_DEPTH. Each reader turns
    a cassette into JSON sooner or later (serve, replay, reports); here it fails at load, with its place,
    instead of as a traceback in whichever reader meets it first."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            if len(path) >= MAX_DEPTH:
                raise CassetteError(f"nested more than {MAX_DEPTH} levels deep", file=file, where=json_path(path))
            for key, value in node.items():
                if not isinstance(key, str):
                    raise CassetteError(f"the key {key!r} is not text; quote it", file=file, where=json_path(path))
                _refuse_surrogates(key, file=file, path=path)
                stack.append((value, (*path, key)))
        elif isinstance(node, list):
            if len(path) >= MAX_DEPTH:
                raise CassetteError(f"nested more than {MAX_DEPTH} levels deep", file=file, where=json_path(path))
            stack.extend((value, (*path, index)) for index, value in enumerate(node))
        elif isinstance(node, str):
            _refuse_surrogates(node, file=file, path=path)
        elif not isinstance(node, str | int | float | bool | type(None)):
            what = {
                "date": "an unquoted date",
                "datetime": "an unquoted timestamp",
                "bytes": "!!binary data",
                "set": "a !!set",
            }.get(type(node).__name__, f"a YAML {type(node).__name__}")
            raise CassetteError(
                f"{what} where JSON allows only text, numbers, true/false, null, lists and objects; quote it",
                file=file,
                where=json_path(path),
            )


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Building a large document makes the cyclic GC rescan everything built so far, again and again (a
    parse of 5,000 interactions spends more than half its time there); none of it is garbage yet."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
