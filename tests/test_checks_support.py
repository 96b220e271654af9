"""Helpers shared by the trajectory, checks and evals tests (no tests here).

- `conversation(...)`: a Trajectory from plain turns, requests grown the way an agent loop grows them;
- `ScriptedModel`: a Messages API behind httpx2.MockTransport answering from a script, JSON or SSE;
- `record_dayflow(...)`: a real Dayflow run (the reference loop, the real Dayflow tools) against a
  scripted model, recorded with use_cassette: a cassette and the RunResult of the same run.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anthropic
import httpx2

from harness.run import Exchange
from harness.trajectory import Trajectory
from tests.conftest import REAL_CASSETTES as REAL

REPO = Path(__file__).resolve().parents[1]

TOOL_ERROR_HAR = REAL / "mirascope/input/cassettes/tool-error/anthropic/handles-tool-execution-errors-and-retries.har"
PARALLEL_TOOLS = REAL / "pydantic-ai/models/cassettes/test_anthropic/test_multiple_parallel_tool_calls.yaml"
TOOL_SEARCH = REAL / "pydantic-ai/cassettes/test_tool_search/test_tool_search_eval[anthropic].yaml"
MODEL = "claude-sonnet-5"

_ids = itertools.count(1)


def real_cassettes() -> list[Path]:
    """Every file of the real-recordings corpus; none where it is absent (tests that read it carry the
    `real_cassettes` marker, which skips them there)."""
    return sorted(p for p in REAL.rglob("*") if p.suffix in (".yaml", ".har") and p.is_file())


# --- building trajectories from plain turns -------------------------------------------------------------------


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, tool_input: Mapping[str, Any] | None = None, *, id: str | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": id or f"toolu_{next(_ids):04d}", "name": name, "input": dict(tool_input or {})}


def tool_result(tool_use_id: str, content: str = "ok", *, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def message(
    blocks: list[dict[str, Any]],
    stop_reason: str | None = None,
    *,
    usage: Mapping[str, int] | None = None,
    msg_id: str | None = None,
) -> dict[str, Any]:
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {
        "id": msg_id or f"msg_{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(usage or {"input_tokens": 100, "output_tokens": 20}),
    }


def turn(
    *blocks: dict[str, Any],
    stop_reason: str | None = None,
    results: list[dict[str, Any]] | None = None,
    usage: Mapping[str, int] | None = None,
    msg_id: str | None = None,
) -> dict[str, Any]:
    """One model turn; `results` is the user turn sent back (default: "ok" for each tool_use)."""
    return {"message": message(list(blocks), stop_reason, usage=usage, msg_id=msg_id), "results": results}


def conversation(*turns: dict[str, Any], prompt: str = "Do the task.") -> Trajectory:
    """A one-run trajectory whose requests grow as a loop grows them: assistant echo, then results."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    exchanges = []
    for position, item in enumerate(turns):
        body = {"model": MODEL, "max_tokens": 1024, "messages": copy.deepcopy(messages)}
        exchanges.append(Exchange(request=body, message=item["message"], status=200))
        if position + 1 == len(turns):
            break
        blocks = item["message"]["content"]
        messages.append({"role": "assistant", "content": copy.deepcopy(blocks)})
        results = item["results"]
        if results is None:
            results = [tool_result(b["id"]) for b in blocks if b["type"] == "tool_use"]
        messages.append({"role": "user", "content": copy.deepcopy(results)})
    return Trajectory.from_exchanges(exchanges)


# --- a scripted Messages API ------------------------------------------------------------------------------------

Reply = Mapping[str, Any] | httpx2.Response | Callable[[dict[str, Any]], Any]


