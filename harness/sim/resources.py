"""What the simulator's endpoints beyond /v1/messages share: a request and an answer as data, errors,
list pages. The endpoints are `files`, `batches` and `models`; `routes` dispatches to them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.sim.responses import dumps
from harness.sim.validation import ApiError

# Answers one batch request's params like POST /v1/messages would: (message, None) or (None, error).
MessageAnswerer = Callable[[Any], tuple[dict[str, Any] | None, ApiError | None]]


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, payload: Any, status: int = 200) -> Answer:
        return cls(status, dumps(payload), {"content-type": "application/json"})


@dataclass(frozen=True)
class Call:
    """One request as an endpoint sees it."""

    method: str
    segments: tuple[str, ...]  # the path after /v1/, split on "/"
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    base_url: str  # where this simulator is reachable (batch results_url points here)


def page(items: Sequence[dict[str, Any]], query: Mapping[str, str]) -> dict[str, Any]:
    """A list page as the API gives it: `limit` (default 20), `after_id` / `before_id` cursors."""
    try:
        limit = max(1, min(1000, int(query.get("limit") or 20)))
    except ValueError:
        limit = 20
    ids = [item["id"] for item in items]
    start, end = 0, len(items)
    if query.get("after_id") in ids:
        start = ids.index(query["after_id"]) + 1
    if query.get("before_id") in ids:
        end = ids.index(query["before_id"])
        start = max(start, end - limit)
    data = list(items[start:end][:limit])
    return {"data": data, "has_more": start + len(data) < end,
            "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data else None}


class ApiErrorRaised(Exception):
    """An endpoint's 4xx, carried up to `Resources.answer`, which writes the real error envelope."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


def invalid(message: str) -> ApiErrorRaised:
    return ApiErrorRaised(ApiError(400, "invalid_request_error", message))


def method_not_allowed(call: Call) -> ApiErrorRaised:
    return ApiErrorRaised(ApiError(405, "invalid_request_error", f"{call.method} is not allowed here"))


def not_found(message: str) -> ApiErrorRaised:
    return ApiErrorRaised(ApiError(404, "not_found_error", message))
