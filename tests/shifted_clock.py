"""A clock moved forward for a whole process: `python -c "import tests.shifted_clock as c; c.run(DAYS, SCRIPT, ...)"`.

`time.time`, `datetime.datetime.now/utcnow` and `datetime.date.today` are moved DAYS days on before the script is
imported, so code that reads the clock the usual ways sees a later day (libfaketime is not on every machine).
"""

from __future__ import annotations

import datetime
import runpy
import sys
import time


def install(days: float) -> None:
    shift = days * 86400
    real_time = time.time
    real_localtime = time.localtime

    def shifted_time() -> float:
        return real_time() + shift

    def shifted_localtime(seconds: float | None = None) -> time.struct_time:
        return real_localtime(shifted_time() if seconds is None else seconds)

    class ShiftedDatetime(datetime.datetime):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> ShiftedDatetime:  # type: ignore[override]
            return cls.fromtimestamp(shifted_time(), tz)

        @classmethod
        def utcnow(cls) -> ShiftedDatetime:  # type: ignore[override]
            return cls.fromtimestamp(shifted_time(), datetime.UTC).replace(tzinfo=None)

    class ShiftedDate(datetime.date):
        @classmethod
        def today(cls) -> ShiftedDate:  # type: ignore[override]
            return cls.fromtimestamp(shifted_time())

    time.time = shifted_time
    time.localtime = shifted_localtime  # type: ignore[assignment]
    datetime.datetime = ShiftedDatetime  # type: ignore[misc]
    datetime.date = ShiftedDate  # type: ignore[misc]


def run(days: float, script: str, *args: str) -> None:
    install(days)
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")
