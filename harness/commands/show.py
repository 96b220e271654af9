"""`harness show CASSETTE [--json]`: a cassette's trajectory, step by step.

Each step shows its stop_reason, tokens by kind, its cost and its tries when there was more than one;
the billed passes of `usage.iterations` (a compaction pass) and the server tool requests; the request's
output config, MCP servers and context edits where it set them; the code execution container. Under it
each tool call of every kind (client, server, MCP with its server) with its arguments and its result as
a person reads it: a search's titles and URLs, a fetched page, code output, an error code; then the
citations, the compaction summaries and the structured output checked against its schema. At the end
of each run how it ended and an excerpt of the final text. `--json` prints the trajectory's JSON form
instead (harness/trajectory.schema.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from harness import commands
from harness.jsondata import canonical_json
from harness.pricing import Cost
from harness.report._text import cost_parts, counted
from harness.run import ToolCall, Usage
from harness.trajectory import Attempt, Run, Step, Trajectory, load_trajectory

EXCERPT_CHARS = 600
ARGUMENT_CHARS = 100
RESULT_LINES = 10  # lines of a result shown under its call (search results, output)
RESULT_LINE_CHARS = 160


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cassette", metavar="CASSETTE", help="a cassette (ours, or vcrpy / pydantic-ai / HAR)")
    parser.add_argument("--json", action="store_true", help="print the trajectory as JSON")
    parser.add_argument(
        "--excerpt",
        type=int,
        default=EXCERPT_CHARS,
        metavar="N",
        help=f"characters of final text to show (default {EXCERPT_CHARS}; 0 for all)",
    )


def _short(text: str, limit: int) -> str:
    return text if limit <= 0 or len(text) <= limit else text[: limit - 1] + "…"


def _tokens(step: Step) -> str:
    text = _usage_text(step.usage)
    return text if step.usage_counted else f"{text} (same message id as an earlier step: not counted again)"


def _usage_text(usage: Usage) -> str:
    parts = [f"in {usage.input:,}", f"out {usage.output:,}"]
    if usage.cache_write:
        hour = f" ({usage.cache_write_1h:,} for 1h)" if usage.cache_write_1h else ""
        parts.append(f"cache write {usage.cache_write:,}{hour}")
    if usage.cache_read:
        parts.append(f"cache read {usage.cache_read:,}")
    if usage.web_search_requests:
        parts.append(counted(usage.web_search_requests, "web search"))
    if usage.web_fetch_requests:
        parts.append(counted(usage.web_fetch_requests, "web fetch"))
    if usage.batch:
        parts.append("batch")
    return " · ".join(parts)


def _cost_text(cost: Cost | None) -> str:
    if cost is None:
        return "cost unknown"
    parts = cost_parts(cost.by_kind)
    detail = ", ".join(parts)
    side = [f"{name} ${value:.4f}" for name, value in cost.by_pass.items() if name != "message" and value]
    if side:  # a pass beside the reply (a compaction) is part of the kinds above: say how much
        detail += f"; of which {', '.join(side)}"
    return f"~${cost.total:.4f}" + (f" ({detail})" if detail else "")


def _attempt_label(attempt: Attempt) -> str:
    if attempt.ok:
        return str(attempt.status or "ok")
    label = f"{attempt.status} {attempt.error_type}" if attempt.status else str(attempt.error_type)
    return label.strip()


def _short_line(text: str) -> str:
    line = " ".join(text.split())
    return _short(line, RESULT_LINE_CHARS)


_KIND_NOTES = {"client": "", "server": " [dim](server tool)[/]"}


def _print_call(console: Console, call: ToolCall) -> None:
    arguments = _short(canonical_json(call.input), ARGUMENT_CHARS)
    note = f" [dim](MCP server {escape(call.server_name or '?')})[/]" if call.kind == "mcp" else _KIND_NOTES.get(
        call.kind, "")
    if call.caller is not None:
        note += f" [dim](called by {escape(str(call.caller.get('type')))} {escape(str(call.caller.get('tool_id')))})[/]"
    result = call.result
    if result is None:
        outcome = "[dim]no result (the run ended)[/]"
    else:
        outcome = f"{result.chars:,} chars"
        if result.is_error:
            outcome += " [bold red]is_error[/]" + (f" [red]{escape(result.error_code)}[/]" if result.error_code else "")
        if result.step is not None and result.step != call.step:
            outcome += f" [dim](answered at step {result.step})[/]"
    console.print(f"    → {escape(call.name)}({escape(arguments)}){note} {outcome}")
    if result is None or not result.content or (result.is_error and result.error_code):
        return
    if call.kind == "client" and not result.is_error:
        return  # the agent's own tool: its size is enough here (--json has it all)
    lines = result.content.splitlines()
    for line in lines[:RESULT_LINES]:
        console.print(f"        [dim]{escape(_short_line(line))}[/]")
    if len(lines) > RESULT_LINES:
        console.print(f"        [dim]… {len(lines) - RESULT_LINES} more line(s)[/]")


def _print_request(console: Console, step: Step) -> None:
    request = step.request
    parts = []
    output = request.get("output_config") or {}
    if output.get("effort"):
        parts.append(f"effort {output['effort']}")
    if output.get("format"):
        parts.append(f"output format {output['format'].get('type')} {output['format'].get('schema')}")
    if request.get("mcp_servers"):
        parts.append("MCP servers " + ", ".join(str(name) for name in request["mcp_servers"]))
    if request.get("context_management"):
        parts.append("context edits " + ", ".join(str(name) for name in request["context_management"]))
    if parts:
        console.print(f"    [dim]request: {escape(' · '.join(parts))}[/]")


def _print_step(console: Console, step: Step) -> None:
    stop = step.stop_reason or "?"
    style = "green" if stop == "end_turn" else "yellow" if stop in ("tool_use", "pause_turn", "compaction") else "red"
    line = f"[bold]step {step.index}[/] stop=[{style}]{escape(stop)}[/] {escape(_tokens(step))}"
    if step.usage_counted:
        line += f" · {escape(_cost_text(step.cost))}"
    if step.duration_ms is not None:
        line += f" · {step.duration_ms:,.0f} ms"
    if len(step.attempts) > 1:
        line += " · tries: " + " → ".join(escape(_attempt_label(a)) for a in step.attempts)
    console.print(line)
    if step.continues is not None:
        console.print(f"    [dim]continues step {step.continues} (the API paused that turn: pause_turn)[/]")
    _print_request(console, step)
    for entry in step.usage.iterations:
        model = f" on {entry.model}" if entry.model else ""
        console.print(f"    [dim]pass {escape(entry.type)}{escape(model)}: in {entry.input:,} · out {entry.output:,}"
                      + (f" · cache write {entry.cache_write:,}" if entry.cache_write else "")
                      + (f" · cache read {entry.cache_read:,}" if entry.cache_read else "") + "[/]")
    if step.container:
        expires = step.container.get("expires_at")
        console.print(f"    [dim]container {escape(str(step.container.get('id')))}"
                      + (f" (expires {escape(str(expires))})" if expires else "") + "[/]")
    shown = ("text", "tool_use", "server_tool_use", "mcp_tool_use", "compaction")
    kinds = [block.get("type") for block in step.blocks
             if block.get("type") not in shown and not str(block.get("type", "")).endswith("_tool_result")]
    if kinds:
        console.print(f"    [dim]blocks: {escape(', '.join(str(k) for k in kinds))}[/]")
    for block in step.compactions:
        summary = block.get("content")
        text = _short_line(summary) if isinstance(summary, str) and summary else "(no summary: the compaction failed)"
        console.print(f"    [bold]compaction[/] summary: {escape(text)}")
    for call in step.tool_calls:
        _print_call(console, call)
    citations = step.citations
    if citations:
        sources = list(dict.fromkeys(
            f"{c.get('title') or c.get('document_title') or '(untitled)'} <{c['url']}>" if c.get("url")
            else str(c.get("document_title") or c.get("type")) for c in citations))
        console.print(f"    citations: {counted(len(citations), 'citation')} of {counted(len(sources), 'source')}")
        for source in sources[:RESULT_LINES]:
            console.print(f"        [dim]{escape(_short_line(source))}[/]")
    verdict = step.structured_output
    if verdict is not None:
        if verdict["valid"]:
            console.print(f"    structured output: [green]valid[/] against the schema {escape(str(verdict['schema']))}")
        else:
            console.print(f"    structured output: [bold red]not valid[/]: {escape(str(verdict['problem']))}")


def _print_run(console: Console, run: Run, excerpt: int, several: bool) -> None:
    if several:
        console.rule(f"run {run.index}" + (f" · {run.label}" if run.label else ""))
    for step in run.steps:
        _print_step(console, step)
    if run.failed_request is not None:
        tries = " → ".join(_attempt_label(a) for a in run.failed_request.attempts)
        last = run.failed_request.attempts[-1]
        message = f": {last.error_message}" if last.error_message else ""
        console.print(f"[bold red]failed request[/] tries: {escape(tries)}{escape(message)}")
    outcome = run.outcome
    console.print(f"[bold]ended:[/] {escape(outcome.describe())}")
    if run.final_text:
        text = _short(run.final_text, excerpt)
        if getattr(console, "plain_text", False):  # a pipe or a CI log: the text whole, never cropped by a box
            console.print("[bold]final text:[/]")
            console.print("\n".join(f"  {line}" for line in escape(text).splitlines()))
        else:
            console.print(Panel(escape(text), title="final text", title_align="left", expand=False))


def _print_header(console: Console, trajectory: Trajectory) -> None:
    source = trajectory.source
    origin = source.get("recorded_from") or source.get("kind")
    imported = source.get("imported_from") or {}
    if imported.get("format"):
        origin = f"{origin} from {imported['format']}"
    when = f", recorded {source['recorded_at']}" if source.get("recorded_at") else ""
    console.print(f"[bold]{escape(str(source.get('path') or 'run'))}[/] ({escape(str(origin))}{escape(when)})")
    usage = trajectory.usage
    calls = trajectory.tool_calls
    by_kind = [f"{n} {label}" for kind, label in (("client", "client"), ("server", "server"), ("mcp", "MCP"))
               if (n := sum(1 for c in calls if c.kind == kind))]
    kinds = f" ({', '.join(by_kind)})" if any(call.kind != "client" for call in calls) else ""
    console.print(
        f"model {escape(str(trajectory.model))} · {counted(len(trajectory.runs), 'run')} · "
        f"{counted(len(trajectory.steps), 'step')} · {counted(len(calls), 'tool call')}{escape(kinds)} · "
        f"in {usage.input:,} / out {usage.output:,} / "
        f"cache write {usage.cache_write:,} / cache read {usage.cache_read:,} · "
        + escape(_cost_text(trajectory.cost))
    )
    for item in trajectory.skipped:
        console.print(f"[dim]interaction {item['interaction']} skipped: {escape(item['reason'])}[/]")


def render(trajectory: Trajectory, console: Console, *, excerpt: int = EXCERPT_CHARS) -> None:
    _print_header(console, trajectory)
    several = len(trajectory.runs) > 1
    for run in trajectory.runs:
        _print_run(console, run, excerpt, several)


def _print_not_compared(console: Console, path: str) -> None:
    """The volatile values the cassette's requests hold: what a replay does not compare (a reviewer's list)."""
    from harness.cassette.format import load_cassette
    from harness.cassette.tolerant import VolatileScope, volatile_in
    from harness.errors import HarnessError
    from harness.normalize import Normalization
    from harness.project import load_project

    try:
        cassette = load_cassette(path)
        stored = Normalization.from_data(cassette.meta.get("matching"))
        rules = stored.merged(load_project(Path(path).parent).matching)
    except (HarnessError, OSError, ValueError):
        return  # a foreign file (vcrpy, HAR...): no matching of ours to describe
    scope = VolatileScope.of(rules)
    seen: set[tuple[str, str]] = set()
    lines = []
    for number, interaction in enumerate(cassette.interactions, start=1):
        for where, shape, value in volatile_in(interaction.get("request", {}).get("body"), scope):
            if (where, value) not in seen:  # each request repeats the history before it
                seen.add((where, value))
                lines.append(f"request #{number}, {where}: {shape} {_short(value, 60)!r}")
    if lines:
        console.print(f"[bold]not compared on replay[/] (volatile values, matching policy {rules.match_policy!r}):")
        for line in lines[:50]:
            console.print(f"    {escape(line)}")
        if len(lines) > 50:
            console.print(f"    … and {len(lines) - 50} more")


def run(args: argparse.Namespace) -> int:
    trajectory = load_trajectory(args.cassette)
    if args.json:
        data: Any = trajectory.to_dict()
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    console = commands.console()
    render(trajectory, console, excerpt=args.excerpt)
    _print_not_compared(console, args.cassette)
    return 0
