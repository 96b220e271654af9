"""The recording lock: one writer of a cassette at a time, across threads and processes.

`use_cassette` in a record mode and `harness proxy` both hold it for as long as they may write (both take it
through `harness.cassette.storage.recording_turn`, the one place that decides when it is needed), so two
recorders of one cassette (xdist workers, two terminals, a proxy and a test) take turns, whole runs at a
time. The holder writes who it is beside the lock; a waiter says who holds it after `NOTICE_AFTER`
seconds, and gives up after `timeout` seconds with an error that names the holder. Lock files live in
the temp folder, not beside the cassette, so they never show up in a diff.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from harness.errors import CassetteError

DEFAULT_TIMEOUT = 300.0  # seconds; a whole recorded run may be ahead of us in the queue
TIMEOUT_ENV = "HARNESS_LOCK_TIMEOUT"
NOTICE_AFTER = 1.0  # seconds of waiting before we say who holds the lock


def lock_path(path: Path) -> str:
    folder = Path(tempfile.gettempdir()) / "loop-harness-locks"
    folder.mkdir(exist_ok=True)
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
    return str(folder / f"{digest}.lock")


def default_timeout() -> float:
    """`HARNESS_LOCK_TIMEOUT` when set to a number of seconds, else DEFAULT_TIMEOUT."""
    try:
        return float(os.environ[TIMEOUT_ENV])
    except (KeyError, ValueError):
        return DEFAULT_TIMEOUT


def _holder_file(lock: str) -> Path:
    return Path(lock + ".holder")


def describe_holder(lock: str) -> str:
    """Who holds the lock, as they wrote it when they took it (pid, command, since when)."""
    try:
        holder = json.loads(_holder_file(lock).read_text(encoding="utf-8"))
        return f"pid {holder['pid']} ({holder['command']}, since {holder['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another recorder (it did not say who it is)"


class RecordingLock:
    """`acquire()` waits its turn (saying who is ahead after a second) or raises CassetteError; `release()`."""

    def __init__(self, cassette: str | Path, *, timeout: float | None = None, who: str | None = None,
                 notice: Callable[[str], None] | None = None) -> None:
        self.cassette = Path(cassette)
        self.timeout = default_timeout() if timeout is None else float(timeout)
        self.who = who or " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:200] or "python"
        self._notice = notice or (lambda line: print(line, file=sys.stderr, flush=True))
        self._path = lock_path(self.cassette)
        import filelock  # here, not at the top: only a recording takes the lock, and a replay session saved 12 ms

        self._lock = filelock.FileLock(self._path, thread_local=False)

    def acquire(self) -> RecordingLock:
        import filelock

        started = time.monotonic()
        try:
            self._lock.acquire(timeout=min(NOTICE_AFTER, self.timeout))
        except filelock.Timeout:
            self._notice(f"harness: waiting for the recording lock of {self.cassette}: it is held by "
                         f"{describe_holder(self._path)}; giving up after {self.timeout:g} s")
            try:
                self._lock.acquire(timeout=max(0.0, self.timeout - (time.monotonic() - started)))
            except filelock.Timeout:
                raise CassetteError(
                    f"another recorder holds this cassette's recording lock: {describe_holder(self._path)}; "
                    f"gave up after {self.timeout:g} s. Stop it, or wait longer with lock_timeout= "
                    f"(--lock-timeout, or {TIMEOUT_ENV})", file=self.cassette) from None
        with contextlib.suppress(OSError):  # who we are is a courtesy to waiters, never a reason to fail
            since = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
            _holder_file(self._path).write_text(json.dumps({"pid": os.getpid(), "command": self.who,
                                                            "since": since}), encoding="utf-8")
        return self

    def release(self) -> None:
        with contextlib.suppress(OSError):
            _holder_file(self._path).unlink()
        self._lock.release()

    def __enter__(self) -> RecordingLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
