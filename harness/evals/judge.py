"""The judge's calls, recorded: a judged check's model call goes through a judge cassette beside the golden.

`golden/dayflow/brief.json`'s check `rubric` is judged from `golden/dayflow/brief.rubric.judge.yaml`: an ordinary
cassette (use_cassette: redaction, format, matching, mismatch diffs) whose `harness:` block also says
`judge: true`, the golden and the check it serves. Modes (`harness eval --judge`):

- replay (default): every judge request is answered from the cassette: no key, no network, the same verdict on
  every run. A request with no recording (the criterion, the judge model or the judged run changed) is not a
  failure of the agent: the check is marked "needs re-judging", naming what changed, and the run exits 2;
- record: what matches is replayed, what is missing is asked and recorded (against the API with a key, or any
  ANTHROPIC_BASE_URL: `harness sim --script judge.yaml`, or `harness.Simulator(model=function)` in tests);
- rewrite: every judge request is asked again, each judge cassette written afresh.

Identical judge requests (two cases whose runs read the same) are one recording, served to both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.checks.base import CheckResult
from harness.checks.rubric import NAME as RUBRIC
from harness.checks.rubric import VerdictError, judge_request, judged, parse_verdict, request_parts, run_text
from harness.errors import HarnessError
from harness.evals.golden import GoldenCheck, project_root, relative_to_root
from harness.trajectory import Trajectory

if TYPE_CHECKING:
    from harness.cassette.format import CassetteFile
    from harness.cassette.modes import Mode

__all__ = ["JUDGED_CHECKS", "JUDGE_MODES", "JUDGE_SUFFIX", "Judge", "is_judge_file", "judge_cassette_path"]

JUDGE_MODES = ("replay", "record", "rewrite")
JUDGE_SUFFIX = ".judge.yaml"
JUDGED_CHECKS = frozenset({RUBRIC})
# A local judge (the simulator) needs no key, but the SDK will not build a client without one; sent to that
# base URL only, and never written (the recorder redacts credentials).
_LOCAL_KEY = "judge-no-key-needed-locally"
_WHERE_TO_ASK = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")


def judge_cassette_path(golden_path: Path, check_id: str) -> Path:
    """Beside the golden: `brief.json`'s check `rubric` -> `brief.rubric.judge.yaml`."""
    return golden_path.with_name(f"{golden_path.stem}.{check_id}{JUDGE_SUFFIX}")


def is_judge_file(path: Path) -> bool:
    """A judge cassette, or a judge script beside it (`*.judge-script.yaml`): never a suite."""
    return path.name.endswith(JUDGE_SUFFIX) or path.name.endswith(".judge-script.yaml")


_PART_WORDS = {
    "criterion": "the criterion",
    "examples": "the examples",
    "run": "the judged run",
    "judge model": "the judge model",
    "judge instructions": "the judge's instructions",
    "request options": "the judge request's options",
}


