"""`harness bless CASSETTE [--golden F] [--yes]`: write or update a golden fixture from a recorded run.

What a run shows becomes what later runs must keep: the protocol (tool_ids_matched), the ending
(outcome), the tool-call sequence (trajectory_match, unordered, exact arguments), the final text's
Markdown sections (final_answer), budgets with headroom (steps, tokens by kind, cost), no repeated-call
loop, self-correction when a tool failed, and for an inbox-reading agent the promotional and
needs-reply items found in its tool results (promotions_filtered).

Updating keeps what a person wrote: other checks, other parameters (contains, regex, a chosen `mode`),
the name, description and run selection. Only the values derived from the run are replaced. The
change is shown as a deepdiff before anything is written; without --yes the command asks on a
terminal and refuses when there is none. The write is atomic.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deepdiff import DeepDiff
from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from harness.cassette.format import atomic_write_text
from harness.checks.answer import headings
from harness.errors import GoldenError, HarnessError, absolute
from harness.evals.golden import read_json, relative_to_root, validate_golden
from harness.project import Project, load_project
from harness.trajectory import Trajectory, load_trajectory

__all__ = ["add_arguments", "default_golden_path", "merge_golden", "propose_checks", "run"]

DEFAULT_HEADROOM = 1.5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cassette", metavar="CASSETTE", help="the recorded run to bless")
    parser.add_argument(
        "--golden",
        metavar="F",
        help="golden file to write or update (default: golden/<path of the cassette under cassettes/>.json; "
        "both folders as [tool.loop-harness] sets them)",
    )
    parser.add_argument("--yes", action="store_true", help="write without asking")
    parser.add_argument(
        "--headroom",
        type=float,
        default=DEFAULT_HEADROOM,
        metavar="X",
        help=f"budgets are the run's figures times X (default {DEFAULT_HEADROOM})",
    )


# --- what a run proposes -------------------------------------------------------------------------------------


def _up(value: float, headroom: float) -> int:
    return max(1, math.ceil(value * headroom))


def _outcome_params(trajectory: Trajectory) -> dict[str, Any]:
    endings = [run.outcome for run in trajectory.runs]
    if all(ending.kind == "error" for ending in endings):
        last = endings[-1]
        error: dict[str, Any] = {}
        if last.status is not None:
            error["status"] = last.status
        if last.error_type:
            error["type"] = last.error_type
        return {"error": error or True}
    reasons = list(dict.fromkeys(e.stop_reason for e in endings if e.kind == "stop" and e.stop_reason))
    return {"stop_reason": reasons[0] if len(reasons) == 1 else reasons}


def _budget_params(trajectory: Trajectory, headroom: float) -> dict[str, Any]:
    usage = trajectory.usage
    tokens = {kind: _up(getattr(usage, kind), headroom) for kind in usage.KINDS if getattr(usage, kind)}
    if usage.total:
        tokens["total"] = _up(usage.total, headroom)
    params: dict[str, Any] = {"max_steps": _up(len(trajectory.steps), headroom)}
    if trajectory.tool_calls:
        params["max_tool_calls"] = _up(len(trajectory.tool_calls), headroom)
    if tokens:
        params["max_tokens"] = tokens
    cost = trajectory.cost_usd
    if cost:
        params["max_cost_usd"] = math.ceil(cost * headroom * 10_000) / 10_000
    return params


def _inbox_items(trajectory: Trajectory) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Promotional and needs-reply emails found in tool results shaped like {"emails": [...]}."""
    promotional: dict[str, dict[str, str]] = {}
    needs_reply: dict[str, dict[str, str]] = {}
    for call in trajectory.tool_calls:
        if call.result is None or call.result.is_error:
            continue
        try:
            data = json.loads(call.result.content)
        except ValueError:
            continue
        emails = data.get("emails") if isinstance(data, Mapping) else None
        for email in emails if isinstance(emails, list) else []:
            if not isinstance(email, Mapping) or not email.get("subject"):
                continue
            item = {
                key: str(email[source])
                for key, source in (("id", "id"), ("subject", "subject"), ("sender", "from"))
                if email.get(source)
            }
            key = item.get("id") or item["subject"]
            labels = [str(label).casefold() for label in email.get("labels") or []]
            if "promotions" in labels or "promotion" in labels:
                promotional[key] = item
            if email.get("needs_reply") is True:
                needs_reply[key] = item
    return list(promotional.values()), list(needs_reply.values())


