"""Volatile values and tool_result order, in process: what replays by default, what still misses, and `strict`.

The mock API answers with the tool output it was sent, so a replay that is served the recording says the
recorded values, not the ones this run's tools returned.
"""

from __future__ import annotations

import json
import re
import secrets
import uuid
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness import use_cassette
from harness.cassette.format import load_cassette
from harness.cassette.recorder import CassetteMismatch
from harness.normalize import Normalization, Substitution
from harness.volatile import SHAPE_NAMES, Shapes, looks_random

SHAPES = Shapes(SHAPE_NAMES)


@pytest.mark.parametrize(("text", "masked"), [
    ('{"ticket_id": "4bccec01-1d2e-4abc-8def-0123456789ab"}', '{"ticket_id": "$UUID"}'),
    ("created 2026-12-02T06:39:27.123456+00:00, due 2026-12-09", "created $TIMESTAMP, due $DATE"),
    ("Wed Dec  2 06:39:27 UTC 2026 / Wed, 02 Dec 2026 06:39:27 GMT", "$TIMESTAMP / $TIMESTAMP"),
    ("Wednesday, December 02, 2026 at 06:39:27", "$DATE at $TIME"),
    ("at 1764657567 (1764657567.25, 1764657567123 ms)", "at $EPOCH ($EPOCH, $EPOCH ms)"),
    ("wrote /tmp/tmpab12cd/notes.txt, ok", "wrote $TMP_PATH, ok"),
    ("nonce a3f9c2e1d4b5a6f70812 token Zx3_kQ9-LmN0pR7sT2vW1y", "nonce $HEX token $BASE64"),
    ("listening on http://127.0.0.1:54321/v1", "listening on http://127.0.0.1:$PORT/v1"),
    ("id-4bccec01-1d2e-4abc-8def-0123456789ab", "id-$UUID"),
    # Dates as other locales and formats write them (a probe of issue 38's fresh set): day first with
    # dots or dashes, a month name between dashes or abbreviated with a dot.
    ("due 02.12.2026, sent 2-Dec-2026, filed 2 Dec. 2026, seen 12-02-2026",
     "due $DATE, sent $DATE, filed $DATE, seen $DATE"),
    ("9F1C2B3A-1D2E-4F5A-8B9C-0D1E2F3A4B5C at 2026-12-02T08:20:00+05:30", "$UUID at $TIMESTAMP"),
    ("/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T/tmpab12cd/out.txt", "$TMP_PATH"),
    # Not volatile: words, identifiers, numbers, cities.
    ("Paris 21C, 42 items, ReadTimeoutError, HTTPConnectionPool, test_case_number_2, /usr/lib/python3/x",
     "Paris 21C, 42 items, ReadTimeoutError, HTTPConnectionPool, test_case_number_2, /usr/lib/python3/x"),
    ("version 1.2.3, a meeting at 2:30 PM, 16:9 screen, Lyon 12.5C, 2 December items",
     "version 1.2.3, a meeting at 2:30 PM, 16:9 screen, Lyon 12.5C, 2 December items"),
])
def test_volatile_values_are_found_by_their_shape(text: str, masked: str) -> None:
    assert SHAPES.mask(text) == masked


def test_random_tokens_read_as_random_and_words_as_words() -> None:
    tokens = [secrets.token_urlsafe(24) for _ in range(300)]
    assert sum(looks_random(token) for token in tokens) >= 297  # 22+ random characters: a nonce nearly always
    assert not any(looks_random(word) for word in ("ReadTimeoutError", "HTTPConnectionPoolTimeoutErr",
                                                   "UnicodeDecodeError", "XMLHttpRequest2023Handler"))


# -- replay ------------------------------------------------------------------------------------------------

def _answer(request: httpx2.Request) -> httpx2.Response:
    body = json.loads(request.content)
    results = [block for message in body["messages"] if isinstance(message["content"], list)
               for block in message["content"] if block.get("type") == "tool_result"]
    text = " | ".join(f"{block['tool_use_id']}={block['content']}" for block in results) or "no tools"
    return httpx2.Response(200, json={
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}})