def _what_changed(request: Mapping[str, Any], recorded: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The parts of the judge request that differ from the nearest recorded one (fewest parts changed), and the
    cassette diff against it (recorded -> now)."""
    from harness.cassette.match import diff_summary, stored_request_body

    mine = request_parts(request)
    best: tuple[list[str], Any] | None = None
    for interaction in recorded:
        body = stored_request_body(interaction.get("request") or {})
        if not isinstance(body, Mapping):
            continue
        theirs = request_parts(body)
        changed = [part for part in mine if mine[part] != theirs.get(part)]
        if best is None or len(changed) < len(best[0]):
            best = (changed, body)
    if best is None:
        return ["nothing is recorded in the judge cassette"], []
    changed, nearest = best
    words = [_PART_WORDS[part] for part in changed] or ["the request (a recording of it was played already)"]
    return words, diff_summary(nearest, dict(request))


@dataclass
class Judge:
    """The judge of one eval run: how its calls are recorded (`mode`), and the cassettes already begun."""

    mode: str = "replay"
    rewritten: set[Path] = field(default_factory=set)
    _loaded: dict[Path, _Recorded] = field(default_factory=dict, repr=False)
    _roots: dict[Path, Path] = field(default_factory=dict, repr=False)
    # Replayed answers parsed once: a suite judges the same recording for every case and trial that reads alike.
    _verdicts: dict[int, tuple[Mapping[str, Any], dict[str, Any]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in JUDGE_MODES:
            raise HarnessError(f"unknown judge mode {self.mode!r}; one of {', '.join(JUDGE_MODES)}")

    def _cassette_mode(self, path: Path) -> Mode:
        if self.mode == "replay":
            return "none"
        if self.mode == "rewrite" and path not in self.rewritten:
            self.rewritten.add(path)  # the first use in this run starts the file afresh; later ones add to it
            return "rewrite"
        return "new_episodes"

    def check(
        self, golden_label: str, golden_path: Path | None, check: GoldenCheck, trajectory: Trajectory
    ) -> tuple[CheckResult, dict[str, Any]]:
        """The judged check's result and its `judge` record: status judged | needs_rejudging | error, the
        cassette, the judge model, who answered (source), and what changed when a recording no longer matches."""
        record: dict[str, Any]
        if golden_path is None:  # an inline golden: nowhere to keep a judge cassette
            reason = "a judged check needs its golden's file: the judge cassette is kept beside it"
            record = {"status": "error", "cassette": "", "model": str(check.params.get("model", "")), "source": None,
                      "mode": self.mode, "changed": [], "differences": [], "error": reason}  # fmt: skip
            return _failed(check, reason), record
        path = judge_cassette_path(golden_path, check.id)
        request = judge_request(trajectory, check.params)
        root = self._roots.get(golden_path) or self._roots.setdefault(golden_path, project_root(golden_path))
        record = {
            "status": "judged",
            "cassette": relative_to_root(path, root),
            "model": request["model"],
            "source": None,
            "mode": self.mode,
            "changed": [],
            "differences": [],
        }
        if self.mode == "replay" and not path.exists():
            record |= {"status": "needs_rejudging", "changed": ["not judged yet: no judge cassette"]}
            return self._rejudge(check, record), record
        try:
            message, source = self._ask(path, request, golden_label, check)
        except _Miss as miss:
            record |= {"status": "needs_rejudging", "changed": miss.changed, "differences": miss.differences}
            return self._rejudge(check, record), record
        except HarnessError as err:
            record |= {"status": "error", "error": err.reason}
            return _failed(check, f"the judge could not be asked: {err.reason}"), record
        record["source"] = source
        try:
            verdict = self._parsed(message)
        except VerdictError as err:
            record["status"] = "error"
            record["error"] = str(err)
            return _failed(check, str(err)), record
        who = f"{request['model']}, {source}" if source else request["model"]
        result = judged(verdict, check.params, judge=who, shown=run_text(request))
        record |= {"verdict": verdict["verdict"], "score": verdict["score"], "reasons": result.evidence["reasons"]}
        return result.named(check.id), record

    def _parsed(self, message: Mapping[str, Any]) -> dict[str, Any]:
        known = self._verdicts.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        verdict = parse_verdict(message)
        self._verdicts[id(message)] = (message, verdict)
        return verdict

    def _rejudge(self, check: GoldenCheck, record: Mapping[str, Any]) -> CheckResult:
        changed = ", ".join(record["changed"])
        return CheckResult(
            name=check.id,
            passed=False,
            reason=f"needs re-judging ({changed}): {record['cassette']} holds no judgement for this request; "
            "run `harness eval --judge record` to ask the judge (not a failure of the agent)",
            evidence={"needs_rejudging": True, "changed": list(record["changed"])},
        )

    def _ask(
        self, path: Path, request: dict[str, Any], golden_label: str, check: GoldenCheck
    ) -> tuple[Mapping[str, Any], str | None]:
        if self.mode == "replay":
            return self._replay(path, request)
        return self._record(path, request, golden_label, check)

    def _replay(self, path: Path, request: dict[str, Any]) -> tuple[Mapping[str, Any], str | None]:
        """The recorded answer to `request`, matched as replay matches (the request's fingerprint), read straight
        from the cassette: replay needs no SDK client, so `harness eval` stays as light as a file reader."""
        from harness.cassette.match import request_fingerprint

        if path not in self._loaded:
            self._loaded[path] = _Recorded.load(path)
        recorded = self._loaded[path]
        for (method, route, query), answers in recorded.answers.items():
            found = answers.get(request_fingerprint(method, route, query, request))
            if found is not None:
                return found, recorded.cassette.meta.get("source")
        raise _Miss(*_what_changed(request, recorded.cassette.interactions))

    def _record(
        self, path: Path, request: dict[str, Any], golden_label: str, check: GoldenCheck
    ) -> tuple[dict[str, Any], str | None]:
        """Through use_cassette (redaction, format, the recording lock): replay what matches, ask the rest."""
        import anthropic

        from harness.cassette.recorder import use_cassette
        from harness.errors import CassetteError

        if not any(os.environ.get(name) for name in _WHERE_TO_ASK):
            raise HarnessError(
                "recording a judgement needs ANTHROPIC_API_KEY (the API) or ANTHROPIC_BASE_URL (any "
                "endpoint, e.g. `harness sim --script judge.yaml`)",
                file=path,
            )
        mode = self._cassette_mode(path)
        self._loaded.pop(path, None)
        try:
            # One judgement a call: the others in the cassette are not this call's to play.
            with use_cassette(path, mode, allow_repeats=True, on_unplayed="ignore") as cassette:
                local = not os.environ.get("ANTHROPIC_API_KEY") and not os.environ.get("ANTHROPIC_AUTH_TOKEN")
                client = anthropic.Anthropic(api_key=_LOCAL_KEY, max_retries=2) if local else anthropic.Anthropic()
                try:
                    message = client.messages.create(**request)
                except anthropic.AnthropicError as err:
                    raise HarnessError(f"{type(err).__name__}: {err}", file=path) from None
                if cassette.new_interactions:
                    cassette.provenance = {
                        **cassette.provenance,
                        "judge": True,
                        "golden": golden_label,
                        "check": check.id,
                    }
                    source = cassette.provenance.get("source")
                else:
                    source = cassette.recorded.meta.get("source")
        except CassetteError as err:
            raise HarnessError(err.reason, file=path) from None
        return message.model_dump(mode="json"), source


@dataclass(frozen=True)
class _Recorded:
    """A judge cassette read for replay: its answered requests by route, then by fingerprint (the last 200 wins)."""

    cassette: CassetteFile
    answers: dict[tuple[str, str, str | None], dict[bytes, Mapping[str, Any]]]

    @classmethod
    def load(cls, path: Path) -> _Recorded:
        from harness.cassette.format import load_cassette
        from harness.cassette.match import fingerprint_of_stored

        cassette = load_cassette(path)
        answers: dict[tuple[str, str, str | None], dict[bytes, Mapping[str, Any]]] = {}
        for interaction in cassette.interactions:
            stored = interaction.get("request") or {}
            response = interaction.get("response") or {}
            if response.get("status") == 200 and isinstance(response.get("body"), Mapping):
                route = (str(stored.get("method", "POST")), str(stored.get("path", "")), stored.get("query"))
                answers.setdefault(route, {})[fingerprint_of_stored(stored)] = response["body"]
        return cls(cassette, answers)


class _Miss(Exception):
    """A judge request with no recording: what changed, and the cassette's diff."""

    def __init__(self, changed: list[str], differences: list[str]) -> None:
        super().__init__(", ".join(changed))
        self.changed = changed
        self.differences = list(differences)[:20]


def _failed(check: GoldenCheck, reason: str) -> CheckResult:
    return CheckResult(name=check.id, passed=False, reason=reason, evidence={"judge_error": reason})
