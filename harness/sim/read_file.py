"""`read-file`: the smallest model that drives a coding agent (the Claude Code CLI) through one tool.

Asked about a file ("What does notes.txt say?") with a `Read` tool offered, it reads the file from the
agent's working directory (the path the CLI names in its "Primary working directory:" line), then
answers with the file's first line. Asked to "use a subagent" with the `Agent` tool offered, it hands
the same question to a subagent (whose own requests, with `Read` offered, get the same treatment) and
reports the subagent's answer. Anything else gets the echo answer.

A stop-gap until the simulator's general models (`sim-auto`, scripted turns) exist: point recordings at
those then.
"""

from __future__ import annotations

import posixpath
import re

from harness.sim.conversation import Conversation, Reply, _text_of, text_block, tool_use_block

_FILE_NAME = re.compile(r"(?<![\w/.-])([\w-]+(?:\.[\w-]+)+)(?![\w/-])")
_WORKING_DIRECTORY = re.compile(r"Primary working directory: (\S[^\n]*)")
_NUMBERED_LINE = re.compile(r"^\s*\d+[\t→]", re.MULTILINE)  # Read returns `cat -n` style lines


def _working_directory(conversation: Conversation) -> str | None:
    for message in conversation.messages:
        found = _WORKING_DIRECTORY.search(_text_of(message.get("content")))
        if found:
            return found.group(1).strip()
    return None


def _asked_file(conversation: Conversation) -> str | None:
    # The user's own words are the last text block of the last user turn (the CLI puts reminders first).
    for message in reversed(conversation.messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        texts = [content] if isinstance(content, str) else [
            block.get("text", "") for block in content or [] if isinstance(block, dict) and block.get("type") == "text"]
        for text in reversed(texts):
            if text.lstrip().startswith("<system-reminder>"):
                continue
            found = _FILE_NAME.search(text)
            if found:
                return found.group(1)
    return None


def _first_line(result: str) -> str:
    lines = [_NUMBERED_LINE.sub("", line, count=1).strip() for line in result.splitlines()]
    return next((line for line in lines if line), "(the file is empty)")


def read_file(conversation: Conversation) -> Reply:
    name = _asked_file(conversation)
    reads, delegations = conversation.calls_to("Read"), conversation.calls_to("Agent")
    if delegations and delegations[-1].result_text is not None:
        return Reply([text_block(f"The subagent reports: {delegations[-1].result_text.strip()}")], "end_turn")
    if reads and reads[-1].result_text is not None:
        if reads[-1].is_error:
            return Reply([text_block(f"I could not read {name}: {reads[-1].result_text.strip()}")], "end_turn")
        return Reply([text_block(f"{name} says: {_first_line(reads[-1].result_text)}")], "end_turn")
    if name and "Agent" in conversation.tool_names and "subagent" in conversation.last_user_text.lower():
        return Reply([text_block("I'll ask a subagent to read it."), tool_use_block("Agent", {
            "description": f"Read {name}", "prompt": f"What does {name} say?", "subagent_type": "general-purpose",
            "run_in_background": False})],
            "tool_use")
    directory = _working_directory(conversation)
    if name and directory and "Read" in conversation.tool_names:
        path = posixpath.join(directory, name)
        return Reply([text_block(f"Let me read {name}."), tool_use_block("Read", {"file_path": path})], "tool_use")
    said = conversation.last_user_text.strip() or "(nothing)"
    return Reply([text_block(f"You said: {said}")], "end_turn")
