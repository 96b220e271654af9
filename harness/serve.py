"""`harness serve`: replay cassettes over HTTP, so that any client (the TypeScript SDK, curl, another
language's SDK) can run against a recording with no network.

Matching is the Python replay client's, through the same `Cassette.lookup`/`play`: method, path, query
and canonical body; identical requests are served in recorded order. Several cassettes can be served at
once: a request is matched against each in the order given and the first that answers wins.

What is sent is what was recorded: a JSON body; an SSE stream event by event with a flush after each
(with `--timing recorded`, at the recorded offsets, so that time to first token and incremental
rendering can be tested); a recorded connection failure as a dropped connection; a truncated stream cut
after its events. A request no cassette answers gets a 400 in the API's error shape whose message is
the Python client's CassetteMismatch text (with the diff against the nearest recorded request), the
header `x-harness-miss: 1`, and a line on stderr: never a default answer.

GET /_harness/status reports, per cassette, which interactions were played and which were not.

`--drift-report FILE` writes, at shutdown, the drift report of the session (`harness.report.drift`):
per cassette its first divergent request and the kind of change, or the interactions never asked
for, or that it replayed. A request no cassette answers counts against the cassette whose nearest
recorded request differs least from it (the one it was most likely meant for).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.cassette.recorder import Cassette, CassetteMismatch
from harness.cassette.redact import redact_target
from harness.errors import HarnessError, absolute
from harness.httpserver import LoopbackServer
from harness.httpserver.answers import TIMINGS, Responder, Timing, send_miss, write_recorded
from harness.httpserver.incoming import IncomingRequest
from harness.normalize import Normalization

STATUS_PATH = "/_harness/status"


def _shown(request: IncomingRequest) -> str:
    """Method and target for a log line: a credential in the query (`?key=`) does not reach the log."""
    return f"{request.method} {redact_target(request.target)}"


class ReplayServer(LoopbackServer):
    """Answers every request from the cassettes given, or with a harness miss.

        with ReplayServer(["run.yaml"]) as server:
            client = anthropic.Anthropic(base_url=server.base_url, api_key="replay")
    """

    server_name = "harness-serve"

    def __init__(self, cassettes: Sequence[str | Path], *, port: int = 0, timing: Timing = "none",
                 allow_repeats: bool = False, ignore_fields: Sequence[str] = (), verbose: bool = False,
                 normalize: Normalization | None = None) -> None:
        super().__init__(port=port)
        if not cassettes:
            raise HarnessError("give at least one cassette to serve")
        if timing not in TIMINGS:
            raise HarnessError(f"timing {timing!r}: use one of {', '.join(TIMINGS)}")
        for path in cassettes:  # before the recorder's own message, which speaks of use_cassette and pytest
            if not Path(path).exists():
                raise HarnessError("no such cassette (record one through harness proxy)", file=absolute(path))
        self.cassettes = [Cassette(path, "none", allow_repeats=allow_repeats, ignore_fields=ignore_fields,
                                   normalize=normalize)
                          for path in cassettes]
        self.timing: Timing = timing
        self.verbose = verbose
        self.requests = 0
        self.misses: list[dict[str, Any]] = []
        self._first_miss: dict[int, CassetteMismatch] = {}  # cassette index -> the first miss counted against it
        self._lock = threading.Lock()  # Cassette objects are not thread-safe; requests arrive on many threads

    def handle(self, request: IncomingRequest, responder: Responder) -> None:
        if request.method == "GET" and request.path == STATUS_PATH:
            responder.send_json(200, self.status())
            return
        answer = self._match(request)
        if isinstance(answer, str):
            print(f"harness serve: miss: {_shown(request)}\n{answer}", file=sys.stderr, flush=True)
            send_miss(responder, answer)
            return
        cassette, interaction = answer
        if self.verbose:
            print(f"harness serve: {_shown(request)} -> {cassette.path}", file=sys.stderr, flush=True)
        write_recorded(responder, interaction, timing=self.timing)

    def _match(self, request: IncomingRequest) -> tuple[Cassette, dict[str, Any]] | str:
        """(cassette, interaction) from the first cassette that answers, or the mismatch text of each."""
        mismatches: list[CassetteMismatch] = []
        with self._lock:
            self.requests += 1
            for cassette in self.cassettes:
                try:
                    found = cassette.lookup(request.method, request.path, request.query, request.body,
                                            request.headers)
                except CassetteMismatch as miss:
                    mismatches.append(miss)
                    continue
                interaction = cassette.play(found)
                if found.drift is not None:
                    print(f"harness serve: drift: {cassette.path}: {found.drift.describe()}", file=sys.stderr,
                          flush=True)
                return cassette, interaction
            text = "\n\n".join(miss.describe("serve") for miss in mismatches)
            self.misses.append({"method": request.method, "path": redact_target(request.path), "message": text})
            owner = _likeliest(mismatches)
            self._first_miss.setdefault(owner, mismatches[owner])
        return text

    def drift_entries(self, root: Path | None = None) -> list[dict[str, Any]]:
        """One drift-report entry per cassette served (see `harness.report.drift.cassette_entry`)."""
        from harness.report.drift import cassette_entry

        with self._lock:
            return [cassette_entry(cassette, miss=self._first_miss.get(index), root=root)
                    for index, cassette in enumerate(self.cassettes)]

    def status(self) -> dict[str, Any]:
        """Per cassette: interactions played (with counts) and not played, by 0-based position; and the misses."""
        with self._lock:
            return {
                "requests": self.requests,
                "misses": list(self.misses),
                "cassettes": [
                    {
                        "path": str(cassette.path),
                        "interactions": len(cassette.matcher.play_counts),
                        "played": [position for position, count in enumerate(cassette.matcher.play_counts) if count],
                        "unplayed": cassette.unplayed,
                        "play_counts": list(cassette.matcher.play_counts),
                        "drifts": [drift.to_data() for drift in cassette.drifts],
                    }
                    for cassette in self.cassettes
                ],
            }

    def report(self) -> str:
        """One line per cassette, then the number of misses: what the server prints when it stops."""
        status = self.status()
        lines = []
        for entry in status["cassettes"]:
            unplayed = entry["unplayed"]
            line = f"{entry['path']}: {len(entry['played'])} of {entry['interactions']} interactions played"
            if unplayed:
                line += "; never played: " + ", ".join(f"#{position + 1}" for position in unplayed)
            if entry["drifts"]:
                line += f"; {len(entry['drifts'])} served despite tool-output drift (policy sequence)"
            lines.append(line)
        lines.append(f"{status['requests']} requests, {len(status['misses'])} misses")
        return "\n".join(lines)


def _likeliest(mismatches: Sequence[CassetteMismatch]) -> int:
    """Which cassette a request no cassette answers was meant for: the one whose nearest recorded request
    has the fewest changes against it (ties: the first given)."""
    def distance(index: int) -> tuple[int, int, int]:
        miss = mismatches[index]
        changes = len(miss.change.changes) if miss.change is not None else 0
        return (miss.nearest_position is None, changes, len(miss.differences))

    return min(range(len(mismatches)), key=distance)
