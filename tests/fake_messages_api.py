"""A tiny scripted Messages API behind httpx2.MockTransport, for cassette tests that need no server.

Each request is answered by `reply(body)`: text that echoes the last user message, JSON or SSE as the
request asks. `script` can queue raw responses (status codes, headers) to serve first.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import anthropic
import httpx2


def message_json(body: dict[str, Any], text: str, *, msg_id: str = "msg_fake_1") -> dict[str, Any]:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 7},
    }


def sse_bytes(message: dict[str, Any]) -> bytes:
    start = dict(message, content=[], stop_reason=None)
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}}))
        for piece in (block["text"][:3], block["text"][3:]):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                         "stop_sequence": None},
                                     "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


class FakeMessagesAPI:
    def __init__(self, *, extra_headers: dict[str, str] | None = None) -> None:
        self.script: deque[httpx2.Response] = deque()
        self.calls = 0
        self.extra_headers = extra_headers or {}

    def reply_text(self, body: dict[str, Any]) -> str:
        last = body["messages"][-1]["content"]
        return f"echo: {last if isinstance(last, str) else json.dumps(last)}"

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.calls += 1
        if self.script:
            return self.script.popleft()
        body = json.loads(request.content)
        message = message_json(body, self.reply_text(body), msg_id=f"msg_fake_{self.calls}")
        headers = {"request-id": f"req_live_{self.calls}", **self.extra_headers}
        if body.get("stream"):
            return httpx2.Response(200, headers={**headers, "content-type": "text/event-stream"},
                                   content=sse_bytes(message))
        return httpx2.Response(200, headers=headers, json=message)

    def client(self, **options: Any) -> anthropic.Anthropic:
        options.setdefault("api_key", "sk-ant-api03-test-key-0000000000")
        options.setdefault("max_retries", 0)
        return anthropic.Anthropic(http_client=httpx2.Client(transport=httpx2.MockTransport(self)), **options)

    def async_client(self, **options: Any) -> anthropic.AsyncAnthropic:
        options.setdefault("api_key", "sk-ant-api03-test-key-0000000000")
        options.setdefault("max_retries", 0)
        transport = httpx2.MockTransport(self)
        return anthropic.AsyncAnthropic(http_client=httpx2.AsyncClient(transport=transport), **options)
