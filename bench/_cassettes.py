"""Synthetic but realistic agent-run cassettes for the benchmarks, in our format and in vcrpy's.

A cassette is a sequence of multi-step agent runs (a Dayflow-like morning brief): each run sends
the same system prompt and tools, and each step appends an assistant `tool_use` turn and a user
`tool_result` turn, so request bodies grow from about 2.2 KB at step one to about 7 KB at the last
step, as a real loop's do. Run lengths cycle through `RUN_LENGTHS`, and the runs at `STREAMED_RUNS`
in each cycle stream (their responses are SSE events), so every `CYCLE` consecutive requests that
start at a cycle boundary have the same mix of body sizes and streams wherever they sit in the
cassette: the start and the end of a cassette are comparable.

Everything is derived from a seed: the same arguments always give the same bytes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vcr.serializers import yamlserializer

from harness.cassette.format import CassetteFile, save_cassette
from harness.wire.bodies import body_bytes, stored_content_type

MODEL = "claude-sonnet-5"
HOST = "api.anthropic.com"
RUN_LENGTHS = (2, 3, 5, 4, 3, 5)  # steps per run, cycling; sums to CYCLE
CYCLE = sum(RUN_LENGTHS)
STREAMED_RUNS = (1, 4)  # positions in the cycle of runs that stream: 6 of every 22 requests

_WORDS = (
    "vendor", "review", "sign-off", "quarterly", "budget", "partner", "labs", "one-pager", "edits", "deadline",
    "thursday", "wednesday", "permission", "slip", "dentist", "reminder", "calendar", "standup", "retro",
    "planning", "inbox", "reply", "draft", "follow-up", "invoice", "contract", "renewal", "onboarding",
    "roadmap", "milestone", "launch", "metrics", "dashboard", "summary", "notes",
)

SYSTEM_PROMPT = "\n".join([
    "You are Dayflow, a morning-brief assistant. Today is Monday 2026-09-07.",
    "Read the inbox, the calendar and the task list with the tools, then write a brief with the",
    "sections \"## Today\", \"## Needs a reply\" and \"## Deadlines this week\".",
    "Skip newsletters and promotions. Name the sender and the deadline of every email that needs a",
    "reply. Keep each bullet under twenty words and never invent an event, a task or a deadline.",
    *(f"Rule {n}: " + " ".join(_WORDS[(n * 7 + k) % len(_WORDS)] for k in range(18)) + "." for n in range(3)),
])

TOOLS: list[dict[str, Any]] = [
    {"name": "read_inbox", "description": "Read the newest emails, newest first, with labels and deadlines.",
     "input_schema": {"type": "object", "properties": {
         "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "how many emails"},
         "offset": {"type": "integer", "minimum": 0, "description": "where to start (pagination)"}}}},
    {"name": "read_calendar", "description": "Read calendar events from today for a number of days.",
     "input_schema": {"type": "object", "properties": {
         "days": {"type": "integer", "minimum": 1, "maximum": 31, "description": "how many days ahead"}}}},
    {"name": "read_tasks", "description": "Read the task list, optionally with tasks already done.",
     "input_schema": {"type": "object", "properties": {
         "include_done": {"type": "boolean", "description": "also list finished tasks"}}}},
    {"name": "search_mail", "description": "Search the mailbox by sender, subject or words in the body.",
     "input_schema": {"type": "object", "required": ["query"], "properties": {
         "query": {"type": "string", "description": "words to look for"},
         "limit": {"type": "integer", "minimum": 1, "maximum": 20}}}},
]
_TOOL_INPUTS = {"read_inbox": {"limit": 20}, "read_calendar": {"days": 7}, "read_tasks": {"include_done": False},
                "search_mail": {"query": "deadline"}}


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _tool_result(rng: random.Random, name: str, run: int, step: int) -> str:
    """JSON text of the kind the Dayflow tools return: about 0.8 to 1 KB."""
    if name in ("read_inbox", "search_mail"):
        emails = [{"id": f"em-{run:05d}-{step}-{i}", "from": f"Sender {i} <s{i}@northwind.example>",
                   "subject": _sentence(rng, 5), "received": f"2026-09-07T07:{10 + i:02d}:00Z",
                   "body": _sentence(rng, 14), "labels": [rng.choice(["work", "school", "reminder"])],
                   "needs_reply": i % 2 == 0, "deadline": "2026-09-10" if i == 0 else None} for i in range(2)]
        return json.dumps({"emails": emails, "total": 2, "offset": 0, "next_offset": None})
    if name == "read_calendar":
        events = [{"id": f"cal-{run:05d}-{i}", "title": _sentence(rng, 4), "start": f"2026-09-0{7 + i}T09:00:00",
                   "end": f"2026-09-0{7 + i}T10:00:00", "calendar": "work" if i % 2 else "personal"}
                  for i in range(4)]
        return json.dumps({"events": events, "from": "2026-09-07", "days": 7})
    tasks = [{"id": f"task-{run:05d}-{i}", "title": _sentence(rng, 6), "due": f"2026-09-{8 + i:02d}", "done": False}
             for i in range(5)]
    return json.dumps({"tasks": tasks})


def _usage(rng: random.Random, prompt_chars: int) -> dict[str, int]:
    return {"input_tokens": prompt_chars // 4, "output_tokens": rng.randint(40, 400),
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _message(msg_id: str, content: list[dict[str, Any]], stop_reason: str, usage: dict[str, int]) -> dict[str, Any]:
    return {"id": msg_id, "type": "message", "role": "assistant", "model": MODEL, "content": content,
            "stop_reason": stop_reason, "stop_sequence": None, "usage": usage}


def _sse_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream the Messages API sends for `message`: text in ~40-character deltas, tool input in pieces."""
    start = dict(message, content=[], stop_reason=None, usage=dict(message["usage"], output_tokens=1))
    events: list[dict[str, Any]] = [{"event": "message_start", "data": {"type": "message_start", "message": start}}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            pieces = [block["text"][i:i + 40] for i in range(0, len(block["text"]), 40)]
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
        else:
            opening = dict(block, input={})
            raw = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": raw[i:i + 12]} for i in range(0, len(raw), 12)]
        events.append({"event": "content_block_start",
                       "data": {"type": "content_block_start", "index": index, "content_block": opening}})
        events.extend({"event": "content_block_delta", "data": {"type": "content_block_delta", "index": index,
                                                                "delta": delta}} for delta in deltas)
        events.append({"event": "content_block_stop", "data": {"type": "content_block_stop", "index": index}})
    events.append({"event": "message_delta", "data": {
        "type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": message["usage"]["output_tokens"]}}})
    events.append({"event": "message_stop", "data": {"type": "message_stop"}})
    return events


