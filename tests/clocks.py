"""A fake clock for the servers under test (`Simulator(clock=...)`, the `time` of `harness.httpserver.answers`):
nothing waits for real, and a test can hold a sleeping server for as long as it needs."""

from __future__ import annotations

import threading

HOLD_LIMIT = 60.0  # seconds a held sleep waits for `release` at most, so a test that fails never leaves it hanging


class FakeClock:
    """Stands in for the `time` module: `monotonic` moves only when something sleeps.

    A sleep records its length and returns at once; with `hold=True` it waits until the test calls
    `release()` (a server silent past its client's timeout), or `hold_limit` seconds. `sleeping` is set when a
    sleep begins: the signal that the request which meets it has arrived and is being held.
    """

    def __init__(self, *, now: float = 100.0, hold: bool = False, hold_limit: float = HOLD_LIMIT) -> None:
        self.now = now
        self.hold_limit = hold_limit
        self.sleeps: list[float] = []
        self.sleeping = threading.Event()
        self._released = threading.Event()
        if not hold:
            self._released.set()
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(round(seconds, 6))
        self.sleeping.set()
        self._released.wait(self.hold_limit)
        with self._lock:
            self.now += seconds

    def release(self) -> None:
        """Let every held sleep (and every later one) return."""
        self._released.set()
