"""Shards' results joined into the results document one run of the whole suite writes.

Each shard's results (`harness eval --shard K/N --json F`) carry K/N, the run's identity and its case ids
in order (see harness.evals.shard). Merging refuses, naming the files: results that are not a shard's,
shards of different runs, a case in two files (overlapping shards, or one shard given twice) and missing
shards (naming them and how many cases they hold). The merged document lists suites and cases in run
order, and its summary and suite counts are re-summed from the cases, so it equals the document of one
run except in the fields that are measurements of a run (PER_RUN_FIELDS):

- `created_at`: the latest of the shards' (when the last shard finished);
- `summary.duration_ms`: the sum of the shards' (the eval time spent, not the wall time of the matrix);
- each case's `timings` and each check's `duration_ms`: as its shard measured them.

Anything else that is not the same in every shard (the `--golden` folder, suite paths) is taken from the
shard listed first on the command line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.evals.document import ResultsDocument
from harness.evals.results import ResultsWriter
from harness.jsondata import drop_paths, parse_path

__all__ = ["PER_RUN_FIELDS", "merge_results", "without_per_run_fields"]

PER_RUN_FIELDS = ("created_at", "summary.duration_ms", "cases[*].timings", "cases[*].checks[*].duration_ms")


def without_per_run_fields(results: Mapping[str, Any]) -> dict[str, Any]:
    """`results` less PER_RUN_FIELDS: what two runs of the same cassettes and goldens have equal."""
    return drop_paths(dict(results), [parse_path(field) for field in PER_RUN_FIELDS])


def _shard(path: Path, results: Mapping[str, Any]) -> Mapping[str, Any]:
    block = results.get("shard")
    if not isinstance(block, Mapping):
        raise HarnessError("not a shard's results: write them with `harness eval --shard K/N --json F`", file=path)
    return block


def _label(block: Mapping[str, Any]) -> str:
    return f"{block['index']}/{block['total']}"


def merge_results(shards: Sequence[tuple[Path, Mapping[str, Any]]]) -> ResultsDocument:
    """The whole run's results document from every shard's (path, results), or a HarnessError naming files."""
    if not shards:
        raise HarnessError("no shard results to merge")
    first_path, first = shards[0]
    first_block = _shard(first_path, first)
    by_index: dict[int, Path] = {}
    owner: dict[str, Path] = {}
    for path, results in shards:
        block = _shard(path, results)
        if (block["suite_id"], block["total"]) != (first_block["suite_id"], first_block["total"]):
            raise HarnessError(
                f"shard {_label(block)} of run {block['suite_id']} is not of the run of {first_path} "
                f"(shard {_label(first_block)} of {first_block['suite_id']}): merge the shards of one run "
                "(same cassettes, goldens and N)",
                file=path,
            )
        for case in results["cases"]:
            if case["id"] in owner:
                raise HarnessError(
                    f"case {case['id']!r} is in two shards' results: {owner[case['id']]} and {path}", file=path
                )
            owner[case["id"]] = path
        if block["index"] in by_index:  # a shard with no case (more shards than cases), given twice
            raise HarnessError(
                f"shard {_label(block)} is given twice: {by_index[block['index']]} and {path}", file=path
            )
        by_index[block["index"]] = path
    plan: list[str] = list(first_block["plan"])
    total = int(first_block["total"])
    missing = [index for index in range(1, total + 1) if index not in by_index]
    if missing:
        absent = sum(1 for case_id in plan if case_id not in owner)
        raise HarnessError(
            f"missing shard{'s' if len(missing) > 1 else ''} {', '.join(f'{i}/{total}' for i in missing)}: "
            f"{absent} of the run's {len(plan)} cases are in none of the {len(shards)} files given"
        )
    position = {case_id: at for at, case_id in enumerate(plan)}
    strays = [case_id for case_id in owner if case_id not in position]
    unrun = [case_id for case_id in plan if case_id not in owner]
    if strays or unrun:
        case_id = (strays or unrun)[0]
        where = f"in {owner[case_id]} but not in the run's plan" if strays else "in the plan but in no shard"
        raise HarnessError(f"case {case_id!r} is {where}: the shards' results were changed after they were written")
    records = sorted(
        (case for _, results in shards for case in results["cases"]), key=lambda case: position[case["id"]]
    )
    suites = [{key: suite[key] for key in ("name", "path", "description", "root")} for suite in first["suites"]]
    durations = [results["summary"]["duration_ms"] for _, results in shards]
    with ResultsWriter(suites, golden_dir=first["golden_dir"], keep=True) as writer:
        for record in records:
            writer.add(record)
        return writer.document(
            created_at=max(results["created_at"] for _, results in shards),
            duration_ms=None if None in durations else round(sum(durations), 3),
        )