def _send(messages: list[dict[str, Any]], system: str = "You file tickets.") -> str:
    client = anthropic.Anthropic(api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(_answer)),
                                 max_retries=0)
    message = client.messages.create(model="m", max_tokens=10, system=system, messages=messages,
                                     tools=[{"name": "t", "input_schema": {"type": "object"}}])
    return message.content[0].text  # type: ignore[union-attr]


def _turns(*outputs: str, ids: tuple[str, ...] = ("toolu_a", "toolu_b"), input_id: str = "x") -> list[dict[str, Any]]:
    uses = [{"type": "tool_use", "id": tool_id, "name": "t", "input": {"ref": input_id}} for tool_id in ids]
    results = [{"type": "tool_result", "tool_use_id": tool_id, "content": output}
               for tool_id, output in zip(ids, outputs, strict=True)]
    return [{"role": "user", "content": "open a ticket"},
            {"role": "assistant", "content": uses},
            {"role": "user", "content": results}]


def _record(path: Path, messages: list[dict[str, Any]], system: str = "You file tickets.", **options: Any) -> str:
    with use_cassette(path, "once", **options):
        return _send(messages, system)


OLD = ['{"ticket": "4bccec01-1d2e-4abc-8def-0123456789ab", "at": "2026-12-02T06:39:27Z"}',
       "saved /tmp/tmpab12cd/t.json nonce a3f9c2e1d4b5a6f70812"]
NEW = ['{"ticket": "9013bba3-77aa-4bcd-9eef-fedcba987654", "at": "2027-01-15T23:01:02Z"}',
       "saved /tmp/tmpzz98yx/t.json nonce 0b1c2d3e4f5a6b7c8d9e"]


def test_changed_volatile_values_in_tool_output_replay_the_recording_and_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    recorded = _record(path, _turns(*OLD))
    with use_cassette(path, "none") as cassette:
        assert _send(_turns(*NEW)) == recorded  # the recorded answer, with the recorded values
    assert cassette.misses == [] and cassette.unplayed == []
    (drift,) = cassette.drifts
    shapes = [(value.shape, value.recorded, value.now) for value in drift.volatile]
    assert shapes == [("uuid", "4bccec01-1d2e-4abc-8def-0123456789ab", "9013bba3-77aa-4bcd-9eef-fedcba987654"),
                      ("timestamp", "2026-12-02T06:39:27Z", "2027-01-15T23:01:02Z"),
                      ("temp_path", "/tmp/tmpab12cd/t.json", "/tmp/tmpzz98yx/t.json"),
                      ("hex", "a3f9c2e1d4b5a6f70812", "0b1c2d3e4f5a6b7c8d9e")]
    assert "volatile values not compared" in drift.describe() and "tool_result toolu_a" in drift.describe()
    assert "matching" not in load_cassette(path).meta  # the default is stored nowhere: nothing was stated


