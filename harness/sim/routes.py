"""The simulator's endpoints beyond /v1/messages: Files, Message Batches and Models.

`Resources.answer` is the one hook the HTTP server calls for a request it does not route itself; it
gets the request as data and gives back an `Answer` (status, headers, body bytes), or None when the
path is none of these. The state (uploaded files, batches) lives here, per simulator, in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from urllib.parse import parse_qs

from harness.sim.batches import Batches
from harness.sim.files import Files
from harness.sim.models_api import ModelsApi
from harness.sim.resources import Answer, ApiErrorRaised, Call, MessageAnswerer
from harness.sim.responses import error_body
from harness.sim.validation import check_auth


class Resources:
    """Files (`/v1/files`), Message Batches (`/v1/messages/batches`) and Models (`/v1/models`)."""

    def __init__(self, seed: int, model_ids: Callable[[], Sequence[str]]) -> None:
        self.files = Files(seed)
        self.batches = Batches(seed)
        self.models = ModelsApi(model_ids)

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
