"""Server tools, played by the simulator: web search, web fetch, code execution and tool search.

The API runs these tools itself, inside one response: the model's `server_tool_use` block is followed at once
by the tool's result block (`web_search_tool_result`, `web_fetch_tool_result`, `code_execution_tool_result`,
`bash_code_execution_tool_result`, `text_editor_code_execution_tool_result`, `tool_search_tool_result`). The
simulator plays each one deterministically with synthetic content that says it is the simulator's: nothing
is searched, fetched or run. What the API counts is counted: `usage.server_tool_use` (web search and web fetch
requests), a tool's `max_uses` (a use past it is the API's `max_uses_exceeded` error result) and the server's
own loop (at most `SERVER_LOOP_LIMIT` tool iterations in one response; past it the response stops with
`pause_turn`, and sending the paused turn back continues it). Code execution answers with a `container`.

Tool search (`tool_search_tool_regex`, `tool_search_tool_bm25`) finds the `defer_loading` tools whose name or
description shares a word with the query (all of them, up to five, when none does, so that a run goes on);
a deferred tool may be called only once a search has surfaced it (`surfaced`).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

SERVER_LOOP_LIMIT = 10  # tool iterations the API's server-side loop runs before it answers pause_turn
CONTAINER_EXPIRES_AT = "2026-09-07T08:30:00Z"  # the simulator's fixed clock plus half an hour
_MAX_REFERENCES = 5
_LABEL = "harness simulator"

# The tool `type` prefixes the API runs itself, and the server_tool_use names each makes.
_CALLS_BY_TYPE = (
    ("web_search_", ("web_search",)),
    ("web_fetch_", ("web_fetch",)),
    ("code_execution_20250522", ("code_execution",)),
    ("code_execution_", ("bash_code_execution", "text_editor_code_execution")),
    ("tool_search_tool_regex", ("tool_search_tool_regex",)),
    ("tool_search_tool_bm25", ("tool_search_tool_bm25",)),
)
_RESULT_TYPES = {
    "web_search": "web_search_tool_result",
    "web_fetch": "web_fetch_tool_result",
    "code_execution": "code_execution_tool_result",
    "bash_code_execution": "bash_code_execution_tool_result",
    "text_editor_code_execution": "text_editor_code_execution_tool_result",
    "tool_search_tool_regex": "tool_search_tool_result",
    "tool_search_tool_bm25": "tool_search_tool_result",
}
RESULT_TYPES = frozenset(_RESULT_TYPES.values())
_ERROR_TYPES = {
    "web_search": "web_search_tool_result_error",
    "web_fetch": "web_fetch_tool_result_error",
    "code_execution": "code_execution_tool_result_error",
    "bash_code_execution": "bash_code_execution_tool_result_error",
    "text_editor_code_execution": "text_editor_code_execution_tool_result_error",
    "tool_search_tool_regex": "tool_search_tool_result_error",
    "tool_search_tool_bm25": "tool_search_tool_result_error",
}
# usage.server_tool_use fields, by server_tool_use name (the API bills these per use)
_BILLED = {"web_search": "web_search_requests", "web_fetch": "web_fetch_requests"}
_URL = re.compile(r"https?://[^\s\"'<>)\]]+")


@dataclass(frozen=True)
class ServerTool:
    """One server tool the request offers: its `tools` entry and the server_tool_use names it makes."""

    definition: dict[str, Any]
    calls: tuple[str, ...]

    @property
    def name(self) -> str:
        return str(self.definition.get("name"))

    @property
    def max_uses(self) -> int | None:
        value = self.definition.get("max_uses")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def is_search(self) -> bool:
        return self.calls[0].startswith("tool_search_")


def server_calls_of(tool: dict[str, Any]) -> tuple[str, ...]:
    """The server_tool_use names a `tools` entry makes; () for a client tool."""
    kind = tool.get("type")
    if not isinstance(kind, str):
        return ()
    return next((calls for prefix, calls in _CALLS_BY_TYPE if kind.startswith(prefix)), ())


def server_tools(tools: Iterable[Any]) -> list[ServerTool]:
    """The request's server tools, tool search first (it decides which deferred tools exist), then as offered."""
    found = [ServerTool(tool, calls) for tool in tools if isinstance(tool, dict) and (calls := server_calls_of(tool))]
    return sorted(found, key=lambda tool: not tool.is_search)


