"""The cassette file, format version 1: load (safe, validated), dump (readable), save (atomic).

One YAML file per run. JSON bodies are stored parsed, multi-line strings as literal blocks and SSE as
a list of events, so a pull-request diff reads like the conversation. Loading uses libyaml's safe
loader when present: no tag can construct a Python object, and it is several times faster than the
pure-Python loader (replay speed is the product's speed).

Even libyaml builds every node in Python, so a large cassette (thousands of agent steps, tens of MB)
parses some 20 times slower than the same data as JSON, and a small one costs milliseconds a CI suite
pays per test. Loading therefore goes through a parse cache: the parsed data of each file, as JSON,
under a name that is the hash of the file's bytes (see `_ParseCache`). The file is read and hashed on
every load and stays the only source of truth; what comes out of the cache is validated exactly like
what comes out of the parser.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import yaml

from harness.errors import CassetteError, absolute
from harness.wire.multipart import check_part_files, externalize_large_parts
from harness.wire.sse import MalformedStream, check_stream

if TYPE_CHECKING:
    import jsonschema

FORMAT_VERSION = 1
MAX_CASSETTE_BYTES = 64 * 1024 * 1024  # a cassette is text a person reviews; anything larger is refused

_SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
SafeLoader = _SafeLoader  # for a reader that subclasses it to know one more harmless tag (see the importer)


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
    import jsonschema  # here: a replay whose cassettes take the quick check never pays for importing it

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
    if _schema_is_v1() and _plainly_valid_v1(data):
        return
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(data))
    if error is not None:
        raise CassetteError(error.message, file=file, where=json_path(error.absolute_path))


# ---------------------------------------------------------------------------------------------------
# A quick yes for what plainly follows schema v1
#
# jsonschema walks every interaction, every header and every SSE event through its generic machinery:
# about 3 s for 5,000 recorded agent steps, six times the JSON parse itself. The checks below accept
# only what plainly follows schema.json version 1 (stricter than the schema where that is simpler: an
# integer must be an int, a string a str); anything else, and every error message, is left to
# jsonschema, which stays the authority. They apply only while schema.json is the one they were written
# for (its digest below): an edited schema turns them off, never wrong.

_SCHEMA_V1_SHA256 = "4fec138e343ce5b1c4bd99668c4d0c8e05ef0f29b7327e829576739cc2f3d456"
_METHOD = re.compile(r"^[A-Z]+$")  # schema.json's own patterns, applied as jsonschema does (re.search)
_PATH = re.compile(r"^/")
_INTERACTION_KEYS = frozenset({"request", "response", "error", "elapsed_ms"})
_REQUEST_KEYS = frozenset({"method", "host", "path", "query", "headers", "body", "body_text", "body_base64"})
_RESPONSE_KEYS = frozenset({"status", "reason", "headers", "body", "body_text", "body_base64", "events",
                            "truncated"})
_EVENT_KEYS = frozenset({"event", "data", "offset_ms"})
_ERROR_KEYS = frozenset({"kind", "message"})
_ERROR_KINDS = frozenset({"timeout", "disconnect", "connect"})
_BODY_FORMS = ("body", "body_text", "body_base64", "events")


@cache
def _schema_is_v1() -> bool:
    canonical = json.dumps(cassette_schema(), sort_keys=True).encode("utf-8")
    return hashlib.sha256(canonical).hexdigest() == _SCHEMA_V1_SHA256


def _plainly_valid_v1(data: dict[str, Any]) -> bool:
    interactions = data.get("interactions")
    if data.keys() != {"harness", "interactions"} or type(interactions) is not list:
        return False
    # The provenance block is open-ended: what plainly follows its rules passes here; anything else (a
    # `matching:` block, an odd value) is checked by jsonschema on its own, which takes a fraction of a millisecond.
    if not _plain_harness(data["harness"]) and not _validator().is_valid({"harness": data["harness"],
                                                                           "interactions": []}):
        return False
    return all(_plain_interaction(interaction) for interaction in interactions)


_SOURCES = frozenset({"live", "simulator", "imported"})
_TEXT_OR_NULL = ("recorded_at", "endpoint", "sdk_version")


def _text_or_null(value: Any) -> bool:
    return value is None or type(value) is str


def _plain_harness(block: Any) -> bool:
    if type(block) is not dict or "matching" in block or not all(type(key) is str for key in block):
        return False
    version, source = block.get("format_version"), block.get("source")
    if type(version) is not int or version != 1 or type(source) is not str or source not in _SOURCES:
        return False
    if not all(_text_or_null(block[key]) for key in _TEXT_OR_NULL if key in block):
        return False
    if type(block.get("note", "")) is not str:
        return False
    fingerprints = block.get("fingerprints", {})
    if type(fingerprints) is not dict or not all(
            type(name) is str and _text_or_null(value) for name, value in fingerprints.items()):
        return False
    imported_from = block.get("imported_from", {})
    return type(imported_from) is dict and all(
        type(imported_from[key]) is str for key in ("path", "format") if key in imported_from)


def _is_number(value: Any, minimum: float) -> bool:
    return type(value) in (int, float) and value >= minimum


def _plain_headers(headers: Any) -> bool:
    return type(headers) is dict and all(type(value) is str for value in headers.values())


def _one_body_at_most(stored: dict[str, Any]) -> bool:
    return sum(form in stored for form in _BODY_FORMS) <= 1


def _plain_interaction(interaction: Any) -> bool:
    if type(interaction) is not dict or not interaction.keys() <= _INTERACTION_KEYS:
        return False
    if ("response" in interaction) == ("error" in interaction):  # oneOf: exactly one of the two
        return False
    if "elapsed_ms" in interaction and not _is_number(interaction["elapsed_ms"], 0):
        return False
    if not _plain_request(interaction.get("request")):
        return False
    if "response" in interaction:
        return _plain_response(interaction["response"])
    error = interaction["error"]
    return (type(error) is dict and error.keys() <= _ERROR_KEYS and type(error.get("kind")) is str
            and error["kind"] in _ERROR_KINDS and type(error.get("message", "")) is str)


def _plain_request(request: Any) -> bool:
    if type(request) is not dict or not request.keys() <= _REQUEST_KEYS:
        return False
    method, path = request.get("method"), request.get("path")
    return (type(method) is str and _METHOD.search(method) is not None
            and type(path) is str and _PATH.search(path) is not None
            and all(type(request.get(key, "")) is str for key in ("host", "query", "body_text", "body_base64"))
            and ("headers" not in request or _plain_headers(request["headers"]))
            and _one_body_at_most(request))


def _plain_response(response: Any) -> bool:
    if type(response) is not dict or not response.keys() <= _RESPONSE_KEYS:
        return False
    status = response.get("status")
    if type(status) is not int or not 100 <= status <= 599:
        return False
    if not all(type(response.get(key, "")) is str for key in ("reason", "body_text", "body_base64")):
        return False
    if "headers" in response and not _plain_headers(response["headers"]):
        return False
    if type(response.get("truncated", False)) is not bool or not _one_body_at_most(response):
        return False
    events = response.get("events", [])
    return type(events) is list and all(_plain_event(event) for event in events)


def _plain_event(event: Any) -> bool:
    return (type(event) is dict and "data" in event and event.keys() <= _EVENT_KEYS
            and type(event.get("event", "")) is str
            and ("offset_ms" not in event or _is_number(event["offset_ms"], 0)))


def parse_yaml(text: str, *, file: str | Path | None = None, loader: type | None = None) -> Any:
    """YAML through the safe loader (or `loader`, a subclass of it that knows one more harmless tag)."""
    try:
        with _collector_paused():
            data = yaml.load(text, Loader=loader or _SafeLoader)  # a safe loader, C or Python
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
        raise CassetteError(f"not valid YAML: a value cannot be read ({type(err).__name__}: {err})",
                            file=file) from None


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
                raise CassetteError(f"refused: YAML aliases expand this file past {limit:,} nodes (an alias bomb)",
                                    file=file)
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
                stack.append((value, (*path, key)))
        elif isinstance(node, list):
            if len(path) >= MAX_DEPTH:
                raise CassetteError(f"nested more than {MAX_DEPTH} levels deep", file=file, where=json_path(path))
            stack.extend((value, (*path, index)) for index, value in enumerate(node))
        elif not isinstance(node, str | int | float | bool | type(None)):
            what = {"date": "an unquoted date", "datetime": "an unquoted timestamp", "bytes": "!!binary data",
                    "set": "a !!set"}.get(type(node).__name__, f"a YAML {type(node).__name__}")
            raise CassetteError(f"{what} where JSON allows only text, numbers, true/false, null, lists and "
                                "objects; quote it", file=file, where=json_path(path))


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Building a large document makes the cyclic GC rescan everything built so far, again and again (a
    parse of 5,000 interactions spends more than half its time there); none of it is garbage yet."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def read_bytes_bounded(path: Path, limit: int | None = None) -> bytes:
    """A file's bytes, refusing anything over `limit` bytes before reading it."""
    limit = MAX_CASSETTE_BYTES if limit is None else limit
    refuse_symlink_escape(path)  # here, so that every reader (show, eval, serve, scan, import, the plugin) keeps it
    size = regular_file_size(path)
    if size > limit:
        raise CassetteError(f"{size:,} bytes is over the {limit:,}-byte limit for a cassette", file=path)
    with path.open("rb") as handle:
        raw = handle.read(size + 1)
    if len(raw) > size:  # it grew after the stat: some writer is still at it
        raise CassetteError("the file changed while it was read; read it again once it is written", file=path)
    return raw


