"""The drift report and the fork, end to end: a suite of recorded agent tests, one tool's description
changed, the report that names exactly the cassettes it invalidates, a fork of one of them against the
local simulator, and `harness compare` of the folders before and after the fork.

The inner suite (run by pytester, with the plugin as a user has it) holds four tests: two Dayflow briefs
(plain and streamed) that first make a triage call without tools and then run the reference loop with
the calendar tool among their tools, the SQL assistant (other tools), and one call with no tool at all.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from harness.cassette.format import load_cassette
from harness.cli import main as harness_main
from harness.pricing import estimate_cost
from harness.run import Usage
from harness.sim import Simulator
from harness.trajectory import load_trajectory

pytest_plugins = ["pytester"]

SUITE = '''
import dataclasses
import os

import pytest

from harness_demo.data_assistant import run_question
from harness_demo.dayflow import run_brief
from harness_demo.dayflow.tools import READ_CALENDAR, READ_INBOX, READ_TASKS
from harness.tools import ToolRegistry

MODEL = "claude-sonnet-5"


def dayflow_tools():
    calendar = READ_CALENDAR
    if os.environ.get("CALENDAR_HELP"):  # the edit under test: one tool's description
        calendar = dataclasses.replace(READ_CALENDAR, description=os.environ["CALENDAR_HELP"])
    return ToolRegistry([READ_INBOX, calendar, READ_TASKS])


def triage(client):
    """A first call without tools, as many agents make before their tool loop."""
    return client.messages.create(model=MODEL, max_tokens=64,
                                  messages=[{"role": "user", "content": "Brief me on my morning."}])


@pytest.mark.cassette
def test_brief(anthropic_client):
    triage(anthropic_client)
    assert run_brief(anthropic_client, model=MODEL, tools=dayflow_tools()).outcome.value == "ended"


@pytest.mark.cassette
def test_brief_streamed(anthropic_client):
    triage(anthropic_client)
    assert run_brief(anthropic_client, model=MODEL, tools=dayflow_tools(), stream=True).outcome.value == "ended"


@pytest.mark.cassette
def test_sql(anthropic_client):
    assert run_question(anthropic_client, model=MODEL).outcome.value == "ended"


@pytest.mark.cassette
def test_hello(anthropic_client):
    message = anthropic_client.messages.create(model=MODEL, max_tokens=32,
                                               messages=[{"role": "user", "content": "hello"}])
    assert message.stop_reason == "end_turn"
'''

NEW_HELP = "Read the user's calendar (work, personal and shared family calendars), today first."
FOLDER = Path("cassettes") / "test_agents"
BRIEFS = {str(FOLDER / "test_brief.yaml"), str(FOLDER / "test_brief_streamed.yaml")}


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The inner suite, recorded against the simulator (source: simulator in every cassette)."""
    monkeypatch.delenv("CALENDAR_HELP", raising=False)
    pytester.makepyfile(test_agents=SUITE)
    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        pytester.runpytest("--record-mode=once").assert_outcomes(passed=4)
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    return pytester