def propose_checks(
    trajectory: Trajectory, *, headroom: float = DEFAULT_HEADROOM
) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(check, derived params, default params) per check a run supports.

    Derived params come from the run and replace the old values on update; defaults are only set
    when the golden has no value of its own.
    """
    proposals: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("tool_ids_matched", {}, {}),
        ("outcome", _outcome_params(trajectory), {}),
    ]
    calls = [{"name": call.name, "input": call.input} for call in trajectory.tool_calls]
    if trajectory.steps:
        proposals.append(("trajectory_match", {"expected": calls}, {"mode": "unordered", "args": "exact"}))
    sections = headings(trajectory.final_text)
    if sections:
        proposals.append(("final_answer", {"sections": sections}, {}))
    promotional, needs_reply = _inbox_items(trajectory)
    if promotional or needs_reply:
        proposals.append(("promotions_filtered", {"promotional": promotional, "needs_reply": needs_reply}, {}))
    if any(call.result and call.result.is_error for call in trajectory.tool_calls):
        proposals.append(("self_correction", {}, {"require_error": True}))
    proposals.append(("budgets", _budget_params(trajectory, headroom), {}))
    if trajectory.tool_calls:
        proposals.append(("no_repeated_calls", {}, {"max_in_a_row": 2}))
    return proposals


def merge_golden(
    existing: Mapping[str, Any] | None,
    trajectory: Trajectory,
    *,
    name: str,
    cassette_label: str,
    headroom: float = DEFAULT_HEADROOM,
    schema_ref: str | None = None,
) -> dict[str, Any]:
    """The golden after blessing `trajectory`: `existing` with the run-derived values replaced."""
    if existing:
        golden: dict[str, Any] = json.loads(json.dumps(existing))
    else:
        golden = {"$schema": schema_ref} if schema_ref else {}
        golden.update(name=name, description=f"Blessed from {cassette_label}.", cassettes=[], checks=[])
    cassettes = golden.setdefault("cassettes", [])
    if cassette_label not in cassettes:
        cassettes.append(cassette_label)
    checks: list[dict[str, Any]] = golden.setdefault("checks", [])
    for check, derived, defaults in propose_checks(trajectory, headroom=headroom):
        entry = next(
            (item for item in checks if item.get("id", item.get("check")) == check and item.get("check") == check), None
        )
        if entry is None:
            entry = {"check": check}
            checks.append(entry)
        params = dict(entry.get("params") or {})
        if check == "outcome":  # one of stop_reason / error: the run decides which
            params.pop("stop_reason", None)
            params.pop("error", None)
        params.update(derived)
        for key, value in defaults.items():
            params.setdefault(key, value)
        if params:
            entry["params"] = params
        else:
            entry.pop("params", None)
    return golden


# --- where it goes -------------------------------------------------------------------------------------------


def default_golden_path(cassette: Path, project: Project) -> Path:
    """<golden>/<the cassette's path under the cassettes folder>.json, or <golden>/<stem>.json for one elsewhere."""
    cassette = cassette.resolve()
    try:
        inside = cassette.relative_to(project.cassettes.resolve())
    except ValueError:
        return project.golden / f"{cassette.stem}.json"
    return project.golden / inside.with_suffix(".json")


def _golden_name(path: Path, project: Project) -> str:
    try:
        return path.resolve().relative_to(project.golden.resolve()).with_suffix("").as_posix()
    except ValueError:
        return path.stem


def _existing_ancestor(path: Path) -> Path:
    for candidate in (path.parent.resolve(), *path.parent.resolve().parents):
        if candidate.exists():
            return candidate
    return Path.cwd()


def _confirm(console: Console, path: Path, assume_yes: bool) -> bool | None:
    """True to write, False when declined, None when there is no terminal to ask on."""
    if assume_yes:
        return True
    if not sys.stdin.isatty():
        return None
    answer = console.input(f"Write {escape(str(path))}? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def run(args: argparse.Namespace) -> int:
    console = Console()
    cassette = Path(args.cassette)
    if args.headroom < 1:
        raise HarnessError(f"--headroom must be at least 1, got {args.headroom}")
    trajectory = load_trajectory(cassette)
    if not trajectory.runs:
        raise HarnessError("no Messages API call in this cassette: nothing to bless", file=cassette)
    if not cassette.exists():
        raise HarnessError("no such cassette", file=absolute(cassette))
    golden_path = Path(args.golden) if args.golden else default_golden_path(cassette, load_project())
    project = load_project(_existing_ancestor(golden_path))
    root = project.root
    existing = None
    if golden_path.exists():
        existing, _ = read_json(golden_path)
        if not isinstance(existing, dict):
            raise GoldenError("a golden file must hold a JSON object", file=golden_path, where="$")
    schema = project.golden / "schema.json"
    schema_ref = relative_to_root(schema, golden_path.parent) if schema.exists() else None
    proposed = merge_golden(
        existing,
        trajectory,
        name=_golden_name(golden_path, project),
        cassette_label=relative_to_root(cassette, root),
        headroom=args.headroom,
        schema_ref=schema_ref,
    )
    validate_golden(proposed, file=golden_path)
    text = json.dumps(proposed, indent=2, ensure_ascii=False) + "\n"
    if existing is None:
        console.print(f"[bold]new golden[/] {escape(str(golden_path))}:")
        console.print(Syntax(text, "json", word_wrap=True))
    else:
        diff = DeepDiff(existing, proposed, verbose_level=2)
        if not diff:
            console.print(f"{escape(str(golden_path))} is up to date with {escape(str(cassette))}")
            return 0
        console.print(f"[bold]changes to[/] {escape(str(golden_path))}:")
        console.print(escape(diff.pretty()))
    decision = _confirm(console, golden_path, args.yes)
    if decision is None:
        console.print("[red]not written:[/] no terminal to confirm on; pass --yes to write")
        return 2
    if not decision:
        console.print("not written")
        return 1
    atomic_write_text(golden_path, text)
    console.print(f"wrote {escape(str(golden_path))}")
    return 0
