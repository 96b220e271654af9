"""From a policy's Reply to the Message the API returns: ids, thinking, stop sequences, limits, usage.

What the real API would do regardless of the scripted model happens here: a reply longer than
max_tokens is cut (stop_reason max_tokens), a stop sequence in the text ends it (stop_sequence), and
a request with thinking enabled gets a signed thinking block first. A reply that stops on the context
window (`Reply.context_window`) reports usage that fills that window.
"""

from __future__ import annotations

import json
from typing import Any

from harness.sim import ids
from harness.sim.context_edits import Edited
from harness.sim.conversation import Conversation, Reply, text_block
from harness.sim.server_tools import CONTAINER_EXPIRES_AT, RESULT_TYPES, server_tool_usage, uses_container
from harness.sim.tokens import InputUsage, count_output, count_text
from harness.sim.validation import ApiError

_CHARS_PER_TOKEN = 4
_ITERATION_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def error_body(error: ApiError, request_id: str) -> dict[str, Any]:
    """The real error envelope: {"type":"error","error":{"type","message"[,"details"]},"request_id"}.

    `details` carries the machine-readable `error_code` that SDK 2.x branches on (thread errors, ...).
    """
    inner: dict[str, Any] = {"type": error.type, "message": error.message}
    if error.details:
        inner["details"] = dict(error.details)
    return {"type": "error", "error": inner, "request_id": request_id}


def _thinking(
    conversation: Conversation, policy: str, reply: Reply, seed: int, fingerprint: str
) -> dict[str, Any]:
    asked = (
        conversation.last_user_text.strip().splitlines()[0][:160]
        if conversation.last_user_text.strip()
        else ""
    )
    plan = {"tool_use": "call the tools I need", "end_turn": "answer from what I have"}.get(
        reply.stop_reason, f"stop with {reply.stop_reason}"
    )
    text = f"The user asked: {asked or '(no text)'}. Scripted policy {policy}: I will {plan}."
    return {"type": "thinking", "thinking": text, "signature": ids.signature(seed, fingerprint, 0)}


def _apply_stop_sequences(
    content: list[dict[str, Any]], stops: list[str]
) -> tuple[list[dict[str, Any]], str | None]:
    for position, block in enumerate(content):
        if block.get("type") != "text":
            continue
        hits = [(block["text"].find(stop), stop) for stop in stops if stop and stop in block["text"]]
        if hits:
            cut, stop = min(hits)
            return [*content[:position], {**block, "text": block["text"][:cut]}], stop
    return content, None