def is_deferred(tool: dict[str, Any]) -> bool:
    return tool.get("defer_loading") is True


def _opaque(*parts: object) -> str:
    """A stable opaque value standing in for the API's encrypted fields (base64, like theirs)."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return base64.b64encode(b"harness-sim:" + digest).decode()


def _words(text: str) -> list[str]:
    return [word for word in re.findall(r"[a-z0-9]+", text.lower()) if len(word) > 2]


def query_of(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:200] or "harness simulator"


def search_references(tools: Iterable[dict[str, Any]], query: str) -> list[str]:
    """The deferred tools a tool search for `query` surfaces (see the module doc)."""
    deferred = [tool for tool in tools if is_deferred(tool) and isinstance(tool.get("name"), str)]
    wanted = set(_words(query))
    matching = [
        tool["name"]
        for tool in deferred
        if wanted & set(_words(f"{tool['name'].replace('_', ' ')} {tool.get('description') or ''}"))
    ]
    return (matching or [tool["name"] for tool in deferred])[:_MAX_REFERENCES]


def surfaced(messages: Iterable[Any]) -> set[str]:
    """Tool names a tool search has surfaced in these messages or blocks: the tool_reference blocks of a server
    tool search's result, or of a client tool's tool_result (a tool search the client runs itself)."""
    names: set[str] = set()
    for item in messages:
        blocks = item.get("content") if isinstance(item, dict) and "role" in item else [item]
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict):
                continue
            content = block.get("content")
            if block.get("type") == "tool_search_tool_result" and isinstance(content, dict):
                references = content.get("tool_references") or []
            elif block.get("type") == "tool_result" and isinstance(content, list):
                references = content
            else:
                continue
            names.update(
                reference["tool_name"]
                for reference in references
                if isinstance(reference, dict)
                and reference.get("type", "tool_reference") == "tool_reference"
                and isinstance(reference.get("tool_name"), str)
            )
    return names


@dataclass(frozen=True)
class Context:
    """What a played call may draw on: the question, URLs seen so far, the request's tools."""

    question: str
    urls: tuple[str, ...]
    tools: tuple[dict[str, Any], ...]
    seed: int
    round: int  # how many times this call was made before in the task


def urls_in(blocks: Iterable[Any], text: str) -> list[str]:
    """URLs a fetch may use: those in the user's text, then those of earlier search results."""
    found = _URL.findall(text)
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "web_search_tool_result":
            found += [r["url"] for r in block.get("content") or [] if isinstance(r, dict) and r.get("url")]
    return list(dict.fromkeys(found))


def _input(call: str, context: Context) -> dict[str, Any]:
    query = query_of(context.question) + (f" ({context.round + 1})" if context.round else "")
    if call == "web_search" or call.startswith("tool_search_"):
        return {"query": query}
    if call == "web_fetch":
        urls = context.urls or ("https://example.com/",)
        return {"url": urls[context.round % len(urls)]}
    if call == "code_execution":
        return {"code": f"print('{_LABEL}: this code was not run')"}
    if call == "bash_code_execution":
        return {"command": f"echo '{_LABEL}: this command was not run'"}
    return {
        "command": "create",
        "path": f"/tmp/harness_sim_{context.round + 1}.txt",
        "file_text": f"Written by the {_LABEL}; no file was created.\n",
    }


