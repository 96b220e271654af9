"""The network block of a replayed test: the egress guard (harness/egress), under the names the plugin had.

While a test may not record, it may reach loopback only, from its process and from any child it starts; a blocked
attempt is a `NetworkBlocked` error naming the host and how to record instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from harness.cassette.modes import record_instead
from harness.egress import EgressBlocked, egress_guard

__all__ = ["NetworkBlocked", "network_blocked"]

NetworkBlocked = EgressBlocked


@contextlib.contextmanager
def network_blocked(mode: str = "none") -> Iterator[None]:
    """Inside, every connection to a host other than loopback raises NetworkBlocked (in a child: is refused)."""
    with egress_guard(f"record mode is {mode!r}, so this test may talk to loopback only. Record with "
                      f"--record-mode={record_instead(mode)} to reach the network."):
        yield
