"""Message threads (beta `message-threads-2026-08-12`): the server holds a conversation between turns.

The contract, as the anthropic SDK 2.x speaks it (anthropic/lib/threads/):

- `thread: {"type": "create"}` goes with a whole request. The server keeps the create-only fields
  (`system`, `tools`) and the messages plus its reply, under the reply's message `id`. The response
  shape is unchanged: the thread is named by the ordinary `id` of the reply.
- `thread: {"type": "continue", "previous_message_id": id}` sends only the new messages (none at all
  to resume a `pause_turn` reply) and no create-only field; the per-turn fields (model, max_tokens,
  thinking, stop_sequences, tool_choice, ...) are sent on every turn. The server answers the stored
  conversation plus the new messages, and keeps the result under the new reply's `id`.
- Each reply can be continued once. Rejections carry `error.details.error_code`: 404
  `thread_not_found`; 400 `thread_already_continued`, `thread_continue_in_flight`, and
  `thread_unsupported_request` with `unsupported: [...]`. The SDK replays the whole history under a
  new thread on the first three, and drops `thread` altogether on the last (tool runners do).

Ids stay deterministic: a reply's id is a hash of the request that produced it, so running the same
conversation again re-creates the same threads, each one fresh (not yet continued).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.sim.validation import ApiError, check_continue_request

MESSAGE_THREADS_BETA = "message-threads-2026-08-12"
# Request fields the server takes from the thread on a `continue`, and refuses when a continue repeats them.
CREATE_ONLY_FIELDS = ("system", "tools")
# Request fields that the SDK knows a server may name as what it cannot thread (ThreadUnsupportedFeatureName).
THREAD_SENSITIVE_FIELDS = ("cache_control", "context_management", "fallbacks", "thinking")
_REPLAY_HINT = 'Replay the full conversation with `thread: {"type": "create"}` to start a new thread.'


def _invalid(message: str, **details: Any) -> ApiError:
    return ApiError(400, "invalid_request_error", message, details or None)


def thread_kind(body: Any) -> str | None:
    """"create" or "continue" for a threaded request (even a malformed one: its `type`), else None."""
    if not isinstance(body, dict) or body.get("thread") is None:
        return None
    thread = body["thread"]
    kind = thread.get("type") if isinstance(thread, dict) else None
    return kind if isinstance(kind, str) else "invalid"


@dataclass(frozen=True)
class ThreadTurn:
    """One threaded request on its way through the server: the whole request that the model answers."""

    kind: Literal["create", "continue"]
    body: dict[str, Any]  # the request without `thread`, with the stored fields and history on a continue
    previous_message_id: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # the create-only fields the thread keeps


@dataclass(frozen=True)
class _Stored:
    fields: dict[str, Any]
    messages: list[dict[str, Any]]  # the whole conversation, ending with the reply the thread is named after


class Threads:
    """The threads one simulator holds, by reply id. Thread-safe; lives as long as the server.

    With `enabled=False` every threaded request gets `thread_unsupported_request`, the way a server
    (or an organization setting) that cannot thread answers, so a client's fallback can be exercised.
    """

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self._stored: dict[str, _Stored] = {}
        self._continued: set[str] = set()
        self._in_flight: set[str] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._stored)

    def conversation(self, message_id: str) -> list[dict[str, Any]] | None:
        """The whole conversation a thread holds (its last message is the reply `message_id`), or None."""
        with self._lock:
            stored = self._stored.get(message_id)
        return [dict(message) for message in stored.messages] if stored else None

    def check(self, body: Any, headers: Mapping[str, str]) -> ApiError | None:
        """The checks on the `thread` field that need no stored state: beta header, shape, threads enabled."""
        kind = thread_kind(body)
        if kind is None:
            return None
        betas = {
            beta.strip()
            for name, value in headers.items()
            if name.lower() == "anthropic-beta"
            for beta in value.split(",")
        }
        if MESSAGE_THREADS_BETA not in betas:
            return _invalid(
                "thread: Extra inputs are not permitted. Message threads are a beta: send the header "
                f"`anthropic-beta: {MESSAGE_THREADS_BETA}` to use them."
            )
        error = _check_shape(body["thread"])
        if error:
            return error
        if not self.enabled:
            unsupported = [name for name in THREAD_SENSITIVE_FIELDS if body.get(name) is not None]
            return _invalid(
                "This request cannot use `thread`: message threads are turned off on this server. Send the "
                "full conversation without `thread`.",
                error_code="thread_unsupported_request",
                unsupported=unsupported,
            )
        if kind == "continue":
            repeated = [f"`{name}`" for name in CREATE_ONLY_FIELDS if body.get(name) is not None]
            if repeated:
                return _invalid(
                    f"thread.continue: {' and '.join(repeated)} cannot be sent on a `continue`: the thread keeps "
                    "the ones it was created with. Leave them out, or replay the full conversation with "
                    '`thread: {"type": "create"}` to change them.'
                )
            return check_continue_request(body)
        return None

    def open(self, body: Any) -> tuple[ThreadTurn | None, ApiError | None]:
        """Start a threaded turn (after `check`): None for an unthreaded request. A continue claims the
        reply it continues from until `finish`, and is answered from the stored conversation."""
        kind = thread_kind(body)
        if kind not in ("create", "continue"):
            return None, None
        request = {key: value for key, value in body.items() if key != "thread"}
        if kind == "create":
            fields = {name: body[name] for name in CREATE_ONLY_FIELDS if body.get(name) is not None}
            return ThreadTurn("create", request, fields=fields), None
        previous = str(body["thread"]["previous_message_id"])
        with self._lock:
            stored = self._stored.get(previous)
            if stored is None:
                return None, ApiError(
                    404,
                    "not_found_error",
                    f"No thread was found for previous_message_id {previous!r}. {_REPLAY_HINT}",
                    {"error_code": "thread_not_found"},
                )
            if previous in self._in_flight:
                return None, _invalid(
                    f"Another request is still continuing from previous_message_id {previous!r}. Wait for it and "
                    f"continue from its response id, or replay the full conversation with "
                    '`thread: {"type": "create"}`.',
                    error_code="thread_continue_in_flight",
                )
            if previous in self._continued:
                return None, _invalid(
                    f"The response {previous!r} has already been continued, and each response can be continued "
                    "only once. Continue from the thread's most recent response id.",
                    error_code="thread_already_continued",
                )
            self._in_flight.add(previous)
        request.update(stored.fields)
        request["messages"] = [*stored.messages, *body["messages"]]
        return ThreadTurn("continue", request, previous, dict(stored.fields)), None

    def finish(self, turn: ThreadTurn | None, message: Mapping[str, Any] | None) -> None:
        """End a turn: with the reply, store the thread under its id (and use up the one continued from);
        without one (the request failed), give the claimed reply back so it can be continued again."""
        if turn is None:
            return
        with self._lock:
            if turn.previous_message_id is not None:
                self._in_flight.discard(turn.previous_message_id)
                if message is not None:
                    self._continued.add(turn.previous_message_id)
            if message is None:
                return
            reply = {"role": "assistant", "content": list(message["content"])}
            message_id = str(message["id"])
            self._stored[message_id] = _Stored(turn.fields, [*turn.body["messages"], reply])
            self._continued.discard(message_id)  # the same request again re-creates the same thread, fresh


def _check_shape(thread: Any) -> ApiError | None:
    if not isinstance(thread, dict):
        return _invalid("thread: Input should be a valid dictionary")
    kind = thread.get("type")
    if kind is None:
        return _invalid("thread: Unable to extract tag using discriminator 'type'")
    if kind not in ("create", "continue"):
        return _invalid(
            f"thread: Input tag '{kind}' found using 'type' does not match any of the expected tags: "
            "'create', 'continue'"
        )
    allowed = {"type"} if kind == "create" else {"type", "previous_message_id"}
    for key in thread:
        if key not in allowed:
            return _invalid(f"thread.{kind}.{key}: Extra inputs are not permitted")
    if kind == "continue":
        previous = thread.get("previous_message_id")
        if previous is None:
            return _invalid("thread.continue.previous_message_id: Field required")
        if not isinstance(previous, str) or not previous:
            return _invalid("thread.continue.previous_message_id: Input should be a valid string")
    return None
