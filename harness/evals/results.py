"""The canonical results document of an eval run, its JSON Schema, and how it is written and judged.

One JSON document per `harness eval` (schema: results.schema.json, `results_version` 1):

- `summary`: status (passed | failed | error), case and check counts, usage by kind, cost;
- `suites`: each suite with its case ids and counts;
- `cases`: for each case its status, the cassette (path, sha256, provenance, fingerprints), the golden
  (path, sha256, run selection), a trajectory digest (model, steps, stop reasons, tool sequence,
  outcome, final text), usage by kind and cost, every check (id, check, passed, reason, step,
  evidence, params, duration) and timings; or the error that kept it from running.

Each case's trajectory also carries `step_details` (every step: the request as sent in brief, the
messages it added, the response blocks, stop reason, usage by kind, cost, tool calls with inputs and
results, attempts) and `run_details` (how each conversation ended), with long strings clipped to
STEP_TEXT_LIMIT characters (a clipped string keeps a hash of the whole, so a change past the cut still
shows as a change). They are what the HTML report draws and what `harness compare` diffs.

Markdown, JUnit, HTML and baseline-vs-candidate comparisons are projections of this document and
must not need anything else. Durations are wall-clock measurements of this process, for reading,
never for pass/fail.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import jsonschema

from harness.errors import HarnessError
from harness.evals.document import ResultsDocument
from harness.files import atomic_write_text, atomic_writer
from harness.jsondata import json_path
from harness.run import USAGE_FIELDS as _KINDS
from harness.run import Usage

if TYPE_CHECKING:
    from harness.cassette.format import CassetteFile
    from harness.evals.suite import Suite
    from harness.trajectory import Attempt, Trajectory

__all__ = [
    "RESULTS_VERSION",
    "STEP_TEXT_LIMIT",
    "ResultsWriter",
    "build_results",
    "exit_code",
    "read_results",
    "results_schema",
    "run_details",
    "step_details",
    "suite_entry",
    "validate_results",
    "write_results",
]

RESULTS_VERSION = 1
STEP_TEXT_LIMIT = 2000  # characters of one string in step_details; a base64 image or a long file is clipped


@cache
def results_schema() -> dict[str, Any]:
    text = resources.files("harness.evals").joinpath("results.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# --- per-step detail ------------------------------------------------------------------------------------------


def _clip(value: Any, limit: int = STEP_TEXT_LIMIT) -> Any:
    """The same JSON with every string longer than `limit` cut, naming what was cut and hashing the whole."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return f"{value[:limit]}… [{len(value) - limit:,} more characters, sha256:{digest}]"
    if isinstance(value, Mapping):
        return {str(key): _clip(item, limit) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_clip(item, limit) for item in value]
    return value


def _system_text(system: Any) -> str | None:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n\n".join(str(block.get("text", "")) for block in system if isinstance(block, Mapping))
    return None


def _request_body(cassette: CassetteFile | None, attempts: Sequence[Attempt]) -> Mapping[str, Any]:
    """The recorded body of the try that returned the step's message (empty when there is no cassette)."""
    if cassette is None or not attempts or attempts[-1].interaction is None:
        return {}
    try:
        body = cassette.interactions[attempts[-1].interaction]["request"]["body"]
    except (IndexError, KeyError, TypeError):
        return {}
    return body if isinstance(body, Mapping) else {}


def _step_cost(model: str, usage: Mapping[str, int], counted: bool) -> float | None:
    if not counted:
        return 0.0
    from harness.pricing import estimate_cost

    cost = estimate_cost(model, Usage.from_dict(usage))
    return None if cost is None else round(cost, 6)


