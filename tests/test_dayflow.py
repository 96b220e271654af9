"""Dayflow: fixtures, tools, prompts, and the `dayflow brief` command end to end through the simulator.

The end-to-end tests use the command's own fallback: with no ANTHROPIC_API_KEY and no ANTHROPIC_BASE_URL
it starts `harness.sim.Simulator` in-process on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from pathlib import Path

import pytest

from harness.loop import Event, Outcome, RunResult
from harness.run import Usage
from harness.sim import Simulator
from harness_demo import _console
from harness_demo.dayflow import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_NO_FILTER,
    TODAY,
    build_registry,
    run_brief,
    user_prompt,
)
from harness_demo.dayflow.cli import main
from harness_demo.dayflow.tools import load_fixture

FIXTURES = Path(__file__).resolve().parent.parent / "harness_demo" / "dayflow" / "fixtures"
SKIP_PROMOTIONS = re.compile(r"\bskip\b[^.]*\bpromotion", re.IGNORECASE)
STEP_LINE = re.compile(r"^\[step (\d+)\] stop=(\w+) in=(\d+) out=(\d+)$")
TOOL_LINE = re.compile(r"^    -> (\w+)\((.*)\) (\d+) chars$")
SUMMARY_LINE = re.compile(r"^\[(\d+) steps · (\d+) tool calls · (\d+) in / (\d+) out · ~\$(\d+\.\d{4}) (\S+)\]$")


def raw(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def call(name: str, **tool_input: object) -> dict:
    output = build_registry().run(name, tool_input)
    assert not output.is_error, output.content
    return json.loads(output.content)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


# ---- fixtures -------------------------------------------------------------------------------------------


def test_the_inbox_has_the_five_kinds_of_email() -> None:
    emails = raw("inbox")["emails"]
    assert len(emails) == 5
    assert len({email["id"] for email in emails}) == 5
    keys = {"id", "from", "subject", "received", "body", "labels", "needs_reply", "deadline"}
    assert all(set(email) == keys for email in emails)
    needs_reply = {email["from"].split()[0]: email["deadline"] for email in emails if email["needs_reply"]}
    assert needs_reply == {"Priya": "2026-09-10", "Sam": "2026-09-09"}
    by_label = {label: email for email in emails for label in email["labels"]}
    assert "40%" in by_label["promotions"]["subject"]
    assert "dentist" in by_label["reminder"]["from"].lower() or "dental" in by_label["reminder"]["from"].lower()
    assert by_label["school"]["deadline"] == "2026-09-11"


def test_the_calendar_is_the_week_from_monday_and_the_tasks_have_one_done() -> None:
    calendar = raw("calendar")
    assert calendar["from"] == TODAY.isoformat() == "2026-09-07"
    assert TODAY.weekday() == 0  # Monday
    days = {datetime.fromisoformat(event["start"]).date() for event in calendar["events"]}
    assert min(days) == TODAY
    assert max(days) <= date(2026, 9, 13)
    assert {event["calendar"] for event in calendar["events"]} == {"work", "personal"}
    tasks = raw("tasks")["tasks"]
    assert len(tasks) == 4
    assert [task["done"] for task in tasks].count(True) == 1
    ids = [item["id"] for item in [*calendar["events"], *tasks, *raw("inbox")["emails"]]]
    assert len(ids) == len(set(ids))


# ---- tools ---------------------------------------------------------------------------------------------------


def test_read_inbox_returns_the_interface_shape_newest_first() -> None:
    result = call("read_inbox", limit=20)
    assert list(result) == ["emails", "total", "offset", "next_offset"]
    assert result["total"] == 5
    assert result["offset"] == 0
    assert result["next_offset"] is None
    received = [email["received"] for email in result["emails"]]
    assert received == sorted(received, reverse=True)
    assert {email["id"] for email in result["emails"]} == {email["id"] for email in raw("inbox")["emails"]}


def test_read_inbox_limit_and_offset_page_through_the_inbox() -> None:
    first = call("read_inbox", limit=2)
    assert len(first["emails"]) == 2
    assert first["next_offset"] == 2
    seen = [email["id"] for email in first["emails"]]
    page = first
    while page["next_offset"] is not None:
        page = call("read_inbox", limit=2, offset=page["next_offset"])
        seen += [email["id"] for email in page["emails"]]
    assert seen == [email["id"] for email in call("read_inbox")["emails"]]


@pytest.mark.parametrize(
    ("name", "tool_input", "message"),
    [
        ("read_inbox", {"limit": 0}, "input.limit: 0 is less than the minimum of 1"),
        ("read_inbox", {"limit": 51}, "input.limit: 51 is greater than the maximum of 50"),
        ("read_inbox", {"limit": "ten"}, "input.limit: 'ten' is not of type 'integer'"),
        ("read_calendar", {"days": 32}, "input.days: 32 is greater than the maximum of 31"),
        ("read_tasks", {"include_done": "yes"}, "input.include_done: 'yes' is not of type 'boolean'"),
        ("read_tasks", {"done": True}, "'done' was unexpected"),
    ],
)
def test_bad_inputs_are_refused_before_the_tool_runs(name: str, tool_input: dict, message: str) -> None:
    output = build_registry().run(name, tool_input)
    assert output.is_error
    assert message in output.content


def test_read_calendar_covers_the_days_asked_for() -> None:
    today = call("read_calendar", days=1)
    assert today["from"] == "2026-09-07"
    assert today["days"] == 1
    assert today["events"]
    assert all(event["start"].startswith("2026-09-07") for event in today["events"])
    week = call("read_calendar")
    assert len(week["events"]) == len(raw("calendar")["events"])
    assert [event["start"] for event in week["events"]] == sorted(event["start"] for event in week["events"])


def test_read_tasks_hides_done_tasks_unless_asked() -> None:
    open_tasks = call("read_tasks")["tasks"]
    every_task = call("read_tasks", include_done=True)["tasks"]
    assert len(every_task) == 4
    assert [task for task in every_task if not task["done"]] == open_tasks


def test_tool_definitions_match_the_interface() -> None:
    schemas = {d["name"]: d["input_schema"]["properties"] for d in build_registry().definitions()}
    assert list(schemas) == ["read_inbox", "read_calendar", "read_tasks"]
    assert (schemas["read_inbox"]["limit"]["minimum"], schemas["read_inbox"]["limit"]["maximum"]) == (1, 50)
    assert (schemas["read_calendar"]["days"]["minimum"], schemas["read_calendar"]["days"]["maximum"]) == (1, 31)
    assert schemas["read_tasks"]["include_done"]["type"] == "boolean"


def test_load_fixture_reads_the_packaged_files() -> None:
    assert load_fixture("tasks") == raw("tasks")


# ---- prompts -----------------------------------------------------------------------------------------------


def test_the_prompts_ask_for_the_three_sections_and_differ_only_on_promotions() -> None:
    for prompt in (SYSTEM_PROMPT, SYSTEM_PROMPT_NO_FILTER):
        for header in ("## Today", "## Needs a reply", "## Deadlines this week"):
            assert header in prompt
    assert SKIP_PROMOTIONS.search(SYSTEM_PROMPT)
    assert not SKIP_PROMOTIONS.search(SYSTEM_PROMPT_NO_FILTER)
    assert "promotion" not in SYSTEM_PROMPT_NO_FILTER
    assert SYSTEM_PROMPT.split("\n\n")[:-1] == SYSTEM_PROMPT_NO_FILTER.split("\n\n")[:-1]
    assert "2026-09-07" in user_prompt()
    assert "Monday" in user_prompt()
    assert "2026-09-08" in user_prompt(date(2026, 9, 8))


# ---- the -v trace (unit) -------------------------------------------------------------------------------


def test_trace_lines_for_model_and_tool_calls() -> None:
    ok = Event("model_call", 1, 5.0, {"stop_reason": "tool_use", "usage": {"input_tokens": 889, "output_tokens": 169}})
    assert _console.model_call_line(ok) == "[step 1] stop=tool_use in=889 out=169"
    failed = Event("model_call", 2, 5.0, {"error": "APIConnectionError: Connection error."})
    assert _console.model_call_line(failed) == "[step 2] error: APIConnectionError: Connection error."
    tool = Event("tool_call", 1, 1.0, {"name": "read_inbox", "chars": 1247, "is_error": False})
    assert _console.tool_call_line(tool, {"limit": 20}) == "    -> read_inbox({'limit': 20}) 1247 chars"
    error = Event("tool_call", 1, 1.0, {"name": "query_db", "chars": 117, "is_error": True})
    assert _console.tool_call_line(error, {"sql": "x"}).endswith("117 chars (error)")
    repeated = Event("tool_call", 3, 0.0, {"name": "read_inbox", "chars": 90, "is_error": True, "synthetic": True})
    assert "(not run: repeated call)" in _console.tool_call_line(repeated, {"limit": 20})


def test_summary_line_prices_known_models_and_says_so_for_others() -> None:
    def result(model: str) -> RunResult:
        return RunResult(
            final_text="",
            outcome=Outcome.ENDED,
            reason="",
            incomplete=False,
            stop_sequence=None,
            steps=2,
            model=model,
            usage=Usage(input=3074, output=1360),
        )

    priced = SUMMARY_LINE.match(_console.summary_line(result("claude-sonnet-5")))
    assert priced is not None
    assert priced.groups()[:4] == ("2", "0", "3074", "1360")
    assert float(priced.group(5)) > 0
    assert _console.summary_line(result("my-local-model")).endswith("· cost unknown my-local-model]")


def test_client_for_uses_the_flag_or_environment_before_any_simulator(
    no_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with _console.client_for("http://127.0.0.1:9") as client:
        assert str(client.base_url).startswith("http://127.0.0.1:9")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8")
    with _console.client_for(None) as client:
        assert str(client.base_url).startswith("http://127.0.0.1:8")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    with _console.client_for(None, offline=True) as client:
        assert client.api_key == _console.DUMMY_API_KEY
    assert "simulator" not in capsys.readouterr().err


# ---- the command ---------------------------------------------------------------------------------------


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["brief", "--mode", "replay"])
    assert exit_info.value.code == 2
    assert "--cassette" in capsys.readouterr().err


def test_dayflow_brief_verbose_through_the_local_simulator(
    no_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["brief", "-v"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()

    notice = r"no ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL: using the local simulator at http://127\.0\.0\.1:\d+"
    assert re.fullmatch(notice + r" \(not Claude\)", lines[0])
    steps = [STEP_LINE.match(line) for line in lines if line.startswith("[step")]
    assert all(steps)
    assert [(m.group(1), m.group(2)) for m in steps] == [("1", "tool_use"), ("2", "end_turn")]  # type: ignore[union-attr]
    tools = [TOOL_LINE.match(line) for line in lines if line.startswith("    ->")]
    assert all(tools)
    called = {m.group(1): (m.group(2), int(m.group(3))) for m in tools}  # type: ignore[union-attr]
    assert list(called) == ["read_inbox", "read_calendar", "read_tasks"]
    # The printed sizes are those of the real tool results.
    assert called["read_inbox"] == ("{'limit': 20}", len(build_registry().run("read_inbox", {"limit": 20}).content))
    summary = SUMMARY_LINE.match(lines[-1])
    assert summary is not None
    assert summary.group(1, 2) == ("2", "3")
    step_in = sum(int(m.group(3)) for m in steps)  # type: ignore[union-attr]
    step_out = sum(int(m.group(4)) for m in steps)  # type: ignore[union-attr]
    assert (int(summary.group(3)), int(summary.group(4))) == (step_in, step_out)

    brief = captured.out
    for header in ("## Today", "## Needs a reply", "## Deadlines this week"):
        assert header in brief
    assert "Weekly staff sync" in brief
    assert "Priya" in brief
    assert "Brightside" not in brief  # the prompt says to skip promotions
    assert "[step" not in brief  # the trace stays on stderr


def test_the_prompt_variant_changes_the_brief(no_credentials: None) -> None:
    with _console.client_for(None) as client:
        filtered = run_brief(client, model="claude-sonnet-5")
        unfiltered = run_brief(client, model="claude-sonnet-5", system=SYSTEM_PROMPT_NO_FILTER)
    assert filtered.outcome is Outcome.ENDED
    assert unfiltered.outcome is Outcome.ENDED
    first_request = filtered.calls[0].request
    assert first_request["system"] == SYSTEM_PROMPT
    assert first_request["messages"][0]["content"] == user_prompt()
    assert [tool["name"] for tool in first_request["tools"]] == ["read_inbox", "read_calendar", "read_tasks"]
    assert "Brightside" not in filtered.final_text
    assert "Brightside" in unfiltered.final_text


def test_streaming_gives_the_same_brief(no_credentials: None) -> None:
    with Simulator() as simulator:
        import anthropic

        client = anthropic.Anthropic(api_key=_console.DUMMY_API_KEY, base_url=simulator.base_url)
        plain = run_brief(client, model="claude-sonnet-5")
        streamed = run_brief(client, model="claude-sonnet-5", stream=True)
    assert streamed.calls[0].request.get("stream") is True
    assert "stream" not in plain.calls[0].request
    assert streamed.final_text == plain.final_text


def test_record_then_replay_without_any_server(
    no_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = tmp_path / "dayflow.yaml"
    assert main(["brief", "--mode", "record", "--cassette", str(cassette)]) == 0
    recorded = capsys.readouterr()
    assert cassette.exists()
    assert "local simulator" in recorded.err

    assert main(["brief", "--mode", "replay", "--cassette", str(cassette)]) == 0
    replayed = capsys.readouterr()
    assert "local simulator" not in replayed.err  # replay needs no server at all
    assert replayed.out == recorded.out


def test_a_replay_that_misses_says_so_in_one_screen_and_exits_1(
    no_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The loop ends its run on the miss; the cassette raises it as its block ends (issue 37): no traceback."""
    cassette = tmp_path / "dayflow.yaml"
    assert main(["brief", "--mode", "record", "--cassette", str(cassette)]) == 0
    capsys.readouterr()
    assert main(["brief", "--mode", "replay", "--cassette", str(cassette), "--model", "claude-opus-5"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"dayflow brief: {cassette}: request #1 (POST /v1/messages) has no recording")
    assert "Traceback" not in err