def test_no_drift_says_so_and_exits_0(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--drift-report=-")
    result.assert_outcomes(passed=4)
    assert result.ret == 0
    assert "No drift: all 4 cassette(s) replay as recorded." in result.stdout.str()
    suite.runpytest("--drift-report=drift.json").assert_outcomes(passed=4)
    document = json.loads((suite.path / "drift.json").read_text())
    assert document["summary"] == {"cassettes": 4, "drifted": 0, "ends_early": 0, "replays": 4, "by_kind": {}}


def test_a_changed_tool_description_names_exactly_the_cassettes_that_send_it(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALENDAR_HELP", NEW_HELP)
    result = suite.runpytest("--drift-report=drift.json")
    assert result.ret == 1
    document = json.loads((suite.path / "drift.json").read_text())
    drifted = {e["path"] for e in document["cassettes"] if e["status"] == "drifted"}
    still = {e["path"] for e in document["cassettes"] if e["status"] == "replays"}
    assert drifted == BRIEFS
    assert still == {str(FOLDER / "test_sql.yaml"), str(FOLDER / "test_hello.yaml")}
    assert document["summary"]["by_kind"] == {"tool_definitions": 2}
    assert [g["label"] for g in document["groups"]] == ["tool definitions"]
    for entry in document["cassettes"]:
        if entry["status"] != "drifted":
            continue
        divergence = entry["divergence"]
        assert divergence["kind"] == "tool_definitions" and divergence["label"] == "tool definitions"
        assert divergence["changes"] == [{"kind": "tool_definitions", "subject": "read_calendar",
                                          "what": "description changed"}]
        assert divergence["request"] == 2, "the triage call (no tools) still replays; the loop's first call parts"
        assert any(line.startswith("tools.read_calendar.description changed") for line in divergence["diff"])
        assert entry["played"] == 1 and entry["tests"] == [f"test_agents.py::{Path(entry['path']).stem}"]

    parallel = suite.runpytest("-n", "2", "--drift-report=parallel.json")
    assert parallel.ret == 1
    entries = json.loads((suite.path / "parallel.json").read_text())["cassettes"]
    assert {e["path"] for e in entries if e["status"] == "drifted"} == BRIEFS, "xdist workers hand their entries on"

    suite.runpytest("--drift-report=drift.md")
    markdown = (suite.path / "drift.md").read_text()
    assert "2 of 4 cassette(s) drifted (tool definitions: 2); 2 still replay." in markdown
    assert "## tool definitions: 2 cassette(s)" in markdown
    assert "- `read_calendar` description changed: 2 cassette(s)" in markdown
    assert "## Still replay: 2 cassette(s)" in markdown

    terminal = suite.runpytest("--drift-report=-").stdout.str()
    assert "loop-harness drift report" in terminal and "## tool definitions: 2 cassette(s)" in terminal
    assert "Kind of change: tool definitions (read_calendar: description changed)" in terminal, \
        "the pytest failure names the kind too"


def test_drift_report_refuses_record_modes_that_do_not_replay(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--drift-report=-", "--record-mode=all")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--drift-report replays the suite" in result.stderr.str()


def test_fork_re_records_from_the_divergence_and_compare_shows_only_that_case(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = suite.path
    shutil.copytree(root / "cassettes", root / "before")
    brief = root / FOLDER / "test_brief.yaml"
    old = load_cassette(brief)
    monkeypatch.setenv("CALENDAR_HELP", NEW_HELP)
    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        result = suite.runpytest("--record-mode=fork", "-k", "test_brief and not streamed", "--drift-report=fork.json")
        served = [s for s in sim.served if s.index is not None]
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    result.assert_outcomes(passed=1, deselected=3)
    assert len(served) == len(old.interactions) - 1, "the triage call replayed; only the rest reached the simulator"

    new = load_cassette(brief)
    assert new.interactions[0] == old.interactions[0], "the prefix is kept as recorded"
    assert len(new.interactions) == len(old.interactions)
    tools = new.interactions[1]["request"]["body"]["tools"]
    assert next(t for t in tools if t["name"] == "read_calendar")["description"] == NEW_HELP
    fork = new.meta["fork"]
    assert fork["first_divergent_request"] == 2 and fork["re_recorded_from"] == 2
    assert fork["change"]["kind"] == "tool_definitions"
    assert fork["change"]["changes"] == [{"kind": "tool_definitions", "subject": "read_calendar",
                                          "what": "description changed"}]
    assert new.meta["source"] == "simulator"

    # What the fork saved: the replayed triage call's tokens and list price, and what it paid for.
    entry = json.loads((root / "fork.json").read_text())["cassettes"][0]
    usage = old.interactions[0]["response"]["body"]["usage"]
    assert entry["fork"]["replayed"]["interactions"] == 1
    assert entry["fork"]["replayed"]["usage"]["total"] == usage["input_tokens"] + usage["output_tokens"] > 0
    replayed_cost = estimate_cost("claude-sonnet-5", Usage.from_api(usage))
    assert entry["fork"]["replayed"]["cost_usd"] == pytest.approx(replayed_cost, abs=1e-6)
    assert entry["fork"]["recorded"]["interactions"] == len(old.interactions) - 1
    assert entry["fork"]["recorded"]["cost_usd"] > 0 and entry["fork"]["written"]
    assert "forked at request #2 (tool definitions (read_calendar: description changed)); replayed 1 interaction" \
        in result.stdout.str()

    # The forked cassette replays with the new description; its streamed twin still drifts.
    document = json.loads((suite.runpytest("--drift-report=after.json"), root / "after.json")[1].read_text())
    drifted = {e["path"] for e in document["cassettes"] if e["status"] == "drifted"}
    assert drifted == {str(FOLDER / "test_brief_streamed.yaml")}

    # harness compare of the folders before and after: exactly the re-recorded case changed.
    golden = {"name": "agents", "cassettes": sorted(str(FOLDER / f"test_{n}.yaml")
                                                    for n in ("brief", "brief_streamed", "sql", "hello")),
              "checks": [{"check": "tool_ids_matched"}]}
    (root / "golden").mkdir()
    (root / "golden" / "agents.json").write_text(json.dumps(golden))
    (root / "evals").mkdir()
    suite_file = {"name": "agents", "cases": [{"golden": "agents.json"}]}
    (root / "evals" / "agents.yaml").write_text(yaml.safe_dump(suite_file))
    (root / "pyproject.toml").write_text("[project]\nname = 'inner'\n")
    monkeypatch.chdir(root)
    capsys.readouterr()
    code = harness_main(["compare", "before/", "cassettes/", "--json", "compare.json"])
    assert code == 0, capsys.readouterr()
    comparison = json.loads((root / "compare.json").read_text())
    changed = {case["id"]: case for case in comparison["cases"] if case["status"] != "unchanged"}
    assert list(changed) == ["agents/test_brief.yaml"], [(c["id"], c["status"]) for c in comparison["cases"]]
    divergence = changed["agents/test_brief.yaml"]["divergence"]
    assert divergence["step"] == load_trajectory(brief).steps[1].index
    assert [line.split(" ")[0] for line in divergence["request"]] == ["tool_definitions"], divergence


def test_a_swallowed_miss_still_fails_the_drift_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(fake_messages_api=(Path(__file__).parent / "fake_messages_api.py").read_text())
    body = '''
import os
import pytest
from fake_messages_api import FakeMessagesAPI

@pytest.mark.cassette(path="cassettes/quiet.yaml", allow_unused=True)
def test_quiet():
    client = FakeMessagesAPI().client()
    try:  # code under test that turns every API error into a value, as agent loops do
        client.messages.create(model="claude-sonnet-5", max_tokens=8,
                               messages=[{"role": "user", "content": os.environ.get("ASK", "hello")}])
    except Exception:
        pass
'''
    pytester.makepyfile(test_quiet=body)
    pytester.runpytest("--record-mode=once").assert_outcomes(passed=1)
    pytester.runpytest("--drift-report=-").assert_outcomes(passed=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASK", "hello, changed")
        result = pytester.runpytest("--drift-report=-")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "## message history: 1 cassette(s)" in result.stdout.str()