def _runs(count: int) -> Iterator[tuple[int, int]]:
    """(run number, steps in it) until `count` requests are planned; the last run may be cut short."""
    left, run = count, 0
    while left > 0:
        steps = min(RUN_LENGTHS[run % len(RUN_LENGTHS)], left)
        yield run, steps
        left -= steps
        run += 1


def agent_interactions(count: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """`count` interactions in our cassette format, as consecutive agent runs."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for run, steps in _runs(count):
        streamed = run % len(RUN_LENGTHS) in STREAMED_RUNS
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": f"Brief me for Monday 2026-09-07. (run {seed}-{run})"}]
        for step in range(steps):
            # Keys in the order anthropic 2.14 sends them (`messages.stream` adds `stream` last), as a
            # recording stores them.
            body: dict[str, Any] = {"max_tokens": 2048, "messages": [dict(m) for m in messages], "model": MODEL,
                                    "system": SYSTEM_PROMPT, "tools": TOOLS}
            if streamed:
                body["stream"] = True
            prompt_chars = len(json.dumps(body))
            msg_id = f"msg_{seed:02d}{run:06d}{step:02d}bench"
            if step < steps - 1:
                name = TOOLS[step % len(TOOLS)]["name"]
                tool_id = f"toolu_{seed:02d}{run:06d}{step:02d}"
                content = [{"type": "text", "text": _sentence(rng, 12)},
                           {"type": "tool_use", "id": tool_id, "name": name, "input": _TOOL_INPUTS[name]}]
                message = _message(msg_id, content, "tool_use", _usage(rng, prompt_chars))
                messages.append({"role": "assistant", "content": content})
                messages.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": tool_id, "content": _tool_result(rng, name, run, step)}]})
            else:
                brief = "\n".join(["## Today", *(f"- {_sentence(rng, 9)}" for _ in range(4)), "## Needs a reply",
                                   *(f"- {_sentence(rng, 11)}" for _ in range(3)), "## Deadlines this week",
                                   *(f"- {_sentence(rng, 8)}" for _ in range(3))])
                message = _message(msg_id, [{"type": "text", "text": brief}], "end_turn", _usage(rng, prompt_chars))
            response: dict[str, Any] = {"status": 200, "headers": {
                "content-type": "text/event-stream" if streamed else "application/json",
                "request-id": f"req_redacted_{len(out):04d}"}}
            if streamed:
                response["events"] = _sse_events(message)
            else:
                response["body"] = message
            interaction = {"request": {"method": "POST", "host": HOST, "path": "/v1/messages",
                                       "headers": {"anthropic-version": "2023-06-01",
                                                   "content-type": "application/json"},
                                       "body": body},
                           "response": response}
            # A recording parses each body from the wire, so no two interactions share an object.
            out.append(json.loads(json.dumps(interaction)))
    return out


META = {"format_version": 1, "source": "simulator", "recorded_at": "2026-09-07T06:00:00Z", "endpoint": HOST,
        "sdk_version": "anthropic-python 2.14.0", "note": "synthetic benchmark cassette (bench/_cassettes.py)"}


def write_harness_cassette(path: Path, interactions: list[dict[str, Any]]) -> Path:
    return save_cassette(CassetteFile(meta=dict(META), interactions=interactions), path)


def write_json_twin(path: Path, interactions: list[dict[str, Any]]) -> Path:
    """The same data as our YAML cassette, as one JSON document: the load-time yardstick."""
    path.write_text(json.dumps(CassetteFile(meta=dict(META), interactions=interactions).to_data(),
                               ensure_ascii=False), encoding="utf-8")
    return path


def vcrpy_interaction(interaction: dict[str, Any]) -> dict[str, Any]:
    """One interaction as vcrpy 9 records it from httpx2: string bodies, header values as lists."""
    request, response = interaction["request"], interaction["response"]
    content_type = stored_content_type(response) or "application/json"
    return {
        "request": {
            "body": json.dumps(request["body"], ensure_ascii=False, separators=(",", ":")),
            "headers": {"accept": ["application/json"], "anthropic-version": ["2023-06-01"],
                        "content-type": ["application/json"], "host": [HOST],
                        "x-stainless-package-version": ["2.14.0"]},
            "method": request["method"],
            "uri": f"https://{HOST}{request['path']}",
        },
        "response": {
            "body": {"string": body_bytes(response).decode("utf-8")},
            "headers": {"content-type": [content_type], "request-id": [response["headers"]["request-id"]]},
            "status": {"code": response["status"], "message": "OK"},
        },
    }


def write_vcrpy_cassette(path: Path, interactions: list[dict[str, Any]]) -> Path:
    data = {"interactions": [vcrpy_interaction(i) for i in interactions], "version": 1}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yamlserializer.serialize(data), encoding="utf-8")
    return path


def write_all(folder: Path, count: int, *, seed: int = 0) -> dict[str, Path]:
    """Our YAML cassette, its JSON twin and the vcrpy YAML cassette of the same `count` interactions."""
    interactions = agent_interactions(count, seed=seed)
    folder.mkdir(parents=True, exist_ok=True)
    return {"harness": write_harness_cassette(folder / f"harness-{count}.yaml", interactions),
            "json": write_json_twin(folder / f"harness-{count}.json", interactions),
            "vcrpy": write_vcrpy_cassette(folder / f"vcrpy-{count}.yaml", interactions)}


def sdk_arguments(interaction: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The keyword arguments an agent passes to `messages.create` / `messages.stream` for this request."""
    body = dict(interaction["request"]["body"])
    streamed = bool(body.pop("stream", False))
    return body, streamed


__all__ = ["CYCLE", "MODEL", "agent_interactions", "sdk_arguments", "vcrpy_interaction", "write_all",
           "write_harness_cassette", "write_json_twin", "write_vcrpy_cassette"]