def _cut_to_budget(content: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """Keep whole blocks while they fit, cut the first text/thinking that does not, drop the rest."""
    kept: list[dict[str, Any]] = []
    for block in content:
        cost = count_output([block])
        if cost <= budget:
            kept.append(block)
            budget -= cost
            continue
        field = {"text": "text", "thinking": "thinking"}.get(block.get("type", ""))
        if field and budget > 0:
            kept.append({**block, field: block[field][: budget * _CHARS_PER_TOKEN]})
        break
    return kept


def honour_tool_choice(conversation: Conversation, reply: Reply) -> Reply:
    """`tool_choice: {"type": "none"}` forbids tool calls whatever the scripted model wanted: the real
    model then writes text instead (a loop's best-effort summary at its step limit relies on this)."""
    choice = conversation.body.get("tool_choice")
    if not (isinstance(choice, dict) and choice.get("type") == "none"):
        return reply
    if not any(block.get("type") == "tool_use" for block in reply.content):
        return reply
    text = " ".join(b["text"] for b in reply.content if b.get("type") == "text" and b.get("text")).strip()
    calls: dict[str, int] = {}
    for exchange in conversation.exchanges:
        calls[exchange.name] = calls.get(exchange.name, 0) + 1
    done = ", ".join(f"{name} x{count}" for name, count in calls.items()) or "no tools"
    summary = f"{text} " if text else ""
    summary += f"I was asked to stop calling tools. So far I called {done}; I could not finish the task."
    return Reply([text_block(summary)], "end_turn")


def _number_blocks(content: list[dict[str, Any]], seed: int, fingerprint: str) -> None:
    """Ids for tool_use and server_tool_use blocks; a server tool's result block takes its call's id."""
    calls = servers = 0
    last_server = ""
    for block in content:
        if block.get("type") == "tool_use":
            block["id"] = block.get("id") or ids.tool_use_id(seed, fingerprint, calls)
            calls += 1
        elif block.get("type") == "server_tool_use":
            block["id"] = block.get("id") or ids.server_tool_use_id(seed, fingerprint, servers)
            last_server = block["id"]
            servers += 1
        elif block.get("type") in RESULT_TYPES and not block.get("tool_use_id"):
            block["tool_use_id"] = last_server


def _container(body: dict[str, Any], seed: int, fingerprint: str) -> dict[str, Any]:
    """The code-execution container: the one the request names, else a new one."""
    asked = body.get("container")
    named = asked if isinstance(asked, str) else asked.get("id") if isinstance(asked, dict) else None
    return {"id": named or ids.stable_id("container_sim_", seed, fingerprint, "container"),
            "expires_at": CONTAINER_EXPIRES_AT, "skills": None}


def build_message(
    conversation: Conversation,
    reply: Reply,
    *,
    policy: str,
    seed: int,
    fingerprint: str,
    usage: InputUsage,
    edited: Edited | None = None,
) -> dict[str, Any]:
    reply = honour_tool_choice(conversation, reply)
    content = [dict(block) for block in reply.content]
    has_thinking = any(block.get("type") == "thinking" for block in content)
    thinks = reply.stop_reason not in ("refusal", "compaction")
    if conversation.thinking_enabled and thinks and not has_thinking:
        content.insert(0, _thinking(conversation, policy, reply, seed, fingerprint))
    for position, block in enumerate(content):
        if block.get("type") == "thinking" and not block.get("signature"):
            block["signature"] = ids.signature(seed, fingerprint, position)
    _number_blocks(content, seed, fingerprint)

    stop_reason, stop_sequence, output_tokens = reply.stop_reason, None, reply.output_tokens
    stops = conversation.body.get("stop_sequences") or []
    if stop_reason == "end_turn" and isinstance(stops, list):
        content, stop_sequence = _apply_stop_sequences(content, [str(stop) for stop in stops])
        if stop_sequence is not None:
            stop_reason = "stop_sequence"
    if output_tokens is None and content:
        output_tokens = count_output(content)
        if output_tokens > conversation.max_tokens:
            content = _cut_to_budget(content, conversation.max_tokens)
            stop_reason, stop_sequence, output_tokens = "max_tokens", None, conversation.max_tokens
    if output_tokens is None:  # no content and no count given: nothing was written
        output_tokens = 0
    input_tokens = usage.input_tokens
    if reply.context_window is not None:
        # The prompt plus what was written fills the window: bill the rest as uncached input.
        cached = usage.cache_creation_input_tokens + usage.cache_read_input_tokens
        input_tokens = max(input_tokens, reply.context_window - output_tokens - cached)

    message_usage: dict[str, Any] = {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.ephemeral_5m_input_tokens,
            "ephemeral_1h_input_tokens": usage.ephemeral_1h_input_tokens,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }
    server_use = server_tool_usage(content)
    if server_use is not None:
        message_usage["server_tool_use"] = server_use
    extra: dict[str, Any] = {}
    if edited is not None and edited.compaction is not None:
        # The answer starts with the compaction block; usage.iterations lists the compaction pass first. The
        # top-level usage is the message's own (after compaction), as the API reports it.
        content.insert(0, dict(edited.compaction))
        iterations: list[dict[str, Any]] = [dict(edited.compaction_usage or {})]
        if edited.only_compaction:
            message_usage.update(input_tokens=count_text(edited.compaction["content"]), output_tokens=0,
                                 cache_creation_input_tokens=0, cache_read_input_tokens=0)
        else:
            iterations.append({"type": "message", **{key: message_usage[key] for key in _ITERATION_FIELDS}})
        message_usage["iterations"] = iterations
    if edited is not None and edited.context_management is not None:
        extra["context_management"] = edited.context_management
    if uses_container(content):
        extra["container"] = _container(conversation.body, seed, fingerprint)
    message_usage.update(reply.usage or {})
    return {
        "model": conversation.model,
        "id": ids.message_id(seed, fingerprint),
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "stop_details": reply.stop_details,
        "usage": message_usage,
        **extra,
    }


def dumps(value: Any) -> bytes:
    """Compact JSON as the API sends it (UTF-8, not ASCII-escaped)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
