"""The simulator's endpoints beyond /v1/messages: Files, Message Batches and Models; and its rate limits.

`Resources.answer` is the one hook the HTTP server calls for a request it does not route itself; it
gets the request as data and gives back an `Answer` (status, headers, body bytes), or None when the
path is none of these. The state (uploaded files, batches) lives here, per simulator, in memory.

`Resources.admit_message`, `settle_message` and `rate_limit_headers` are the hooks for /v1/messages when
rate limits are configured (`harness.sim.ratelimit`); with none, they admit everything and add no header.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs

from harness.sim.batch_api import Batches
from harness.sim.files import Files
from harness.sim.models_api import ModelsApi
from harness.sim.ratelimit import Admission, RateLimiter, RateLimits, output_tokens_of
from harness.sim.resources import Answer, ApiErrorRaised, Call, MessageAnswerer
from harness.sim.responses import error_body
from harness.sim.validation import check_auth


class Resources:
    """Files (`/v1/files`), Message Batches (`/v1/messages/batches`) and Models (`/v1/models`)."""

    def __init__(self, seed: int, model_ids: Callable[[], Sequence[str]],
                 rate_limits: RateLimits | None = None) -> None:
        self.files = Files(seed)
        self.batches = Batches(seed)
        self.models = ModelsApi(model_ids)
        self.limiter = RateLimiter(rate_limits) if rate_limits is not None and rate_limits.any else None

    # -- rate limits of /v1/messages ----------------------------------------------------------------
    def admit_message(self, body: Any) -> Admission | None:
        """None when no limit is configured; else the limiter's admission (an error is a 429 to send)."""
        if self.limiter is None or not isinstance(body, dict):
            return None
        return self.limiter.admit(body)

    def settle_message(self, admission: Admission | None, message: Any) -> None:
        if self.limiter is not None and admission is not None:
            self.limiter.settle(admission, output_tokens_of(message))

    def rate_limit_headers(self) -> dict[str, str]:
        return self.limiter.headers() if self.limiter is not None else {}

    def answer(self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes, *,
               base_url: str, request_id: str, answer_message: MessageAnswerer) -> Answer | None:
        segments = tuple(path.strip("/").split("/"))
        if segments[:1] != ("v1",) or len(segments) < 2:
            return None
        endpoint: Callable[[Call], Answer]
        if segments[1] == "files":
            endpoint, rest = self.files.answer, segments[2:]
        elif segments[1] == "models":
            endpoint, rest = self.models.answer, segments[2:]
        elif segments[1:3] == ("messages", "batches"):
            endpoint, rest = (lambda call: self.batches.answer(call, answer_message)), segments[3:]
        else:
            return None
        error = check_auth(headers)
        if error is not None:
            return Answer.json(error_body(error, request_id), error.status)
        flat_query = {name: values[-1] for name, values in parse_qs(query, keep_blank_values=True).items()}
        call = Call(method.upper(), tuple(rest), flat_query, headers, body, base_url)
        try:
            answer = endpoint(call)
        except ApiErrorRaised as raised:
            return Answer.json(error_body(raised.error, request_id), raised.error.status)
        return answer
