"""What `use_cassette` says as its block ends: no miss and no unplayed recording goes unsaid.

An agent framework may catch the error of a miss and carry on (agno returns the `CassetteMismatch` as the run's
content; a loop may end its run on it), so the script exits 0 and nothing says the replay went wrong. And a
recording the run never asked for means the code no longer does what was recorded. So, as the block ends:

- after a miss the code swallowed, the first miss is raised again (`on_miss="fail"`, the default), with its diff;
  `"warn"` warns with it instead, `"ignore"` says nothing;
- recorded interactions never played, in a replay (the modes that may not record), warn (`on_unplayed="warn"`,
  the default), fail with `UnplayedInteractions` (`"fail"`), or are left unsaid (`"ignore"`);
- a block that ends on an error of its own keeps it; a swallowed miss is added to it as a note, since it is
  likely the cause (an assertion on a run that had no answer).

The pytest plugin judges its tests itself (a miss fails the test, unplayed recordings fail it unless the marker
says otherwise), so its cassettes are opened with both set to "ignore" and nothing is said twice.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal, TypeGuard

from harness.errors import CassetteError

Verdict = Literal["fail", "warn", "ignore"]
VERDICTS: tuple[str, ...] = ("fail", "warn", "ignore")


class UnplayedWarning(UserWarning):
    """A replay ended with recorded interactions it never asked for."""


class MissWarning(UserWarning):
    """A replay ended after a request with no recording, which the code inside swallowed (`on_miss="warn"`)."""


class UnplayedInteractions(CassetteError):
    """A replay ended with recorded interactions it never asked for (`on_unplayed="fail"`)."""


def is_verdict(value: object) -> TypeGuard[Verdict]:
    return value in VERDICTS


def checked(option: str, value: object, path: Any) -> Verdict:
    """`value` as given for `on_miss` / `on_unplayed`, or a CassetteError naming the option and the file."""
    if not is_verdict(value):
        raise CassetteError(f"unknown {option} {value!r}; use one of {', '.join(VERDICTS)}", file=path)
    return value


def unplayed_message(path: Any, unplayed: list[int], *, hint: str) -> str:
    """"PATH: 2 recorded interactions were never played (#2, #3). HINT" (the plugin's words too)."""
    numbers = ", ".join(f"#{position + 1}" for position in unplayed[:10]) + (", ..." if len(unplayed) > 10 else "")
    were = "interaction was" if len(unplayed) == 1 else "interactions were"
    return f"{path}: {len(unplayed)} recorded {were} never played ({numbers}). {hint}"


_UNPLAYED_HINT = ("The run no longer makes these requests: re-record (use_cassette(..., mode='rewrite')), or pass "
                  "on_unplayed='ignore' if the run may stop early.")


def judge(cassette: Any, *, on_miss: Verdict, on_unplayed: Verdict, raised: BaseException | None) -> None:
    """Say what the block left unsaid, as the options ask (see the module's docstring)."""
    misses = cassette.misses
    if raised is not None:
        if misses and on_miss != "ignore" and not _comes_from(raised, misses[0]):
            raised.add_note(f"loop-harness: before this error a request had no recording (the code caught it):\n"
                            f"{misses[0]}")
        return
    if misses and on_miss == "fail":
        raise misses[0]
    if misses and on_miss == "warn":
        warnings.warn(str(misses[0]), MissWarning, stacklevel=3)
    if not cassette.write_protected or on_unplayed == "ignore" or misses:
        return  # after a miss, the recordings it left unplayed say nothing more
    unplayed = cassette.unplayed
    if not unplayed:
        return
    message = unplayed_message(cassette.path, unplayed, hint=_UNPLAYED_HINT)
    if on_unplayed == "fail":
        raise UnplayedInteractions(message)
    warnings.warn(message, UnplayedWarning, stacklevel=3)


def _comes_from(error: BaseException | None, miss: BaseException) -> bool:
    """Whether `error` is the miss, or was raised from it (a framework may wrap it)."""
    seen = 0
    while error is not None and seen < 20:
        if error is miss:
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False
