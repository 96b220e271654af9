"""Where two runs of one case part: the first step whose request or response differs, and what changed there.

Each exchange of a case record is viewed as its request (model, limits, system, tools, the messages it added)
and its response (model, stop reason, content), with the ids the simulator or the API makes up (tool_use ids,
thinking signatures) renamed by order of appearance first, so only real changes count (`step_views`). The
first step where the views differ is compared with a deepdiff summary (`harness.cassette.match.diff_summary`),
and a later step whose response differs is named too when the first change was in the request only
(`first_divergence`). A request a run ended on with no message back is a view of its own.

Used by the comparison (harness.report.compare) for each case's `divergence`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.cassette.match import diff_summary

__all__ = ["first_divergence", "step_views"]


# --- per-step views: what a step asked and answered, without the ids nobody chose -------------------------------


class _Aliases:
    """tool_use ids -> 'tool#1', 'tool#2'... in order of first appearance in one trajectory."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def __call__(self, value: Any) -> str:
        return self.names.setdefault(str(value), f"tool#{len(self.names) + 1}")


def _normal_block(block: Mapping[str, Any], alias: _Aliases) -> dict[str, Any]:
    out = dict(block)
    kind = str(out.get("type", ""))
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use") and "id" in out:
        out["id"] = alias(out["id"])
    if "tool_use_id" in out:
        out["tool_use_id"] = alias(out["tool_use_id"])
    if "signature" in out:
        out["signature"] = "<signature>"
    if isinstance(out.get("content"), list):
        out["content"] = [_normal_block(part, alias) if isinstance(part, Mapping) else part for part in out["content"]]
    return out


def _normal_message(message: Mapping[str, Any], alias: _Aliases) -> dict[str, Any]:
    out = dict(message)
    if isinstance(out.get("content"), list):
        out["content"] = [_normal_block(b, alias) if isinstance(b, Mapping) else b for b in out["content"]]
    return out


def _request_view(request: Mapping[str, Any], added: Any, alias: _Aliases) -> dict[str, Any]:
    return {
        "model": request.get("model"),
        "max_tokens": request.get("max_tokens"),
        "stream": request.get("stream"),
        "system": request.get("system_text") if request.get("system_text") is not None else request.get("system"),
        "tools": request.get("tools"),
        "tool_definitions": request.get("tools_fingerprint"),
        "messages_added": [_normal_message(m, alias) for m in added or []],
    }


def step_views(case: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """Each exchange of a case record, normalized for diffing: its steps, and the request a run ended on
    when no message came back (`step` None there). None when the record has no step_details."""
    digest = case.get("trajectory") or {}
    details = digest.get("step_details")
    if details is None:
        return None
    failed = {run["index"]: run for run in digest.get("run_details") or [] if run.get("failed_request")}
    alias = _Aliases()
    views: list[dict[str, Any]] = []

    def close_run(run: int, last_step: int | None) -> None:
        record = failed.pop(run, None)
        if record is None:
            return
        views.append(
            {
                "step": None,
                "label": f"the failed request after step {last_step}"
                if last_step
                else f"the failed request of run {run}",
                "request": _request_view(record["failed_request"]["request"], record["failed_request"]["added"], alias),
                "response": {"outcome": {key: record["outcome"].get(key) for key in ("kind", "status", "error_type")}},
            }
        )

    current, last = None, None
    for step in details:
        if current is not None and step["run"] != current:
            close_run(current, last)
        current, last = step["run"], step["index"]
        response = step["response"]
        views.append(
            {
                "step": step["index"],
                "label": f"step {step['index']}",
                "request": _request_view(step["request"], step.get("added"), alias),
                "response": {
                    "model": response.get("model"),
                    "stop_reason": response.get("stop_reason"),
                    "stop_sequence": response.get("stop_sequence"),
                    "content": [_normal_block(block, alias) for block in response.get("blocks") or []],
                },
            }
        )
    if current is not None:
        close_run(current, last)
    for run in sorted(failed):  # runs with no step at all
        close_run(run, None)
    return views


def first_divergence(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> dict[str, Any] | None:
    """Where two case records' trajectories first part; None when they do not.

    `step` is the step number (None for a request that got no message; `label` says which), `where` is
    request, response, steps (one side has fewer) or unknown (no per-step data).
    """
    before, after = step_views(baseline), step_views(candidate)
    if before is None or after is None:
        side = "baseline" if before is None else "candidate"
        return {
            "step": None,
            "label": None,
            "where": "unknown",
            "request": [],
            "response": [],
            "note": f"the {side} results carry no per-step data (written before step_details existed)",
        }
    found: dict[str, Any] | None = None
    for index in range(max(len(before), len(after))):
        if index >= len(before) or index >= len(after):
            shorter, longer = ("baseline", "candidate") if index >= len(before) else ("candidate", "baseline")
            extra = (after if index >= len(before) else before)[index]
            note = f"the {shorter} has no {extra['label']}: the {longer} goes on"
            if found is None:
                return {
                    "step": extra["step"],
                    "label": extra["label"],
                    "where": "steps",
                    "request": [],
                    "response": [],
                    "note": note,
                }
            found.setdefault("note", note)
            break
        b, c = before[index], after[index]
        request = diff_summary(b["request"], c["request"])
        response = diff_summary(b["response"], c["response"])
        if b["label"] != c["label"] and not request and not response:
            response = [f"the baseline's is {b['label']}, the candidate's {c['label']}"]
        if found is None and (request or response):
            found = {
                "step": c["step"],
                "label": c["label"],
                "where": "request" if request else "response",
                "request": request,
                "response": response,
            }
            if response:
                return found
        elif found is not None and response:
            found["response_step"] = c["step"]
            found["response_label"] = c["label"]
            found["later_response"] = response
            return found
    return found
