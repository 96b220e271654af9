"""Normalization rules and the `sequence` policy, in process: what is replaced, stored, put back and reported."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness import use_cassette
from harness.cassette.format import load_cassette
from harness.cassette.recorder import CassetteMismatch
from harness.errors import CassetteError
from harness.normalize import (
    Machine,
    Normalization,
    RuleError,
    Substitution,
    is_claude_code,
    preset,
    response_events,
)
from tests.conftest import REPO


def test_a_fact_is_replaced_as_a_whole_path_only() -> None:
    rules = Normalization(substitutions=(Substitution("$CWD", fact="cwd"),), machine=Machine(cwd="/work/a"))
    applied = rules.for_request({})
    assert applied.request({"t": "cd /work/a && cat /work/a/x.txt; ls /work/ab /srv/work/a. See /work/a."}) == {
        "t": "cd $CWD && cat $CWD/x.txt; ls /work/ab /srv/work/a. See $CWD."}


def test_the_longest_value_goes_first_so_a_folder_inside_home_is_cwd() -> None:
    rules = Normalization(substitutions=(Substitution("$HOME", fact="home"), Substitution("$CWD", fact="cwd")),
                          machine=Machine(cwd="/home/ann/proj", home="/home/ann"))
    assert rules.for_request({}).request(["/home/ann/proj/a", "/home/ann/.claude"]) == ["$CWD/a", "$HOME/.claude"]


def test_a_capture_takes_the_value_from_the_request_itself() -> None:
    body = {"messages": [{"role": "user", "content": "Primary working directory: /tmp/x1\nread /tmp/x1/n.txt"}]}
    applied = preset("claude-code").for_request(body)
    assert applied.values["$CWD"] == "/tmp/x1"
    assert applied.request(body)["messages"][0]["content"] == "Primary working directory: $CWD\nread $CWD/n.txt"


def test_patterns_replace_their_group_and_masks_hide_ids() -> None:
    body = {"metadata": {"user_id": '{"device_id":"dev9","session_id":"ses7"}'},
            "messages": [{"role": "system", "content": "Today's date is 2026-11-30.\n - OS Version: Linux 6.1\n"
                          " - Platform: linux\nsession ses7 on dev9"}]}
    normalized = preset("claude-code").for_request(body).request(body)
    assert normalized["metadata"]["user_id"] == "$MASKED"
    assert normalized["messages"][0]["content"] == ("Today's date is $DATE.\n - OS Version: $OS_VERSION\n"
                                                    " - Platform: $PLATFORM\nsession $SESSION_ID on $DEVICE_ID")
    assert body["metadata"]["user_id"].startswith('{"device_id"'), "the live body is not changed in place"


def test_normalizing_twice_changes_nothing() -> None:
    body = {"metadata": {"user_id": '{"session_id":"s"}'},
            "messages": [{"role": "user", "content": "Primary working directory: /tmp/q\nToday's date is 2026-01-02"}]}
    rules = preset("claude-code")
    once = rules.for_request(body).request(body)
    assert rules.for_request(once).request(once) == once


def test_a_value_split_across_stream_deltas_is_stored_whole_and_put_back() -> None:
    events = [{"data": {"type": "content_block_delta", "index": 1,
                        "delta": {"type": "input_json_delta", "partial_json": part}}, "offset_ms": 1.0}
              for part in ['{"file_path": "/tmp/wo', 'rk/notes.txt"}']]
    events.append({"data": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}})
    recorded = Normalization(substitutions=(Substitution("$CWD", fact="cwd"),), machine=Machine(cwd="/tmp/work"))
    stored = response_events(events, recorded.for_request({}))
    assert [e["data"]["delta"].get("partial_json") for e in stored] == ['{"file_path": "$CWD/notes.txt"}', None]
    replay = Normalization(substitutions=(Substitution("$CWD", fact="cwd"),), machine=Machine(cwd="/srv/other"))
    assert replay.for_request({}).expand(stored)[0]["data"]["delta"]["partial_json"] == (
        '{"file_path": "/srv/other/notes.txt"}')


@pytest.mark.parametrize(("data", "message"), [
    ({"policy": "loose"}, "matching: matching policy 'loose': use one of strict, volatile, sequence"),
    ({"substitutions": [{"placeholder": "$X", "pattern": "("}]}, "matching.substitutions[0]: substitution"),
    ({"substitutions": [{"placeholder": "cwd", "fact": "cwd"}]}, "must look like $NAME"),
    ({"substitutions": [{"placeholder": "$X", "fact": "os"}]}, "fact 'os' is not one of cwd, home, tmp"),
    ({"substitutions": [{"placeholder": "$X", "capture": "no group"}]}, "needs a group"),
    ({"mask": ["a"], "drop": ["b"]}, "unknown key(s) drop"),
])
def test_bad_rules_are_refused_naming_the_place(data: dict[str, Any], message: str) -> None:
    with pytest.raises(RuleError) as caught:
        Normalization.from_data(data)
    assert message in str(caught.value)


def test_the_stored_rules_read_back_the_same() -> None:
    rules = preset("claude-code").merged(Normalization(policy="sequence", ignore=("temperature",)))
    assert Normalization.from_data(rules.to_data()) == rules


def test_the_claude_code_cli_is_known_by_its_user_agent() -> None:
    assert is_claude_code([("User-Agent", "claude-cli/2.1.332 (external, sdk-py)")])
    assert not is_claude_code({"user-agent": "Anthropic/Python 2.14.0"})


# -- in process, through use_cassette ----------------------------------------------------------------------

def _echo_path(request: httpx2.Request) -> httpx2.Response:
    """A Messages API that answers with a tool call on the path the request names."""
    import json

    body = json.loads(request.content)
    path = body["messages"][0]["content"].split("read ", 1)[1]
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
               "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": path}}],
               "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 5}}
    return httpx2.Response(200, json=message)


def _ask(cwd: str, transport: httpx2.MockTransport) -> Any:
    client = anthropic.Anthropic(api_key="k", http_client=httpx2.Client(transport=transport), max_retries=0)
    return client.messages.create(model="claude-sonnet-5", max_tokens=10,
                                  messages=[{"role": "user", "content": f"read {cwd}/notes.txt"}])


def test_a_recording_from_one_folder_replays_in_another_with_this_runs_paths(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    rules = Normalization(substitutions=(Substitution("$CWD", fact="cwd"),))
    transport = httpx2.MockTransport(_echo_path)
    with use_cassette(path, "once", normalize=Normalization(
            substitutions=rules.substitutions, machine=Machine(cwd="/home/ann/proj"))):
        _ask("/home/ann/proj", transport)
    stored = load_cassette(path)
    assert stored.meta["matching"] == {"substitutions": [{"placeholder": "$CWD", "fact": "cwd"}]}  # no policy stated
    assert "/home/ann" not in path.read_text()
    with use_cassette(path, "none", normalize=Normalization(machine=Machine(cwd="/srv/ci/proj"))):
        replayed = _ask("/srv/ci/proj", transport)
    assert replayed.content[0].input == {"file_path": "/srv/ci/proj/notes.txt"}


def _tool_turn(result: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "list the files"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result}]}]


def _answer(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json={
        "id": "msg_2", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}})


def _send(messages: list[dict[str, Any]]) -> Any:
    client = anthropic.Anthropic(api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(_answer)),
                                 max_retries=0)
    return client.messages.create(model="m", max_tokens=10, messages=messages,
                                  tools=[{"name": "ls", "input_schema": {"type": "object"}}])


def test_tool_output_drift_is_served_in_order_under_sequence_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "drift.yaml"
    with use_cassette(path, "once", normalize=Normalization(policy="sequence")):
        _send(_tool_turn("a.txt b.txt"))
    with use_cassette(path, "none") as cassette:  # the policy is stored in the cassette
        assert _send(_tool_turn("b.txt a.txt")).content[0].text == "ok"
    assert len(cassette.drifts) == 1
    assert cassette.drifts[0].differences == ("messages[2].content[0].content changed from 'a.txt b.txt' to "
                                              "'b.txt a.txt'",)
    assert cassette.unplayed == []


def test_the_same_drift_is_a_miss_under_strict_and_other_changes_under_sequence(tmp_path: Path) -> None:
    path = tmp_path / "drift.yaml"
    with use_cassette(path, "once"):
        _send(_tool_turn("a.txt b.txt"))
    with pytest.raises(CassetteMismatch, match=re.escape("content changed from 'a.txt b.txt' to 'b.txt a.txt'")), \
            use_cassette(path, "none"):
        _send(_tool_turn("b.txt a.txt"))
    changed = _tool_turn("a.txt b.txt")
    changed[0]["content"] = "list the folders"
    with pytest.raises(CassetteMismatch, match=re.escape("messages[0].content changed")), \
            use_cassette(path, "none", normalize=Normalization(policy="sequence")):
        _send(changed)


def test_a_bad_stored_matching_block_names_the_file_and_place(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("harness:\n  format_version: 1\n  source: simulator\n  matching:\n    policy: loose\n"
                    "interactions: []\n")
    with pytest.raises(CassetteError) as caught:
        use_cassette(path, "none").__enter__()
    assert "bad.yaml" in str(caught.value) and "matching" in str(caught.value)


def test_serve_takes_the_rules_on_the_command_line_and_refuses_bad_ones(tmp_path: Path) -> None:
    path = tmp_path / "drift.yaml"
    with use_cassette(path, "once"):
        _send(_tool_turn("a"))
    bad = subprocess.run([sys.executable, "-m", "harness.cli", "serve", str(path), "--substitute", "$CWD=cwd"],
                         capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2
    assert "write $NAME=fact:cwd, $NAME=capture:REGEX, $NAME=pattern:REGEX or $NAME=volatile:REGEX" in bad.stderr
