"""A test's failure as one screen, with no SDK or httpx2 frames: a replay miss (the cassette, the request's
position and the diff first, then the line of the test that led to it), a file the harness cannot use (the
file, the place, what to do), a recording with no key (the one line that says both ways out).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest


def mismatch_in(error: BaseException | None) -> Any:
    """The CassetteMismatch that `error` is or was raised from, if any (an agent may wrap it)."""
    recorder = sys.modules.get("harness.cassette.recorder")  # not loaded: no cassette, so no mismatch
    seen = 0
    while recorder is not None and error is not None and seen < 20:
        if isinstance(error, recorder.CassetteMismatch):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


def line_of_test(item: pytest.Item, error: BaseException | None) -> str:
    """The line of the test that led to the request, from the traceback (the SDK's frames are left out)."""
    test_file = str(item.path)
    traceback = error.__traceback__ if error is not None else None
    line = None
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == test_file:
            line = traceback.tb_lineno
        traceback = traceback.tb_next
    return f"\n(in {item.path.name}:{line})" if line is not None else ""


def miss_failure(item: pytest.Item, active: Any, raised: BaseException | None) -> BaseException | None:
    """A miss as one screen (a `pytest.fail.Exception`; pytest's public API names no type for it): the cassette,
    the request's position and the diff first, no SDK or httpx2 frames.

    A loop that catches the error and ends its run on it (harness.run_loop does) still fails the test here,
    with the miss rather than a puzzling assertion about the run's outcome.
    """
    mismatch, tool = mismatch_in(raised), "python"  # the test's own use_cassette: its keywords
    if active is not None and active.misses:
        mismatch, tool = active.misses[0], "pytest"  # the marker's cassette: pytest's flags
    if mismatch is None:
        return None
    return pytest.fail.Exception(mismatch.describe(tool) + line_of_test(item, raised), pytrace=False)


def next_step(error: BaseException) -> str:
    from harness.errors import CassetteError

    if isinstance(error, CassetteError) and error.file:
        return ("\nFix the file, or record it afresh: pytest --record-mode=rewrite "
                "(or use_cassette(..., mode='rewrite')).")
    return ""



def missing_credential(error: BaseException | None) -> BaseException | None:
    """The MissingCredential that `error` is or was raised from, if any (the SDK or an agent may wrap it)."""
    transport = sys.modules.get("harness.cassette.transport")
    seen = 0
    while transport is not None and error is not None and seen < 20:
        if isinstance(error, transport.MissingCredential):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


def bad_input_failure(item: pytest.Item, error: BaseException) -> BaseException | None:
    """A file the harness cannot use (a corrupt cassette or golden the test opened itself) as one screen (a
    `pytest.fail.Exception`): the file, the place, what to do, and the test's line; no traceback through the
    harness."""
    errors = sys.modules.get("harness.errors")  # not loaded: no harness error was raised
    if errors is None or not isinstance(error, errors.HarnessError):
        return None
    return pytest.fail.Exception(f"{error}{next_step(error)}{line_of_test(item, error)}", pytrace=False)
