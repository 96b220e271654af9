"""`harness bless CASSETTE [--golden F] [--yes]`: write or update a golden fixture from a recorded run.

A blessed golden holds: every check bless proposes is run on the run it blesses (the runs the golden's `run`
selects), and one that fails there is left out and named with the check's own reason (a tool error never
corrected: no `self_correction` with `require_error`; a run that ended in an API error after an unanswered
tool_use: no `tool_ids_matched`), so `harness eval` passes on the cassette just blessed. Checks the golden
already held are kept as they were; those this run fails are named.

What a run shows becomes what later runs must keep: the protocol (tool_ids_matched), the ending
(outcome), the tool-call sequence (trajectory_match, unordered, exact arguments), the final text's
Markdown sections (final_answer), budgets with headroom (steps, tokens by kind, cost), no repeated-call
loop, self-correction when a tool failed, and for an inbox-reading agent the promotional and
needs-reply items found in its tool results (promotions_filtered).

Updating keeps what a person wrote: other checks, other parameters (contains, regex, a chosen `mode`),
the name, description and run selection. Only the values derived from the run are replaced. The
change is shown as a deepdiff before anything is written; without --yes the command asks on a
terminal and refuses when there is none. The write is atomic. Exit 0 when the golden was written; 1 when nothing
was (declined, or nothing to bless: the golden is already up to date with the run); 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepdiff import DeepDiff
from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from harness import commands
from harness.cassette.format import CassetteFile
from harness.checks.answer import headings
from harness.checks.base import CheckResult
from harness.checks.registry import CHECKS, run_check
from harness.errors import GoldenError, HarnessError, absolute
from harness.evals.golden import read_json, relative_to_root, validate_golden
from harness.files import atomic_write_text
from harness.project import Project, load_project
from harness.run import ToolCall
from harness.sim.conversation import INVENTED_HEADER
from harness.trajectory import Trajectory, load_cassette_any, load_trajectory

__all__ = [
    "Blessing", "LeftOut", "add_arguments", "bless_golden", "default_golden_path", "merge_golden", "propose_checks",
    "run",
]

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


def invented_inputs(cassette: CassetteFile) -> dict[str, list[str]]:
    """{tool_use id: input paths} that a simulator model made up (its `x-harness-sim-invented` response header)."""
    found: dict[str, list[str]] = {}
    for interaction in cassette.interactions:
        response = interaction.get("response")
        headers = response.get("headers") if isinstance(response, Mapping) else None
        value = {str(k).lower(): v for k, v in headers.items()}.get(INVENTED_HEADER) if isinstance(
            headers, Mapping) else None
        try:
            marked = json.loads(value) if isinstance(value, str) else None
        except ValueError:
            marked = None
        for tool_use_id, paths in marked.items() if isinstance(marked, dict) else ():
            if isinstance(paths, list) and all(isinstance(path, str) for path in paths):
                found[str(tool_use_id)] = paths
    return found


def _expected_call(call: ToolCall, invented: Mapping[str, list[str]]) -> dict[str, Any]:
    # What the simulator made up is not what the agent asked for: pinning it would fail the next honest recording.
    made_up = invented.get(call.id)
    return {"name": call.name, "input": call.input, **({"shape_paths": list(made_up)} if made_up else {})}


def propose_checks(
    trajectory: Trajectory, *, headroom: float = DEFAULT_HEADROOM, invented: Mapping[str, list[str]] | None = None
) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(check, derived params, default params) per check a run supports.

    Derived params come from the run and replace the old values on update; defaults are only set
    when the golden has no value of its own. `invented` ({tool_use id: paths}, `invented_inputs`) names the tool
    inputs a simulator made up: those are compared by shape (`shape_paths`), never pinned as exact values.
    """
    proposals: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("tool_ids_matched", {}, {}),
        ("outcome", _outcome_params(trajectory), {}),
    ]
    calls = [_expected_call(call, invented or {}) for call in trajectory.tool_calls]
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
    final = trajectory.final_step
    if final is not None and final.output_schema is not None:  # the run asked for structured output
        proposals.append(("output_schema", {"schema": final.output_schema}, {}))
    proposals.append(("budgets", _budget_params(trajectory, headroom), {}))
    if trajectory.tool_calls:
        proposals.append(("no_repeated_calls", {}, {"max_in_a_row": 2}))
    return proposals