def _content(call: str, tool_input: dict[str, Any], context: Context) -> Any:
    if call == "web_search":
        query = tool_input["query"]
        slug = "-".join(_words(query)[:6]) or "query"
        return [
            {
                "type": "web_search_result",
                "title": f"Simulated result {rank} for {query!r} ({_LABEL}; nothing was searched)",
                "url": f"https://example.com/harness-sim/{slug}/{rank}",
                "encrypted_content": _opaque(context.seed, query, rank),
                "page_age": None,
            }
            for rank in (1, 2, 3)
        ]
    if call == "web_fetch":
        url = tool_input["url"]
        text = f"This page was made up by the {_LABEL}: nothing was fetched from {url}."
        return {
            "type": "web_fetch_result",
            "url": url,
            "retrieved_at": "2026-09-07T08:00:00Z",
            "content": {
                "type": "document",
                "title": f"Simulated page ({_LABEL})",
                "citations": None,
                "source": {"type": "text", "media_type": "text/plain", "data": text},
            },
        }
    if call in ("code_execution", "bash_code_execution"):
        kind = "code_execution_result" if call == "code_execution" else "bash_code_execution_result"
        return {
            "type": kind,
            "stdout": f"{_LABEL}: nothing was executed\n",
            "stderr": "",
            "return_code": 0,
            "content": [],
        }
    if call == "text_editor_code_execution":
        return {"type": "text_editor_code_execution_create_result", "is_file_update": False}
    references = search_references(context.tools, tool_input["query"])
    return {
        "type": "tool_search_tool_search_result",
        "tool_references": [{"type": "tool_reference", "tool_name": name} for name in references],
    }


def play(call: str, context: Context, *, over_max_uses: bool) -> list[dict[str, Any]]:
    """A `server_tool_use` block and its result block (ids left empty: the message numbers them)."""
    tool_input = _input(call, context)
    if over_max_uses:
        content: Any = {"type": _ERROR_TYPES[call], "error_code": "max_uses_exceeded"}
    else:
        content = _content(call, tool_input, context)
    return [
        {"type": "server_tool_use", "id": "", "name": call, "input": tool_input},
        {"type": _RESULT_TYPES[call], "tool_use_id": "", "content": content},
    ]


def is_error_result(block: dict[str, Any]) -> bool:
    content = block.get("content")
    return isinstance(content, dict) and str(content.get("type", "")).endswith("_error")


def server_tool_usage(content: Iterable[dict[str, Any]]) -> dict[str, int] | None:
    """usage.server_tool_use for a response: billed uses by kind (an error result is not billed), or None when
    the response used no server tool (the API leaves the field out then)."""
    uses = [block for block in content if block.get("type") == "server_tool_use"]
    if not uses:
        return None
    errors = {
        block.get("tool_use_id") for block in content if block.get("type") in RESULT_TYPES and is_error_result(block)
    }
    counts = {field: 0 for field in ("web_search_requests", "web_fetch_requests")}
    for block in uses:
        field = _BILLED.get(str(block.get("name")))
        if field and block.get("id") not in errors:
            counts[field] += 1
    return counts


def uses_container(content: Iterable[dict[str, Any]]) -> bool:
    return any(
        block.get("type") == "server_tool_use" and "code_execution" in str(block.get("name")) for block in content
    )


def cited_answer(results: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """A text block citing the first hit of each web search result (web_search_result_location citations, as
    the API's answers carry them), or None when there is no search hit to cite."""
    hits = [
        block["content"][0]
        for block in results
        if block.get("type") == "web_search_tool_result" and isinstance(block.get("content"), list) and block["content"]
    ]
    if not hits:
        return None
    citations = [
        {
            "type": "web_search_result_location",
            "url": hit["url"],
            "title": hit["title"],
            "cited_text": hit["title"],
            "encrypted_index": _opaque("index", hit["url"]),
        }
        for hit in hits
    ]
    return {
        "type": "text",
        "text": f"The {_LABEL} made these results up; cited as the API cites its sources.",
        "citations": citations,
    }


def summary(block: dict[str, Any]) -> str:
    """One line about a result block, for sim-auto's answer."""
    content = block.get("content")
    if isinstance(content, dict) and is_error_result(block):
        return f"failed ({content['error_code']})"
    if isinstance(content, list):
        return f"{len(content)} simulated results: " + "; ".join(str(r.get("url")) for r in content)
    if isinstance(content, dict) and "tool_references" in content:
        return "found " + (", ".join(r["tool_name"] for r in content["tool_references"]) or "no tool")
    if isinstance(content, dict) and "stdout" in content:
        return f"stdout {content['stdout'].strip()!r}"
    if isinstance(content, dict) and content.get("type") == "web_fetch_result":
        return f"a simulated page for {content['url']}"
    return "done (simulated)"
