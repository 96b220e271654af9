"""Message Batches, simulated: create, retrieve (poll), list, cancel, delete, and results as JSON Lines.

Every request of a batch is answered at creation, like POST /v1/messages (same validation, same
scripted models, same ids), but the batch reports `in_progress` until it has been polled
`POLLS_TO_END` times; then it has `ended` and its results (one line per request, each carrying its
`custom_id`, in the order of the requests) can be fetched from its `results_url`. A cancel before the
end turns every result into `canceled`. State lives in memory for the simulator's lifetime.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from harness.sim import ids
from harness.sim.resources import (
    Answer,
    Call,
    MessageAnswerer,
    invalid,
    method_not_allowed,
    not_found,
    page,
)
from harness.sim.validation import ApiError

POLLS_TO_END = 2  # retrieves that see `in_progress` before the batch has `ended`
CREATED_AT = "2026-09-07T08:00:00Z"
ENDED_AT = "2026-09-07T08:05:00Z"
EXPIRES_AT = "2026-09-08T08:00:00Z"
RESULTS_CONTENT_TYPE = "application/binary"  # what the SDK asks for (Accept) and reads as JSON Lines
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass
class _Batch:
    id: str
    custom_ids: list[str]
    results: list[dict[str, Any]]  # the `result` object of each request, worked out at creation
    polls: int = 0
    cancel_initiated: bool = False
    ended: bool = False

    def status(self) -> str:
        if self.ended:
            return "ended"
        return "canceling" if self.cancel_initiated else "in_progress"

    def lines(self) -> list[dict[str, Any]]:
        return [{"custom_id": custom_id, "result": result}
                for custom_id, result in zip(self.custom_ids, self.results, strict=True)]

    def as_json(self, base_url: str) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if self.ended:
            for result in self.results:
                counts[result["type"]] += 1
        else:
            counts["processing"] = len(self.results)
        return {
            "id": self.id,
            "type": "message_batch",
            "processing_status": self.status(),
            "request_counts": counts,
            "ended_at": ENDED_AT if self.ended else None,
            "created_at": CREATED_AT,
            "expires_at": EXPIRES_AT,
            "archived_at": None,
            "cancel_initiated_at": CREATED_AT if self.cancel_initiated else None,
            "results_url": f"{base_url}/v1/messages/batches/{self.id}/results" if self.ended else None,
        }


class Batches:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._batches: dict[str, _Batch] = {}

    def answer(self, call: Call, answer_message: MessageAnswerer) -> Answer:
        segments = call.segments
        if not segments:
            if call.method == "POST":
                return Answer.json(self._create(call, answer_message).as_json(call.base_url))
            if call.method == "GET":
                newest_first = [b.as_json(call.base_url) for b in reversed(self._batches.values())]
                return Answer.json(page(newest_first, call.query))
            raise method_not_allowed(call)
        batch = self._batches.get(segments[0])
        if batch is None:
            raise not_found(f"Batch not found: {segments[0]}")
        action = segments[1:]
        if action == () and call.method == "GET":
            self._poll(batch)
            return Answer.json(batch.as_json(call.base_url))
        if action == () and call.method == "DELETE":
            if not batch.ended:
                raise invalid(f"Batch {batch.id} cannot be deleted while it is {batch.status()}; cancel it first")
            del self._batches[batch.id]
            return Answer.json({"id": batch.id, "type": "message_batch_deleted"})
        if action == ("cancel",) and call.method == "POST":
            if not batch.ended:
                batch.cancel_initiated = True
            return Answer.json(batch.as_json(call.base_url))
        if action == ("results",) and call.method == "GET":
            if not batch.ended:
                raise invalid(f"Batch {batch.id} has not ended yet (processing_status: {batch.status()})")
            lines = "".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n"
                            for line in batch.lines())
            return Answer(200, lines.encode("utf-8"), {"content-type": RESULTS_CONTENT_TYPE})
        if action in ((), ("cancel",), ("results",)):
            raise method_not_allowed(call)
        raise not_found("Not Found")

    def _poll(self, batch: _Batch) -> None:
        if batch.ended:
            return
        batch.polls += 1
        if batch.polls >= POLLS_TO_END or batch.cancel_initiated:
            batch.ended = True
            if batch.cancel_initiated:
                batch.results = [{"type": "canceled"} for _ in batch.results]

    def _create(self, call: Call, answer_message: MessageAnswerer) -> _Batch:
        try:
            body = json.loads(call.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            raise invalid(f"The request body is not valid JSON: {err}") from None
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            raise invalid("requests: a batch needs a non-empty list of requests")
        seen: set[str] = set()
        for position, request in enumerate(requests):
            custom_id = request.get("custom_id") if isinstance(request, dict) else None
            if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id):
                raise invalid(f"requests.{position}.custom_id: 1 to 64 letters, digits, '-' or '_'")
            if custom_id in seen:
                raise invalid(f"requests.{position}.custom_id: {custom_id!r} is used twice in this batch")
            if not isinstance(request.get("params"), dict):
                raise invalid(f"requests.{position}.params: Field required")
            seen.add(custom_id)
        batch_id = ids.stable_id("msgbatch_sim_", self.seed, ids.request_fingerprint(body), len(self._batches))
        results = [self._result(request["params"], answer_message) for request in requests]
        batch = _Batch(batch_id, [request["custom_id"] for request in requests], results)
        self._batches[batch_id] = batch
        return batch

    @staticmethod
    def _result(params: dict[str, Any], answer_message: MessageAnswerer) -> dict[str, Any]:
        if params.get("stream") is True:
            error: ApiError | None = ApiError(400, "invalid_request_error", "stream: not supported in a batch")
            message = None
        else:
            message, error = answer_message(params)
        if message is not None:
            return {"type": "succeeded", "message": message}
        assert error is not None
        return {"type": "errored",
                "error": {"type": "error", "error": {"type": error.type, "message": error.message},
                          "request_id": None}}

