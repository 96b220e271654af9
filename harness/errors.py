"""Errors a person can act on: each names the file, the place in it, and what is wrong.

`HarnessError` and its subclasses are bad input (exit 2 from the CLI). Check failures are not
errors at all: they are `CheckResult` data.
"""

from __future__ import annotations

import os
from pathlib import Path


class HarnessError(Exception):
    """Bad input: a file that cannot be used, with the place in it and the reason."""

    def __init__(self, reason: str, *, file: str | Path | None = None, where: str | None = None) -> None:
        self.reason = reason
        self.file = str(file) if file is not None else None
        self.where = where
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.file:
            parts.append(self.file)
        if self.where:
            parts.append(self.where)
        prefix = ": ".join(parts)
        return f"{prefix}: {self.reason}" if prefix else self.reason


class CassetteError(HarnessError):
    """A cassette file that is missing, corrupt, hostile or not of our format."""


class GoldenError(HarnessError):
    """A golden fixture or eval suite that does not follow its schema."""


def absolute(path: str | Path) -> str:
    """The path a not-found error prints: absolute, so the reader sees where it was looked for."""
    return os.path.abspath(path)


def os_error_line(err: OSError) -> str:
    """An OSError as the one line the CLI prints (exit 2): the file and the system's reason, never a traceback.
    A disk that is full or read-only, a folder that cannot be made, a path too long: the user's to fix."""
    reason = err.strerror or str(err) or type(err).__name__
    files = [str(name) for name in (err.filename, err.filename2) if name is not None]
    return f"{' -> '.join(files)}: {reason}" if files else reason
