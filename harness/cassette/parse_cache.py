"""The parse cache: the parsed data of each cassette file, as JSON, under the hash of the file's bytes.

Even libyaml builds every node in Python, so a large cassette parses some 20 times slower than the same data as
JSON, and a small one costs milliseconds a CI suite pays per test. The file is read and hashed on every load and
stays the only source of truth; what comes out of the cache is validated exactly like what comes out of the
parser (harness.cassette.format.load_cassette).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import yaml

from harness.files import atomic_write_bytes
from harness.safe_yaml import SafeLoader, collector_paused

CACHE_ENV = "LOOP_HARNESS_CACHE_DIR"  # a folder; set it empty to turn the cache off


# Every file: even a two-request cassette of 5 KB takes libyaml 2 ms to build, the cache 0.1 ms (hash, read,
# json.loads), and a CI suite loads hundreds of them per run (bench/suite.py).
CACHE_MIN_BYTES = 0


CACHE_MAX_BYTES = 512 * 1024 * 1024  # past this the least recently used entries are deleted


# 2: the fast reader no longer turns a `"\ud800"` escape into a lone surrogate (the file is refused), so an entry
# made before holds data no load gives now.
_CACHE_FORMAT = 2


_TOUCH_AFTER_SECONDS = 3600  # a hit marks its entry recently used at most this often (one syscall saved per load)


_cache_sizes: dict[Path, int] = {}  # bytes in each cache folder, as last counted plus what this process wrote since


class ParseCache:
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
    def configured(cls) -> ParseCache | None:
        setting = os.environ.get(CACHE_ENV)
        if setting is not None:
            return cls(Path(setting).expanduser()) if setting.strip() else None
        try:
            base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        except RuntimeError:  # no home folder to be found: no cache, not a failed load
            return None
        return cls(Path(base) / "loop-harness" / "parsed-cassettes")

    def key(self, raw: bytes) -> str:
        salt = f"loop-harness parse cache {_CACHE_FORMAT}; PyYAML {yaml.__version__}; {SafeLoader.__name__}\0"
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
            with collector_paused():
                stored = json.loads(raw)
        except (OSError, ValueError, RecursionError):
            return None
        if not (isinstance(stored, dict) and stored.get("key") == key and isinstance(stored.get("data"), dict)):
            return None
        if modified < time.time() - _TOUCH_AFTER_SECONDS:
            with contextlib.suppress(OSError):
                os.utime(entry)  # recently used: pruned last
        return stored["data"]

    def put(self, key: str, data: dict[str, Any], *, json_only: bool = False) -> None:
        """Store `data`; `json_only` says it holds JSON's types only (the fast reader's), so it reads back
        equal without the round trip that checks it (a third of a cold load)."""
        try:  # ASCII escapes: even a lone surrogate from a YAML escape writes out and reads back
            text = json.dumps({"key": key, "data": data})
        except (TypeError, ValueError):
            return  # YAML gave something JSON has no word for (a date, bytes, a set): parse it each time
        if not json_only:
            with collector_paused():
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
