"""The `sequence` matching policy: tool output may drift, the conversation may not.

A coding agent runs its tools on the machine it runs on, so on replay the next request carries tool
output from this machine (a listing in another order, a timestamp, a path the rules did not cover).
Under `sequence`, a request whose only difference from a recorded one still waiting to be played is
inside tool_result content is served that recording (the first such, in recorded order), and the
difference is kept as a `ToleratedDifference`: a warning with the diff, listed by the run's report. Any other
difference is still a miss.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from harness.cassette.match import diff_summary, request_fingerprint, stored_request_body
from harness.cassette.tolerant import AskedRequest, ToleratedDifference

TOOL_OUTPUT = "$TOOL_OUTPUT"


def without_tool_output(body: Any) -> Any:
    """The body with every tool_result's content replaced by one placeholder."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return body
    messages = []
    for message in body["messages"]:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            content = [
                {**block, "content": TOOL_OUTPUT, **({"is_error": TOOL_OUTPUT} if "is_error" in block else {})}
                if isinstance(block, dict) and block.get("type") == "tool_result" else block
                for block in content
            ]
            message = {**message, "content": content}
        messages.append(message)
    return {**body, "messages": messages}


class SequenceMatcher:
    """Recorded requests by their fingerprint without tool output, in recorded order."""

    def __init__(self, requests: Sequence[Mapping[str, Any]], ignore: Sequence[str]) -> None:
        self._requests = list(requests)
        self._ignore = tuple(ignore)
        self._queues: dict[bytes, deque[int]] = {}
        for position, request in enumerate(self._requests):
            key = self._key(request["method"], request["path"], request.get("query"), stored_request_body(request))
            self._queues.setdefault(key, deque()).append(position)

    def _key(self, method: str, path: str, query: str | None, body: Any) -> bytes:
        return request_fingerprint(method, path, query, without_tool_output(body), self._ignore)

    def drifted(self, request: AskedRequest, play_counts: Sequence[int]) -> ToleratedDifference | None:
        """The drift that lets `request` be served the next unplayed recording, or None (then it is a miss)."""
        queue = self._queues.get(self._key(request.method, request.path, request.query, request.body))
        if not queue:
            return None
        position = next((p for p in queue if play_counts[p] == 0), None)
        if position is None:
            return None
        recorded = stored_request_body(self._requests[position])
        return ToleratedDifference(request.position_in_run, position, tuple(diff_summary(recorded, request.body)),
                                   policy="sequence")