def _request(summary: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    from harness.jsondata import fingerprint

    system_text = _system_text(body.get("system"))
    return {
        "model": summary.get("model"),
        "max_tokens": summary.get("max_tokens"),
        "stream": bool(summary.get("stream")),
        "tools": list(summary.get("tools") or []),
        "tools_fingerprint": fingerprint(body.get("tools")) if body else None,
        "system": summary.get("system"),
        "system_text": _clip(system_text) if system_text is not None else None,
        "message_count": summary.get("message_count"),
    }


def step_details(trajectory: Trajectory, cassette: CassetteFile | None = None) -> list[dict[str, Any]]:
    """Every step of `trajectory` as the results document stores it (see results.schema.json, $defs.step).

    With the `cassette` it came from, each request also carries the system prompt's text and a
    fingerprint of the tool definitions; without it (a loop run) those two are null.
    """
    out = []
    for step in trajectory.steps:
        usage = step.usage.to_dict()
        model = step.model or step.request.get("model") or ""
        out.append(
            {
                "index": step.index,
                "run": step.run,
                "request": _request(step.request, _request_body(cassette, step.attempts)),
                "added": _clip(step.delta),
                "response": {
                    "id": step.message_id,
                    "model": step.model,
                    "blocks": _clip(step.blocks),
                    "stop_reason": step.stop_reason,
                    "stop_sequence": step.stop_sequence,
                },
                "usage": usage,
                "usage_counted": step.usage_counted,
                "cost_usd": _step_cost(model, usage, step.usage_counted),
                "tool_calls": [_clip(call.to_dict()) for call in step.tool_calls],
                "attempts": [_attempt(attempt) for attempt in step.attempts],
                "duration_ms": step.duration_ms,
            }
        )
    return out


def _attempt(attempt: Attempt) -> dict[str, Any]:
    return {
        "status": attempt.status,
        "ok": attempt.ok,
        "error_type": attempt.error_type,
        "error_message": _clip(attempt.error_message) if attempt.error_message else attempt.error_message,
        "stream": attempt.stream,
    }


def run_details(trajectory: Trajectory, cassette: CassetteFile | None = None) -> list[dict[str, Any]]:
    """How each conversation of `trajectory` ended; when on a request that got no message, that request."""
    out = []
    for run in trajectory.runs:
        failed = run.failed_request
        out.append(
            {
                "index": run.index,
                "steps": [step.index for step in run.steps],
                "outcome": run.outcome.to_dict(),
                "failed_request": None
                if failed is None
                else {
                    "request": _request(failed.request, _request_body(cassette, failed.attempts)),
                    "added": _clip(failed.delta),
                },
                "failed_attempts": [_attempt(a) for a in failed.attempts] if failed else [],
            }
        )
    return out


def suite_entry(suite: Suite) -> dict[str, Any]:
    """What the document says of a suite besides its cases and counts."""
    return {
        "name": suite.name,
        "path": str(suite.path) if suite.path else None,
        "description": suite.description,
        "root": str(suite.root) if suite.root else None,
    }


class ResultsWriter:
    """One results document, built a case at a time.

    The summary and the suites' counts are running totals, so no list of cases is needed to write them. The
    cases themselves are held one of three ways: by default each is formatted as it comes into a spool file and
    dropped, and `write` streams the document to its file, so memory stays the size of one case whatever the
    run's size (`harness eval`); with `keep=True` they stay in memory, for `document()` (the library's
    `run_suites`, `harness merge`); with `spool=False` they are not held at all (a run that writes no document).
    Totals are summed in case order, as a sum over the whole list would be: the three give equal documents.
    """

    def __init__(
        self,
        suites: Iterable[Mapping[str, Any]],
        *,
        golden_dir: Path | str | None = None,
        shard: Mapping[str, Any] | None = None,
        keep: bool = False,
        spool: bool = True,
    ) -> None:
        self._suites = [dict(entry) for entry in suites]
        self._golden_dir = str(golden_dir) if golden_dir else None
        self._shard = dict(shard) if shard is not None else None
        self._kept: list[Mapping[str, Any]] | None = [] if keep else None
        # Closed by close() (or leaving a `with` block): the writer lives as long as the run.
        spooled = spool and not keep
        self._spool: IO[str] | None = tempfile.TemporaryFile("w+", encoding="utf-8") if spooled else None  # noqa: SIM115
        self._spooled = 0
        self._statuses = {"passed": 0, "failed": 0, "error": 0}
        self._by_suite: dict[str, tuple[list[str], dict[str, int]]] = {}
        self._checks = [0, 0]  # passed, failed
        self._rejudge = 0  # judged checks whose recorded judgement no longer matches: neither passed nor failed
        self._usage = dict.fromkeys(_KINDS, 0)
        self._cost = 0
        self._cost_known = True

    def add(self, record: Mapping[str, Any]) -> None:
        status = record["status"]
        self._statuses[status] += 1
        ids, counts = self._by_suite.setdefault(record["suite"], ([], {"passed": 0, "failed": 0, "error": 0}))
        ids.append(record["id"])
        counts[status] += 1
        rejudge = set(record.get("needs_rejudging") or ())
        for check in record["checks"]:
            if check["id"] in rejudge:
                self._rejudge += 1
            else:
                self._checks[0 if check["passed"] else 1] += 1
        for kind in _KINDS:
            self._usage[kind] += (record.get("usage") or {}).get(kind, 0)
        if record.get("trajectory") is not None:
            cost = record.get("cost_usd")
            if cost is None:
                self._cost_known = False
            else:
                self._cost += cost
        if self._kept is not None:
            self._kept.append(record)
        if self._spool is not None:
            # One case as it sits in the written file (indented two levels), a line of JSON per line of text.
            text = json.dumps(record, indent=2, ensure_ascii=False, default=str).replace("\n", "\n    ")
            self._spool.write((",\n    " if self._spooled else "\n    ") + text)
            self._spooled += 1

    def _counts(self) -> dict[str, int]:
        cases = sum(self._statuses.values())
        return {"cases": cases, "passed": self._statuses["passed"], "failed": self._statuses["failed"],
                "errored": self._statuses["error"]}

    def head(self, *, duration_ms: float | None = None, created_at: str | None = None) -> dict[str, Any]:
        """The document without its cases: everything a summary or a total needs."""
        from harness._version import __version__

        # A failed check decides (exit 1), whatever else the run holds: CI must read "the agent regressed", not
        # "broken setup". Without one, a case that could not run or a stale judgement is bad input (exit 2).
        status = ("failed" if self._statuses["failed"] else "error" if self._statuses["error"] or self._rejudge
                  else "passed")
        summary = {
            "status": status,
            **self._counts(),
            "checks": sum(self._checks) + self._rejudge,
            "checks_passed": self._checks[0],
            "checks_failed": self._checks[1],
            "needs_rejudging": self._rejudge,
            "usage": dict(self._usage),
            "cost_usd": round(self._cost, 6),
            "cost_known": self._cost_known,
            "duration_ms": duration_ms,
        }
        by_suite = []
        for entry in self._suites:
            ids, counts = self._by_suite.get(entry["name"], ([], {"passed": 0, "failed": 0, "error": 0}))
            by_suite.append(
                {**entry, "cases": list(ids), "passed": counts["passed"], "failed": counts["failed"],
                 "errored": counts["error"]}
            )
        head: dict[str, Any] = {
            "results_version": RESULTS_VERSION,
            "tool": {"name": "loop-harness", "version": __version__},
            "created_at": created_at or _now(),
            "golden_dir": self._golden_dir,
        }
        if self._shard is not None:
            head["shard"] = self._shard
        return head | {"summary": summary, "suites": by_suite}

    def document(self, **head: Any) -> ResultsDocument:
        """The whole document, cases included (only with `keep=True`)."""
        if self._kept is None:
            raise RuntimeError("the cases were spooled, not kept: write() the document instead")
        # Assembled from the case records run_case builds as plain dicts, so the checker cannot follow it: what
        # the writer makes is held to results.schema.json (which the TypedDicts follow) by the eval tests, which
        # validate every document they read (tests/test_evals_cli.py, tests/test_evals_shards.py).
        return cast(ResultsDocument, self.head(**head) | {"cases": list(self._kept)})

    def write(self, path: str | Path, head: Mapping[str, Any]) -> Path:
        """`head` and the cases to `path`, atomically, formatted as `write_results` formats a whole document.
        Spooled cases are copied from the spool file, never all held in memory."""
        if self._spool is None:
            if self._kept is None:
                raise RuntimeError("nothing to write: the writer kept only totals (spool=False)")
            return write_results(path, {**head, "cases": list(self._kept)})
        text = json.dumps({**head, "cases": []}, indent=2, ensure_ascii=False, default=str)
        before, _, _ = text.rpartition("[]")
        with atomic_writer(path) as out:
            out.write(before.encode("utf-8") + b"[")
            self._spool.flush()
            self._spool.seek(0)
            while chunk := self._spool.read(1 << 16):
                out.write(chunk.encode("utf-8"))
            out.write(("\n  ]\n}\n" if self._spooled else "]\n}\n").encode("utf-8"))
        return Path(path)

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_results(
    suites: Iterable[Suite],
    records: Sequence[Mapping[str, Any]],
    *,
    golden_dir: Path | None = None,
    duration_ms: float | None = None,
) -> ResultsDocument:
    writer = ResultsWriter([suite_entry(suite) for suite in suites], golden_dir=golden_dir, keep=True)
    for record in records:
        writer.add(record)
    return writer.document(duration_ms=duration_ms)


def validate_results(results: Any, *, file: str | Path | None = None) -> None:
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(results_schema()).iter_errors(results))
    if error is not None:
        raise HarnessError(f"not a results document: {error.message}", file=file, where=json_path(error.absolute_path))


def read_results(path: str | Path) -> ResultsDocument:
    """A results file (`harness eval --json F`), validated; any problem is a HarnessError naming the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise HarnessError(f"cannot read it: {err}", file=path) from None
    except json.JSONDecodeError as err:
        raise HarnessError(f"not JSON: {err.msg}", file=path, where=f"line {err.lineno}, column {err.colno}") from None
    if not isinstance(data, Mapping) or "results_version" not in data:
        raise HarnessError("not a results document (`harness eval --json F` writes one)", file=path)
    validate_results(data, file=path)
    return cast(ResultsDocument, data)  # valid against results.schema.json, the contract the TypedDicts follow


def write_results(path: str | Path, results: Mapping[str, Any]) -> Path:
    path = Path(path)
    atomic_write_text(path, json.dumps(results, indent=2, ensure_ascii=False, default=str) + "\n")
    return path


def exit_code(results: Mapping[str, Any]) -> int:
    """1 when any check failed, else 2 when a case could not run or a judged check needs re-judging, else 0."""
    return {"passed": 0, "failed": 1, "error": 2}[results["summary"]["status"]]
