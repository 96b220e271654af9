"""The data assistant: a reference agent that answers questions from a read-only SQLite database and
corrects its own SQL from the error it gets back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_demo.data_assistant.prompt import QUESTION, SYSTEM_PROMPT
from harness_demo.data_assistant.tools import build_registry

if TYPE_CHECKING:
    import anthropic

    from harness.loop import RunResult, ToolRegistryLike

__all__ = ["QUESTION", "SYSTEM_PROMPT", "build_registry", "run_question"]


def run_question(
    client: anthropic.Anthropic,
    *,
    model: str,
    question: str = QUESTION,
    stream: bool = False,
    tools: ToolRegistryLike | None = None,
    **loop_options: Any,
) -> RunResult:
    """One question through the reference loop.

    `tools` replaces the registry (by default a fresh read-only database); `stream=True` streams every
    call; the other options go to `run_loop` (on_event, config, max_steps...).
    """
    from harness.loop import run_loop  # here, so the tools and `--help` do not load the loop machinery

    if stream:  # only when asked: stream=False must not undo a config that streams
        loop_options["stream"] = True
    if tools is None:
        tools = build_registry()
    return run_loop(client, system=SYSTEM_PROMPT, user=question, tools=tools, model=model, **loop_options)
