"""Protocol checks: the tool call pairing the Messages API requires of every agent loop.

Client calls: every tool_use id of an assistant turn is answered by exactly one tool_result in the next
user turn, in the same order, before anything else in that turn; no tool_result answers nothing. The
conversation checked is the one the requests carried (the deltas of a run, concatenated), so
hand-written history in the first request is checked too. A run that ends on tool_use with no further
request is not a violation: nothing was sent to check.

Server and MCP calls are answered inside the same assistant turn: every server_tool_use (web search,
code execution...) and mcp_tool_use of a response by exactly one result block of that response (its
`*_tool_result`, an `mcp_tool_result`), or, when the API paused the turn (`pause_turn`), of the
continuation's response; no result block answers nothing. `is_error` appears on tool_result and
mcp_tool_result blocks only (a server tool says it failed with an error object in its result).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from harness.checks.base import CheckResult, CheckSpec, counted, fail, ok, step_label
from harness.trajectory import Run, Step, Trajectory

NAME = "tool_ids_matched"
# The blocks the API lets carry is_error: a client's tool_result and an MCP server's mcp_tool_result.
_CARRY_IS_ERROR = ("tool_result", "mcp_tool_result")

_Problem = tuple[int | None, str]


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _tool_use_ids(blocks: list[dict[str, Any]]) -> list[str]:
    return [str(block.get("id")) for block in blocks if block.get("type") == "tool_use"]


def _check_run(run: Run, tool_use_origin: dict[str, int]) -> tuple[list[_Problem], int]:
    problems: list[_Problem] = []
    checked = 0
    conversation = run.conversation()
    for position, (origin, message) in enumerate(conversation):
        blocks = _blocks(message)
        for block in blocks:
            if "is_error" in block and block.get("type") not in _CARRY_IS_ERROR:
                problems.append(
                    (
                        origin,
                        f"a {block.get('type')} block in a {message.get('role')} turn carries "
                        "is_error, which belongs on tool_result and mcp_tool_result blocks only",
                    )
                )
        if message.get("role") == "user":
            previous = conversation[position - 1][1] if position > 0 else None
            if previous is None or previous.get("role") != "assistant" or not _tool_use_ids(_blocks(previous)):
                for block in blocks:
                    if block.get("type") == "tool_result":
                        problems.append(
                            (
                                origin,
                                f"tool_result for {block.get('tool_use_id')} follows no assistant turn with tool_use",
                            )
                        )
            continue
        if message.get("role") != "assistant":
            continue
        ids = _tool_use_ids(blocks)
        if not ids:
            continue
        checked += len(ids)
        where = ", ".join(f"{i} (step {tool_use_origin[i]})" if i in tool_use_origin else i for i in ids)
        for tool_id, count in Counter(ids).items():
            if count > 1:
                problems.append((origin, f"tool_use id {tool_id} appears {count} times in one assistant turn"))
        if position + 1 >= len(conversation):
            problems.append((origin, f"tool_use {where} has no tool_result: the request ends with that turn"))
            continue
        next_origin, reply = conversation[position + 1]
        if reply.get("role") != "user":
            problems.append(
                (
                    next_origin,
                    f"tool_use {where} has no tool_result in the next user turn (the next message is not a user turn)",
                )
            )
            continue
        problems.extend(_check_reply(ids, _reply_blocks(reply), next_origin, tool_use_origin))
    return problems, checked


def _reply_blocks(reply: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = reply.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return _blocks(reply)


def _check_reply(
    ids: list[str], blocks: list[dict[str, Any]], origin: int | None, tool_use_origin: dict[str, int]
) -> list[_Problem]:
    problems: list[_Problem] = []
    leading: list[str] = []
    for block in blocks:
        if block.get("type") != "tool_result":
            break
        leading.append(str(block.get("tool_use_id")))
    every = [str(block.get("tool_use_id")) for block in blocks if block.get("type") == "tool_result"]
    counts = Counter(every)
    for tool_id in ids:
        source = f" (step {tool_use_origin[tool_id]})" if tool_id in tool_use_origin else ""
        if counts[tool_id] == 0:
            problems.append((origin, f"tool_use {tool_id}{source} has no tool_result in the next user turn"))
        elif counts[tool_id] > 1:
            problems.append((origin, f"tool_use {tool_id}{source} is answered by {counts[tool_id]} tool_results"))
        elif tool_id not in leading:
            problems.append((origin, f"the tool_result for {tool_id}{source} is not at the start of the user turn"))
    for tool_id in dict.fromkeys(every):
        if tool_id not in ids:
            problems.append((origin, f"tool_result for {tool_id} answers no tool_use of the assistant turn before it"))
    answered = [tool_id for tool_id in leading if tool_id in ids]
    expected_order = [tool_id for tool_id in ids if tool_id in answered]
    if not problems and answered != expected_order:
        problems.append((origin, f"tool_results come in the order {answered}; the tool_use order was {ids}"))
    return problems


def _check_responses(steps: list[Step]) -> tuple[list[_Problem], dict[str, int]]:
    problems: list[_Problem] = []
    origin: dict[str, int] = {}
    for step in steps:
        for block in step.blocks:
            if "is_error" in block and block.get("type") not in _CARRY_IS_ERROR:
                problems.append((step.index, f"the response's {block.get('type')} block carries is_error"))
        ids = _tool_use_ids(step.blocks)
        if step.stop_reason == "tool_use" and not any(call for call in step.tool_calls if not call.server):
            problems.append((step.index, "stop_reason tool_use but the response has no tool_use block"))
        for tool_id in ids:
            if tool_id in origin:
                problems.append((step.index, f"tool_use id {tool_id} was already used at step {origin[tool_id]}"))
            else:
                origin[tool_id] = step.index
    return problems, origin


def _check_server_calls(run: Run) -> tuple[list[_Problem], int]:
    """Each server and MCP call answered by one result block in its own turn (its response, or the
    continuation of a paused turn); no result block that answers no call of the turn."""
    problems: list[_Problem] = []
    checked = 0
    by_index = {step.index: step for step in run.steps}
    for position, step in enumerate(run.steps):
        calls = [call for call in step.tool_calls if call.server]
        turn = {call.id for call in calls}
        if step.continues is not None and step.continues in by_index:  # the turn began in the paused step
            turn |= {call.id for call in by_index[step.continues].tool_calls if call.server}
        answers = Counter(str(block.get("tool_use_id")) for block in step.blocks
                          if str(block.get("type", "")).endswith("_tool_result") and "tool_use_id" in block)
        for tool_id, count in answers.items():
            if tool_id not in turn:
                problems.append((step.index, f"the response's result block for {tool_id} answers no server or "
                                 "MCP call of its turn"))
            elif count > 1:
                problems.append((step.index, f"{tool_id} is answered by {count} result blocks in one response"))
        ended_paused = step.stop_reason == "pause_turn" and position == len(run.steps) - 1
        for call in calls:
            if call.result is not None:
                checked += 1
                expected = "mcp_tool_result" if call.kind == "mcp" else None
                if expected and call.result.type != expected:
                    problems.append((step.index, f"mcp_tool_use {call.id} is answered by a {call.result.type}, "
                                     "not an mcp_tool_result"))
            elif not ended_paused:  # a pause the run never continued: nothing more was sent to check
                block = "mcp_tool_use" if call.kind == "mcp" else "server_tool_use"
                where = " or its pause_turn continuation" if step.stop_reason == "pause_turn" else ""
                problems.append((step.index, f"{block} {call.id} ({call.label}) has no result block in the same "
                                 f"response{where}"))
    return problems, checked


def _check_echoes(run: Run) -> list[_Problem]:
    """Each step's tool_use turn must be sent back, verbatim ids, in the run's next request."""
    problems: list[_Problem] = []
    # What follows each step: the next step's request, or the request that failed (an origin of None).
    following: list[tuple[int | None, list[dict[str, Any]]]] = [(step.index, step.delta) for step in run.steps[1:]]
    if run.failed_request is not None:
        following.append((None, run.failed_request.delta))
    for step, (next_origin, delta) in zip(run.steps, following, strict=False):
        ids = _tool_use_ids(step.blocks)
        if not ids:
            continue
        sent = {
            tool_id
            for message in delta
            if message.get("role") == "assistant"
            for tool_id in _tool_use_ids(_blocks(message))
        }
        missing = [tool_id for tool_id in ids if tool_id not in sent]
        if missing:
            problems.append(
                (
                    next_origin,
                    f"the request does not send back step {step.index}'s assistant turn "
                    f"(tool_use {', '.join(missing)} missing), so its tool_results answer "
                    "nothing",
                )
            )
    return problems


def tool_ids_matched(trajectory: Trajectory, params: Mapping[str, Any]) -> CheckResult:
    problems, origin = _check_responses(trajectory.steps)
    checked = 0
    in_turn = 0
    unanswered: list[str] = []
    for run in trajectory.runs:
        run_problems, run_checked = _check_run(run, origin)
        server_problems, server_checked = _check_server_calls(run)
        problems.extend(_check_echoes(run))
        problems.extend(run_problems)
        problems.extend(server_problems)
        checked += run_checked
        in_turn += server_checked
        if run.steps and run.failed_request is None:
            unanswered.extend(call.id for call in run.steps[-1].tool_calls if not call.server)
    if problems:
        problems.sort(key=lambda item: (item[0] is None, item[0] or 0))
        step, text = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return fail(
            NAME,
            f"{step_label(step)}: {text}{more}",
            step=step,
            problems=[{"step": s, "problem": p} for s, p in problems],
        )
    never_sent = counted(len(unanswered), "tool_use", "tool_use blocks")
    note = f"; {never_sent} at the end of a run never sent back" if unanswered else ""
    server_note = (f"; {counted(in_turn, 'server or MCP call')} answered in their own turn" if in_turn else "")
    if checked == 0:
        return ok(
            NAME,
            f"no tool_use was sent back in any request, so there was nothing to pair{server_note}{note}",
            tool_uses_checked=0,
            server_calls_checked=in_turn,
            unanswered_at_end=unanswered,
        )
    return ok(
        NAME,
        ("the one tool_use id sent back was answered by the next user turn" if checked == 1 else
         f"all {checked:,} tool_use ids sent back were answered in order by the next user turn") + server_note + note,
        tool_uses_checked=checked,
        server_calls_checked=in_turn,
        unanswered_at_end=unanswered,
    )


CHECKS = (
    CheckSpec(
        name=NAME,
        function=tool_ids_matched,
        description="every tool_use id answered by exactly one tool_result at the start of the next user turn, "
        "in order; every server and MCP call by one result block in its own turn; no orphan, no duplicate; "
        "is_error only on tool_result and mcp_tool_result blocks",
        params_schema={"type": "object", "additionalProperties": False, "properties": {}},
    ),
)