def _entry_for(checks: list[dict[str, Any]], check: str) -> dict[str, Any] | None:
    return next((item for item in checks if item.get("id", item.get("check")) == check and item.get("check") == check),
                None)


def _merged(
    existing: Mapping[str, Any] | None,
    trajectory: Trajectory,
    *,
    name: str,
    cassette_label: str,
    headroom: float,
    schema_ref: str | None,
    invented: Mapping[str, list[str]] | None = None,
) -> tuple[dict[str, Any], list[int]]:
    """`existing` with the run-derived values replaced, and the ids of the checks this merge added."""
    if existing:
        golden: dict[str, Any] = json.loads(json.dumps(existing))
    else:
        golden = {"$schema": schema_ref} if schema_ref else {}
        golden.update(name=name, description=f"Blessed from {cassette_label}.", cassettes=[], checks=[])
    cassettes = golden.setdefault("cassettes", [])
    if cassette_label not in cassettes:
        cassettes.append(cassette_label)
    checks: list[dict[str, Any]] = golden.setdefault("checks", [])
    added: list[int] = []
    for check, derived, defaults in propose_checks(trajectory, headroom=headroom, invented=invented):
        entry = _entry_for(checks, check)
        if entry is None:
            entry = {"check": check}
            checks.append(entry)
            added.append(id(entry))
        params = dict(entry.get("params") or {})
        if check == "outcome":  # one of stop_reason / error: the run decides which
            params.pop("stop_reason", None)
            params.pop("error", None)
        if check == "output_schema" and "model" in params:  # the user's model stands for the schema
            continue
        params.update(derived)
        for key, value in defaults.items():
            params.setdefault(key, value)
        if params:
            entry["params"] = params
        else:
            entry.pop("params", None)
    return golden, added


@dataclass(frozen=True)
class LeftOut:
    """A check bless would have proposed, left out because it fails on the run blessed: the check's own reason."""

    check: str
    params: dict[str, Any]
    reason: str
    step: int | None = None

    def describe(self) -> str:
        shown = json.dumps(self.params, ensure_ascii=False) if self.params else ""
        shown = f" {shown}" if shown and len(shown) <= 60 else ""
        return f"left out {self.check}{shown}: it fails on this run ({self.reason})"


@dataclass(frozen=True)
class Blessing:
    """The golden a run blesses: only proposals that pass on it; what was left out and why; and the checks the
    golden already held (a person's, or an earlier blessing's) that this run fails, kept as they were."""

    golden: dict[str, Any]
    left_out: list[LeftOut] = field(default_factory=list)
    failing_kept: list[CheckResult] = field(default_factory=list)


def bless_golden(
    existing: Mapping[str, Any] | None,
    trajectory: Trajectory,
    *,
    name: str,
    cassette_label: str,
    headroom: float = DEFAULT_HEADROOM,
    schema_ref: str | None = None,
    invented: Mapping[str, list[str]] | None = None,
) -> Blessing:
    """The golden after blessing `trajectory`, each proposed check run on the runs the golden selects (`run`):
    a proposal that fails there is left out, and named with the check's reason, so that `harness eval` of the
    blessed cassette passes at once."""
    which = (existing or {}).get("run", "all")
    try:
        seen = trajectory.select_runs(which)
    except ValueError as err:
        raise GoldenError(str(err), where="$.run") from None
    golden, added = _merged(existing, seen, name=name, cassette_label=cassette_label, headroom=headroom,
                            schema_ref=schema_ref, invented=invented)
    left_out: list[LeftOut] = []
    failing: list[CheckResult] = []
    kept = []
    for entry in golden["checks"]:
        check = entry.get("check")
        if check not in CHECKS:  # validate_golden names it
            kept.append(entry)
            continue
        result = run_check(check, seen, entry.get("params") or {}, label=entry.get("id", check))
        if result.passed:
            kept.append(entry)
        elif id(entry) in added:
            left_out.append(LeftOut(check, dict(entry.get("params") or {}), result.reason, result.step))
        else:
            kept.append(entry)
            failing.append(result)
    golden["checks"] = kept
    return Blessing(golden, left_out, failing)