def sse_body(msg: Mapping[str, Any]) -> bytes:
    """The event stream a streaming call would have sent for `msg`."""
    start = dict(msg, content=[], stop_reason=None, stop_sequence=None)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(msg["content"]):
        if block["type"] == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            half = len(block["text"]) // 2
            for piece in (block["text"][:half], block["text"][half:]):
                events.append(
                    {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
                )
        else:
            events.append({"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}})
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                }
            )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": msg["usage"]["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def overloaded() -> httpx2.Response:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_x"}
    return httpx2.Response(529, json=body, headers={"retry-after-ms": "1", "x-should-retry": "true"})


def server_error() -> httpx2.Response:
    body = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    return httpx2.Response(500, json=body, headers={"x-should-retry": "false"})


class ScriptedModel:
    """Answers each POST /v1/messages with the next script item: a Message, a Response, or f(body)."""

    def __init__(self, script: list[Reply]) -> None:
        self.script = list(script)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        if not self.script:
            raise AssertionError("the script ran out: the loop made more calls than the test expected")
        item = self.script.pop(0)
        if callable(item) and not isinstance(item, httpx2.Response):
            item = item(body)
        if isinstance(item, httpx2.Response):
            return item
        msg = dict(item)
        if body.get("stream"):
            return httpx2.Response(200, content=sse_body(msg), headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=msg)

    def client(self, max_retries: int = 2) -> anthropic.Anthropic:
        transport = httpx2.MockTransport(self)
        return anthropic.Anthropic(
            api_key="sk-ant-test-0000", max_retries=max_retries, http_client=httpx2.Client(transport=transport)
        )


# --- a recorded Dayflow run -------------------------------------------------------------------------------------

DAYFLOW_BRIEF = """## Today
- 09:30–09:45 UTC — Team standup
- 13:00–13:30 UTC — Weekly staff sync

## Needs a reply
- **Priya Raman** — Q3 vendor review: wants your sign-off by Thursday, Sep 10.
- **Sam K.** — Partner Labs one-pager: send edits before Wednesday, Sep 9.

## Deadlines this week
1. **Sep 8** — Send Sept newsletter draft (task)
2. **Sep 9** — Partner Labs one-pager edits for Sam
3. **Sep 10** — Q3 vendor review sign-off for Priya; prepare notes (task)
4. **Sep 11** — Science museum permission slip (school)"""

DAYFLOW_CALLS = (("read_inbox", {"limit": 20}), ("read_calendar", {"days": 7}), ("read_tasks", {"include_done": False}))


def dayflow_script(*, before_final: list[Reply] = ()) -> list[Reply]:
    """Step 1 asks for all three tools at once; step 2 writes the brief (after `before_final`, e.g. a 529)."""
    first = message(
        [text("Let me read your inbox, calendar and tasks."), *(tool_use(name, args) for name, args in DAYFLOW_CALLS)],
        usage={"input_tokens": 889, "output_tokens": 169},
    )
    final = message(
        [text(DAYFLOW_BRIEF)], usage={"input_tokens": 2185, "output_tokens": 391, "cache_read_input_tokens": 0}
    )
    return [first, *before_final, final]


def record_dayflow(path: Path, *, stream: bool = False, script: list[Reply] | None = None, max_retries: int = 2) -> Any:
    """Run Dayflow through the reference loop against the script, recording `path`; the RunResult."""
    from harness import use_cassette
    from harness_demo.dayflow import run_brief

    model = ScriptedModel(script if script is not None else dayflow_script())
    with use_cassette(path, mode="once"):
        result = run_brief(model.client(max_retries=max_retries), model=MODEL, stream=stream)
    return result


def dayflow_items() -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The fixture inbox's promotional and needs-reply emails, as golden items."""
    from harness_demo.dayflow.tools import load_fixture

    emails = load_fixture("inbox")["emails"]
    item = lambda e: {"id": e["id"], "subject": e["subject"], "sender": e["from"]}  # noqa: E731
    return ([item(e) for e in emails if "promotions" in e["labels"]], [item(e) for e in emails if e["needs_reply"]])


def dayflow_golden_checks() -> list[dict[str, Any]]:
    promotional, needs_reply = dayflow_items()
    return [
        {"check": "tool_ids_matched"},
        {"check": "outcome", "params": {"stop_reason": "end_turn"}},
        {
            "check": "trajectory_match",
            "params": {
                "mode": "unordered",
                "args": "exact",
                "expected": [{"name": name, "input": args} for name, args in DAYFLOW_CALLS],
            },
        },
        {"check": "final_answer", "params": {"sections": ["Today", "Needs a reply", "Deadlines this week"]}},
        {"check": "promotions_filtered", "params": {"promotional": promotional, "needs_reply": needs_reply}},
        {"check": "self_correction"},
        {
            "check": "budgets",
            "params": {"max_steps": 4, "max_tool_calls": 6, "max_tokens": {"input": 5000, "output": 1000}},
        },
        {"check": "no_repeated_calls", "params": {"max_in_a_row": 2}},
    ]
