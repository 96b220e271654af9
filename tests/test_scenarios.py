"""One scenario protocol, and scenario sets that bring their own command-line arguments.

Every runner (`harness record`, `harness chaos`, bench/trials.py) calls `scenario.run(client_for)` whatever the
scenario is: the project's `module:function` or a package's bundled one. A third-party set is found through the
`loop_harness.scenarios` entry points; its flags are its own, added to `harness record` from the set, refused
naming the set's flag when the set is not chosen, and handed to the set's `record` when it is.
"""

from __future__ import annotations

import argparse
import ast
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from harness import scenarios
from harness.cli import main as harness_main
from harness.errors import HarnessError
from harness.project import ClientFor, ProjectScenario
from harness.scenarios import ScenarioSet, SetArgument
from harness_demo.record import DEMO
from harness_demo.scenarios import scenario
from tests.conftest import REPO

RUNNERS = (
    "harness/chaos.py",
    "harness/recording.py",
    "harness/commands/record.py",
    "harness/commands/chaos.py",
    "bench/trials.py",
)


def test_the_runners_name_no_concrete_scenario_type_and_branch_on_none() -> None:
    for runner in RUNNERS:
        tree = ast.parse((REPO / runner).read_text(encoding="utf-8"))
        names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
        assert not names & {"ProjectScenario", "BundledScenario"}, runner
        branches = [
            ast.unparse(node)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and "Scenario" in ast.unparse(node)
        ]
        assert branches == [], runner


def test_both_kinds_of_scenario_run_with_a_client_factory(tmp_path: Path) -> None:
    built: list[bool] = []

    class Client:
        closed = False

        def close(self) -> None:
            self.closed = True

    clients: list[Client] = []

    def client_for(asynchronous: bool) -> Any:
        built.append(asynchronous)
        clients.append(Client())
        return clients[-1]

    (tmp_path / "agent_module.py").write_text("def agent(client):\n    return type(client).__name__\n")
    mine = ProjectScenario("mine", tmp_path / "mine.yaml", "agent_module:agent", tmp_path)
    assert mine.run(client_for) == "Client"

    seen: list[Any] = []
    demo = replace(scenario("dayflow-brief"), agent=lambda client, **options: seen.append((client, options)) or "ran")
    assert demo.run(client_for) == "ran"
    assert built == [False, False] and [client for client, _ in seen] == [clients[1]]
    assert all(client.closed for client in clients), "the runner's clients are closed after the run"


@dataclass(frozen=True)
class _Bundled:
    name: str
    cassette: str
    max_retries: int = 0

    def run(self, client_for: ClientFor) -> Any:
        return None


def _acme(recorded: list[argparse.Namespace]) -> ScenarioSet:
    def record(args: argparse.Namespace) -> int:
        recorded.append(args)
        return 0

    return ScenarioSet(
        "acme",
        (_Bundled("shop", "acme/shop.yaml"),),
        None,
        record,
        title="Acme's scenarios",
        arguments=(SetArgument.of("--acme-level", type=int, default=1, help="how hard"),),
    )


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch) -> list[argparse.Namespace]:
    recorded: list[argparse.Namespace] = []
    sets = (("demo", DEMO), ("acme", _acme(recorded)))
    monkeypatch.setattr(scenarios, "installed", lambda group: sets)
    return recorded


