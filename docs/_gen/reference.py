"""The reference pages, generated at build time from the code, so that nothing is written twice.

- reference/cli.md: every `harness` command's usage and options, from the argument parsers themselves;
- reference/checks.md: every check the registry knows (the library's and the installed plugins'), its
  description and its parameters, from the checks' own parameter schemas;
- reference/golden-schema.md: the JSON Schema a golden file is validated against, as the code builds it;
- reference/api.md: the public Python API, from the docstrings of the names `harness` exports.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import mkdocs_gen_files

import harness
from harness.checks.registry import CHECKS, check_names
from harness.cli import COMMANDS, build_parser
from harness.evals.golden import golden_schema


def _cli() -> str:
    parser = build_parser()
    sub = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    out = [
        "# Command line",
        "",
        "Generated from the argument parsers (`harness NAME --help` prints the same).",
        "Exit codes: 0 ok, 1 checks failed, 2 bad input or usage.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]
    for name in COMMANDS:
        command = sub.choices[name]
        command.prog = f"harness {name}"
        out += [
            f"## harness {name}",
            "",
            COMMANDS[name][:1].upper() + COMMANDS[name][1:] + ".",
            "",
            "```text",
            command.format_help().rstrip(),
            "```",
            "",
        ]
    return "\n".join(out)


def _param_rows(schema: dict[str, Any]) -> list[str]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    if not properties:
        return ["No parameters."]
    rows = ["| parameter | type | required | description |", "| --- | --- | --- | --- |"]
    for name, spec in properties.items():
        kind = spec.get("type") or ("one of " + ", ".join(f"`{v}`" for v in spec["enum"]) if "enum" in spec else "")
        if isinstance(kind, list):
            kind = " or ".join(kind)
        if "enum" in spec and spec.get("type"):
            kind = f"{kind}: " + ", ".join(f"`{v}`" for v in spec["enum"])
        text = str(spec.get("description", "")).replace("\n", " ").replace("|", "\\|")
        rows.append(f"| `{name}` | {kind} | {'yes' if name in required else 'no'} | {text} |")
    return rows


def _checks() -> str:
    out = [
        "# Checks",
        "",
        "Every check a golden file may name under `check:` (the library's and those installed "
        "packages add through the `loop_harness.checks` entry point group), generated from each check's own "
        "parameter schema: a golden is validated against exactly these.",
        "",
    ]
    for name in check_names():
        spec = CHECKS[name]
        out += [
            f"## `{name}` {{ #{name} }}",
            "",
            spec.description,
            "",
            *_param_rows(spec.params_schema),
            "",
            "<details><summary>Parameter schema</summary>",
            "",
            "```json",
            json.dumps(spec.params_schema, indent=2),
            "```",
            "",
            "</details>",
            "",
        ]
    return "\n".join(out)


def _golden_schema() -> str:
    return "\n".join(
        [
            "# Golden schema",
            "",
            "The JSON Schema every golden file (and every dict given to "
            "`assert_trajectory`) is validated against, as the code builds it from the checks.",
            "",
            "```json",
            json.dumps(golden_schema(), indent=2),
            "```",
            "",
        ]
    )


def _api() -> str:
    out = [
        "# Python API",
        "",
        "Everything `harness` exports (`from harness import ...`); nothing deeper is public.",
        "",
    ]
    for name, module in sorted(harness._EXPORTS.items()):
        out += [f"::: {module}.{name}", "    options:", "      heading_level: 2", ""]
    return "\n".join(out)


for path, render in (
    ("reference/cli.md", _cli),
    ("reference/checks.md", _checks),
    ("reference/golden-schema.md", _golden_schema),
    ("reference/api.md", _api),
):
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(render())
