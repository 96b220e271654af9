"""Recovery checks: what the model does after a tool answers with `is_error: true`.

Self-correction means two things. The very next tool call is not the same call again (same tool,
same canonical input): repeating a failed call blindly wastes a step and usually fails the same way.
And the failure is resolved: a later call of that tool succeeds, or the model says plainly that it
cannot do the task (one of `accept_phrases`). The agent's own tools and its MCP servers' tools are judged;
server tools are left out: the API runs them, and their errors are not a wrong call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness.checks.base import CheckResult, CheckSpec, fail, ok
from harness.run import ToolCall, canonical_json
from harness.trajectory import Run, Trajectory

NAME = "self_correction"

# Phrases of a model saying it cannot do something; matched case-insensitively as whole words.
DEFAULT_ACCEPT_PHRASES = (
    "cannot",
    "can't",
    "can not",
    "unable to",
    "not able to",
    "don't have access",
    "do not have access",
    "not available",
    "isn't available",
    "no way to",
)


def _said(texts: list[str], phrases: list[str]) -> str | None:
    for phrase in phrases:
        pattern = re.compile(r"(?<!\w)" + re.escape(phrase.replace("’", "'")) + r"(?!\w)", re.IGNORECASE)
        for text in texts:
            if pattern.search(text.replace("’", "'")):
                return phrase
    return None


def _check_failure(run: Run, calls: list[ToolCall], failed: ToolCall, phrases: list[str]) -> tuple[str, Any] | None:
    """A failure reason for one errored call, or None when the model recovered from it."""
    # What the model did once it knew: a client tool's error reaches it in the next step; an MCP server's
    # inside the same turn, so the calls after it in that response count too.
    position = next(index for index, call in enumerate(calls) if call is failed)
    later = [call for call in calls[position + 1 :] if failed.server or call.step > failed.step]
    if later and later[0].key == failed.key:
        again = later[0]
        return (
            f"step {again.step}: {again.name} was called again with the identical input "
            f"{_brief(again.input)} right after it failed with is_error at step {failed.step}"
        ), again.step
    success = next((c for c in later if c.name == failed.name and c.result and not c.result.is_error), None)
    if success is not None:
        return None
    texts = [step.text for step in run.steps if step.index > failed.step]
    if _said(texts, phrases):
        return None
    last = run.steps[-1].index if run.steps else failed.step
    return (
        f"step {failed.step}: {failed.name} failed with is_error and no later call of it succeeded "
        f"(through step {last}), nor did the model say plainly that it cannot"
    ), failed.step


def _brief(value: Any, limit: int = 80) -> str:
    text = canonical_json(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def self_correction(trajectory: Trajectory, params: Mapping[str, Any]) -> CheckResult:
    phrases = list(params.get("accept_phrases") or DEFAULT_ACCEPT_PHRASES)
    only = set(params.get("tools") or [])
    errors: list[dict[str, Any]] = []
    for run in trajectory.runs:
        # The calls the model chose the inputs of and can correct: its own tools' and its MCP servers'. A
        # server tool's error (max_uses_exceeded, a page it cannot fetch) is the API's, not a wrong call.
        calls = [call for call in run.tool_calls if call.kind != "server"]
        for failed in calls:
            if not (failed.result and failed.result.is_error) or (only and failed.name not in only):
                continue
            problem = _check_failure(run, calls, failed, phrases)
            errors.append({"step": failed.step, "tool": failed.name, "id": failed.id, "recovered": problem is None})
            if problem is not None:
                reason, step = problem
                return fail(NAME, reason, step=step, errors=errors)
    if not errors:
        if params.get("require_error"):
            last = trajectory.steps[-1].index if trajectory.steps else None
            return fail(
                NAME,
                f"no tool_result with is_error through step {last}: the failure this case is about never happened",
                step=last,
            )
        return ok(NAME, "no tool failed (no tool_result with is_error); nothing to correct", errors=[])
    steps = ", ".join(str(item["step"]) for item in errors)
    return ok(
        NAME, f"recovered from {len(errors)} tool error(s) (step {steps}) without an identical retry", errors=errors
    )


CHECKS = (
    CheckSpec(
        name=NAME,
        function=self_correction,
        description="after a tool_result with is_error: no identical retry next, and a later call of that tool "
        "succeeds or the model says plainly that it cannot",
        params_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "accept_phrases": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "description": "phrases that count as saying plainly it cannot (whole words, "
                    "any case); default: cannot, can't, unable to, ...",
                },
                "tools": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "only errors of these tools; default all",
                },
                "require_error": {
                    "type": "boolean",
                    "default": False,
                    "description": "fail when no tool failed at all (the case is about recovery)",
                },
            },
        },
    ),
)
