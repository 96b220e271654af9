"""The cassette file: safe and validated loading with errors that name the place; atomic, readable saves."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cassette.format import CassetteFile, dump_cassette, load_cassette, save_cassette
from harness.cassette.scan import scan_paths
from harness.errors import CassetteError
from harness.wire.sse import fold_stream, parse_sse, render_event, render_sse

GOOD = """\
harness:
  format_version: 1
  source: simulator
interactions:
- request:
    method: POST
    path: /v1/messages
    body: {model: m, max_tokens: 5, messages: [{role: user, content: hi}]}
  response:
    status: 200
    body: {id: msg_1, type: message, role: assistant, content: [], stop_reason: end_turn}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_a_good_cassette_loads(tmp_path: Path) -> None:
    cassette = load_cassette(write(tmp_path, GOOD))
    assert cassette.meta["source"] == "simulator"
    assert cassette.interactions[0]["response"]["status"] == 200


def test_corrupt_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("    status: 200", "    status: [200"))
    with pytest.raises(CassetteError) as caught:
        load_cassette(path)
    assert str(path) in str(caught.value) and "line 1" in str(caught.value)
    assert caught.value.where is not None and caught.value.where.startswith("line ")


def test_unknown_format_version(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match=r"\$\.harness\.format_version: unknown format_version 7"):
        load_cassette(write(tmp_path, GOOD.replace("format_version: 1", "format_version: 7")))


def test_schema_invalid_names_the_json_path(tmp_path: Path) -> None:
    with pytest.raises(CassetteError) as caught:
        load_cassette(write(tmp_path, GOOD.replace("status: 200", "status: ok")))
    assert caught.value.where == "$.interactions[0].response.status"


def test_a_simulator_run_cannot_claim_an_unknown_source(tmp_path: Path) -> None:
    with pytest.raises(CassetteError) as caught:
        load_cassette(write(tmp_path, GOOD.replace("source: simulator", "source: claude")))
    assert caught.value.where == "$.harness.source"


def test_python_tags_are_refused_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = GOOD + f"extra: !!python/object/apply:os.system ['touch {marker}']\n"
    with pytest.raises(CassetteError, match="not valid YAML"):
        load_cassette(write(tmp_path, hostile))
    assert not marker.exists()


def test_foreign_vcrpy_cassette_is_pointed_at_import(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="harness import"):
        load_cassette(write(tmp_path, "interactions: []\nversion: 1\n"))


def test_oversized_and_non_utf8_files_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.cassette.format as fmt

    monkeypatch.setattr(fmt, "MAX_CASSETTE_BYTES", 100)
    big = write(tmp_path, GOOD)
    with pytest.raises(CassetteError, match="over the 100-byte limit"):
        fmt.load_cassette(big)
    monkeypatch.undo()
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(GOOD.encode() + b"\n# \xff\xfe\n")
    with pytest.raises(CassetteError, match="not UTF-8") as caught:
        load_cassette(bad)
    assert caught.value.where == f"line {GOOD.count(chr(10)) + 2}"


def test_save_round_trips_and_refuses_invalid_data(tmp_path: Path) -> None:
    cassette = load_cassette(write(tmp_path, GOOD))
    out = save_cassette(cassette, tmp_path / "out" / "copy.yaml")
    assert load_cassette(out).to_data() == cassette.to_data()
    broken = CassetteFile(meta={"format_version": 1, "source": "simulator"}, interactions=[{"request": {}}])
    with pytest.raises(CassetteError):
        save_cassette(broken, tmp_path / "broken.yaml")
    assert not (tmp_path / "broken.yaml").exists()


def test_multiline_text_is_a_literal_block() -> None:
    cassette = CassetteFile(meta={"format_version": 1, "source": "simulator"}, interactions=[])
    cassette.meta["note"] = "first line\nsecond line"
    assert "note: |-\n    first line\n    second line" in dump_cassette(cassette)


def test_sse_parse_render_and_fold_survive_padded_json() -> None:
    text = (
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","content":[],'
        '"usage":{"input_tokens":3,"output_tokens":1}}       }\n\n'
        'event: ping\ndata: {"type": "ping"}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"input_json_delta","partial_json":"{\\"a\\": "}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"input_json_delta","partial_json":"1}"}}\n\n'
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"},'
        '"usage":{"output_tokens":9}}\n\n'
    )
    events = parse_sse(text)
    assert [e["event"] for e in events][:2] == ["message_start", "ping"]
    assert parse_sse(render_sse(events).decode()) == events
    message = fold_stream(events)
    assert message["content"] == [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}]
    assert message["stop_reason"] == "tool_use"
    assert message["usage"] == {"input_tokens": 3, "output_tokens": 9}


def test_scan_finds_each_secret_form_and_ignores_placeholders(tmp_path: Path) -> None:
    dirty = tmp_path / "dirty.yaml"
    dirty.write_text(
        "a: sk-ant-api03-abcdefghijklmnop\n"
        "b: Bearer abcd3fgh1jklmn0pqrstuvwxyz\n"  # a token has digits; "Bearer authentication" is prose
        "c: anthropic-organization-id:\n  - 217a607f-ed5e-40af-8a7d-f83ed52d59d6\n"
        "d: exceed the rate limit for your organization (317a607f-ed5e-40af-8a7d-f83ed52d59d6)\n"
    )
    clean = tmp_path / "clean.yaml"
    clean.write_text("a: '[REDACTED]'\nb: Bearer [REDACTED]\nrequest-id: req_redacted_0001\n"
                     "c: <redacted:anthropic-key:1>\nd: Bearer <redacted:bearer-token:2>\n")
    findings = scan_paths([tmp_path])
    assert {f.kind for f in findings} == {"anthropic-key", "bearer-token", "organization-id"}
    assert {f.line for f in findings} == {1, 2, 4, 5}  # the line the secret is on
    assert all(f.file == dirty for f in findings)
    assert all("abcdefghijklmnop" not in f.excerpt for f in findings), "the scanner must not print secrets"


def test_a_replayed_stream_is_written_byte_for_byte_as_an_sse_stream() -> None:
    """render_sse joins one text: each event its `event:` line (when named), one `data:` line per line of its
    data (JSON compact, not ASCII-escaped), and a blank line; render_event gives the same bytes one event at a time."""
    events = [
        {"event": "ping", "data": {"type": "ping"}},
        {"data": "first\nsecond"},
        {"event": "content_block_delta", "data": {"delta": {"text": "é ✓\n"}}},
        {"event": "raw", "data": "line\n"},
    ]
    expected = (
        'event: ping\ndata: {"type":"ping"}\n\n'
        "data: first\ndata: second\n\n"
        'event: content_block_delta\ndata: {"delta":{"text":"é ✓\\n"}}\n\n'
        "event: raw\ndata: line\ndata: \n\n"
    ).encode()
    assert render_sse(events) == expected
    assert b"".join(render_event(event) for event in events) == expected
