"""The last importer gaps: vcrpy cassettes recorded from aiohttp clients (`istr` header keys), the
one-exchange JSON format, and a clear word for a format the importer still does not know."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import pytest

from harness import use_cassette
from harness.cassette.importer import ONE_EXCHANGE_JSON, VCRPY_YAML, detect_format, import_file, import_paths
from harness.cli import main
from harness.errors import HarnessError

OFFLINE = "http://127.0.0.1:9"
KEY = "sk-ant-api03-" + "k" * 40
REQUEST = {"model": "claude-3-5-haiku-latest", "max_tokens": 32, "messages": [{"role": "user", "content": "Hi"}]}
MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-3-5-haiku-20241022",
           "content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn", "stop_sequence": None,
           "usage": {"input_tokens": 8, "output_tokens": 5}}


def istr(name: str) -> str:
    return f"? !!python/object/apply:multidict._multidict.istr\n      - {name}\n      :"


AIOHTTP_CASSETTE = f"""\
interactions:
- request:
    body: '{json.dumps(REQUEST)}'
    headers:
      {istr("Content-Type")} - application/json
      {istr("anthropic-version")} - '2023-06-01'
      x-api-key:
      - {KEY}
    method: POST
    uri: https://api.anthropic.com/v1/messages
  response:
    body:
      string: '{json.dumps(MESSAGE)}'
    headers:
      {istr("Content-Type")} - application/json
      {istr("Request-Id")} - req_011CTqWd
    status:
      code: 200
      message: OK
    url: https://api.anthropic.com/v1/messages