def test_any_other_change_of_tool_output_still_misses(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    _record(path, _turns('{"city": "Paris", "temp": 21}', "ok"))
    for changed in ('{"city": "Lyon", "temp": 21}', '{"city": "Paris", "temp": 22}'):
        with pytest.raises(CassetteMismatch, match="tool_result content"), use_cassette(path, "none"):
            _send(_turns(changed, "ok"))


def test_a_value_the_model_wrote_is_compared(tmp_path: Path) -> None:
    # A uuid in a tool_use input is the recording's own: a run that sends another one changed the conversation.
    path = tmp_path / "c.yaml"
    _record(path, _turns(*OLD, input_id="4bccec01-1d2e-4abc-8def-0123456789ab"))
    with pytest.raises(CassetteMismatch, match="message history"), use_cassette(path, "none"):
        _send(_turns(*OLD, input_id="9013bba3-77aa-4bcd-9eef-fedcba987654"))


def test_dates_in_the_system_prompt_may_change_other_values_there_may_not(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    recorded = _record(path, _turns(*OLD), system="Today is 2026-12-02 (Wednesday, December 2, 2026).")
    with use_cassette(path, "none") as cassette:
        assert _send(_turns(*OLD), system="Today is 2027-03-04 (Thursday, March 4, 2027).") == recorded
    assert [value.shape for value in cassette.drifts[0].volatile] == ["date", "date"]
    with pytest.raises(CassetteMismatch, match="system prompt"), use_cassette(path, "none"):
        _send(_turns(*OLD), system="Today is 2026-12-02 (Wednesday, December 2, 2026). Be brief.")


@pytest.mark.parametrize("how", ["use_cassette", "stored", "project"])
def test_strict_turns_volatile_values_off(tmp_path: Path, how: str) -> None:
    path = tmp_path / "c.yaml"
    if how == "project":
        (tmp_path / "pyproject.toml").write_text('[tool.loop-harness.matching]\npolicy = "strict"\n')
    _record(path, _turns(*OLD), **({"match_policy": "strict"} if how == "stored" else {}))
    options = {"match_policy": "strict"} if how == "use_cassette" else {}
    with pytest.raises(CassetteMismatch, match="tool_result content"), use_cassette(path, "none", **options):
        _send(_turns(*NEW))


def test_a_users_volatile_rule_is_tolerated_even_under_strict(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    rules = Normalization(policy="strict", substitutions=(Substitution("$TICKET", volatile=r"TCK-\d+"),))
    recorded = _record(path, _turns("opened TCK-8812", "ok"), normalize=rules)
    assert load_cassette(path).meta["matching"] == {
        "policy": "strict", "substitutions": [{"placeholder": "$TICKET", "volatile": r"TCK-\d+"}]}
    with use_cassette(path, "none") as cassette:
        assert _send(_turns("opened TCK-9013", "ok")) == recorded
    assert [(v.shape, v.recorded, v.now) for v in cassette.drifts[0].volatile] == [("$TICKET", "TCK-8812", "TCK-9013")]


def test_tool_results_of_one_turn_match_in_any_order(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    recorded = _record(path, _turns("first", "second", ids=("toolu_a", "toolu_b")))
    messages = _turns("first", "second", ids=("toolu_a", "toolu_b"))
    messages[2]["content"].reverse()  # the async agent's tools finished the other way round
    for options in ({}, {"match_policy": "strict"}):
        with use_cassette(path, "none", **options) as cassette:
            assert _send(messages) == recorded
        assert cassette.drifts == [] and cassette.unplayed == []  # no order in the API, nothing to report


def test_reordered_results_with_changed_volatile_values_are_paired_by_id(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    recorded = _record(path, _turns(*OLD))
    messages = _turns(*NEW)
    messages[2]["content"].reverse()
    with use_cassette(path, "none") as cassette:
        assert _send(messages) == recorded
    values = cassette.drifts[0].volatile
    assert {value.where.split(" ", 1)[1] for value in values} == {"(tool_result toolu_a)", "(tool_result toolu_b)"}
    assert all(re.sub(r"\W", "", value.shape) for value in values)
    assert len(values) == 4


def test_each_volatile_replay_serves_the_next_recording_in_order(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with use_cassette(path, "once"):
        first = _send(_turns(str(uuid.uuid4()), "a"))
        second = _send(_turns(str(uuid.uuid4()), "a"))
    assert first != second
    with pytest.raises(CassetteMismatch, match="every recording was already played"), \
            use_cassette(path, "none") as cassette:
        assert [_send(_turns(str(uuid.uuid4()), "a")) for _ in range(2)] == [first, second]
        _send(_turns(str(uuid.uuid4()), "a"))
    assert len(cassette.drifts) == 2


# -- the way out of a miss ---------------------------------------------------------------------------------

def test_a_tool_output_miss_prints_the_rule_that_makes_it_replay(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    recorded = _record(path, _turns('{"ticket": "TCK-8812", "seq": 41}', "ok"))
    with pytest.raises(CassetteMismatch) as caught, use_cassette(path, "none"):
        _send(_turns('{"ticket": "TCK-9013", "seq": 41}', "ok"))
    message = caught.value.describe("pytest")
    assert "Only tool output changed" in message and "re-record" in message  # it may also have changed for good
    rule = re.search(r"\[\[tool\.loop-harness\.matching\.substitutions\]\]\n.*\n.*\n", message)
    assert rule is not None and "volatile = 'TCK-\\d+'" in rule.group(0) and '"$TICKET"' in rule.group(0)
    (tmp_path / "pyproject.toml").write_text(re.sub(r"(?m)^    ", "", rule.group(0)))  # pasted as printed
    with use_cassette(path, "none") as cassette:
        assert _send(_turns('{"ticket": "TCK-9013", "seq": 41}', "ok")) == recorded
    assert [(v.shape, v.now) for v in cassette.drifts[0].volatile] == [("$TICKET", "TCK-9013")]


def test_a_bare_number_keeps_its_key_in_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    _record(path, _turns('{"seq": 41, "city": "Paris"}', "ok"))
    with pytest.raises(CassetteMismatch) as caught, use_cassette(path, "none"):
        _send(_turns('{"seq": 42, "city": "Paris"}', "ok"))
    assert "volatile = '\"seq\": (\\d+)'" in str(caught.value) and '"$SEQ"' in str(caught.value)


def test_volatile_values_missed_under_strict_say_re_recording_would_not_help(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    _record(path, _turns(*OLD), match_policy="strict")
    with pytest.raises(CassetteMismatch) as caught, use_cassette(path, "none"):
        _send(_turns(*NEW))
    message = caught.value.describe("pytest")
    assert "Re-recording would not help" in message and "uuid, timestamp, temp_path, hex" in message
    assert "--record-mode=rewrite" not in message


def test_a_change_a_person_made_still_offers_re_recording_and_no_rule(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    _record(path, _turns(*OLD))
    with pytest.raises(CassetteMismatch) as caught, use_cassette(path, "none"):
        _send(_turns(*OLD), system="You file tickets, politely.")
    message = caught.value.describe("pytest")
    assert "--record-mode=rewrite" in message and "tool.loop-harness.matching" not in message
    with pytest.raises(CassetteMismatch) as caught, use_cassette(path, "none"):  # text added: no one value
        _send(_turns(OLD[0] + " and one more line", OLD[1]))
    assert "mode='rewrite'" in str(caught.value) and "tool.loop-harness.matching" not in str(caught.value)


# -- under pytest: a warning, the -v listing and the drift report ----------------------------------------------

INNER = '''
import uuid

import anthropic
import httpx2
import pytest


def _answer(request):
    return httpx2.Response(200, json={
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "filed"}],
        "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}})


@pytest.mark.cassette
def test_ticket():
    client = anthropic.Anthropic(api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(_answer)),
                                 max_retries=0)
    use = {"type": "tool_use", "id": "toolu_a", "name": "t", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_a", "content": '{"ticket": "' + str(uuid.uuid4()) + '"}'}
    messages = [{"role": "user", "content": "file it"}, {"role": "assistant", "content": [use]},
                {"role": "user", "content": [result]}]
    assert client.messages.create(model="m", max_tokens=10, messages=messages).content[0].text == "filed"
'''

pytest_plugins = ["pytester"]


def test_under_pytest_volatile_values_warn_are_listed_on_v_and_in_the_drift_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    pytester.runpytest("--record-mode=once").assert_outcomes(passed=1)
    quiet = pytester.runpytest("-q")
    quiet.assert_outcomes(passed=1, warnings=1)
    assert "HarnessDriftWarning" in quiet.stdout.str() and "volatile values not compared" in quiet.stdout.str()
    assert "== loop-harness: volatile values not compared ==" not in quiet.stdout.str()
    verbose = pytester.runpytest("-v", "--drift-report=drift.json")
    verbose.assert_outcomes(passed=1, warnings=1)
    listed = verbose.stdout.str().split("loop-harness: volatile values not compared", 1)[1]
    assert "test_inner.py::test_ticket" in listed and "uuid '" in listed
    (entry,) = json.loads((pytester.path / "drift.json").read_text())["cassettes"]
    assert entry["status"] == "replays"
    assert [value["shape"] for value in entry["tolerated"][0]["volatile"]] == ["uuid"]


def test_harness_show_lists_what_a_replay_would_not_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main as harness_main

    path = tmp_path / "c.yaml"
    _record(path, _turns(*OLD), system="Today is 2026-12-02.")
    assert harness_main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "not compared on replay" in shown and "matching policy 'volatile'" in shown
    for line in ("system prompt: date '2026-12-02'", "tool_result toolu_a: uuid '4bccec01-1d2e-4abc-8def-0123456789ab'",
                 "tool_result toolu_b: hex 'a3f9c2e1d4b5a6f70812'"):
        assert line in shown
