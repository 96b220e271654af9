"""The tool calls of a run, of every kind, paired with their results as the API pairs them.

- A client call (`tool_use`) is answered by a `tool_result` in the run's next request (its next user turn).
- A server call (`server_tool_use`: web search, web fetch, code execution, tool search...) is answered by
  its `*_tool_result` block in the same response; an MCP call (`mcp_tool_use`, with its server's name) by an
  `mcp_tool_result` in the same response. When the API paused the turn (`pause_turn`) before a result, the
  continuation's response carries it: the continuation is the same turn.
- A call made by code the API ran (programmatic tool calling) carries its `caller`.

Each result is read as a person reads it (`ToolResult.content`): a search's results as "title <url>" lines,
a fetched page as its URL, title and text, code execution as its output and exit code, an error as its
code; what the block holds is kept readably in `ToolResult.details` (no `encrypted_content`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.jsondata import canonical_json, mapping_at
from harness.run import CALL_BLOCKS, ToolCall, ToolResult
from harness.trajectory.parts import Run

__all__ = ["attach_results", "content_text", "read_result", "tool_calls_of"]

_EXCERPT = 2000  # characters of a fetched page or a file view kept in a result's content


def tool_calls_of(blocks: list[dict[str, Any]], step: int) -> list[ToolCall]:
    """The calls a response asked for, each server and MCP call with its result from the same response."""
    results = {str(block["tool_use_id"]): block for block in blocks if _is_result(block)}
    calls = []
    for block in blocks:
        kind = CALL_BLOCKS.get(str(block.get("type")))
        if kind is None:
            continue
        caller = block.get("caller")
        server_name = block.get("server_name")
        call = ToolCall(
            id=str(block.get("id", "")),
            name=str(block.get("name", "")),
            input=block.get("input", {}),
            step=step,
            kind=kind,
            server_name=str(server_name) if kind == "mcp" and server_name is not None else None,
            caller=dict(caller) if isinstance(caller, Mapping) and caller.get("type") != "direct" else None,
        )
        if call.server and call.id in results:
            call.result = read_result(results[call.id], step)
        calls.append(call)
    return calls


def attach_results(run: Run) -> None:
    """Each client call's result from the run's next request (the next step's, or the failed one); each
    server or MCP call a paused turn left unanswered, from the continuation's response."""
    requests: list[tuple[int | None, list[dict[str, Any]]]] = [(step.index, step.delta) for step in run.steps]
    if run.failed_request is not None:
        requests.append((None, run.failed_request.delta))
    for position, step in enumerate(run.steps):
        if position + 1 >= len(requests):
            break
        carrier, delta = requests[position + 1]
        results: dict[str, dict[str, Any]] = {}
        for message in delta:
            if message.get("role") != "user":
                continue
            for block in blocks_of(message):
                if block.get("type") == "tool_result":
                    results.setdefault(str(block.get("tool_use_id")), block)
        for call in step.tool_calls:
            if not call.server and call.id in results:
                call.result = read_result(results[call.id], carrier)
        later = run.steps[position + 1] if position + 1 < len(run.steps) else None
        if later is not None and later.continues == step.index:
            answered = {str(block["tool_use_id"]): block for block in later.blocks if _is_result(block)}
            for call in step.tool_calls:
                if call.server and call.result is None and call.id in answered:
                    call.result = read_result(answered[call.id], later.index)


def blocks_of(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _is_result(block: Mapping[str, Any]) -> bool:
    kind = str(block.get("type", ""))
    return kind.endswith("_tool_result") and "tool_use_id" in block


def read_result(block: Mapping[str, Any], step: int | None) -> ToolResult:
    """A result block of any kind as a `ToolResult`."""
    kind = str(block.get("type", "tool_result"))
    content = block.get("content")
    if kind in ("tool_result", "mcp_tool_result"):
        return ToolResult(content=content_text(content), is_error=block.get("is_error") is True, step=step, type=kind)
    inner = content if isinstance(content, Mapping) else {}
    inner_type = str(inner.get("type", ""))
    if inner_type.endswith("_error"):
        code = inner.get("error_code")
        return ToolResult(
            content=f"error: {code}",
            is_error=True,
            step=step,
            type=kind,
            error_code=str(code) if code is not None else inner_type,
        )
    text, details = _server_content(content)
    return ToolResult(content=text, is_error=False, step=step, type=kind, details=details)


def _server_content(content: Any) -> tuple[str, dict[str, Any] | None]:
    """A server tool's result as text and readable details, by the shape of its content."""
    if isinstance(content, list):  # web search: a list of web_search_result
        results = [
            {key: item.get(key) for key in ("title", "url", "page_age") if item.get(key) is not None}
            for item in content
            if isinstance(item, Mapping) and item.get("type") == "web_search_result"
        ]
        if results or not content:
            lines = [f"{item.get('title', '(untitled)')} <{item.get('url', '?')}>" for item in results]
            return "\n".join(lines), {"results": results}
        return content_text(content), None
    if not isinstance(content, Mapping):
        return content_text(content), None
    kind = str(content.get("type", ""))
    if kind == "web_fetch_result":
        document = mapping_at(content, "content")
        source = mapping_at(document, "source")
        data = source.get("data") if source.get("type") == "text" and isinstance(source.get("data"), str) else ""
        details = {
            "url": content.get("url"),
            "title": document.get("title"),
            "retrieved_at": content.get("retrieved_at"),
            "media_type": source.get("media_type"),
            "chars": len(data) if data else None,
        }
        head = f"{document.get('title') or '(untitled)'} <{content.get('url')}>"
        body = _excerpt(data) if data else f"[{source.get('type', 'document')}]"
        return f"{head}\n{body}", {key: value for key, value in details.items() if value is not None}
    if kind in ("code_execution_result", "bash_code_execution_result", "encrypted_code_execution_result"):
        stdout = content.get("stdout")
        if stdout is None and "encrypted_stdout" in content:
            stdout = "[encrypted stdout]"
        files = [item.get("file_id") for item in content.get("content") or [] if isinstance(item, Mapping)]
        details = {
            "return_code": content.get("return_code"),
            "stdout": stdout or "",
            "stderr": content.get("stderr") or "",
        }
        if files:
            details["files"] = files
        parts = [f"exit {content.get('return_code')}"]
        if stdout:
            parts.append(f"stdout: {stdout}")
        if content.get("stderr"):
            parts.append(f"stderr: {content['stderr']}")
        if files:
            parts.append(f"files: {', '.join(str(f) for f in files)}")
        return "\n".join(parts), details
    if kind == "text_editor_code_execution_view_result":
        text = str(content.get("content") or "")
        details = {
            k: content.get(k)
            for k in ("file_type", "num_lines", "start_line", "total_lines")
            if content.get(k) is not None
        }
        return _excerpt(text), details
    if kind == "text_editor_code_execution_create_result":
        updated = bool(content.get("is_file_update"))
        return ("file updated" if updated else "file created"), {"is_file_update": updated}
    if kind == "text_editor_code_execution_str_replace_result":
        details = {
            k: content.get(k)
            for k in ("old_start", "old_lines", "new_start", "new_lines")
            if content.get(k) is not None
        }
        return "\n".join(str(line) for line in content.get("lines") or []), details
    if kind == "tool_search_tool_search_result":
        names = [
            str(item.get("tool_name")) for item in content.get("tool_references") or [] if isinstance(item, Mapping)
        ]
        return "tools found: " + (", ".join(names) or "none"), {"tools": names}
    if kind == "advisor_result":
        return str(content.get("text") or ""), {"stop_reason": content.get("stop_reason")}
    if kind == "advisor_redacted_result":
        return "[advice, encrypted]", {"stop_reason": content.get("stop_reason")}
    return content_text(content), None


def _excerpt(text: str) -> str:
    return text[:_EXCERPT] + ("…" if len(text) > _EXCERPT else "")


def content_text(content: Any) -> str:
    """A tool_result's (or mcp_tool_result's) content as text: text parts joined, other parts by type."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, Mapping):
                parts.append(f"[{part.get('type', 'block')}]")
            else:
                parts.append(str(part))
        return "".join(parts)
    return canonical_json(content)
