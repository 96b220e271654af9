"""Record modes and the placeholder credential of replay: what the pytest plugin needs before any test runs.

Kept apart from the recorder so that loading the plugin (every pytest session) does not import the
anthropic SDK, httpx2 or vcrpy; they load when a test first uses a cassette.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Literal, TypeGuard

Mode = Literal["none", "once", "new_episodes", "all", "rewrite", "fork"]
MODES: tuple[str, ...] = ("none", "once", "new_episodes", "all", "rewrite", "fork")


def is_mode(value: object) -> TypeGuard[Mode]:
    """Whether `value` names a record mode: what a config file, a marker or a journal holds is checked here."""
    return value in MODES


# -- what the modes mean: each question asked once, here ------------------------------------------------------
def replays(mode: str) -> bool:
    """Whether a run in `mode` answers requests from the recordings (all and rewrite send every request)."""
    return mode in ("none", "once", "new_episodes", "fork")


def write_protected(mode: str, existed: bool) -> bool:
    """Whether a run in `mode` may never write the cassette (`existed`: the file was there when the run began)."""
    return mode == "none" or (mode == "once" and existed)


def may_record(mode: str) -> bool:
    """Whether a run in `mode` may write the cassette, so takes its recording lock. `once` takes it even when the
    file exists: a recorder ahead of it may be writing the file it is about to replay."""
    return mode != "none"


def record_instead(mode: str) -> str:
    """The mode to run in to record what a run in `mode` (one that may not record) refused to send."""
    return "once (or new_episodes)" if mode == "none" else "new_episodes (or rewrite)"


# How far each mode may go beyond replaying, least first: fork re-records only from the first divergence, all
# sends every request but keeps what it does not renew, rewrite starts the file afresh.
_LATITUDE = {"none": 0, "once": 1, "new_episodes": 2, "fork": 3, "all": 4, "rewrite": 5}


def asks_more(run: str, asked: str | None) -> bool:
    """Whether a test asking for mode `asked` (its marker, harness_config) asks for more than the run's `run`."""
    return asked in _LATITUDE and _LATITUDE[asked] > _LATITUDE.get(run, 0)


def strictest(run: str, asked: str | None) -> str:
    """The mode a test runs in: the run's (--record-mode: the command line, CI), unless the test asks for a
    stricter one. Recording is opt-in per run, never per file: asking for more than the run allows gets the run's
    mode. A value that names no mode is passed on, for the cassette to refuse naming its file."""
    if asked is None or asked == run:
        return run
    if asked not in _LATITUDE:
        return asked
    return run if asks_more(run, asked) else asked

# A run that may not record (a pytest run in mode none: CI) pushes its hint here for as long as it lasts; while
# one is pushed, a `use_cassette` block that asks to record, as code a test runs itself may, reaches loopback only
# (harness sim records as before; the API is refused, naming the way to record). Recording stays chosen per run.
_RUNS_THAT_REPLAY: list[str] = []


@contextlib.contextmanager
def run_that_replays(hint: str) -> Iterator[None]:
    """While inside, this process's run may not record beyond loopback: `hint` says how to record instead."""
    _RUNS_THAT_REPLAY.append(hint)
    try:
        yield
    finally:
        _RUNS_THAT_REPLAY.remove(hint)


def replaying_run() -> str | None:
    """The hint of the run that may not record, while one is on (see `run_that_replays`); else None."""
    return _RUNS_THAT_REPLAY[-1] if _RUNS_THAT_REPLAY else None


# Sent nowhere: in replay every request is answered from the cassette. It only lets the SDK build a client.
PLACEHOLDER_API_KEY = "replay-key-not-a-secret"
_CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


@contextlib.contextmanager
def placeholder_credential() -> Iterator[None]:
    """Set ANTHROPIC_API_KEY to a placeholder while inside, when no credential is set, so that a client
    built in a replay (CI has no key) can be made; a credential that is set is left alone."""
    if any(os.environ.get(name) for name in _CREDENTIAL_VARIABLES):
        yield
        return
    previous = os.environ.get("ANTHROPIC_API_KEY")
    os.environ["ANTHROPIC_API_KEY"] = PLACEHOLDER_API_KEY
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("ANTHROPIC_API_KEY", None)
        else:
            os.environ["ANTHROPIC_API_KEY"] = previous
