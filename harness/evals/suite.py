"""Eval suites: YAML files under evals/ listing cases, each a cassette and the golden that judges it.

    name: protocol
    description: every real recording keeps the tool_use/tool_result protocol and ends as expected
    cases:
      - golden: protocol/end_turn.json                 # one case per cassette the golden names
      - golden: dayflow/brief.json
        cassette: cassettes/dayflow/brief_stream.yaml  # this cassette instead of the golden's own
        id: dayflow-brief-stream                        # optional; must be unique

A suite that reads a folder which may be absent says so, and is skipped (with one line naming the
folder) where it is not there; an environment variable may say where it is instead:

    requires: {path: ../shared/real-cassettes, env: HARNESS_REAL_CASSETTES, what: the real-recordings corpus}

Golden paths are relative to the golden folder (`--golden DIR`, default <root>/golden or `golden` in
[tool.loop-harness]); cassette paths
to the project root (the nearest folder with pyproject.toml or .git), so a suite reads the same from
any working directory. `harness eval` also takes a golden file or a folder as a suite.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from harness.errors import GoldenError, absolute
from harness.evals.golden import Golden, inside_project, load_golden, project_root, relative_to_root
from harness.evals.judge import is_judge_file
from harness.jsondata import json_path
from harness.project import load_project

__all__ = ["Case", "Suite", "discover_suites", "load_suite", "project_suites", "suite_schema", "unique_suites"]

SUITE_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Case:
    id: str
    suite: str
    cassette: Path
    golden: Golden
    cassette_label: str  # the cassette path relative to the project root ("" when the golden could not say)
    golden_label: str  # the golden path relative to the project root
    error: GoldenError | None = None  # the golden could not be used: this case errors with it, the others run


@dataclass
class Suite:
    name: str
    path: Path | None
    cases: list[Case] = field(default_factory=list)
    description: str | None = None
    root: Path | None = None
    skipped: str | None = None  # why the suite did not run (a folder it requires is absent), one line


def _required_folder(requires: Mapping[str, str], root: Path) -> tuple[Path, Path]:
    """(the folder as the goldens write it, where it is now): they differ when the env variable moves it."""
    written = Path(os.path.normpath(root / requires["path"]))
    moved = os.environ.get(requires["env"]) if requires.get("env") else None
    return written, Path(moved).expanduser().absolute() if moved else written


def _missing(requires: Mapping[str, str], actual: Path) -> str:
    what = requires.get("what") or "a folder it requires"
    hint = f" (set {requires['env']} to where it is)" if requires.get("env") else ""
    return f"{what} not found at {actual}{hint}"


def _moved(cassette: Path, written: Path, actual: Path) -> Path:
    resolved = written.resolve()
    if actual == written or not cassette.is_relative_to(resolved):
        return cassette
    return actual.resolve() / cassette.relative_to(resolved)


@cache
def suite_schema() -> dict[str, Any]:
    text = resources.files("harness.evals").joinpath("suite.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def _read_suite(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GoldenError("no such suite file", file=absolute(path)) from None
    except UnicodeDecodeError as err:
        raise GoldenError(f"not UTF-8 text (byte {err.start})", file=path) from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        raise GoldenError(f"not valid YAML: {err.problem or err}", file=path, where=where) from None
    except yaml.YAMLError as err:
        raise GoldenError(f"not valid YAML: {err}", file=path) from None


def _case_ids(golden: Golden, cassettes: list[Path], root: Path, *, once: bool = False) -> list[str]:
    """Readable unique ids: the golden's name, then each cassette relative to what they share. A golden of one
    cassette named after it (what `harness bless` writes: weather.json of weather.yaml) is named once, `weather`,
    where the goldens are read as they are (`once`); a suite file's ids stay as its reports know them."""
    if len(cassettes) == 1:
        stem = cassettes[0].stem
        if once and (golden.name == stem or golden.name.endswith("/" + stem)):
            return [golden.name]
        return [f"{golden.name}/{cassettes[0].name}"]
    labels = [relative_to_root(path, root) for path in cassettes]
    parts = [label.split("/") for label in labels]
    shared = 0
    while all(len(p) > shared + 1 for p in parts) and len({p[shared] for p in parts}) == 1:
        shared += 1
    return [f"{golden.name}/{'/'.join(p[shared:])}" for p in parts]


