"""The proxy's journal: each recorded exchange appended as one line beside the cassette, as it ends.

Appending costs the same at the thousandth exchange as at the first (rewriting the whole cassette after
each one grew with its size); the cassette itself is written once, atomically, when the proxy stops,
and the journal is then removed. A proxy killed with SIGKILL leaves the previous cassette untouched and
the journal beside it; the next proxy on that cassette folds the journal in before it starts (a torn last
line, cut by the kill mid-write, is dropped).

Lines are JSON: the first is a header (the record mode and the run's provenance), each other one
`{"position": n, "interaction": {...}}`, the interaction already redacted, so no secret reaches the
disk here either. Lines may arrive out of order (exchanges end on many threads); positions order them.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from harness.files import open_for_append, read_bytes_bounded

JOURNAL_VERSION = 1


def journal_path(cassette: Path) -> Path:
    return cassette.with_name(f".{cassette.name}.journal")


class Journal:
    """Appends lines to the journal of one cassette; the file is created on the first line."""

    def __init__(self, cassette: Path) -> None:
        self.path = journal_path(cassette)
        self._lock = threading.Lock()
        self._handle: Any = None

    def append(self, header: dict[str, Any], position: int, interaction: dict[str, Any]) -> None:
        """Write one exchange durably (flush and fsync); an OSError (a full disk) is the caller's to report."""
        line = json.dumps({"position": position, "interaction": interaction}, ensure_ascii=False)
        with self._lock:
            if self._handle is None:
                # The write path every writer takes: no link out of the project, no FIFO or device.
                handle = open_for_append(self.path)
                try:
                    if handle.tell() == 0:
                        handle.write(json.dumps({"journal": JOURNAL_VERSION, **header},
                                                ensure_ascii=False).encode("utf-8") + b"\n")
                except BaseException:
                    handle.close()
                    raise
                self._handle = handle
            self._handle.write(line.encode("utf-8") + b"\n")
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                with contextlib.suppress(OSError):
                    self._handle.close()
                self._handle = None

    def remove(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def read_journal(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """(header, interactions in position order) of a journal left behind, or None if there is none usable.
    Read as every cassette is (`read_bytes_bounded`): a planted link out of the project, a device (/dev/zero
    never ends) or a FIFO (it waits for a writer) is refused with a CassetteError naming it, before it is read."""
    try:
        lines = read_bytes_bounded(path).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    entries: list[tuple[int, dict[str, Any]]] = []
    header: dict[str, Any] | None = None
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the line a kill cut in half
        if not isinstance(record, dict):
            continue
        if header is None and record.get("journal") == JOURNAL_VERSION:
            header = record
        elif isinstance(record.get("position"), int) and isinstance(record.get("interaction"), dict):
            entries.append((record["position"], record["interaction"]))
    if header is None:
        return None
    return header, [interaction for _, interaction in sorted(entries, key=lambda entry: entry[0])]
