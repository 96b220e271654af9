"""`harness init [--agent MODULE[:FUNCTION]]`: set up an existing project for loop-harness, as the README's
"Test your own agent" types it by hand: the `[tool.loop-harness]` table, a scenario stub, a test with the
cassette marker, and a CI workflow that replays it (.github/workflows/loop-harness.yml).

Nothing is overwritten: a file that exists (or a symlink, even a dangling one) is named and left, and a
pyproject.toml that has a `[tool.loop-harness]` table keeps it; a table is appended to a pyproject.toml that
has none. A second run writes nothing and says so. Each write is atomic (harness.files). The command ends
with the next one to type.
"""

from __future__ import annotations

import argparse
import keyword
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.files import atomic_write_text, refuse_symlink_escape
from harness.project import CONFIG_TABLE, project_root

SCENARIO = "first"
SCENARIOS_FILE = "scenarios.py"
TEST_FILE = "test_loop_harness.py"
WORKFLOW = ".github/workflows/loop-harness.yml"
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent",
        metavar="MODULE[:FUNCTION]",
        help="your agent's module (and the function that runs it, given an anthropic client): the scenario stub "
        "imports it and calls the function",
    )


@dataclass(frozen=True)
class Agent:
    module: str
    function: str | None


def parse_agent(text: str | None) -> Agent | None:
    if text is None:
        return None
    module, _, function = text.partition(":")
    if not _DOTTED.match(module) or (function and (not function.isidentifier() or keyword.iskeyword(function))):
        raise HarnessError(f"--agent must be MODULE or MODULE:FUNCTION (my_agent, my_agent:ask), got {text!r}")
    return Agent(module, function or None)


def scenario_stub(agent: Agent | None) -> str:
    if agent is not None and agent.function is not None:
        body = (f"import {agent.module}\n\n\n"
                f"def {SCENARIO}(client):\n"
                f'    """One run of your agent: `harness record` runs it and records cassettes/{SCENARIO}.yaml."""\n'
                f"    return {agent.module}.{agent.function}(client)\n")
    else:
        call = "    # Call your agent here instead, with this client"
        call += f": `return {agent.module}.<function>(client, ...)`.\n" if agent is not None else ".\n"
        body = (f"import {agent.module}  # noqa: F401  (your agent)\n\n\n" if agent is not None else "") + (
            f"def {SCENARIO}(client):\n"
            f'    """One run of your agent: `harness record` runs it and records cassettes/{SCENARIO}.yaml."""\n'
            f"{call}"
            '    return client.messages.create(\n'
            '        model="claude-sonnet-4-5",\n'
            '        max_tokens=512,\n'
            '        messages=[{"role": "user", "content": "Say hello in one sentence."}],\n'
            "    )\n")
    return f"# {SCENARIOS_FILE}: the scenarios `harness record` runs ([tool.loop-harness.scenarios] names them)\n{body}"


TEST = f'''# {TEST_FILE}: replays cassettes/{SCENARIO}.yaml (no key, no network) and checks the whole run
import pytest

from harness import assert_trajectory
from scenarios import {SCENARIO}


@pytest.mark.cassette(path="cassettes/{SCENARIO}.yaml")
def test_{SCENARIO}(anthropic_client, cassette):
    {SCENARIO}(anthropic_client)
    assert_trajectory(cassette, {{"tool_ids_matched": {{}}, "outcome": {{"stop_reason": "end_turn"}}}})
'''

WORKFLOW_TEXT = """# .github/workflows/loop-harness.yml: replay the cassettes and run the evals (no key, no network)
name: loop-harness
on: [push, pull_request]
jobs:
  replay:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with: {python-version: "3.11"}
      - run: pip install . pytest loop-harness
      - run: pytest -q
      - run: harness eval --junit eval-junit.xml
"""

TABLE = f"""
[{CONFIG_TABLE}]
cassettes = "cassettes"
golden = "golden"

[{CONFIG_TABLE}.scenarios]
{SCENARIO} = "scenarios:{SCENARIO}"
"""


def _has_table(pyproject: Path) -> bool:
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise HarnessError(f"cannot add [{CONFIG_TABLE}] to it: {err}", file=pyproject) from None
    return "loop-harness" in data.get("tool", {})


def _taken(path: Path) -> bool:
    return path.exists() or path.is_symlink()  # a dangling symlink too: writing through it would go elsewhere


def run(args: argparse.Namespace) -> int:
    agent = parse_agent(args.agent)
    root = project_root()
    written: list[str] = []
    left: list[str] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_symlink():
        left.append(f"pyproject.toml (a symlink; add the [{CONFIG_TABLE}] table yourself)")
    elif not pyproject.exists():
        atomic_write_text(pyproject, TABLE.lstrip())
        written.append(f"pyproject.toml ([{CONFIG_TABLE}])")
    elif _has_table(pyproject):
        left.append(f"pyproject.toml (it has a [{CONFIG_TABLE}] table)")
    else:
        text = pyproject.read_text(encoding="utf-8")
        atomic_write_text(pyproject, text + ("" if text.endswith("\n") or not text else "\n") + TABLE)
        written.append(f"pyproject.toml ([{CONFIG_TABLE}] added)")
    for name, text in ((SCENARIOS_FILE, scenario_stub(agent)), (TEST_FILE, TEST), (WORKFLOW, WORKFLOW_TEXT)):
        path = root / name
        if _taken(path):
            left.append(f"{name} (it exists{', a symlink' if path.is_symlink() else ''})")
            continue
        refuse_symlink_escape(path)  # a folder on the way that leads outside the project
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        written.append(name)
    for line in written:
        print(f"wrote {line}")
    for line in left:
        print(f"left {line}")
    if not written:
        print("nothing to write: this project is set up already")
    print(f"next: record {SCENARIO} against the local simulator (no key), then replay it:\n"
          f"  pytest -q --record-mode=once --simulator=auto\n"
          f"  pytest -q\n"
          f"then bless a golden and eval: harness bless cassettes/{SCENARIO}.yaml --yes && harness eval")
    return 0
