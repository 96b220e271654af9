"""The recording lock: one writer of a cassette at a time, across threads and processes.

`use_cassette` in a record mode and `harness proxy` both hold it for as long as they may write (both take it
through `harness.cassette.storage.recording_turn`, the one place that decides when it is needed), so two
recorders of one cassette (xdist workers, two terminals, a proxy and a test) take turns, whole runs at a
time. The holder writes who it is beside the lock; a waiter says who holds it after `NOTICE_AFTER`
seconds, and gives up after `timeout` seconds with an error that names the holder. Lock files live
outside the project, so they never show up in a diff: in a folder of this user's own (`lock_folder`,
`$XDG_RUNTIME_DIR/loop-harness-locks-UID` or `TMP/loop-harness-locks-UID`), made 0700 and checked before
each use, because the temp folder is shared: a folder there that another user made, or that the group or
the world may write to, is refused in one line (someone else could plant a link where we write, or read
what we leave). The holder file is opened without following a link, 0600, and says only the program
and its subcommand (never the arguments: a URL with a password in it, a key), the pid and since when.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
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


def lock_folder() -> Path:
    """This user's lock folder, made 0700 if it is not there; refused (CassetteError, one line) when what is there is
    a link, not a folder, another user's, or writable by the group or the world."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    # XDG_RUNTIME_DIR when it is ours to write in (sudo may keep another user's), else the temp folder.
    usable = os.path.isabs(runtime) and os.path.isdir(runtime) and os.access(runtime, os.W_OK | os.X_OK)
    base = Path(runtime) if usable else Path(tempfile.gettempdir())
    folder = base / f"loop-harness-locks-{uid if uid is not None else 'user'}"
    try:
        os.mkdir(folder, 0o700)  # never follows a link: a planted one makes this fail, and lstat below refuse it
    except FileExistsError:
        pass
    except OSError as err:  # a temp folder we may not write in: one line, not a traceback
        raise CassetteError(f"the recording lock folder cannot be made: {err.strerror}; set TMPDIR to a folder of "
                            "your own", file=folder) from None
    if uid is None:  # no owners to check (Windows): the folder is in the user's own temp folder there
        return folder
    status = os.lstat(folder)
    problem = (
        "it is a symlink" if stat.S_ISLNK(status.st_mode)
        else "it is not a folder" if not stat.S_ISDIR(status.st_mode)
        else f"it belongs to another user (uid {status.st_uid})" if status.st_uid != uid
        else f"the group or others may write to it (mode {stat.S_IMODE(status.st_mode):o})"
        if status.st_mode & 0o022 else None
    )
    if problem is not None:
        raise CassetteError(f"the recording lock folder is not safe to use: {problem}. Remove it (a new one is made, "
                            "0700), or set XDG_RUNTIME_DIR or TMPDIR to a folder of your own", file=folder)
    return folder


def lock_path(path: Path) -> str:
    folder = lock_folder()
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
    return str(folder / f"{digest}.lock")


def default_timeout() -> float:
    """`HARNESS_LOCK_TIMEOUT` when set to a number of seconds, else DEFAULT_TIMEOUT."""
    try:
        return float(os.environ[TIMEOUT_ENV])
    except (KeyError, ValueError):
        return DEFAULT_TIMEOUT


_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


def program_named() -> str:
    """How this process is named to a waiter: the program and its subcommand words (`harness proxy`, `pytest`),
    never its other arguments, which may hold a password in a URL or a key."""
    words = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"]
    for arg in sys.argv[1:3]:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,30}", arg):
            break
        words.append(arg)
    return " ".join(words)


def _write_holder(path: Path, text: str) -> None:
    """The holder file, written afresh: O_NOFOLLOW and 0600, so a link planted there is refused (OSError)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a new file each time: O_EXCL below then never opens what someone else left
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _holder_file(lock: str) -> Path:
    return Path(lock + ".holder")


def describe_holder(lock: str) -> str:
    """Who holds the lock, as they wrote it when they took it (pid, command, since when)."""
    try:
        fd = os.open(_holder_file(lock), os.O_RDONLY | _NO_FOLLOW | getattr(os, "O_NONBLOCK", 0))
        try:
            holder = json.loads(os.read(fd, 4096))
        finally:
            os.close(fd)
        return f"pid {holder['pid']} ({holder['command']}, since {holder['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another recorder (it did not say who it is)"


class RecordingLock:
    """`acquire()` waits its turn (saying who is ahead after a second) or raises CassetteError; `release()`."""

    def __init__(self, cassette: str | Path, *, timeout: float | None = None, who: str | None = None,
                 notice: Callable[[str], None] | None = None) -> None:
        self.cassette = Path(cassette)
        self.timeout = default_timeout() if timeout is None else float(timeout)
        self.who = (who or program_named())[:200]
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
            _write_holder(_holder_file(self._path), json.dumps({"pid": os.getpid(), "command": self.who,
                                                               "since": since}))
        return self

    def release(self) -> None:
        with contextlib.suppress(OSError):
            _holder_file(self._path).unlink()
        self._lock.release()

    def __enter__(self) -> RecordingLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
