"""A set of cassettes as eval cases: which suite case each file answers, and its trials.

`harness compare` takes two cassette folders (or two suite files) and runs the eval on both with the
same goldens. How a folder maps onto the suites' cases:

- the cases are those of the suites (`--suite`, default the project's evals/) whose cassette lies inside
  the BASELINE folder;
- each case's cassette, taken relative to BASELINE, names the candidate's: with baseline `cassettes/`
  and candidate `candidates/`, the case reading `cassettes/dayflow/brief.yaml` reads
  `candidates/dayflow/brief.yaml` on the candidate side, with the same golden;
- on either side, trial files beside that path (`brief.trial-1.yaml`, `brief.trial-2.yaml`...) are the
  case's trials, and take the place of the plain file when there are any.

A case whose file is on neither form in the candidate folder is missing there; the comparison refuses
that unless asked to compare the cases the two sides share.

When no case reads a cassette under BASELINE but some read one under CANDIDATE, the cases are mapped
the other way round (`anchor_folder`): after a fork in place, `harness compare saved-copy/ cassettes/`
compares the copy kept before the fork with the cassettes the suites name.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.errors import HarnessError
from harness.evals.document import ResultsDocument
from harness.evals.golden import relative_to_root
from harness.evals.judge import Judge
from harness.evals.runner import run_suites
from harness.evals.suite import Case, Suite, discover_suites, project_suites, unique_suites
from harness.evals.trial_files import trial_case_id, trial_paths

__all__ = ["anchor_folder", "case_runs", "results_for_folder", "results_for_suite_file", "suites_for"]

_ONE_SUITE = "name one suite with --suite"


def case_runs(case: Case, cassette: Path, root: Path | None, *, keep_missing: bool = False) -> list[Case]:
    """The case reading `cassette`: one Case per trial file when there are trials, else one for the file.

    A file that is not there gives no case, or with `keep_missing` the case itself (which then errors
    in the run, naming the file).
    """
    trials = trial_paths(cassette)
    label_root = root or Path.cwd()
    if not trials:
        if not cassette.is_file() and not keep_missing:
            return []
        return [replace(case, cassette=cassette, cassette_label=relative_to_root(cassette, label_root))]
    return [
        replace(
            case,
            id=trial_case_id(case.id, case.cassette, number),
            cassette=path,
            cassette_label=relative_to_root(path, label_root),
        )
        for number, path in trials
    ]


def suites_for(paths: list[str] | None, golden_dir: str | None) -> list[Suite]:
    if not paths:
        paths = [str(path) for path in project_suites()]
    return unique_suites(discover_suites(paths, golden_dir=golden_dir), hint=_ONE_SUITE)


def _inside(path: Path, folder: Path) -> Path | None:
    try:
        return path.resolve().relative_to(folder.resolve())
    except ValueError:
        return None


def anchor_folder(suites: list[Suite], baseline: Path, candidate: Path) -> Path:
    """The folder whose files the suites' cases name: BASELINE when any case reads a cassette under it, else
    CANDIDATE when any reads one there (a copy kept before a fork in place), else BASELINE (which then errors)."""
    cases = [case for suite in suites for case in suite.cases]
    if any(_inside(case.cassette, baseline) is not None for case in cases):
        return baseline
    if any(_inside(case.cassette, candidate) is not None for case in cases):
        return candidate
    return baseline


def results_for_folder(
    folder: Path, *, base: Path, suites: list[Suite], golden_dir: Path | None = None, judge: Judge | None = None
) -> ResultsDocument:
    """Run the suites' cases that read a cassette under `base`, each reading its namesake under `folder`."""
    mapped: list[Suite] = []
    under_base = 0
    for suite in suites:
        cases: list[Case] = []
        for case in suite.cases:
            relative = _inside(case.cassette, base)
            if relative is None:
                continue
            under_base += 1
            cases.extend(case_runs(case, folder.resolve() / relative, suite.root))
        if cases:
            mapped.append(replace(suite, cases=cases))
    if under_base == 0:
        raise HarnessError(
            f"no case of the suites ({', '.join(s.name for s in suites)}) reads a cassette under {base}; "
            "give the suite that names them with --suite",
            file=base,
        )
    if not mapped:
        raise HarnessError(f"none of the {under_base} cases' cassettes is in this folder", file=folder)
    return run_suites(mapped, golden_dir=golden_dir, judge=judge)


def results_for_suite_file(
    path: Path, *, golden_dir: str | None = None, judge: Judge | None = None
) -> ResultsDocument:
    """Run one suite file as it names its cassettes (with their trials when there are trial files)."""
    suites = unique_suites(discover_suites([path], golden_dir=golden_dir), hint=_ONE_SUITE)
    expanded = [
        replace(
            suite,
            cases=[
                run for case in suite.cases for run in case_runs(case, case.cassette, suite.root, keep_missing=True)
            ],
        )
        for suite in suites
    ]
    return run_suites(expanded, golden_dir=Path(golden_dir).resolve() if golden_dir else None, judge=judge)