def regular_file_size(path: Path) -> int:
    """The size of a regular file (symlinks followed). A device (/dev/zero never ends), a named pipe
    (opening it waits for a writer) or a folder is refused before anything opens it."""
    try:
        status = path.stat()
    except FileNotFoundError:
        raise CassetteError("no such cassette", file=absolute(path)) from None
    if not stat.S_ISREG(status.st_mode):
        raise CassetteError("not a regular file (a folder, a device or a pipe); a cassette is a file", file=path)
    return status.st_size


def decode_utf8(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise CassetteError(f"not UTF-8 text (byte {err.start})", file=path, where=f"line {line}") from None


def read_text_bounded(path: Path, limit: int | None = None) -> str:
    """Read a file refusing anything over `limit` bytes or not UTF-8, before it reaches a parser."""
    return decode_utf8(read_bytes_bounded(path, limit), path)


PROJECT_MARKERS = ("pyproject.toml", ".git")  # what makes a folder a project root


def symlink_escape(written: Path, root: Path | None = None) -> Path | None:
    """Where `written` really leads, when it is written as inside a project but a symlink takes it outside.

    The project is `root`, else the nearest folder above `written` (as written, symlinks not followed)
    with a pyproject.toml or .git; with no project there is no rule. A path written as outside the
    project (`../shared/real.yaml`) is allowed: a reviewer sees where it goes.
    """
    absolute = Path(os.path.normpath(written.absolute()))
    if root is None:
        root = _nearest_marked_folder(str(absolute.parent))
        if root is None:
            return None
    root = Path(os.path.normpath(root.absolute()))
    if not absolute.is_relative_to(root):
        return None
    resolved = absolute.resolve()
    return None if resolved.is_relative_to(root.resolve()) else resolved


def _nearest_marked_folder(folder: str) -> Path | None:
    """`folder` or the nearest folder above it with a project marker (os.path: every load of every cassette asks)."""
    while True:
        if any(os.path.exists(os.path.join(folder, marker)) for marker in PROJECT_MARKERS):
            return Path(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def refuse_symlink_escape(path: Path) -> None:
    """The symlink rule, for every reader: a file inside the project may not lead outside it."""
    escape = symlink_escape(path)
    if escape is not None:
        raise CassetteError(f"leads outside the project through a symlink (to {escape}); copy the file into the "
                            "project, or write the path as outside it", file=path)


def load_cassette(path: str | Path) -> CassetteFile:
    path = Path(path)
    raw = read_bytes_bounded(path)
    cache = _ParseCache.configured()
    key = cache.key(raw) if cache is not None and len(raw) >= CACHE_MIN_BYTES else None
    data = cache.get(key) if cache is not None and key is not None else None
    if data is None:
        data = parse_yaml(decode_utf8(raw, path), file=path)
        refuse_what_json_cannot_hold(data, file=path)  # a foreign file's dates are the importer's to convert
        validate(data, file=path)
        if cache is not None and key is not None:
            cache.put(key, data)
    else:
        validate(data, file=path)  # what the cache gives back is checked like what the parser gives
    if any("parts" in interaction["request"] for interaction in data["interactions"]):
        # Large upload parts kept beside the cassette must still be the bytes that were recorded.
        check_part_files(data["interactions"], path, read_bytes_bounded)
    return CassetteFile(meta=data["harness"], interactions=data["interactions"], path=path)


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


# ---------------------------------------------------------------------------------------------------
# The parse cache

CACHE_ENV = "LOOP_HARNESS_CACHE_DIR"  # a folder; set it empty to turn the cache off
# Every file: even a two-request cassette of 5 KB takes libyaml 2 ms to build, the cache 0.1 ms (hash, read,
# json.loads), and a CI suite loads hundreds of them per run (bench/suite.py).
CACHE_MIN_BYTES = 0
CACHE_MAX_BYTES = 512 * 1024 * 1024  # past this the least recently used entries are deleted
_CACHE_FORMAT = 1
_TOUCH_AFTER_SECONDS = 3600  # a hit marks its entry recently used at most this often (one syscall saved per load)
_cache_sizes: dict[Path, int] = {}  # bytes in each cache folder, as last counted plus what this process wrote since


class _ParseCache:
    """Parsed cassettes as JSON, each under the hash of the exact bytes it was parsed from.

    Safe by construction: an entry is found only by the hash of the file's current bytes (an edit
    misses it), is written only after its data validated, is written atomically (temp file, rename),
    names its own key inside (a renamed or truncated entry is ignored), and anything odd about it
    (unreadable, not JSON, wrong key) means the file is parsed as if there were no cache. The key also
    covers the YAML library's version, so a loader upgrade cannot serve data an older one produced.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def configured(cls) -> _ParseCache | None:
        setting = os.environ.get(CACHE_ENV)
        if setting is not None:
            return cls(Path(setting).expanduser()) if setting.strip() else None
        try:
            base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        except RuntimeError:  # no home folder to be found: no cache, not a failed load
            return None
        return cls(Path(base) / "loop-harness" / "parsed-cassettes")

    def key(self, raw: bytes) -> str:
        salt = f"loop-harness parse cache {_CACHE_FORMAT}; PyYAML {yaml.__version__}; {_SafeLoader.__name__}\0"
        digest = hashlib.blake2b(salt.encode("utf-8"), digest_size=32)
        digest.update(raw)
        return digest.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self._entry(key)
        try:
            with entry.open("rb") as handle:
                modified = os.fstat(handle.fileno()).st_mtime
                raw = handle.read()
            with _collector_paused():
                stored = json.loads(raw)
        except (OSError, ValueError, RecursionError):
            return None
        if not (isinstance(stored, dict) and stored.get("key") == key and isinstance(stored.get("data"), dict)):
            return None
        if modified < time.time() - _TOUCH_AFTER_SECONDS:
            with contextlib.suppress(OSError):
                os.utime(entry)  # recently used: pruned last
        return stored["data"]

    def put(self, key: str, data: dict[str, Any]) -> None:
        try:  # ASCII escapes: even a lone surrogate from a YAML escape writes out and reads back
            text = json.dumps({"key": key, "data": data})
        except (TypeError, ValueError):
            return  # YAML gave something JSON has no word for (a date, bytes, a set): parse it each time
        with _collector_paused():
            same = json.loads(text)["data"] == data
        if not same:  # e.g. an integer mapping key, which JSON turns into a string
            return
        with contextlib.suppress(OSError):
            # Not fsynced: an entry is disposable, and one cut short by a crash fails its key check and is
            # written again. The folder is counted (and pruned) on this process's first write and whenever
            # what it wrote since would pass the limit, not on every write: a suite writes hundreds.
            atomic_write_bytes(self._entry(key), text.encode("utf-8"), durable=False)
            counted = _cache_sizes.get(self.folder)
            if counted is None or counted + len(text) > CACHE_MAX_BYTES:
                _cache_sizes[self.folder] = self._prune()
            else:
                _cache_sizes[self.folder] = counted + len(text)

    def _prune(self) -> int:
        """Delete stale temp files and the least recently used entries past the limit; the bytes left."""
        stale = time.time() - 3600
        for leftover in self.folder.glob(".*.tmp"):  # a writer killed between write and rename
            with contextlib.suppress(OSError):
                if leftover.stat().st_mtime < stale:
                    leftover.unlink()
        entries = []
        for entry in self.folder.glob("*.json"):
            with contextlib.suppress(OSError):
                status = entry.stat()
                entries.append((status.st_mtime, status.st_size, entry))
        total = sum(size for _, size, _ in entries)
        for _, size, entry in sorted(entries):
            if total <= CACHE_MAX_BYTES:
                break
            with contextlib.suppress(OSError):
                entry.unlink()
            total -= size
        return total


class _Dumper(_SafeDumper):  # type: ignore[misc, valid-type]
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


def _umask() -> int:
    """The process's umask. Read where Linux shows it, else by setting and restoring it (not thread-safe, so
    only as the fallback)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _file_mode(path: Path) -> int:
    """The mode the written file gets: the old file's when it is replaced, else what open() would give
    (0666 less the umask); mkstemp's 0600 would hide every cassette and report from the rest of a team."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write via a temp file in the same folder, fsync, rename: a reader sees the old file or the new one."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | Path, data: bytes, *, durable: bool = True) -> None:
    """`atomic_write_text` for bytes. `durable=False` leaves the fsyncs out, for files a crash may lose (a cache)."""
    with atomic_writer(path, durable=durable) as handle:
        handle.write(data)


@contextlib.contextmanager
def atomic_writer(path: str | Path, *, durable: bool = True) -> Iterator[BinaryIO]:
    """A file to write in pieces (a streamed document) that appears at `path` whole, or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _file_mode(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    if not durable:
        return
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
    # Large upload parts first, so that the cassette never names a file that is not there yet.
    for part_path, content in externalize_large_parts(cassette.interactions, target).items():
        atomic_write_bytes(part_path, content)
    validate(cassette.to_data(), file=target)
    atomic_write_text(target, dump_cassette(cassette))
    return target