def _broken_case(suite: str, case_id: str, golden_path: Path, root: Path, error: GoldenError) -> Case:
    """A case whose golden cannot be used (invalid, unreadable, not there): it errors with `error`, naming the file
    and the place, and the run goes on with the others (`harness eval` exits 2 unless a check failed)."""
    golden = Golden(name=case_id, path=golden_path, cassettes=[], checks=[])
    return Case(id=case_id, suite=suite, cassette=Path(), golden=golden, cassette_label="",
                golden_label=relative_to_root(golden_path, root), error=error)


def load_suite(path: str | Path, *, golden_dir: str | Path | None = None, keep_broken: bool = False) -> Suite:
    """A suite file, every golden it names loaded and validated (any problem is a GoldenError; with `keep_broken`,
    a golden's problem becomes its case's error instead, and the suite's other cases still run)."""
    path = Path(path)
    data = _read_suite(path)
    if isinstance(data, Mapping) and "interactions" in data:  # the schema's error would name its keys only
        raise GoldenError("a cassette, not a suite: write its golden with `harness bless` (then `harness eval "
                          "golden/`), or name the cassette in a suite's case", file=path)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(suite_schema()).iter_errors(data))
    if error is not None:
        raise GoldenError(error.message, file=path, where=json_path(error.absolute_path))
    root = project_root(path)
    goldens = Path(golden_dir) if golden_dir is not None else load_project(root).golden
    suite = Suite(name=data["name"], path=path, description=data.get("description"), root=root)
    written = actual = None
    if "requires" in data:
        written, actual = _required_folder(data["requires"], root)
        if not actual.is_dir():
            suite.skipped = _missing(data["requires"], actual)
            return suite
    seen: dict[str, str] = {}
    for index, entry in enumerate(data["cases"]):
        golden_path = goldens / entry["golden"]
        try:
            if not golden_path.is_file():
                raise GoldenError(
                    f"golden {entry['golden']!r} not found in {absolute(goldens)}",
                    file=path,
                    where=f"$.cases[{index}].golden",
                )
            golden = load_golden(golden_path)
            cassettes = (
                [inside_project(entry["cassette"], root, file=path, where=f"$.cases[{index}].cassette")]
                if "cassette" in entry
                else golden.cassettes
            )
        except GoldenError as err:
            if not keep_broken:
                raise
            case_id = entry.get("id") or Path(entry["golden"]).with_suffix("").as_posix()
            cases = [_broken_case(suite.name, case_id, golden_path, root, err)]
        else:
            if written is not None and actual is not None:
                cassettes = [_moved(cassette, written, actual) for cassette in cassettes]
            ids = [entry["id"]] if "id" in entry else _case_ids(golden, cassettes, root)
            cases = _cases(suite.name, ids, cassettes, golden, golden_path, root)
        for case in cases:
            if case.id in seen:
                raise GoldenError(
                    f"case id {case.id!r} appears twice (also {seen[case.id]}); give one an `id`",
                    file=path,
                    where=f"$.cases[{index}]",
                )
            seen[case.id] = f"$.cases[{index}]"
            suite.cases.append(case)
    return suite


def _cases(suite: str, ids: list[str], cassettes: list[Path], golden: Golden, golden_path: Path,
           root: Path) -> list[Case]:
    """One case per cassette the golden judges, labelled by paths relative to the project root."""
    return [
        Case(
            id=case_id,
            suite=suite,
            cassette=cassette,
            golden=golden,
            cassette_label=relative_to_root(cassette, root),
            golden_label=relative_to_root(golden_path, root),
        )
        for case_id, cassette in zip(ids, cassettes, strict=True)
    ]


def _golden_as_suite(path: Path, *, keep_broken: bool = False, suite: str | None = None) -> Suite:
    """A golden file as a suite of its own; `suite` names the suite its cases belong to (a folder's)."""
    root = project_root(path)
    try:
        golden = load_golden(path)
    except GoldenError as err:
        if not keep_broken:
            raise
        name = suite or path.stem
        return Suite(name=name, path=path, cases=[_broken_case(name, path.stem, path, root, err)], root=root)
    name = suite or golden.name
    cases = _cases(name, _case_ids(golden, golden.cassettes, root, once=True), golden.cassettes, golden, path, root)
    return Suite(name=name, path=path, cases=cases, description=golden.description, root=root)


