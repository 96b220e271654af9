"""Dayflow: the morning-brief reference agent (inbox, calendar and tasks from fixtures)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_demo.dayflow.prompt import SYSTEM_PROMPT, SYSTEM_PROMPT_NO_FILTER, user_prompt
from harness_demo.dayflow.tools import TODAY, build_registry

if TYPE_CHECKING:
    import anthropic

    from harness.loop import RunResult, ToolRegistryLike

__all__ = ["SYSTEM_PROMPT", "SYSTEM_PROMPT_NO_FILTER", "TODAY", "build_registry", "run_brief", "user_prompt"]


def run_brief(
    client: anthropic.Anthropic,
    *,
    model: str,
    stream: bool = False,
    tools: ToolRegistryLike | None = None,
    system: str = SYSTEM_PROMPT,
    **loop_options: Any,
) -> RunResult:
    """One morning brief through the reference loop.

    `tools` replaces the fixture registry (e.g. wrapped for tracing); `stream=True` streams every call;
    the other options go to `run_loop` (on_event, config, max_steps...).
    """
    # Imported here so that the tools, the prompts and `dayflow --help` do not load the loop machinery.
    from harness.loop import run_loop

    if stream:  # only when asked: stream=False must not undo a config that streams
        loop_options["stream"] = True
    if tools is None:
        tools = build_registry()
    return run_loop(client, system=system, user=user_prompt(), tools=tools, model=model, **loop_options)
