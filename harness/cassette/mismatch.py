"""`CassetteMismatch`: a request the cassette has no recording for, as an error a person can act on.

It names the cassette, the request's place in the run, the kind of change (harness.cassette.drift) and a diff
against the nearest recorded request, and ends with the way out in the words of the tool in use: re-recording,
or where only tool output changed, the rule that makes it replay (harness.cassette.way_out), and re-recording
only where it could help.
An `anthropic.AnthropicError`, so that the SDK neither wraps it into "Connection error." nor retries it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anthropic

from harness.cassette.drift import Drift
from harness.cassette.way_out import WayOut

# What to do about a miss, in the words of the tool the user is running: its own flags, never another's.
HINTS: dict[str, dict[str, str]] = {
    "python": {
        "miss": "If the change is intended, re-record: use_cassette(..., mode='rewrite'), or mode='new_episodes' "
                "to keep what still matches.",
        "repeat": "Pass allow_repeats=True to use_cassette to serve a recording again.",
    },
    "pytest": {
        "miss": "If the change is intended, re-record: pytest --record-mode=rewrite, or --record-mode=new_episodes "
                "to keep what still matches.",
        "repeat": "Mark the test @pytest.mark.cassette(allow_repeats=True) to serve a recording again.",
    },
    "proxy": {
        "miss": "If the change is intended, re-record: harness proxy --mode rewrite, or --mode new_episodes to keep "
                "what still matches.",
        "repeat": "harness proxy --mode new_episodes records it again.",
    },
    "serve": {
        "miss": "If the change is intended, re-record through harness proxy --mode rewrite (or --mode new_episodes "
                "to keep what still matches).",
        "repeat": "Start harness serve with --allow-repeats to serve a recording again.",
    },
}


class CassetteMismatch(anthropic.AnthropicError):
    """A request that the cassette has no recording for, in a mode that may not record it."""

    def __init__(
        self,
        *,
        cassette_path: Path,
        position: int,
        method: str,
        path: str,
        reason: str,
        nearest_position: int | None = None,
        differences: Sequence[str] = (),
        change: Drift | None = None,
        repeated: bool = False,
        way_out: WayOut | None = None,
    ) -> None:
        self.cassette_path = cassette_path
        self.position = position
        self.method = method
        self.path = path
        self.reason = reason
        self.nearest_position = nearest_position
        self.differences = list(differences)
        # The kind of change (harness.cassette.drift): which edit this miss comes from.
        self.change = change
        self.kind = change.kind if change is not None else None
        self.repeated = repeated  # every recording of it was played already (not a changed request)
        self.way_out = way_out  # only tool output changed: the rule that makes it replay (harness.cassette.way_out)
        super().__init__(self.describe("python"))

    def describe(self, tool: str = "python") -> str:
        """The message, its hint naming the flags of `tool` (python, pytest, proxy or serve)."""
        lines = [f"{self.cassette_path}: request #{self.position + 1} ({self.method} {self.path}) {self.reason}"]
        if self.change is not None and self.change.changes:
            lines.append(f"Kind of change: {self.change.summary()}")
        if self.nearest_position is not None and self.differences:
            lines.append(f"Nearest recorded request is #{self.nearest_position + 1}; what changed (recorded -> now):")
            lines.extend(f"  - {line}" for line in self.differences)
        if self.way_out is not None:
            lines.extend(self.way_out.lines(tool))
        if self.way_out is None or self.way_out.rerecording_helps:
            lines.append(HINTS[tool]["repeat" if self.repeated else "miss"])
        return "\n".join(lines)