def _folder_suites(folder: Path, goldens: list[Path], *, keep_broken: bool) -> list[Suite]:
    """The goldens of one folder as one suite, named after the folder (its subfolders, one suite each): a project's
    golden/ reads as one suite of its cases, not a suite per file. A suite file (.yaml) says otherwise."""
    by_folder: dict[Path, list[Path]] = {}
    for path in goldens:
        by_folder.setdefault(path.parent, []).append(path)
    suites = []
    for parent, paths in by_folder.items():
        name = parent.name if parent == folder else parent.relative_to(folder).as_posix()
        parts = [_golden_as_suite(p, keep_broken=keep_broken, suite=name) for p in paths]
        suites.append(Suite(name=name, path=parent, cases=[case for part in parts for case in part.cases],
                            description=parts[0].description if len(parts) == 1 else None, root=parts[0].root))
    return suites


def project_suites(cwd: Path | None = None) -> list[Path]:
    """What `harness eval` runs with no PATH: the project's suites (evals/, or `suites` in its configuration)."""
    project = load_project(cwd)
    missing = [path for path in project.suites if not path.exists()]
    if missing:
        raise GoldenError(
            f"no PATH given and no suites at {', '.join(map(absolute, missing))}; give a suite, golden or folder, "
            f"or set suites in {project.describe_config()}"
        )
    return list(project.suites)


def discover_suites(
    paths: Iterable[str | Path], *, golden_dir: str | Path | None = None, keep_broken: bool = False
) -> list[Suite]:
    """Suites from suite files (.yaml), golden files (.json) and folders of either. With `keep_broken` (what
    `harness eval` asks), a golden that cannot be used is a case that errors, naming it, not the end of the run."""
    suites: list[Suite] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            # Judge cassettes and scripts sit beside goldens (harness.evals.judge): YAML, but never suites.
            found = sorted(p for p in path.rglob("*")
                           if p.suffix in SUITE_SUFFIXES and p.is_file() and not is_judge_file(p))
            if found:
                suites.extend(load_suite(p, golden_dir=golden_dir, keep_broken=keep_broken) for p in found)
                continue
            goldens = sorted(p for p in path.rglob("*.json") if p.is_file() and p.name != "schema.json")
            if not goldens:
                raise GoldenError("no suite (.yaml) or golden (.json) files in this folder", file=path)
            suites.extend(_folder_suites(path, goldens, keep_broken=keep_broken))
        elif path.suffix in SUITE_SUFFIXES:
            suites.append(load_suite(path, golden_dir=golden_dir, keep_broken=keep_broken))
        elif path.suffix == ".json":
            # A path on the command line that is not there is a usage error; one that is there but broken, a case's.
            suites.append(_golden_as_suite(path, keep_broken=keep_broken and path.is_file()))
        elif not path.exists():
            raise GoldenError("no such file or folder", file=absolute(path))
        else:
            raise GoldenError("not a suite (.yaml), a golden (.json) or a folder of them", file=path)
    return suites


def unique_suites(suites: Iterable[Suite], *, hint: str | None = None) -> list[Suite]:
    """The suites of one run, each file once; refuses a case id that two suite files both hold.

    One run's results name each case once (reports, comparisons and merged shards match cases by id), so a
    case id in two suites is bad input. The same file named twice (a folder and a file in it) runs once.
    `hint` says how to fix it in the caller's terms.
    """
    kept: list[Suite] = []
    files: set[str] = set()
    seen: dict[str, str] = {}
    for suite in suites:
        if suite.path is not None and str(suite.path.resolve()) in files:
            continue
        if suite.path is not None:
            files.add(str(suite.path.resolve()))
        for case in suite.cases:
            if case.id in seen:
                raise GoldenError(
                    f"case {case.id!r} is in two suites ({seen[case.id]} and {suite.path}); "
                    f"case ids must be unique in one run{': ' + hint if hint else ''}",
                    file=suite.path,
                )
            seen[case.id] = str(suite.path)
        kept.append(suite)
    return kept
