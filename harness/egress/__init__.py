"""The egress guard: while a run may not record, nothing it starts reaches a host other than loopback.

Internal package: the public names are in `harness`. `egress_guard(hint)` is the one entry, used by
`use_cassette` in the modes that may not record and by the pytest plugin around a replayed test; usable by
anything else that replays. Loopback (127/8, ::1, localhost, unix sockets) stays open: tests, `harness sim` and
`harness serve` live there.

- `guard`: the audit hook of this process and the environment of its children (stdlib only: a child loads it);
- `refuser`: the loopback HTTP proxy the children's proxy variables point at, refusing every request by name;
- `child/`: what a child loads, `sitecustomize.py` for Python (multiprocessing `spawn` too) and
  `egress-guard.js` for node.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from harness.egress.guard import EgressBlocked, active, guarded, hint, is_loopback, set_proxy
from harness.egress.refuser import Refuser

__all__ = ["EgressBlocked", "active", "egress_guard", "is_loopback", "refuser"]

_started: list[Refuser] = []
_lock = threading.Lock()


def refuser() -> Refuser:
    """The process's refuser, started on first use (a daemon thread on a loopback port)."""
    with _lock:
        if not _started:
            _started.append(Refuser(hint))
            set_proxy(_started[0].url)
        return _started[0]


@contextlib.contextmanager
def egress_guard(hint_text: str) -> Iterator[None]:
    """Inside, any request to a host other than loopback, from this process or a child it starts, is refused:
    here as EgressBlocked ("loop-harness blocked a connection to HOST:PORT: " + `hint_text`), in a child by its
    own guard or the refuser. `hint_text` says how to record instead."""
    refuser()
    with guarded(hint_text):
        yield