def test_a_third_party_set_brings_its_own_flags(
    acme: list[argparse.Namespace], capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        harness_main(["record", "--help"])
    usage = capsys.readouterr().out
    assert "--acme" in usage and "--acme-level" in usage and "--seed" in usage

    assert harness_main(["record", "--acme-level", "3"]) == 2
    assert "--acme-level work on Acme's scenarios only: add --acme" in capsys.readouterr().err
    assert harness_main(["record", "--seed", "3"]) == 2
    assert "--seed work on the bundled demo only: add --demo" in capsys.readouterr().err
    assert acme == []

    assert harness_main(["record", "--acme", "shop", "--acme-level", "3"]) == 0
    assert [(args.names, args.acme_level, args.scenario_set) for args in acme] == [(["shop"], 3, "acme")]
    with pytest.raises(SystemExit, match="2"):  # one set at a time: argparse's usage error
        harness_main(["record", "--acme", "--demo"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_set_whose_flag_clashes_with_the_command_is_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clash = ScenarioSet("clash", (), None, lambda args: 0, arguments=(SetArgument.of("--trials"),))
    monkeypatch.setattr(scenarios, "installed", lambda group: (("clash", clash),))
    assert harness_main(["record", "--list"]) == 2
    err = capsys.readouterr().err
    assert "the scenario set 'clash' (loop_harness.scenarios) declares an argument --trials" in err


def test_the_library_command_names_no_flag_of_the_demo() -> None:
    tree = ast.parse((REPO / "harness/commands/record.py").read_text(encoding="utf-8"))
    code = ast.unparse(tree.body[1:])  # the code, its docstring (which points to the demo's) aside
    for flag in ("--system-prompt-file", "--print-system-prompt", "--seed", "--demo", "system_prompt", "demo"):
        assert flag not in code, flag


def test_an_entry_point_that_cannot_be_loaded_is_left_out_and_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from importlib.metadata import EntryPoint

    from harness import plugins

    entries = [EntryPoint("broken", "no_such_package_xyz:SET", "loop_harness.test_group"),
               EntryPoint("fine", "harness_demo.record:DEMO", "loop_harness.test_group")]
    monkeypatch.setattr(plugins, "entry_points", lambda group: entries if group == "loop_harness.test_group" else [])
    plugins.installed.cache_clear()
    try:
        assert [name for name, _ in plugins.installed("loop_harness.test_group")] == ["fine"]
        assert "ModuleNotFoundError" in plugins.broken("loop_harness.test_group")["broken"]
        err = capsys.readouterr().err
        assert "the loop_harness.test_group entry 'broken' is left out: no_such_package_xyz:SET cannot be loaded" in err
    finally:
        plugins.installed.cache_clear()


def test_a_broken_or_wrong_set_does_not_stop_the_projects_own_record(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(scenarios, "installed", lambda group: (("demo", DEMO), ("odd", object())))
    gone = {"gone": "gone_pkg:SET cannot be loaded: ModuleNotFoundError"}
    monkeypatch.setattr(scenarios, "broken", lambda group: gone)
    monkeypatch.setattr(scenarios, "_WARNED", set())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.loop-harness.scenarios]\nweather = "my_agent:weather"\n')
    assert harness_main(["record", "--list"]) == 0
    captured = capsys.readouterr()
    assert "weather" in captured.out
    assert captured.err.count("the loop_harness.scenarios entry 'odd' is a object, not a ScenarioSet; left out") == 1
    with pytest.raises(HarnessError, match=r"'gone' .*cannot be loaded"):
        scenarios.scenario_set("gone")
    with pytest.raises(HarnessError, match="not a ScenarioSet"):
        scenarios.scenario_set("odd")


def _set_with(name: str, *arguments: SetArgument, seen: list[argparse.Namespace]) -> ScenarioSet:
    def record(args: argparse.Namespace) -> int:
        seen.append(args)
        return 0

    return ScenarioSet(name, (_Bundled("x", f"{name}/x.yaml"),), None, record, arguments=arguments)


def test_two_sets_share_an_argument_they_declare_alike_and_a_clash_names_both(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[argparse.Namespace] = []
    one = _set_with("one", SetArgument.of("--seed", type=int, default=0), seen=seen)
    two = _set_with("two", SetArgument.of("--seed", type=int, default=0), seen=seen)
    monkeypatch.setattr(scenarios, "installed", lambda group: (("one", one), ("two", two)))
    assert harness_main(["record", "--two", "--seed", "4"]) == 0
    assert [(args.scenario_set, args.seed) for args in seen] == [("two", 4)]

    other = _set_with("other", SetArgument.of("--seed", help="something else"), seen=seen)
    monkeypatch.setattr(scenarios, "installed", lambda group: (("one", one), ("other", other)))
    assert harness_main(["record", "--list"]) == 2
    assert "the scenario sets 'one' and 'other' (loop_harness.scenarios) both declare --seed, differently" in (
        capsys.readouterr().err
    )


def test_a_chosen_set_refuses_another_sets_arguments(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[argparse.Namespace] = []
    first = _set_with("first", SetArgument.of("--first-level", type=int, default=1), seen=seen)
    second = _set_with("second", seen=seen)
    monkeypatch.setattr(scenarios, "installed", lambda group: (("first", first), ("second", second)))
    assert harness_main(["record", "--second", "--first-level", "3"]) == 2
    assert "--first-level work on the first scenario set only: add --first" in capsys.readouterr().err
    assert seen == []
