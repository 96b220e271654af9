"""The kind of change of a miss: `harness.cassette.drift.classify`, and the miss that names it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from harness import CassetteMismatch, use_cassette
from harness.cassette.drift import KINDS, classify, classify_request
from tests.fake_messages_api import FakeMessagesAPI

MODEL = "claude-sonnet-5"
CALENDAR = {"name": "read_calendar", "description": "Read the calendar.",
            "input_schema": {"type": "object", "properties": {"days": {"type": "integer"}}}}
INBOX = {"name": "read_inbox", "description": "Read mail.", "input_schema": {"type": "object", "properties": {}}}


def body() -> dict[str, Any]:
    return {
        "model": MODEL, "max_tokens": 512, "system": "Brief me.", "tools": [INBOX, CALENDAR],
        "messages": [
            {"role": "user", "content": "What is on today?"},
            {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
                                              {"type": "tool_use", "id": "toolu_1", "name": "read_calendar",
                                               "input": {"days": 1}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": '{"events": []}'}]},
        ],
    }


def changed(edit: Any) -> dict[str, Any]:
    new = copy.deepcopy(body())
    edit(new)
    return new


def test_equal_bodies_have_no_change() -> None:
    drift = classify(body(), body())
    assert drift.changes == () and drift.summary() == "no change in the request body"


@pytest.mark.parametrize(("edit", "kind", "subject", "what"), [
    (lambda b: b.update(system="Brief me, kindly."), "system_prompt", "system", "changed"),
    (lambda b: b.pop("system"), "system_prompt", "system", "removed"),
    (lambda b: b["tools"][1].update(description="Read the whole calendar."), "tool_definitions", "read_calendar",
     "description changed"),
    (lambda b: b["tools"][1]["input_schema"]["properties"]["days"].update(minimum=1), "tool_definitions",
     "read_calendar", "input_schema changed"),
    (lambda b: b["tools"].append({"name": "read_tasks", "input_schema": {"type": "object"}}), "tool_definitions",
     "read_tasks", "added"),
    (lambda b: b["tools"].pop(0), "tool_definitions", "read_inbox", "removed"),
    (lambda b: b["tools"].reverse(), "tool_definitions", "tools", "order changed"),
    (lambda b: b.update(model="claude-haiku-4-5"), "model_parameters", "model",
     "'claude-sonnet-5' -> 'claude-haiku-4-5'"),
    (lambda b: b.update(temperature=0.2), "model_parameters", "temperature", "added"),
    (lambda b: b.update(max_tokens=1024), "model_parameters", "max_tokens", "512 -> 1024"),
    (lambda b: b.update(thinking={"type": "enabled", "budget_tokens": 2048}), "model_parameters", "thinking",
     "added"),
    (lambda b: b.update(tool_choice={"type": "any"}), "model_parameters", "tool_choice", "added"),
    (lambda b: b["messages"][2]["content"][0].update(content='{"events": [1]}'), "tool_result", "toolu_1",
     "messages[2].content[0] content changed"),
    (lambda b: b["messages"][0].update(content="What is on tomorrow?"), "message_history", "messages[0].content[0]",
     "user text block changed"),
    (lambda b: b["messages"][1]["content"].pop(0), "message_history", "messages[1].content[0]",
     "assistant tool_use block changed"),
    (lambda b: b["messages"].append({"role": "user", "content": "And tomorrow?"}), "message_history", "messages[3]",
     "added (user)"),
    (lambda b: b.update(metadata={"user_id": "u1"}), "other", "metadata", "added"),
    (lambda b: b.update(stream=True), "other", "stream", "added"),
])
def test_each_kind_of_change_is_named(edit: Any, kind: str, subject: str, what: str) -> None:
    drift = classify(body(), changed(edit))
    assert drift.kind == kind
    first = drift.changes[0]
    assert (first.kind, first.subject, first.what) == (kind, subject, what)
    assert KINDS[kind] in drift.summary()


def test_several_kinds_are_all_named_in_a_fixed_order() -> None:
    def edit(b: dict[str, Any]) -> None:
        b["messages"][2]["content"][0]["content"] = "[]"
        b["tools"][0]["description"] = "Read all mail."
        b["system"] = "Be terse."

    drift = classify(body(), changed(edit))
    assert drift.kinds == ["system_prompt", "tool_definitions", "tool_result"]
    assert drift.summary() == ("system prompt (system: changed); tool definitions (read_inbox: description changed); "
                               "tool_result content (toolu_1: messages[2].content[0] content changed)")


def test_a_body_that_is_not_json_is_another_field() -> None:
    assert classify("plain text", body()).kind == "other"


def ask(client: Any, *, tools: list[dict[str, Any]]) -> None:
    client.messages.create(model=MODEL, max_tokens=8, tools=tools, messages=[{"role": "user", "content": "x"}])


def test_the_miss_names_the_kind_of_change_and_the_tool(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    with use_cassette(path, mode="once"):
        ask(FakeMessagesAPI().client(), tools=[INBOX, CALENDAR])
    edited = [INBOX, {**CALENDAR, "description": "Read every calendar."}]
    with use_cassette(path, mode="none", on_miss="ignore") as cassette, pytest.raises(CassetteMismatch) as caught:
        ask(FakeMessagesAPI().client(), tools=edited)
    miss = caught.value
    assert miss.kind == "tool_definitions"
    assert [(c.subject, c.what) for c in miss.change.changes] == [("read_calendar", "description changed")]
    assert "Kind of change: tool definitions (read_calendar: description changed)" in str(miss)
    assert any(line.startswith("tools.read_calendar.description changed") for line in miss.differences), (
        miss.differences)
    assert cassette.misses == [miss], "the cassette keeps the misses, also for callers that swallow them"


def test_a_repeat_beyond_the_recording_is_named_too(tmp_path: Path) -> None:
    path = tmp_path / "once.yaml"
    with use_cassette(path, mode="once"):
        ask(FakeMessagesAPI().client(), tools=[INBOX])
    with use_cassette(path, mode="none", on_miss="ignore"), pytest.raises(CassetteMismatch) as caught:
        client = FakeMessagesAPI().client()
        ask(client, tools=[INBOX])
        ask(client, tools=[INBOX])
    assert caught.value.kind == "other"
    assert "sent more often than the 1 time(s) recorded" in str(caught.value)


def test_a_request_is_classified_as_matching_sees_it() -> None:
    stored = {"method": "POST", "path": "/v1/messages", "body": {**body(), "metadata": {"user_id": "u1"}}}
    live = {**changed(lambda b: b.update(system="Be terse.")), "metadata": {"user_id": "u2"}}
    drift = classify_request(stored, "POST", "/v1/messages", None, live, ignore=["metadata.user_id"])
    assert [(c.kind, c.subject) for c in drift.changes] == [("system_prompt", "system")], "ignored fields stay out"
    moved = classify_request(stored, "POST", "/v1/messages/count_tokens", "beta=true&x=1", stored["body"])
    assert [(c.kind, c.subject) for c in moved.changes] == [("other", "route"), ("other", "query")]


def test_report_entries_drifted_ends_early_and_replays(tmp_path: Path) -> None:
    from harness.report.drift import cassette_entry, drift_document
    from harness.report.drift_markdown import drift_markdown

    paths = {name: tmp_path / f"{name}.yaml" for name in ("same", "short", "changed")}
    for path in paths.values():
        with use_cassette(path, mode="once"):
            client = FakeMessagesAPI().client()
            ask(client, tools=[INBOX])
            ask(client, tools=[INBOX, CALENDAR])
    entries = []
    for name, path in paths.items():
        with use_cassette(path, mode="none", on_miss="ignore") as cassette:
            client = FakeMessagesAPI().client()
            ask(client, tools=[INBOX])
            if name == "same":
                ask(client, tools=[INBOX, CALENDAR])
            elif name == "changed":
                with pytest.raises(CassetteMismatch):
                    ask(client, tools=[CALENDAR])
        entries.append(cassette_entry(cassette, tests=[name], root=tmp_path))
    document = drift_document(entries)
    assert {e["path"]: e["status"] for e in document["cassettes"]} == {
        "same.yaml": "replays", "short.yaml": "ends_early", "changed.yaml": "drifted"}
    short = next(e for e in document["cassettes"] if e["path"] == "short.yaml")
    assert short["unplayed"] == [2]
    changed_entry = next(e for e in document["cassettes"] if e["path"] == "changed.yaml")
    assert changed_entry["divergence"]["request"] == 2
    assert changed_entry["divergence"]["changes"] == [{"kind": "tool_definitions", "subject": "read_inbox",
                                                       "what": "removed"}]
    markdown = drift_markdown(document)
    assert "1 of 3 cassette(s) drifted (tool definitions: 1); 1 end(s) before the recording does; 1 still replay." \
        in markdown
    assert "- `short.yaml` (`short`): recorded interaction(s) #2 never asked for" in markdown
