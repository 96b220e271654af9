"""Trial files: how the cassettes of a case recorded several times are named, found and told apart.

A case recorded N times (`harness record NAME --trials N`) leaves `brief.trial-1.yaml` ... `brief.trial-N.yaml`
beside where `brief.yaml` would be. In a results document each trial is a case of its own whose id carries the
same `.trial-K` mark (`dayflow/brief/brief.trial-2.yaml`); removing the mark gives the id of the group
(`dayflow/brief/brief.yaml`). The names live here, upstream of the reports, because the eval side (which files a
case reads) and the report side (which cases are one group) must agree on them; the scores are in
harness.report.trials.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["trial_case_id", "trial_group", "trial_path", "trial_paths"]

_TRIAL = re.compile(r"\.trial-(\d+)(?=\.[A-Za-z0-9]+$|$)")


def trial_group(case_id: str) -> tuple[str, int | None]:
    """('dayflow/brief/brief.yaml', 2) for 'dayflow/brief/brief.trial-2.yaml'; (id, None) for a plain case."""
    matches = list(_TRIAL.finditer(case_id))
    if not matches:
        return case_id, None
    last = matches[-1]
    return case_id[: last.start()] + case_id[last.end() :], int(last.group(1))


def trial_path(cassette: Path, trial: int) -> Path:
    """cassettes/dayflow/brief.yaml -> cassettes/dayflow/brief.trial-2.yaml"""
    return cassette.with_name(f"{cassette.stem}.trial-{trial}{cassette.suffix}")


def trial_paths(cassette: Path) -> list[tuple[int, Path]]:
    """The trial files recorded for `cassette`, by trial number; empty when there are none."""
    pattern = re.compile(re.escape(cassette.stem) + r"\.trial-(\d+)" + re.escape(cassette.suffix) + "$")
    if not cassette.parent.is_dir():
        return []
    found = []
    for path in cassette.parent.iterdir():
        match = pattern.match(path.name)
        if match and path.is_file():
            found.append((int(match.group(1)), path))
    return sorted(found)


def trial_case_id(case_id: str, cassette: Path, trial: int) -> str:
    """The id of trial `trial` of a case: its file name marked where the id names the file, else a suffix."""
    if case_id.endswith(cassette.name):
        return case_id[: -len(cassette.name)] + trial_path(cassette, trial).name
    return f"{case_id}.trial-{trial}"
