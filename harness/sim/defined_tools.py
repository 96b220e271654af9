"""Anthropic-defined client tools: memory, bash, text editor and computer use, as `sim-auto` calls them.

These tools are run by the client, like the user's own, but the API defines their input (no `input_schema` is
sent): `{"command": "view", "path": "/memories"}` for memory, `{"command": ...}` for bash,
`{"command": "create", "path": ..., "file_text": ...}` for the text editor, `{"action": "screenshot"}` for
computer use. `input_for` gives, call after call, a short plan that is valid for each tool's published shape:
memory views its directory, creates a file and edits it (the commands of `BetaMemoryTool20250818Command`); the
text editor creates a file, views it and replaces a string; bash echoes; computer takes a screenshot, then
clicks inside the display it was given. Paths and text say they are the simulator's.
"""

from __future__ import annotations

from typing import Any

_MEMORY_FILE = "/memories/harness_sim.md"
_EDITED_FILE = "harness_sim.txt"
_TYPE_PREFIXES = {"memory_": "memory", "bash_": "bash", "text_editor_": "text_editor", "computer_": "computer"}


def defined_kind(tool: dict[str, Any]) -> str | None:
    """memory, bash, text_editor or computer for an Anthropic-defined client tool; None for any other."""
    kind = tool.get("type")
    if not isinstance(kind, str) or kind.startswith("computer_toolset"):
        return None
    return next((name for prefix, name in _TYPE_PREFIXES.items() if kind.startswith(prefix)), None)


def _memory(call: int) -> dict[str, Any]:
    plan: list[dict[str, Any]] = [
        {"command": "view", "path": "/memories"},
        {"command": "create", "path": _MEMORY_FILE, "file_text": "Written by sim-auto (harness simulator).\n"},
        {"command": "str_replace", "path": _MEMORY_FILE, "old_str": "sim-auto", "new_str": "sim-auto, again"},
        {"command": "view", "path": _MEMORY_FILE},
    ]
    return plan[call % len(plan)]


def _text_editor(call: int) -> dict[str, Any]:
    plan: list[dict[str, Any]] = [
        {"command": "create", "path": _EDITED_FILE, "file_text": "Written by sim-auto (harness simulator).\n"},
        {"command": "view", "path": _EDITED_FILE},
        {"command": "str_replace", "path": _EDITED_FILE, "old_str": "sim-auto", "new_str": "sim-auto, again"},
    ]
    return plan[call % len(plan)]


def _computer(tool: dict[str, Any], call: int) -> dict[str, Any]:
    if call % 2 == 0:
        return {"action": "screenshot"}
    width, height = tool.get("display_width_px"), tool.get("display_height_px")
    x = width // 2 if isinstance(width, int) and width > 0 else 0
    y = height // 2 if isinstance(height, int) and height > 0 else 0
    return {"action": "left_click", "coordinate": [x, y]}


def input_for(tool: dict[str, Any], call: int) -> dict[str, Any]:
    """The input of the `call`-th call (0-based) of an Anthropic-defined tool in a task."""
    kind = defined_kind(tool)
    if kind == "memory":
        return _memory(call)
    if kind == "text_editor":
        return _text_editor(call)
    if kind == "computer":
        return _computer(tool, call)
    return {"command": "echo 'sim-auto (harness simulator) ran this command'"}
