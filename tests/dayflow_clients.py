"""Dayflow driven by clients other than the reference loop, shared by the round-trip and simulator tests."""

from __future__ import annotations

from typing import Any

import anthropic

from harness_demo.dayflow import SYSTEM_PROMPT, build_registry, user_prompt


def dayflow_beta_tools() -> list[Any]:
    """The Dayflow registry's tools as the SDK's beta tool runner takes them."""
    registry = build_registry()

    @anthropic.beta_tool
    def read_inbox(limit: int = 20) -> str:
        """Read the newest emails in the inbox."""
        return registry.run("read_inbox", {"limit": limit}).content

    @anthropic.beta_tool
    def read_calendar(days: int = 7) -> str:
        """Read calendar events for the next days."""
        return registry.run("read_calendar", {"days": days}).content

    @anthropic.beta_tool
    def read_tasks(include_done: bool = False) -> str:
        """Read the task list."""
        return registry.run("read_tasks", {"include_done": include_done}).content

    return [read_inbox, read_calendar, read_tasks]


def dayflow_runner_reply(client: anthropic.Anthropic, **options: Any) -> Any:
    """The SDK's beta tool runner on the Dayflow tools; returns the final message."""
    runner = client.beta.messages.tool_runner(
        model=options.pop("model", "claude-sonnet-5"),
        max_tokens=1024,
        system=SYSTEM_PROMPT,
        tools=dayflow_beta_tools(),
        messages=[{"role": "user", "content": user_prompt()}],
        **options,
    )
    return runner.until_done()


def text_of(message: Any) -> str:
    return "".join(block.text for block in message.content if block.type == "text")
