"""Several trials of one case, scored with pass@k and pass^k.

Trial cassettes and their case ids are named by harness.evals.trial_files (`brief.trial-2.yaml`); removing the
`.trial-K` mark from a case id gives its group's id, so any results document can be read as groups of trials
and a case with one cassette is a group of one.

Scores, with n trials of which c passed (Chen et al. 2021, the unbiased estimators):

- pass@k = 1 - C(n-c, k) / C(n, k): the chance that at least one of k trials drawn without replacement passes;
- pass^k = C(c, k) / C(n, k): the chance that all k of them pass (how reliably the agent does it every time).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import comb
from typing import Any

# The names of trial files and trial case ids are the eval side's (re-exported here for the reports' readers).
from harness.evals.trial_files import trial_case_id, trial_group, trial_path, trial_paths

__all__ = [
    "DEFAULT_K",
    "TrialStats",
    "case_stats",
    "check_stats",
    "group_cases",
    "pass_at_k",
    "pass_hat_k",
    "trial_case_id",
    "trial_group",
    "trial_path",
    "trial_paths",
    "trial_stats",
]

DEFAULT_K = 3  # the k a report shows beside pass@1 (clipped to the number of trials)


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k): at least one of k trials passes."""
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """C(c, k) / C(n, k): all k trials pass."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"passed trials c={c} must be between 0 and n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must be between 1 and the number of trials n={n}")


@dataclass(frozen=True)
class TrialStats:
    """n trials, c of them passed; pass@k and pass^k for every k from 1 to n."""

    n: int
    c: int

    def pass_at(self, k: int) -> float:
        return pass_at_k(self.n, self.c, k)

    def pass_hat(self, k: int) -> float:
        return pass_hat_k(self.n, self.c, k)

    def shown_k(self, k: int = DEFAULT_K) -> int:
        """The k a report shows: the one asked for, or n when there are fewer trials."""
        return max(1, min(k, self.n))

    def to_dict(self) -> dict[str, Any]:
        ks = range(1, self.n + 1)
        return {
            "n": self.n,
            "c": self.c,
            "pass_at_k": {str(k): round(self.pass_at(k), 6) for k in ks},
            "pass_hat_k": {str(k): round(self.pass_hat(k), 6) for k in ks},
        }

    def describe(self, k: int = DEFAULT_K) -> str:
        """'3/5 passed · pass@1 0.60 · pass@3 1.00 · pass^3 0.10'; a single trial is just 'passed' or 'failed'."""
        if self.n == 1:
            return "passed" if self.c else "failed"
        k = self.shown_k(k)
        parts = [f"{self.c}/{self.n} passed", f"pass@1 {self.pass_at(1):.2f}"]
        if k > 1:
            parts += [f"pass@{k} {self.pass_at(k):.2f}", f"pass^{k} {self.pass_hat(k):.2f}"]
        return " · ".join(parts)


def group_cases(cases: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Case records by group id, in first-seen order; each group's trials sorted by trial number."""
    groups: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for case in cases:
        group, trial = trial_group(str(case["id"]))
        groups.setdefault(group, []).append((trial or 0, case))
    return {group: [case for _, case in sorted(items, key=lambda item: item[0])] for group, items in groups.items()}


def case_stats(trials: Iterable[Mapping[str, Any]]) -> TrialStats:
    """Of a group's case records: how many ran, how many passed every check."""
    trials = list(trials)
    return TrialStats(n=len(trials), c=sum(1 for case in trials if case["status"] == "passed"))


def trial_stats(cases: Iterable[Mapping[str, Any]]) -> dict[str, TrialStats]:
    """Each group's stats, for a report's trials table; empty when every case ran once (no table then)."""
    groups = group_cases(cases)
    if all(len(trials) == 1 for trials in groups.values()):
        return {}
    return {group: case_stats(trials) for group, trials in groups.items()}


def check_stats(trials: Iterable[Mapping[str, Any]]) -> dict[str, TrialStats]:
    """Per check id, over the trials that ran it: how many passed."""
    runs: dict[str, list[bool]] = {}
    for case in trials:
        for check in case["checks"]:
            runs.setdefault(check["id"], []).append(bool(check["passed"]))
    return {check: TrialStats(n=len(passed), c=sum(passed)) for check, passed in runs.items()}
