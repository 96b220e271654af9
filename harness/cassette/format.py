"""The cassette file, format version 1: load (safe, validated, through the parse cache), dump (readable),
save (atomic).

One YAML file per run. JSON bodies are stored parsed, multi-line strings as literal blocks and SSE as a list of
events, so a pull-request diff reads like the conversation. The parts live beside it, one concept each: the
schema and `validate` (harness.cassette.schema), safe YAML (harness.safe_yaml), bounded reads, the symlink rule
and atomic writes (harness.files), the parse cache (harness.cassette.parse_cache).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.cassette import fast_yaml
from harness.cassette.parse_cache import (
    CACHE_MIN_BYTES,
    ParseCache,
)
from harness.cassette.schema import (
    validate,
)
from harness.errors import CassetteError
from harness.files import (
    atomic_write_bytes,
    atomic_write_text,
    decode_utf8,
    read_bytes_bounded,
)
from harness.safe_yaml import (
    collector_paused,
    parse_yaml,
    refuse_what_json_cannot_hold,
)
from harness.wire.multipart import check_part_files, externalize_large_parts
from harness.wire.sse import MalformedStream, check_stream

MAX_CASSETTE_BYTES = 64 * 1024 * 1024  # a cassette is text a person reviews; anything larger is refused

_SafeDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass
class CassetteFile:
    """A cassette in memory: the provenance block and the interactions, as plain JSON-like data."""

    meta: dict[str, Any]
    interactions: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None

    def to_data(self) -> dict[str, Any]:
        return {"harness": self.meta, "interactions": self.interactions}



def load_cassette(path: str | Path) -> CassetteFile:
    path = Path(path)
    raw = read_bytes_bounded(path, MAX_CASSETTE_BYTES)
    cache = ParseCache.configured()
    key = cache.key(raw) if cache is not None and len(raw) >= CACHE_MIN_BYTES else None
    data = cache.get(key) if cache is not None and key is not None else None
    if data is None:
        data, json_only = _parse_cassette_text(decode_utf8(raw, path), path)
        validate(data, file=path)
        if cache is not None and key is not None:
            cache.put(key, data, json_only=json_only)
    else:
        validate(data, file=path)  # what the cache gives back is checked like what the parser gives
    if any("parts" in interaction["request"] for interaction in data["interactions"]):
        # Large upload parts kept beside the cassette must still be the bytes that were recorded.
        check_part_files(data["interactions"], path, read_bytes_bounded)
    return CassetteFile(meta=data["harness"], interactions=data["interactions"], path=path)


def _parse_cassette_text(text: str, path: Path) -> tuple[Any, bool]:
    """The data, and whether it came from the fast reader. Our own dialect goes through the fast reader (JSON's
    types only, text keys, at most MAX_DEPTH deep, by construction); anything else, a hand-edited file say,
    through the safe loader and its checks, which also word every refusal."""
    try:
        with collector_paused():
            return fast_yaml.load(text), True
    except fast_yaml.NotOurDialect:
        pass
    data = parse_yaml(text, file=path)
    refuse_what_json_cannot_hold(data, file=path)  # a foreign file's dates are the importer's to convert
    return data, False


def check_streams(cassette: CassetteFile) -> None:
    """Refuse a cassette with a stream the SDK could not read to its end, naming the interaction and the event.

    For the readers that replay (everything built on `Cassette`: use_cassette, the pytest plugin, serve, the
    proxy, chaos), once when the file is loaded, so a damaged stream is this CassetteError rather than the
    SDK's own TypeError or IndexError from inside its accumulator, and the replay hot path is untouched.
    Each successful (2xx) streamed answer must follow the Messages API's order (`sse.StreamCheck`, the same
    rules `fold_stream` applies for show and eval) and end in message_stop or an error event, unless it was
    recorded as cut (`truncated: true`).
    """
    for position, interaction in enumerate(cassette.interactions):
        response = interaction.get("response")
        if response is None or "events" not in response or not 200 <= response["status"] < 300:
            continue
        try:
            check_stream(response["events"], cut=response.get("truncated", False))
        except MalformedStream as err:
            where = f"$.interactions[{position}].response.events[{err.event}]"
            raise CassetteError(f"a stream the SDK cannot read: {err.reason}", file=cassette.path,
                                where=where) from None



class _Dumper(_SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        # No `&id001` / `*id001`: a diff must show the text, even where two requests share an object.
        return True


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


def save_cassette(cassette: CassetteFile, path: str | Path | None = None) -> Path:
    target = Path(path or cassette.path or "")
    if not str(target):
        raise CassetteError("no path to save the cassette to")
    # Large upload parts first, so that the cassette never names a file that is not there yet.
    for part_path, content in externalize_large_parts(cassette.interactions, target).items():
        atomic_write_bytes(part_path, content)
    validate(cassette.to_data(), file=target)
    atomic_write_text(target, dump_cassette(cassette))
    return target