def merge_golden(
    existing: Mapping[str, Any] | None,
    trajectory: Trajectory,
    *,
    name: str,
    cassette_label: str,
    headroom: float = DEFAULT_HEADROOM,
    schema_ref: str | None = None,
) -> dict[str, Any]:
    """The golden after blessing `trajectory` (see `bless_golden`, which says what it left out)."""
    return bless_golden(existing, trajectory, name=name, cassette_label=cassette_label, headroom=headroom,
                        schema_ref=schema_ref).golden


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
    """The golden's path under the golden folder (else its stem), in the characters a golden name allows:
    a parametrized test's cassette (`test_x[anthropic].yaml`) gives `test_x-anthropic`."""
    try:
        name = path.resolve().relative_to(project.golden.resolve()).with_suffix("").as_posix()
    except ValueError:
        name = path.stem
    name = re.sub(r"[^A-Za-z0-9._/-]+", "-", name).rstrip("-")
    return re.sub(r"^[^A-Za-z0-9]+", "", name) or "golden"


def _existing_ancestor(path: Path) -> Path:
    for candidate in (path.parent.resolve(), *path.parent.resolve().parents):
        if candidate.exists():
            return candidate
    return Path.cwd()


def _confirm(console: Console, path: Path, assume_yes: bool) -> bool | None:
    """True to write, False when declined (or the input ends: Ctrl-D), None when there is no terminal to ask on."""
    if assume_yes:
        return True
    if not sys.stdin.isatty():
        return None
    try:  # the prompt is markup: its [y/N] escaped, or rich would take it for a style and drop it
        answer = console.input(f"Write {escape(str(path))}? {escape('[y/N]')} ")
    except EOFError:
        console.print()
        return False
    return answer.strip().lower() in ("y", "yes")


def run(args: argparse.Namespace) -> int:
    console = commands.console()
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
    try:
        blessing = bless_golden(
            existing,
            trajectory,
            name=_golden_name(golden_path, project),
            cassette_label=relative_to_root(cassette, root),
            headroom=args.headroom,
            schema_ref=schema_ref,
            invented=invented_inputs(load_cassette_any(cassette)),
        )
    except GoldenError as err:
        raise GoldenError(err.reason, file=golden_path, where=err.where) from None
    proposed = blessing.golden
    validate_golden(proposed, file=golden_path)
    for left in blessing.left_out:
        console.print(escape(left.describe()), soft_wrap=True, highlight=False)
    for result in blessing.failing_kept:
        console.print(f"[yellow]kept, but fails on this run:[/] {escape(result.name)}: {escape(result.reason)}",
                      soft_wrap=True, highlight=False)
    text = json.dumps(proposed, indent=2, ensure_ascii=False) + "\n"
    if existing is None:
        console.print(f"[bold]new golden[/] {escape(str(golden_path))}:")
        console.print(Syntax(text, "json", word_wrap=True))
    else:
        diff = DeepDiff(existing, proposed, verbose_level=2)
        if not diff:  # nothing written: as a declined blessing, exit 1 (a script learns that no golden changed)
            console.print(f"nothing to bless: {escape(str(golden_path))} is up to date with {escape(str(cassette))}")
            return 1
        console.print(f"[bold]changes to[/] {escape(str(golden_path))}:")
        console.print(escape(diff.pretty()))
    decision = _confirm(console, golden_path, args.yes)
    if decision is None:
        console.print("[red]not written:[/] no terminal to confirm on; pass --yes to write")
        return 2
    if not decision:
        console.print(f"not blessed: {escape(str(golden_path))} left as it was")
        return 1
    atomic_write_text(golden_path, text)
    console.print(f"wrote {escape(str(golden_path))}")
    return 0
