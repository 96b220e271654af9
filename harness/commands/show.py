"""`harness show CASSETTE [--json]`: a cassette's trajectory, step by step.

Each step shows its stop_reason, tokens by kind and its tries when there was more than one; under it
each tool call with its arguments and the size of its result (and is_error); at the end of each run
how it ended and an excerpt of the final text. `--json` prints the trajectory's JSON form instead
(harness/trajectory.schema.json).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from harness import commands
from harness.jsondata import canonical_json
from harness.report._text import counted
from harness.trajectory import Attempt, Run, Step, Trajectory, load_trajectory

EXCERPT_CHARS = 600
ARGUMENT_CHARS = 100


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
    usage = step.usage
    parts = [f"in {usage.input:,}", f"out {usage.output:,}"]
    if usage.cache_write:
        parts.append(f"cache write {usage.cache_write:,}")
    if usage.cache_read:
        parts.append(f"cache read {usage.cache_read:,}")
    text = " · ".join(parts)
    return text if step.usage_counted else f"{text} (same message id as an earlier step: not counted again)"


def _attempt_label(attempt: Attempt) -> str:
    if attempt.ok:
        return str(attempt.status or "ok")
    label = f"{attempt.status} {attempt.error_type}" if attempt.status else str(attempt.error_type)
    return label.strip()


def _print_step(console: Console, step: Step) -> None:
    stop = step.stop_reason or "?"
    style = "green" if stop == "end_turn" else "yellow" if stop in ("tool_use", "pause_turn") else "red"
    line = f"[bold]step {step.index}[/] stop=[{style}]{escape(stop)}[/] {escape(_tokens(step))}"
    if step.duration_ms is not None:
        line += f" · {step.duration_ms:,.0f} ms"
    if len(step.attempts) > 1:
        line += " · tries: " + " → ".join(escape(_attempt_label(a)) for a in step.attempts)
    console.print(line)
    kinds = [block.get("type") for block in step.blocks if block.get("type") not in ("text", "tool_use")]
    if kinds:
        console.print(f"    [dim]blocks: {escape(', '.join(str(k) for k in kinds))}[/]")
    for call in step.tool_calls:
        arguments = _short(canonical_json(call.input), ARGUMENT_CHARS)
        server = " [dim](server tool)[/]" if call.server else ""
        if call.result is None:
            result = "[dim]no result (the run ended)[/]"
        else:
            result = f"{call.result.chars:,} chars"
            if call.result.is_error:
                result += " [bold red]is_error[/]"
        console.print(f"    → {escape(call.name)}({escape(arguments)}){server} {result}")


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
        console.print(
            Panel(escape(_short(run.final_text, excerpt)), title="final text", title_align="left", expand=False)
        )


def _print_header(console: Console, trajectory: Trajectory) -> None:
    source = trajectory.source
    origin = source.get("recorded_from") or source.get("kind")
    imported = source.get("imported_from") or {}
    if imported.get("format"):
        origin = f"{origin} from {imported['format']}"
    when = f", recorded {source['recorded_at']}" if source.get("recorded_at") else ""
    console.print(f"[bold]{escape(str(source.get('path') or 'run'))}[/] ({escape(str(origin))}{escape(when)})")
    cost = trajectory.cost_usd
    usage = trajectory.usage
    console.print(
        f"model {escape(str(trajectory.model))} · {counted(len(trajectory.runs), 'run')} · "
        f"{counted(len(trajectory.steps), 'step')} · {counted(len(trajectory.tool_calls), 'tool call')} · "
        f"in {usage.input:,} / out {usage.output:,} / "
        f"cache write {usage.cache_write:,} / cache read {usage.cache_read:,} · "
        + ("cost unknown" if cost is None else f"~${cost:.4f}")
    )
    for item in trajectory.skipped:
        console.print(f"[dim]interaction {item['interaction']} skipped: {escape(item['reason'])}[/]")


def render(trajectory: Trajectory, console: Console, *, excerpt: int = EXCERPT_CHARS) -> None:
    _print_header(console, trajectory)
    several = len(trajectory.runs) > 1
    for run in trajectory.runs:
        _print_run(console, run, excerpt, several)


def run(args: argparse.Namespace) -> int:
    trajectory = load_trajectory(args.cassette)
    if args.json:
        data: Any = trajectory.to_dict()
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    render(trajectory, commands.console(), excerpt=args.excerpt)
    return 0
