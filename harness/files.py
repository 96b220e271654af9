"""Files as every reader and writer of the harness treats them: bounded reads, the symlink rule, atomic writes.

- `read_bytes_bounded` / `read_text_bounded`: a regular file's bytes (or UTF-8 text), refused before it is read
  when it is over a limit, not a regular file (a device, a pipe, a folder), or grows while it is read;
- the symlink rule (`symlink_escape`, `refuse_symlink_escape`): a file written as inside a project may not lead
  outside it through a symlink; every bounded read keeps it;
- `atomic_write_text` / `atomic_write_bytes` / `atomic_writer`: a temp file in the same folder, fsync, rename, so
  a reader sees the old file or the new one, never half of one; the file keeps the mode a plain open() gives;
- the one write path (`write_target`, kept by the atomic writes and `open_for_append`): a write refuses what a
  read refuses, a path a symlink takes out of the project (a linked folder, a dangling link) and a target that
  is not a regular file (a FIFO would hang it, a device swallow it); a link that stays inside is written through;
- `project_roots_remembered`: inside it, the project a folder belongs to is looked up once (the pytest plugin
  opens every test's cassette inside one memo a session), rather than by a walk up to / per cassette.

A foundation: cassettes, goldens, suites, reports, exports and the servers all read and write through it.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from harness.errors import CassetteError, HarnessError, absolute


def read_bytes_bounded(path: Path, limit: int | None = None) -> bytes:
    """A file's bytes, refusing anything over `limit` bytes before reading it."""
    limit = MAX_READ_BYTES if limit is None else limit
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


MAX_READ_BYTES = 64 * 1024 * 1024  # the default limit of a bounded read (a cassette's too)

PROJECT_MARKERS = ("pyproject.toml", ".git")  # what makes a folder a project root


# folder -> its project root (or None), per kind of lookup, while a memo is in use (`project_roots_remembered`).
RootMemo = dict[tuple[str, str], Path | None]
_root_memo: contextvars.ContextVar[RootMemo | None] = contextvars.ContextVar("project_root_memo", default=None)


@contextlib.contextmanager
def project_roots_remembered(memo: RootMemo) -> Iterator[None]:
    """Inside, each folder's project root is looked up once per `memo` and remembered there.

    For a caller that opens many files of one tree in one run (the pytest plugin: one memo a session): a walk
    up to / costs 0.1-0.3 ms per cassette when no folder above holds a marker. The price: a pyproject.toml
    or .git created in the run, above a folder already asked about, is not seen until the memo is dropped.
    """
    token = _root_memo.set(memo)
    try:
        yield
    finally:
        _root_memo.reset(token)


def remembered_root(kind: str, folder: str, find: Callable[[str], Path | None]) -> Path | None:
    """`find(folder)`, or what it gave for this `kind` and `folder` before, inside `project_roots_remembered`."""
    memo = _root_memo.get()
    if memo is None:
        return find(folder)
    key = (kind, folder)
    if key not in memo:
        memo[key] = find(folder)
    return memo[key]


def symlink_escape(written: Path, root: Path | None = None) -> Path | None:
    """Where `written` really leads, when it is written as inside a project but a symlink takes it outside.

    The project is `root`, else the nearest folder above `written` (as written, symlinks not followed)
    with a pyproject.toml or .git; with no project there is no rule. A path written as outside the
    project (`../shared/real.yaml`) is allowed: a reviewer sees where it goes.
    """
    absolute = Path(os.path.normpath(written.absolute()))
    if root is None:
        root = remembered_root("marked", str(absolute.parent), _nearest_marked_folder)
        if root is None:
            return None
    root = Path(os.path.normpath(root.absolute()))
    if not absolute.is_relative_to(root):
        return None
    resolved = absolute.resolve()  # never remembered: where the file itself leads is read on every load
    real_root = remembered_root("resolved", str(root), lambda folder: Path(folder).resolve())
    return None if real_root is None or resolved.is_relative_to(real_root) else resolved


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
        raise CassetteError(
            f"leads outside the project through a symlink (to {escape}); copy the file into the "
            "project, or write the path as outside it",
            file=path,
        )


def write_target(path: str | Path) -> Path:
    """Where a write to `path` really goes, under the read path's rules: refused (HarnessError naming the file) when
    a symlink takes it out of the project (`symlink_escape`, a dangling link included) or when something that is
    not a regular file is there; else the real path, so a link that stays inside keeps linking to what is written."""
    path = Path(path)
    escape = symlink_escape(path)
    if escape is not None:
        raise HarnessError(f"not written: it leads outside the project through a symlink (to {escape}); remove the "
                           "link, or write the path as outside the project", file=path)
    target = Path(os.path.realpath(path))
    try:
        status = os.lstat(target)
    except FileNotFoundError:
        return target
    except NotADirectoryError:
        raise HarnessError("not written: a folder on its path is a file", file=path) from None
    if not stat.S_ISREG(status.st_mode):
        raise HarnessError("not written: something that is not a regular file (a folder, a device or a pipe) is "
                           "there", file=path)
    return target


def open_for_append(path: str | Path) -> BinaryIO:
    """A regular file opened to append to (created 0666 less the umask), under `write_target`'s rules; the last
    component is opened without following a link (O_NOFOLLOW) and checked again once open, so a link or a FIFO
    planted between the check and the open is refused too."""
    target = write_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(target, flags | getattr(os, "O_BINARY", 0), 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise HarnessError("not written: it is a symlink", file=path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise HarnessError("not written: not a regular file (a device or a pipe)", file=path)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab")


def _existing_mode(path: Path) -> int | None:
    """The mode of the file being replaced, which the new one keeps; None for a new file."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return None


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temp file in `path`'s folder, opened for writing. Created with 0666, so the kernel applies the umask
    and it gets the mode a plain open() gives (mkstemp's 0600 would hide every cassette and report from the rest
    of a team), without reading the umask on every write."""
    for _ in range(100):
        name = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temp file name beside {path}")


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
    path = write_target(path)  # never through a link out of the project, never into a FIFO or a device
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _existing_mode(path)
    try:
        fd, tmp_name = _temp_beside(path)
    except OSError as err:  # a read-only or full disk: named by the file meant, not by its temp
        raise OSError(err.errno, err.strerror or str(err), str(path)) from err
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        if isinstance(err, OSError) and err.filename in (None, tmp_name):  # name the file meant, not its temp
            raise OSError(err.errno, err.strerror or str(err), str(path)) from err
        raise
    if not durable:
        return
    with contextlib.suppress(OSError):  # make the rename itself durable where the OS allows it
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
