"""The cassette file, format version 1: load (safe, validated), dump (readable), save (atomic).

One YAML file per run. JSON bodies are stored parsed, multi-line strings as literal blocks and SSE as
a list of events, so a pull-request diff reads like the conversation. Loading uses libyaml's safe
loader when present: no tag can construct a Python object, and it is several times faster than the
pure-Python loader (replay speed is the product's speed).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from harness.errors import CassetteError

FORMAT_VERSION = 1
MAX_CASSETTE_BYTES = 64 * 1024 * 1024  # a cassette is text a person reviews; anything larger is refused

_SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass
class CassetteFile:
    """A cassette in memory: the provenance block and the interactions, as plain JSON-like data."""

    meta: dict[str, Any]
    interactions: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None

    def to_data(self) -> dict[str, Any]:
        return {"harness": self.meta, "interactions": self.interactions}


@cache
def cassette_schema() -> dict[str, Any]:
    text = resources.files("harness.cassette").joinpath("schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@cache
def _validator() -> jsonschema.protocols.Validator:
    schema = cassette_schema()
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def json_path(parts: Any) -> str:
    """`$.interactions[3].response.status` from a jsonschema error path."""
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def validate(data: Any, *, file: str | Path | None = None) -> None:
    """Raise CassetteError naming the JSON path of the first (deepest, most relevant) problem."""
    if not isinstance(data, dict):
        raise CassetteError("not a cassette: the top level must be a mapping", file=file, where="$")
    block = data.get("harness")
    version = block.get("format_version") if isinstance(block, dict) else None
    if "harness" in data and version != FORMAT_VERSION:
        raise CassetteError(
            f"unknown format_version {version!r}; this harness reads version {FORMAT_VERSION}",
            file=file,
            where="$.harness.format_version",
        )
    if "harness" not in data and "interactions" in data:
        raise CassetteError(
            "no `harness:` block: this looks like a foreign (vcrpy) cassette; convert it with `harness import`",
            file=file,
            where="$",
        )
    error = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    if error is not None:
        raise CassetteError(error.message, file=file, where=json_path(error.absolute_path))


def parse_yaml(text: str, *, file: str | Path | None = None) -> Any:
    try:
        return yaml.load(text, Loader=_SafeLoader)  # a safe loader, C or Python
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        raise CassetteError(f"not valid YAML: {err.problem or err}", file=file, where=where) from None
    except yaml.YAMLError as err:
        raise CassetteError(f"not valid YAML: {err}", file=file) from None
    except RecursionError:
        raise CassetteError("nesting too deep to be a cassette", file=file) from None


def read_text_bounded(path: Path, limit: int | None = None) -> str:
    """Read a file refusing anything over `limit` bytes or not UTF-8, before it reaches a parser."""
    limit = MAX_CASSETTE_BYTES if limit is None else limit
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise CassetteError("no such cassette", file=path) from None
    if size > limit:
        raise CassetteError(f"{size:,} bytes is over the {limit:,}-byte limit for a cassette", file=path)
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise CassetteError(f"not UTF-8 text (byte {err.start})", file=path, where=f"line {line}") from None


def load_cassette(path: str | Path) -> CassetteFile:
    path = Path(path)
    data = parse_yaml(read_text_bounded(path), file=path)
    validate(data, file=path)
    return CassetteFile(meta=data["harness"], interactions=data["interactions"], path=path)


class _Dumper(_SafeDumper):  # type: ignore[misc, valid-type]
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Multi-line text (prompts, briefs, tool output) as literal blocks: a diff then shows lines.
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)


def dump_cassette(cassette: CassetteFile) -> str:
    return yaml.dump(
        cassette.to_data(),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write via a temp file in the same folder, fsync, rename: a reader sees the old file or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable where the OS allows it
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def save_cassette(cassette: CassetteFile, path: str | Path | None = None) -> Path:
    target = Path(path or cassette.path or "")
    if not str(target):
        raise CassetteError("no path to save the cassette to")
    validate(cassette.to_data(), file=target)
    atomic_write_text(target, dump_cassette(cassette))
    return target
