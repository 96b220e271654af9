"""Drift and fork for any client: `harness proxy --mode fork` and `harness serve --drift-report`."""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from harness import use_cassette
from harness.cassette.format import load_cassette
from harness.commands import serve
from harness.proxy import RecordingProxy
from harness.report.drift_markdown import fork_line
from harness.sim import Simulator
from harness_demo.dayflow import build_registry

MODEL = "claude-sonnet-5"
TRIAGE = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "Brief me on my morning."}]}
BRIEF = {"model": MODEL, "max_tokens": 1024, "tools": build_registry().definitions(),
         "messages": [{"role": "user", "content": "Brief me on my morning."}]}
NEW_HELP = "Read the user's calendar (work, personal and shared family calendars), today first."


def edited_brief() -> dict[str, Any]:
    body = copy.deepcopy(BRIEF)
    next(tool for tool in body["tools"] if tool["name"] == "read_calendar")["description"] = NEW_HELP
    return body


def client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="sim-key-not-a-secret", max_retries=0)


def record(path: Path, *bodies: dict[str, Any]) -> None:
    with Simulator() as sim, use_cassette(path, mode="once"):
        sdk = client(sim.base_url)
        for body in bodies:
            sdk.messages.create(**body)


def test_proxy_fork_replays_the_prefix_records_the_rest_and_writes_when_it_stops(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    record(path, TRIAGE, BRIEF)
    raw, before = path.read_bytes(), load_cassette(path)
    with Simulator() as sim:
        with RecordingProxy(sim.base_url, path, mode="fork") as proxy:
            triage = client(proxy.base_url).messages.with_raw_response.create(**TRIAGE)
            brief = client(proxy.base_url).messages.with_raw_response.create(**edited_brief())
            assert path.read_bytes() == raw, "a fork replaces the old file only when the run ends"
        served = [s for s in sim.served if s.index is not None]
    assert triage.headers.get("x-harness-replayed") == "1"
    assert brief.headers.get("x-harness-recorded") == "1"
    assert len(served) == 1, "only the divergent request reached the upstream"
    new = load_cassette(path)
    assert new.interactions[0] == before.interactions[0]
    assert new.interactions[1]["request"]["body"] == edited_brief()
    assert new.meta["fork"]["change"]["changes"] == [
        {"kind": "tool_definitions", "subject": "read_calendar", "what": "description changed"}]
    line = fork_line(proxy.cassette.fork_report().to_data())  # what `harness proxy --mode fork` prints at the end
    assert "forked at request #2 (tool definitions (read_calendar: description changed)); " \
           "replayed 1 interaction(s)" in line
    assert "re-recorded 1 interaction(s)" in line


def serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_serve_drift_report_counts_a_miss_against_the_cassette_it_was_meant_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hello, brief = tmp_path / "hello.yaml", tmp_path / "brief.yaml"
    record(hello, TRIAGE)
    record(brief, BRIEF)
    report = tmp_path / "drift.json"
    args = serve_args(str(hello), str(brief), "--drift-report", str(report))
    with serve.ReplayServer(args.cassettes) as server:
        client(server.base_url).messages.create(**TRIAGE)
        with pytest.raises(anthropic.BadRequestError) as miss:
            client(server.base_url).messages.create(**edited_brief())
    serve.stop_report(server, args.drift_report)  # what `harness serve` prints and writes when it stops
    assert "Kind of change: tool definitions (read_calendar: description changed)" in miss.value.message, \
        "serve's 400 names the kind of change"
    document = json.loads(report.read_text())
    status = {Path(entry["path"]).name: entry["status"] for entry in document["cassettes"]}
    assert status == {"hello.yaml": "replays", "brief.yaml": "drifted"}
    (drifted,) = [entry for entry in document["cassettes"] if entry["status"] == "drifted"]
    assert drifted["divergence"]["kind"] == "tool_definitions"
    assert drifted["divergence"]["changes"][0]["subject"] == "read_calendar"
    assert document["source"] == "harness serve" and f"written to {report}" in capsys.readouterr().err


def test_serve_drift_report_on_the_terminal_says_when_nothing_drifted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hello = tmp_path / "hello.yaml"
    record(hello, TRIAGE)
    with serve.ReplayServer([hello]) as server:
        client(server.base_url).messages.create(**TRIAGE)
    serve.stop_report(server, serve_args(str(hello), "--drift-report", "-").drift_report)
    stdout = capsys.readouterr().out
    assert "# Drift report" in stdout and "No drift: all 1 cassette(s) replay as recorded." in stdout