version: 1
"""


def replay(path: Path) -> dict[str, object]:
    with use_cassette(path, mode="none") as cassette:
        client = anthropic.Anthropic(api_key="replay", base_url=OFFLINE, max_retries=0)
        message = client.messages.create(**REQUEST)  # type: ignore[call-overload]
    assert cassette.unplayed == []
    return message.to_dict()


def test_an_aiohttp_recorded_cassette_imports_with_plain_header_names_and_replays(tmp_path: Path) -> None:
    source = tmp_path / "aiohttp.yaml"
    source.write_text(AIOHTTP_CASSETTE)
    assert detect_format(source) == VCRPY_YAML
    (written,) = import_paths([source], tmp_path / "out")
    text = written.read_text()
    assert "python/" not in text and KEY not in text
    (interaction,) = import_file(source).interactions
    assert interaction["request"]["headers"] == {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    assert interaction["response"]["headers"]["content-type"] == "application/json"
    assert replay(written) == MESSAGE


@pytest.mark.parametrize("value", [
    "!!python/object/apply:multidict._multidict.istr [!!python/object/apply:os.system ['touch {marker}']]",
    "!!python/object/apply:multidict._multidict.istr [!!python/name:os.system ]",
    "!!python/object/apply:multidict._multidict.istr [a, b]",
    "!!python/object/apply:multidict._multidict.istr {{args: [x]}}",
    "!!python/object/apply:multidict._multidict.istr [[touch, '{marker}']]",
    "!!python/object/apply:multidict._multidict_py.istr [Content-Type]",
], ids=["nested-apply", "nested-name", "two-items", "mapping", "nested-list", "another-module"])
def test_the_istr_constructor_reads_one_string_and_builds_nothing_else(value: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    source = tmp_path / "hostile.yaml"
    hostile_key = f"      ? {value.format(marker=marker)}\n      :"
    source.write_text(AIOHTTP_CASSETTE.replace("      x-api-key:", hostile_key, 1))
    with pytest.raises(HarnessError) as raised:
        import_file(source)
    assert raised.value.file == str(source) and raised.value.where
    assert main(["import", str(source), "--out", str(tmp_path / "out")]) == 2
    assert not marker.exists()


def one_exchange(request_body: object, response_body: object) -> dict[str, object]:
    return {
        "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages",
                    "headers": {"content-type": "application/json", "x-api-key": KEY},
                    "body": request_body},
        "response": {"status": {"code": 200, "message": "OK"},
                     "headers": {"content-type": ["application/json"], "request-id": ["req_011CTq"]},
                     "body": response_body},
    }


@pytest.mark.parametrize("shape", ["text bodies", "parsed bodies"])
def test_a_one_exchange_json_file_imports_and_replays(shape: str, tmp_path: Path) -> None:
    data = (one_exchange(json.dumps(REQUEST), json.dumps(MESSAGE)) if shape == "text bodies"
            else one_exchange(REQUEST, MESSAGE))
    source = tmp_path / "exchange.json"
    source.write_text(json.dumps(data, indent=2))
    assert detect_format(source) == ONE_EXCHANGE_JSON
    (written,) = import_paths([source], tmp_path / "out")
    assert KEY not in written.read_text()
    cassette = import_file(source)
    assert cassette.meta["imported_from"]["format"] == ONE_EXCHANGE_JSON
    assert cassette.interactions[0]["request"]["body"] == REQUEST
    assert replay(written) == MESSAGE


def test_a_one_exchange_file_without_a_status_names_the_place(tmp_path: Path) -> None:
    data = one_exchange(REQUEST, MESSAGE)
    del data["response"]["status"]  # type: ignore[attr-defined]
    source = tmp_path / "exchange.json"
    source.write_text(json.dumps(data))
    with pytest.raises(HarnessError, match=r"\$\.response\.status: no HTTP status"):
        import_file(source)


@pytest.mark.parametrize(("content", "named"), [
    ('{"conversation": [], "model": "x", "meta": {}}', "top-level keys seen: 'conversation', 'model', 'meta'"),
    ('{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7}', "'e' and 2 more"),
    ("[1, 2]", "its top level is a list"),
    ("{}", "an empty mapping"),
])
def test_an_unknown_format_is_named_with_the_first_keys_seen(content: str, named: str, tmp_path: Path) -> None:
    source = tmp_path / "mystery.json"
    source.write_text(content)
    with pytest.raises(HarnessError) as raised:
        import_file(source)
    assert "not a cassette format this importer knows" in raised.value.reason and named in raised.value.reason


UPLOAD_RESPONSE = {"id": "file_011", "type": "file", "filename": "notes.txt", "mime_type": "text/plain",
                   "size_bytes": 6, "created_at": "2025-05-01T00:00:00Z", "downloadable": False}


@pytest.mark.parametrize("encoding", ["base64 string", "raw text"])
def test_a_foreign_files_upload_imports_as_parts_and_replays_through_the_sdk(encoding: str, tmp_path: Path) -> None:
    import base64

    boundary = "a1b2c3d4e5f6"  # whatever the recorder's client chose; replay sends another
    raw = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"notes.txt\"\r\n"
           f"Content-Type: text/plain\r\n\r\nhello\n\r\n--{boundary}--\r\n")
    body = base64.b64encode(raw.encode()).decode() if encoding == "base64 string" else raw
    source = tmp_path / "upload.json"
    source.write_text(json.dumps({"interactions": [{
        "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/files", "body": body,
                    "headers": {"content-type": [f"multipart/form-data; boundary={boundary}"]}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {"content-type": ["application/json"]},
                     "body": {"string": json.dumps(UPLOAD_RESPONSE)}},
    }]}))
    (written,) = import_paths([source], tmp_path / "out")
    request = import_file(source).interactions[0]["request"]
    assert request["headers"]["content-type"] == "multipart/form-data"
    assert [(p["name"], p["filename"], p["text"]) for p in request["parts"]] == [("file", "notes.txt", "hello\n")]
    with use_cassette(written, mode="none") as cassette:
        client = anthropic.Anthropic(api_key="replay", base_url=OFFLINE, max_retries=0)
        uploaded = client.beta.files.upload(file=("notes.txt", b"hello\n", "text/plain"))
    assert uploaded.to_dict(mode="json") == UPLOAD_RESPONSE and cassette.unplayed == []
