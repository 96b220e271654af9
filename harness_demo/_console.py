"""What the reference agents' commands share: the client (or the local simulator), the -v trace and
the closing summary line. One module, so `dayflow` and `data-assistant` print the same way.

The trace goes to stderr and the answer to stdout, so `dayflow brief -v > brief.md` keeps the brief clean.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from harness.pricing import estimate_cost

if TYPE_CHECKING:
    import anthropic

    from harness.loop import Event, RunResult
    from harness.tools import ToolOutput, ToolRegistry

DUMMY_API_KEY = "sk-ant-local-simulator"  # the simulator and replays need a key-shaped string, not a key
_PREVIEW_CHARS = 120


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags every agent command has: -v, --model, --base-url, --stream."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print one line per model call and per tool call, and a closing summary",
    )
    parser.add_argument("--model", default=None, help="model name (default: the loop's DEFAULT_MODEL)")
    parser.add_argument(
        "--base-url",
        default=None,
        help="Messages API base URL (default: $ANTHROPIC_BASE_URL, else the API; with neither "
        "a key nor a base URL, the local simulator)",
    )
    parser.add_argument("--stream", action="store_true", help="stream the model's responses (SSE)")


@contextmanager
def client_for(
    base_url: str | None,
    *,
    offline: bool = False,
    stderr: TextIO | None = None,
) -> Iterator[anthropic.Anthropic]:
    """A client for the flag, else $ANTHROPIC_BASE_URL / $ANTHROPIC_API_KEY, else the local simulator.

    `offline`: the calls will be answered from a cassette, so no server is needed and none is started.
    """
    import anthropic

    stderr = stderr or sys.stderr
    api_key = os.environ.get("ANTHROPIC_API_KEY") or None
    base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
    if api_key or base_url or offline:
        yield anthropic.Anthropic(api_key=api_key or DUMMY_API_KEY, base_url=base_url)
        return

    from harness.sim import Simulator

    with Simulator() as simulator:
        print(
            f"no ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL: using the local simulator at {simulator.base_url} "
            "(not Claude)",
            file=stderr,
            flush=True,
        )
        yield anthropic.Anthropic(api_key=DUMMY_API_KEY, base_url=simulator.base_url)


class Trace:
    """The -v trace: an `on_event` callback for `run_loop` printing each model and tool call as it ends.

    Tool inputs are not in every loop's tool events, so `watch(registry)` wraps the registry to see
    them as the loop runs each tool (a repeated call that the loop answers itself has the same input).
    """

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stderr
        self._last_input: Any = None

    def watch(self, registry: ToolRegistry) -> _WatchedRegistry:
        return _WatchedRegistry(registry, self)

    def __call__(self, event: Event) -> None:
        if event.kind == "model_call":
            self._print(model_call_line(event))
        elif event.kind == "tool_call":
            tool_input = event.data.get("input", self._last_input)
            self._print(tool_call_line(event, tool_input))

    def _print(self, line: str) -> None:
        print(line, file=self.out, flush=True)


class _WatchedRegistry:
    """A registry that tells its Trace the input of each tool call; everything else is the registry's."""

    def __init__(self, registry: ToolRegistry, trace: Trace) -> None:
        self._registry = registry
        self._trace = trace

    def definitions(self) -> list[dict[str, Any]]:
        return self._registry.definitions()

    def run(self, name: str, tool_input: Any) -> ToolOutput:
        self._trace._last_input = tool_input
        return self._registry.run(name, tool_input)

    def __contains__(self, name: object) -> bool:
        return name in self._registry

    @property
    def names(self) -> list[str]:
        return self._registry.names


def model_call_line(event: Event) -> str:
    data = event.data
    if "error" in data:
        return f"[step {event.step}] error: {data['error']}"
    usage = data.get("usage") or {}
    line = (
        f"[step {event.step}] stop={data.get('stop_reason')} in={usage.get('input_tokens', 0)} "
        f"out={usage.get('output_tokens', 0)}"
    )
    cache_write = usage.get("cache_creation_input_tokens") or 0
    cache_read = usage.get("cache_read_input_tokens") or 0
    if cache_write or cache_read:
        line += f" cache_write={cache_write} cache_read={cache_read}"
    if data.get("summary"):
        line += " (best-effort summary after the step limit)"
    return line


def tool_call_line(event: Event, tool_input: Any) -> str:
    data = event.data
    line = f"    -> {data.get('name')}({_preview(tool_input)}) {data.get('chars', 0)} chars"
    if data.get("synthetic"):
        line += " (not run: repeated call)"
    elif data.get("is_error"):
        line += " (error)"
    return line


def _preview(tool_input: Any) -> str:
    text = repr(tool_input)
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"


def summary_line(result: RunResult) -> str:
    """`[2 steps · 3 tool calls · 3074 in / 1360 out · ~$0.0213 claude-sonnet-5]`"""
    usage = result.usage
    tokens = f"{usage.input} in / {usage.output} out"
    cached = usage.cache_write + usage.cache_read
    if cached:
        tokens += f" (+{cached} cache)"
    cost = estimate_cost(result.model, usage)
    price = f"~${cost:.4f} {result.model}" if cost is not None else f"cost unknown {result.model}"
    steps = f"{result.steps} step{'' if result.steps == 1 else 's'}"
    calls = f"{len(result.tool_calls)} tool call{'' if len(result.tool_calls) == 1 else 's'}"
    return f"[{steps} · {calls} · {tokens} · {price}]"


def report(result: RunResult, *, verbose: bool, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Print the answer (stdout) and, with -v, the summary line (stderr). Exit 0 when the run ended well."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if result.final_text:
        print(result.final_text, file=stdout, flush=True)
    if verbose:
        print(summary_line(result), file=stderr, flush=True)
    if not result.ok:
        print(f"run stopped: {result.outcome.value}: {result.reason}", file=stderr, flush=True)
        return 1
    return 0
