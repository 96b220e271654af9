"""Golden fixtures: which cassettes, which checks, with which parameters. Loaded strictly.

A golden is a JSON file (conventionally under golden/):

    {
      "name": "dayflow-brief",
      "description": "...",
      "cassettes": ["cassettes/dayflow/brief.yaml"],
      "run": "all",
      "checks": [
        {"check": "tool_ids_matched"},
        {"check": "final_answer", "id": "sections", "params": {"sections": ["Today", "Needs a reply"]}}
      ]
    }

Its JSON Schema is generated from the check registry (`golden_schema()`), so a check's parameters
are validated by the check's own schema; golden/schema.json is a copy of it for editors, kept equal by
a test. A file that breaks the schema, names an unknown check, or repeats a check id is a
`GoldenError` naming the file and the JSON path. Relative cassette paths resolve against the project
root (see `project_root`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from harness.checks.registry import CHECKS, check_names
from harness.checks.user import use_project_checks
from harness.errors import GoldenError, absolute
from harness.files import symlink_escape
from harness.jsondata import json_path
from harness.project import project_root  # one rule for the root, shared by every command

__all__ = [
    "Golden",
    "GoldenCheck",
    "golden_schema",
    "inside_project",
    "load_golden",
    "parse_golden",
    "project_root",
    "relative_to_root",
    "validate_golden",
]

SCHEMA_ID = "https://loop-harness.local/schema/golden-v1.json"


def inside_project(entry: str, root: Path, *, file: Path | None, where: str) -> Path:
    """Resolve a cassette path written in a golden or suite, refusing a symlink that leads out of the project.

    A path written as outside the project (`../shared/real-cassettes/...`) is allowed: a reviewer sees it.
    A path written as inside it must still be inside once symlinks are resolved, so a pull request cannot
    point an innocent-looking `cassettes/x.yaml` at a file elsewhere on the machine.
    """
    root = root.resolve()
    written = Path(os.path.normpath(root / entry))
    escape = symlink_escape(written, root)
    if escape is not None:
        raise GoldenError(f"{entry!r} leads outside the project through a symlink (to {escape})",
                          file=file, where=where)
    return written.resolve()


def relative_to_root(path: Path, root: Path) -> str:
    """`path` as a golden or suite writes it: relative to the root (with ../ when outside it), POSIX slashes."""
    return Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()


def golden_schema() -> dict[str, Any]:
    """The JSON Schema of a golden file, with each check's parameters schema in place.

    Built from the registry as it stands (a check added or swapped at run time is in it): one schema per set
    of check specs, kept while that set holds."""
    return _schema_of(tuple((name, id(CHECKS[name])) for name in check_names()))


@cache
def _schema_of(_specs: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "loop-harness golden fixture",
        "description": "Which cassettes, which checks and their parameters. Generated from harness.checks; "
        "do not edit by hand (python -m harness.evals.golden --write-schema golden/schema.json).",
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "cassettes", "checks"],
        "properties": {
            "$schema": {"type": "string"},
            "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._/-]*$"},
            "description": {"type": "string"},
            "cassettes": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "minLength": 1},
                "description": "cassette files, relative to the project root (the folder with pyproject.toml)",
            },
            "run": {
                "oneOf": [{"enum": ["all", "last"]}, {"type": "integer", "minimum": 1},
                          {"type": "string", "minLength": 1, "not": {"enum": ["all", "last"]}}],
                "default": "all",
                "description": "which conversation(s) of a cassette the checks see: all, the last, run N, or "
                               "the run of a Message Batches request, named by its custom_id",
            },
            "checks": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/check"}},
        },
        "$defs": {
            "check": {
                "type": "object",
                "additionalProperties": False,
                "required": ["check"],
                "properties": {
                    "check": {"enum": check_names()},
                    "id": {
                        "type": "string",
                        "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]*$",
                        "description": "a label for this check, unique in the file; defaults to the check name",
                    },
                    "description": {"type": "string"},
                    "params": {"type": "object"},
                },
                "allOf": [
                    {
                        "if": {"properties": {"check": {"const": name}}, "required": ["check"]},
                        "then": {"properties": {"params": CHECKS[name].golden_params_schema()}},
                    }
                    for name in check_names()
                ],
            }
        },
    }


@dataclass(frozen=True)
class GoldenCheck:
    check: str
    id: str  # unique label within the golden; the check name unless given
    params: dict[str, Any] = field(default_factory=dict)
    description: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "id": self.id, "params": self.params, "description": self.description}


@dataclass(frozen=True)
class Golden:
    name: str
    path: Path | None
    cassettes: list[Path]  # resolved
    checks: list[GoldenCheck]
    run: str | int = "all"
    description: str | None = None
    data: dict[str, Any] = field(default_factory=dict)  # the file as read
    sha256: str | None = None


def _did_you_mean(name: str, valid: list[str]) -> str:
    near = difflib.get_close_matches(name, valid, n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


def _reason(error: jsonschema.ValidationError) -> str:
    """The schema's message; for a key the schema does not know (a misspelt parameter), the nearest known
    key and every valid one, read from the schema itself."""
    if error.validator != "additionalProperties" or not isinstance(error.instance, Mapping):
        return error.message
    known = list((error.schema.get("properties") or {}) if isinstance(error.schema, Mapping) else {})
    unknown = [key for key in error.instance if key not in known]
    if not known or not unknown:
        return error.message
    hints = "".join(_did_you_mean(str(key), known) for key in unknown[:1])
    return f"{error.message}{hints}; valid: {', '.join(known)}"


def validate_golden(data: Any, *, file: str | Path | None = None) -> None:
    """Raise GoldenError naming the file and the JSON path of the first problem."""
    if not isinstance(data, Mapping):
        raise GoldenError("a golden file must hold a JSON object", file=file, where="$")
    use_project_checks(file if isinstance(file, Path) else None)  # the project's own checks join the registry
    checks = data.get("checks")
    if isinstance(checks, list):
        for index, item in enumerate(checks):
            name = item.get("check") if isinstance(item, Mapping) else None
            if isinstance(name, str) and name not in CHECKS:
                raise GoldenError(
                    f"unknown check {name!r}{_did_you_mean(name, check_names())}; known checks: "
                    f"{', '.join(check_names())}",
                    file=file,
                    where=f"$.checks[{index}].check",
                )
    validator = jsonschema.Draft202012Validator(golden_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise GoldenError(_reason(error), file=file, where=json_path(error.absolute_path))
    seen: dict[str, int] = {}
    for index, item in enumerate(data["checks"]):
        label = item.get("id", item["check"])
        if label in seen:
            raise GoldenError(
                f"check id {label!r} is used twice (also at $.checks[{seen[label]}]); give each repeated check an `id`",
                file=file,
                where=f"$.checks[{index}]",
            )
        seen[label] = index
        hook = CHECKS[item["check"]].validate_params
        if hook is not None:
            for where, problem in hook(item.get("params") or {}):
                raise GoldenError(problem, file=file, where=f"$.checks[{index}].params.{where}")


def parse_golden(data: Mapping[str, Any], *, path: Path | None = None, root: Path | None = None) -> Golden:
    """A validated golden from its JSON data; cassette paths resolve against `root` (default: from `path`)."""
    validate_golden(data, file=path)
    if root is None:
        root = project_root(path) if path is not None else Path.cwd()
    checks = [
        GoldenCheck(
            check=item["check"],
            id=item.get("id", item["check"]),
            params=dict(item.get("params") or {}),
            description=item.get("description"),
        )
        for item in data["checks"]
    ]
    return Golden(
        name=data["name"],
        path=path,
        cassettes=[inside_project(entry, root, file=path, where=f"$.cassettes[{i}]")
                   for i, entry in enumerate(data["cassettes"])],
        checks=checks,
        run=data.get("run", "all"),
        description=data.get("description"),
        data=dict(data),
    )


def read_json(path: Path, error: type[GoldenError] = GoldenError) -> tuple[Any, str]:
    """A JSON file's data and sha256, or an error naming the file and the line of a syntax error."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise error("no such file", file=absolute(path)) from None
    except IsADirectoryError:
        raise error("a folder, not a JSON file", file=path) from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise error(f"not UTF-8 text (byte {err.start})", file=path) from None
    except json.JSONDecodeError as err:
        raise error(f"not valid JSON: {err.msg}", file=path, where=f"line {err.lineno}, column {err.colno}") from None
    except RecursionError:
        raise error("refused: JSON nested too deep to parse", file=path) from None
    return data, hashlib.sha256(raw).hexdigest()


def load_golden(path: str | Path) -> Golden:
    path = Path(path)
    data, digest = read_json(path)
    golden = parse_golden(data, path=path)
    return Golden(**{**golden.__dict__, "sha256": digest})


def _main(argv: list[str] | None = None) -> int:
    import argparse

    from harness.files import atomic_write_text

    parser = argparse.ArgumentParser(description="print or write the golden JSON Schema (generated from the checks)")
    parser.add_argument("--write-schema", metavar="FILE", help="write it to FILE (e.g. golden/schema.json)")
    args = parser.parse_args(argv)
    text = json.dumps(golden_schema(), indent=2) + "\n"
    if args.write_schema:
        atomic_write_text(args.write_schema, text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
