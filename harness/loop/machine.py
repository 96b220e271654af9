"""The loop as a pure state machine: `_Machine.run` is a generator that yields the I/O it needs (a model
call, a tool run) and is sent the result back. Stop reasons, guards, history and records live here, so the
sync and async drivers (harness.loop) cannot drift apart; nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anthropic
import httpx2

from harness.run import Exchange, ToolCall, ToolResult, Usage, retry_after_seconds

if TYPE_CHECKING:
    from anthropic.types import Message
from harness.loop.result import Event, LoopConfig, Outcome, RunResult, ToolRegistryLike

REPEAT_MESSAGE = (
    "Not run: this is call number {count} in a row of {name} with the same input, and its output has "
    "not changed. Repeating it will not help; try a different strategy (other arguments, another tool) "
    "or answer with what you have."
)


@dataclass(frozen=True)
class _CallModel:
    body: dict[str, Any]  # the exact JSON body; "stream": True selects messages.stream(...)
    timeout: float | None


@dataclass(frozen=True)
class _ModelReply:
    message: Message | None
    error: Exception | None
    duration_ms: float


@dataclass(frozen=True)
class _RunTool:
    name: str
    tool_input: Any
    id: str = ""  # the tool_use id, for the driver's tracing


@dataclass(frozen=True)
class _ToolReply:
    content: str
    is_error: bool
    duration_ms: float


_Effect = _CallModel | _RunTool


_Reply = _ModelReply | _ToolReply


_Run = Generator[_Effect, _Reply, RunResult]


_CONTINUE = ("tool_use", "pause_turn")


class _Machine:
    def __init__(
        self,
        *,
        system: str,
        user: str | list,
        tools: ToolRegistryLike | None,
        model: str,
        max_tokens: int,
        config: LoopConfig,
        on_event: Callable[[Event], None] | None,
    ) -> None:
        self.system = system
        self.tools = tools
        self.model = model
        self.max_tokens = max_tokens
        self.config = config
        self.on_event = on_event
        self.started = config.clock()
        self.messages: list[dict[str, Any]] = _initial_messages(user)
        self.tool_definitions = _tool_definitions(tools, cache=config.cache_prompts)
        self.usage = Usage()
        self.exchanges: list[Exchange] = []
        self.events: list[Event] = []
        self.tool_calls: list[ToolCall] = []
        self.unsent: list[ToolCall] = []  # answered, their results not yet carried by a request that got a message
        self.steps = 0
        self.last_message: Message | None = None
        self._streak_key: str | None = None
        self._streak = 0

    # The loop proper: five phases per step, and one exit per outcome.
    def run(self) -> _Run:
        while True:
            reply = yield from self._call_model(summary=False)
            if isinstance(reply, RunResult):
                return reply
            message = reply
            stop_reason = message.stop_reason
            if stop_reason not in _CONTINUE:
                return self._finish_on_stop(message)

            over = self.config.budget.exceeded(self.usage)
            if over:
                return self._finish(Outcome.BUDGET, f"{over} after step {self.steps}; the run was stopped")

            results: list[dict[str, Any]] = []
            if stop_reason == "tool_use":
                tool_uses = [block for block in message.content if block.type == "tool_use"]
                if not tool_uses:
                    return self._finish(Outcome.ERROR, f"step {self.steps}: stop_reason tool_use but no tool_use block")
                for block in tool_uses:
                    results.append((yield from self._run_tool(block)))
            # pause_turn: the assistant content is already appended; calling again resumes the turn.

            if self.steps >= self.config.max_steps:
                return (yield from self._summarize(results))
            if results:
                self.messages.append({"role": "user", "content": results})

    def _finish_on_stop(self, message: Message) -> RunResult:
        stop_reason = message.stop_reason
        step = self.steps
        if stop_reason == "end_turn":
            return self._finish(Outcome.ENDED, f"end_turn at step {step}")
        if stop_reason == "stop_sequence":
            fired = message.stop_sequence
            return self._finish(Outcome.ENDED, f"stop sequence {fired!r} fired at step {step}", stop_sequence=fired)
        if stop_reason == "refusal":
            return self._finish(Outcome.REFUSED, f"the model refused at step {step}; not retried")
        if stop_reason == "max_tokens":
            return self._finish(
                Outcome.MAX_TOKENS,
                f"the response was cut off at max_tokens={self.max_tokens} at step {step}; "
                "raise max_tokens or ask for less",
            )
        if stop_reason == "model_context_window_exceeded":
            usage = message.usage
            context = (
                usage.input_tokens + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
            )
            return self._finish(
                Outcome.CONTEXT_WINDOW,
                f"the model's context window was exceeded at step {step}: that call had "
                f"{context:,} input tokens (cache included); compact the history or use fewer tools",
            )
        return self._finish(Outcome.ERROR, f"unknown stop_reason {stop_reason!r} at step {step}")

    def _summarize(self, results: list[dict[str, Any]]) -> _Run:
        """Max steps reached: one last call, tools off, asking for a best-effort answer."""
        limit = self.config.max_steps
        # The history ends in the assistant's tool_use turn: its tool_results must come first.
        self.messages.append(
            {"role": "user", "content": [*results, {"type": "text", "text": self.config.summary_prompt}]}
        )
        reply = yield from self._call_model(summary=True)
        if isinstance(reply, RunResult):
            if reply.outcome is Outcome.DEADLINE:
                return reply
            reply.outcome = Outcome.STEP_LIMIT
            reply.incomplete = True
            reply.reason = f"max steps ({limit}) reached and the summary call failed: {reply.reason}"
            return reply
        return self._finish(
            Outcome.STEP_LIMIT,
            f"max steps ({limit}) reached without end_turn; final_text is a best-effort summary "
            f"(summary call stop_reason {reply.stop_reason})",
        )

    def _call_model(self, *, summary: bool) -> Generator[_Effect, _Reply, Message | RunResult]:
        """Phases 1-2: send the conversation, record the reply. A RunResult when the run must end."""
        remaining = self._remaining()
        if remaining is not None and remaining <= 0:
            return self._finish(Outcome.DEADLINE, self._deadline_reason("before"))
        timeout = self.config.call_timeout
        if remaining is not None:
            timeout = remaining if timeout is None else min(timeout, remaining)

        body = self._request_body(summary=summary)
        reply = yield _CallModel(body=body, timeout=timeout)
        assert isinstance(reply, _ModelReply)
        step = self.steps + 1

        if reply.message is None:
            error = reply.error
            assert error is not None
            failed = _failed_exchange(body, error, reply.duration_ms)
            self.exchanges.append(failed)
            described = f"{type(error).__name__}: {error}"
            self._event(
                "model_call",
                step,
                reply.duration_ms,
                {"error": described, "status": failed.status, "error_type": failed.error_type},
            )
            remaining = self._remaining()
            if remaining is not None and remaining <= 0:
                return self._finish(Outcome.DEADLINE, f"{self._deadline_reason('during')} ({described})")
            return self._finish(Outcome.ERROR, f"step {step}: the model call failed: {described}")

        message = reply.message
        self.steps = step
        self.last_message = message
        self.usage = self.usage + Usage.from_api(message.usage)
        self.exchanges.append(
            Exchange(request=body, message=message.model_dump(mode="json"), status=200, duration_ms=reply.duration_ms)
        )
        for call in self.unsent:  # this request carried their results
            if call.result is not None:
                call.result = dataclasses.replace(call.result, step=step)
        self.unsent = []
        # Phase 4, first half: the assistant turn goes into history exactly as returned.
        self.messages.append(
            {"role": "assistant", "content": [block.to_dict(mode="json") for block in message.content]}
        )
        self._event(
            "model_call",
            step,
            reply.duration_ms,
            {
                "stop_reason": message.stop_reason,
                "usage": message.usage.model_dump(mode="json", exclude_none=True),
                "summary": summary,
            },
        )
        return message

    def _run_tool(self, block: Any) -> Generator[_Effect, _Reply, dict[str, Any]]:
        """Phase 3 for one tool_use block; returns its tool_result block."""
        key = json.dumps([block.name, block.input], sort_keys=True, default=str)
        self._streak = self._streak + 1 if key == self._streak_key else 1
        self._streak_key = key

        limit = self.config.repeat_limit
        synthetic = limit is not None and self._streak > limit
        if synthetic:
            content = REPEAT_MESSAGE.format(count=self._streak, name=block.name)
            outcome = _ToolReply(content=content, is_error=True, duration_ms=0.0)
        elif self.tools is None:
            content = f"Unknown tool {block.name!r}: this run has no tools."
            outcome = _ToolReply(content=content, is_error=True, duration_ms=0.0)
        else:
            reply = yield _RunTool(name=block.name, tool_input=block.input, id=block.id)
            assert isinstance(reply, _ToolReply)
            outcome = reply

        call = ToolCall(
            id=block.id,
            name=block.name,
            input=block.input,
            step=self.steps,
            result=ToolResult(content=outcome.content, is_error=outcome.is_error, step=None),
            duration_ms=outcome.duration_ms,
            synthetic=synthetic,
        )
        self.tool_calls.append(call)
        self.unsent.append(call)
        self._event(
            "tool_call",
            self.steps,
            outcome.duration_ms,
            {
                "name": call.name,
                "id": call.id,
                "input": call.input,
                "is_error": call.is_error,
                "chars": call.chars,
                "synthetic": synthetic,
            },
        )
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.id, "content": outcome.content}
        if outcome.is_error:
            result["is_error"] = True
        return result

    def _request_body(self, *, summary: bool) -> dict[str, Any]:
        config = self.config
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if self.system:
            if config.cache_prompts:
                body["system"] = [{"type": "text", "text": self.system, "cache_control": {"type": "ephemeral"}}]
            else:
                body["system"] = self.system
        body["messages"] = _compacted(self.messages, config.compact_after)
        if self.tool_definitions:
            # Tools stay defined on the summary call: the API rejects tool_use history without them.
            body["tools"] = self.tool_definitions
            if summary:
                body["tool_choice"] = {"type": "none"}
        if config.stop_sequences:
            body["stop_sequences"] = list(config.stop_sequences)
        if config.stream:
            body["stream"] = True
        # A pure-JSON deep copy: what is recorded is what is sent, immune to later history changes.
        return json.loads(json.dumps(body))

    def _remaining(self) -> float | None:
        if self.config.deadline is None:
            return None
        return self.config.deadline - (self.config.clock() - self.started)

    def _deadline_reason(self, when: str) -> str:
        return f"deadline of {self.config.deadline:g}s for the run reached {when} model call {self.steps + 1}"

    def _event(self, kind: str, step: int, duration_ms: float, data: dict[str, Any]) -> None:
        event = Event(kind=kind, step=step, duration_ms=duration_ms, data=data)
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def _finish(self, outcome: Outcome, reason: str, *, stop_sequence: str | None = None) -> RunResult:
        final_text = ""
        if self.last_message is not None:
            final_text = "".join(b.text for b in self.last_message.content if b.type == "text")
        return RunResult(
            final_text=final_text,
            outcome=outcome,
            reason=reason,
            incomplete=outcome not in (Outcome.ENDED, Outcome.REFUSED),
            stop_sequence=stop_sequence,
            steps=self.steps,
            model=self.model,
            tool_calls=self.tool_calls,
            usage=self.usage,
            exchanges=self.exchanges,
            events=self.events,
            messages=self.messages,
        )


def _initial_messages(user: str | list) -> list[dict[str, Any]]:
    """A user prompt (text, or content blocks), or a whole conversation so far (dicts with a role)."""
    if isinstance(user, str):
        return [{"role": "user", "content": user}]
    items = json.loads(json.dumps(list(user)))
    if items and all(isinstance(item, Mapping) and "role" in item for item in items):
        return items
    return [{"role": "user", "content": items}]


def _tool_definitions(tools: ToolRegistryLike | None, *, cache: bool) -> list[dict[str, Any]]:
    if tools is None:
        return []
    definitions = json.loads(json.dumps(tools.definitions()))
    if cache and definitions:
        # One breakpoint on the last tool caches the whole tools array (and the system prompt before it).
        definitions[-1]["cache_control"] = {"type": "ephemeral"}
    return definitions


def _compacted(messages: list[dict[str, Any]], keep: int | None) -> list[dict[str, Any]]:
    """The history as sent: tool_result contents older than the last `keep` result turns shortened.

    Only the content changes; every block, its tool_use_id and is_error, and the turn order stay,
    since the API pairs each tool_result with its tool_use.
    """
    if keep is None:
        return messages
    names = {
        block.get("id"): block.get("name")
        for message in messages
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_use"
    }
    result_turns = [
        index
        for index, message in enumerate(messages)
        if message["role"] == "user"
        and isinstance(message["content"], list)
        and any(block.get("type") == "tool_result" for block in message["content"])
    ]
    old = set(result_turns[:-keep])
    if not old:
        return messages
    compacted = []
    for index, message in enumerate(messages):
        if index in old:
            blocks = [_compact_block(block, names) for block in message["content"]]
            message = {**message, "content": blocks}
        compacted.append(message)
    return compacted


def _compact_block(block: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    if block.get("type") != "tool_result":
        return block
    content = block.get("content", "")
    if isinstance(content, str):
        chars = len(content)
    else:
        chars = sum(len(part.get("text", "")) for part in content if isinstance(part, Mapping))
    tool_use_id = block.get("tool_use_id")
    name = names.get(tool_use_id, "unknown tool") if isinstance(tool_use_id, str) else "unknown tool"
    placeholder = f"[compacted: {chars:,} chars from {name}]"
    if isinstance(content, str) and len(content) <= len(placeholder):
        return block  # already shorter than its placeholder
    return {**block, "content": placeholder}


def _failed_exchange(body: dict[str, Any], error: Exception, duration_ms: float) -> Exchange:
    """A call that raised (after the SDK's retries), with the error as the data the SDK parsed for us.

    Connection failures get the recorder's words (timeout, connect, disconnect), so a live run and its
    cassette name them alike.
    """
    status: int | None = None
    retry_after: float | None = None
    if isinstance(error, anthropic.APIStatusError):
        status = error.status_code
        kind = error.type or f"http_{status}"
        message = error.api_message or error.message
        retry_after = retry_after_seconds(error.response.headers)
    elif isinstance(error, anthropic.APITimeoutError):
        kind, message = "timeout", str(error.__cause__ or error)
    elif isinstance(error, anthropic.APIConnectionError):
        kind = "connect" if isinstance(error.__cause__, httpx2.ConnectError) else "disconnect"
        message = str(error.__cause__ or error)
    else:  # not the API's: a bug in a client wrapper, a transport of the caller's
        kind, message = type(error).__name__, str(error)
    return Exchange(
        request=body,
        message=None,
        status=status,
        error_type=kind,
        error_message=message,
        retry_after=retry_after,
        duration_ms=duration_ms,
    )
