"""Every ecosystem's cassettes (issue 27, item 6): Ruby's VCR, go-vcr v4, R's vcr, Go's httprr and vcrpy's
aiohttp `istr` keys in the `new:` form each import, show and replay through the Python SDK; an upload
recorded by another client matches on what the API sees, not on its per-part transport headers.

The files are small ones written here in the shapes the real recorders write (as found in public
repositories: the VCR gem's `!binary` bodies, go-vcr's split status, ellmer's R cassettes with bare
statuses and `fields:` uploads, httprr's length-prefixed raw HTTP from golang.org/x/oscar's source).
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import anthropic
import pytest

from harness import load_trajectory, use_cassette
from harness.cassette.format import load_cassette
from harness.cassette.importer import (
    GO_VCR,
    HTTPRR,
    R_VCR,
    RUBY_VCR,
    VCRPY_YAML,
    detect_format,
    import_file,
    import_paths,
)
from harness.cassette.recorder import CassetteMismatch
from harness.cli import main
from harness.errors import HarnessError

OFFLINE = "http://127.0.0.1:9"
KEY = "sk-ant-api03-ECOSYSTEMkey-" + "e" * 32
REQUEST = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "Name a fruit."}]}
MESSAGE = {
    "id": "msg_01Eco",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "A pear."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 4},
}
STREAM_REQUEST = {**REQUEST, "stream": True}
NOTES = b"Quarterly notes: pears sold well.\n"
FILE = {
    "id": "file_011Eco",
    "type": "file",
    "filename": "notes.txt",
    "mime_type": "text/plain",
    "size_bytes": len(NOTES),
    "created_at": "2025-11-05T22:58:10Z",
    "downloadable": False,
}


def sse_text() -> str:
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    **MESSAGE,
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 12, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "A "}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "pear."}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 4},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def multipart(boundary: str, *, transport_headers: bool) -> bytes:
    """The upload as another client sends it; Ruby's and R's add per-part Content-Length and
    Content-Transfer-Encoding, which the Python SDK never sends."""
    extra = f"Content-Length: {len(NOTES)}\r\nContent-Transfer-Encoding: binary\r\n" if transport_headers else ""
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="notes.txt"\r\n'
        f"Content-Type: text/plain\r\n{extra}\r\n"
    )
    return head.encode() + NOTES + f"\r\n--{boundary}--\r\n".encode()


def b64_block(raw: bytes, indent: int) -> str:
    encoded = base64.b64encode(raw).decode()
    pad = " " * indent
    return "\n".join(pad + encoded[i : i + 60] for i in range(0, len(encoded), 60))


def sdk(base_url: str = OFFLINE) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="replay-key", base_url=base_url, max_retries=0)


def replay_messages(path: Path, *, stream: bool = True, upload: bool = False) -> tuple[dict[str, object], str]:
    """Replay the imported cassette through the SDK, mode none: the message, the streamed text."""
    with use_cassette(path, mode="none") as cassette:
        client = sdk()
        if upload:
            uploaded = client.beta.files.upload(file=("notes.txt", NOTES, "text/plain"))
            assert (uploaded.id, uploaded.size_bytes) == (FILE["id"], FILE["size_bytes"])
        message = client.messages.create(**REQUEST).to_dict()  # type: ignore[call-overload]
        text = ""
        if stream:
            with client.messages.stream(**REQUEST) as streamed:  # type: ignore[call-overload]
                text = streamed.get_final_text()
    assert cassette.unplayed == [], "every recorded exchange was asked for"
    return message, text


def imported(source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> Path:
    """Import, check the format, the key and `harness show`; the written cassette."""
    assert detect_format(source) == kind
    (written,) = import_paths([source], tmp_path / "out")
    assert KEY not in written.read_text(encoding="utf-8")
    assert load_cassette(written).meta["imported_from"]["format"] == kind
    capsys.readouterr()
    assert main(["show", str(written)]) == 0
    shown = capsys.readouterr().out
    assert "A pear." in shown, shown
    assert main(["show", str(source)]) == 0, "show reads the foreign file directly too"
    assert "A pear." in capsys.readouterr().out
    assert load_trajectory(source).steps, "load_trajectory reads it as it reads ours"
    return written


# ---------------------------------------------------------------------------------------------------
# Ruby's VCR gem


RUBY_CASSETTE = f"""\
---
http_interactions:
- request:
    method: post
    uri: https://api.anthropic.com/v1/files
    body:
      encoding: ASCII-8BIT
      string: !binary |-
{b64_block(multipart("----RubyMultipartPost-abc123", transport_headers=True), 8)}
    headers:
      X-Api-Key:
      - {KEY}
      Anthropic-Beta:
      - files-api-2025-04-14
      Content-Type:
      - multipart/form-data; boundary=----RubyMultipartPost-abc123
      User-Agent:
      - Faraday v2.12.2
  response:
    status:
      code: 200
      message: OK
    headers:
      Content-Type:
      - application/json
      Request-Id:
      - req_011RubyUpload
    body:
      encoding: UTF-8
      string: '{json.dumps(FILE)}'
  recorded_at: Wed, 05 Nov 2025 22:58:10 GMT
- request:
    method: post
    uri: https://api.anthropic.com/v1/messages
    body:
      encoding: UTF-8
      string: '{json.dumps(REQUEST)}'
    headers:
      X-Api-Key:
      - {KEY}
      Anthropic-Version:
      - '2023-06-01'
      Content-Type:
      - application/json
  response:
    status:
      code: 200
      message: OK
    headers:
      Content-Type:
      - application/json
      Request-Id:
      - req_011RubyJson
    body:
      encoding: ASCII-8BIT
      string: !binary |-
{b64_block(json.dumps(MESSAGE).encode(), 8)}
  recorded_at: Wed, 05 Nov 2025 22:58:11 GMT
- request:
    method: post
    uri: https://api.anthropic.com/v1/messages
    body:
      encoding: UTF-8
      string: '{json.dumps(STREAM_REQUEST)}'
    headers:
      X-Api-Key:
      - {KEY}
  response:
    status:
      code: 200
      message: OK
    headers:
      Content-Type:
      - text/event-stream; charset=utf-8
    body:
      encoding: UTF-8
      string: {json.dumps(sse_text())}
  recorded_at: Wed, 05 Nov 2025 22:58:12 GMT
recorded_with: VCR 6.3.1
"""


def test_a_ruby_vcr_cassette_imports_shows_and_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "ruby" / "fruit.yml"
    source.parent.mkdir()
    source.write_text(RUBY_CASSETTE, encoding="utf-8")
    written = imported(source, tmp_path, capsys, RUBY_VCR)
    cassette = load_cassette(written)
    upload = cassette.interactions[0]["request"]["parts"][0]
    assert upload["headers"] == {"content-length": str(len(NOTES)), "content-transfer-encoding": "binary"}
    assert cassette.meta["recorded_at"] == "2025-11-05T22:58:10Z"
    assert "events" in cassette.interactions[2]["response"]
    # The SDK's upload has no per-part transport headers: it matches all the same, on what the API sees.
    assert replay_messages(written, upload=True) == (MESSAGE, "A pear.")


# ---------------------------------------------------------------------------------------------------
# go-vcr v4


def go_request(body: dict[str, object]) -> str:
    return f"""\
      request:
        proto: HTTP/1.1
        proto_major: 1
        proto_minor: 1
        content_length: {len(json.dumps(body))}
        transfer_encoding: []
        trailer: {{}}
        host: api.anthropic.com
        remote_addr: ""
        request_uri: ""
        body: '{json.dumps(body)}'
        form: {{}}
        headers:
            Anthropic-Version:
                - "2023-06-01"
            Content-Type:
                - application/json
            User-Agent:
                - Anthropic/Go 1.19.0
            X-Api-Key:
                - {KEY}
        url: https://api.anthropic.com/v1/messages
        method: POST"""


GO_CASSETTE = f"""\
---
version: 2
interactions:
    - id: 0
{go_request(REQUEST)}
      response:
        proto: HTTP/2.0
        proto_major: 2
        proto_minor: 0
        transfer_encoding: []
        trailer: {{}}
        content_length: -1
        uncompressed: true
        body: '{json.dumps(MESSAGE)}'
        headers:
            Content-Type:
                - application/json
            Request-Id:
                - req_011GoJson
        status: 200 OK
        code: 200
        duration: 1.52s
    - id: 1
{go_request(STREAM_REQUEST)}
      response:
        proto: HTTP/2.0
        proto_major: 2
        proto_minor: 0
        transfer_encoding: []
        trailer: {{}}
        content_length: -1
        uncompressed: false
        body: {json.dumps(sse_text())}
        headers:
            Content-Type:
                - text/event-stream; charset=utf-8
        status: 200 OK
        code: 200
        duration: 850ms
"""


def test_a_go_vcr_cassette_imports_shows_and_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "go" / "fruit.yaml"
    source.parent.mkdir()
    source.write_text(GO_CASSETTE, encoding="utf-8")
    written = imported(source, tmp_path, capsys, GO_VCR)
    first, second = load_cassette(written).interactions
    assert first["elapsed_ms"] == 1520.0 and second["elapsed_ms"] == 850.0
    assert first["response"]["headers"]["request-id"] == "req_011GoJson"
    assert replay_messages(written) == (MESSAGE, "A pear.")


def test_a_go_vcr_status_line_alone_still_gives_the_status(tmp_path: Path) -> None:
    source = tmp_path / "go.yaml"
    source.write_text(GO_CASSETTE.replace("        code: 200\n", "", 1), encoding="utf-8")
    assert import_file(source).interactions[0]["response"]["status"] == 200


# ---------------------------------------------------------------------------------------------------
# R's vcr (ellmer's cassettes)


R_CASSETTE = f"""\
http_interactions:
- request:
    method: POST
    uri: https://api.anthropic.com/v1/files
    body:
      fields:
        file:
          path: /Users/someone/project/tests/testthat/notes.txt
          type: text/plain
          name: ~
  response:
    status: 200
    headers:
      date: Wed, 05 Nov 2025 22:58:10 GMT
      content-type: application/json
      content-encoding: gzip
      request-id: req_011RUpload
    body:
      string: '{json.dumps(FILE)}'
  recorded_at: 2025-11-05 22:58:10
- request:
    method: POST
    uri: https://api.anthropic.com/v1/messages
    body:
      string: '{json.dumps(REQUEST)}'
    headers:
      x-api-key: {KEY}
      anthropic-version: '2023-06-01'
  response:
    status: 200
    headers:
      content-type: application/json
      content-encoding: gzip
      request-id: req_011RJson
    body:
      string: '{json.dumps(MESSAGE)}'
  recorded_at: 2025-11-05 22:58:11
- request:
    method: POST
    uri: https://api.anthropic.com/v1/messages
    body:
      encoding: ''
      string: '{json.dumps(STREAM_REQUEST)}'
  response:
    status:
      status_code: '200'
      message: OK
      explanation: Request fulfilled, document follows
    headers:
      status: HTTP/2 200
      content-type: text/event-stream; charset=utf-8
    body:
      encoding: UTF-8
      file: no
      string: {json.dumps(sse_text())}
  recorded_at: 2025-11-05 22:58:12
recorded_with: VCR-vcr/2.0.0
"""


def test_an_r_vcr_cassette_imports_shows_and_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "r" / "anthropic-fruit.yml"
    source.parent.mkdir()
    source.write_text(R_CASSETTE, encoding="utf-8")
    (source.parent / "notes.txt").write_bytes(NOTES)  # the uploaded file, kept beside the cassette by name
    written = imported(source, tmp_path, capsys, R_VCR)
    cassette = load_cassette(written)
    part = cassette.interactions[0]["request"]["parts"][0]
    assert part == {
        "name": "file",
        "filename": "notes.txt",
        "content_type": "text/plain",
        "sha256": hashlib.sha256(NOTES).hexdigest(),
        "size": len(NOTES),
        "text": NOTES.decode(),
    }
    assert "status" not in cassette.interactions[2]["response"]["headers"], "vcr 1.x's status line is no header"
    assert replay_messages(written, upload=True) == (MESSAGE, "A pear.")


def test_an_r_upload_whose_file_is_not_beside_the_cassette_imports_and_misses_naming_the_part(tmp_path: Path) -> None:
    source = tmp_path / "anthropic-fruit.yml"
    source.write_text(R_CASSETTE, encoding="utf-8")
    (written,) = import_paths([source], tmp_path / "out")
    part = load_cassette(written).interactions[0]["request"]["parts"][0]
    assert part["sha256"] == hashlib.sha256(b"").hexdigest() and "text" not in part
    with (
        use_cassette(written, mode="none", on_miss="ignore"),
        pytest.raises(CassetteMismatch, match=r"part 1 'file' \(file 'notes.txt'\): content changed"),
    ):
        sdk().beta.files.upload(file=("notes.txt", NOTES, "text/plain"))


def test_an_r_cassette_never_reads_the_recorded_path_itself(tmp_path: Path) -> None:
    private = tmp_path / "private" / "credentials"
    private.parent.mkdir()
    private.write_text(f"aws_secret_access_key = {'w' * 40}\n")
    source = tmp_path / "cassettes" / "hostile.yml"
    source.parent.mkdir()
    source.write_text(R_CASSETTE.replace("/Users/someone/project/tests/testthat/notes.txt", str(private)))
    part = import_file(source).interactions[0]["request"]["parts"][0]
    assert part["size"] == 0 and "text" not in part and "base64" not in part


# ---------------------------------------------------------------------------------------------------
# Go's httprr


def httprr_record(request: bytes, response: bytes) -> bytes:
    return f"{len(request)} {len(response)}\n".encode() + request + response


def go_wire_request(body: dict[str, object]) -> bytes:
    raw = json.dumps(body, separators=(",", ":")).encode()
    head = (
        "POST https://api.anthropic.com/v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\n"
        f"User-Agent: Go-http-client/1.1\r\nContent-Length: {len(raw)}\r\nAnthropic-Version: 2023-06-01\r\n"
        f"Content-Type: application/json\r\nX-Api-Key: {KEY}\r\n\r\n"
    )
    return head.encode() + raw


def chunked(raw: bytes, size: int = 100) -> bytes:
    pieces = [raw[i : i + size] for i in range(0, len(raw), size)]
    return b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces) + b"0\r\n\r\n"


def httprr_trace() -> bytes:
    message = json.dumps(MESSAGE).encode()
    json_answer = (
        f"HTTP/2.0 200 OK\r\nContent-Length: {len(message)}\r\nContent-Type: application/json\r\n"
        "Request-Id: req_011HttprrJson\r\n\r\n"
    ).encode() + message
    stream_answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"
        + chunked(sse_text().encode())
    )
    return (
        b"httprr trace v1\n"
        + httprr_record(go_wire_request(REQUEST), json_answer)
        + httprr_record(go_wire_request(STREAM_REQUEST), stream_answer)
    )


def test_an_httprr_trace_imports_shows_and_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "testdata" / "TestFruit.httprr"
    source.parent.mkdir()
    source.write_bytes(httprr_trace())
    written = imported(source, tmp_path, capsys, HTTPRR)
    assert written.name == "TestFruit.yaml"
    first, second = load_cassette(written).interactions
    assert first["request"]["body"] == REQUEST and first["response"]["headers"]["request-id"] == "req_011HttprrJson"
    assert second["response"]["events"][0]["event"] == "message_start"
    assert replay_messages(written) == (MESSAGE, "A pear.")


@pytest.mark.parametrize(
    ("cut", "reason"),
    [
        (lambda trace: trace[:-40], "remain (a truncated file)"),
        (lambda trace: trace.replace(b"\n", b"\nxx ", 1)[:60] + trace[60:], "two byte counts"),
        (lambda trace: trace.replace(b"\r\n\r\n", b"\r\n", 1), "no blank line after its headers"),
        (lambda trace: trace.replace(b"HTTP/2.0 200 OK", b"HTTP/2.0 2xx OK", 1), "is not 'HTTP/1.1 200 OK'"),
    ],
    ids=["truncated", "bad-sizes", "no-blank-line", "bad-status"],
)
def test_a_corrupt_httprr_trace_is_an_error_naming_the_record(cut, reason: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "broken.httprr"
    source.write_bytes(cut(httprr_trace()))
    with pytest.raises(HarnessError) as raised:
        import_file(source)
    assert reason in raised.value.reason and raised.value.where.startswith("record ")
    assert raised.value.file == str(source)


# ---------------------------------------------------------------------------------------------------
# vcrpy with aiohttp's istr keys, `new:` form


def istr_new(name: str, indent: str = "      ") -> str:
    return f"? !!python/object/new:multidict._multidict.istr\n{indent}- {name}\n{indent}:"


AIOHTTP_NEW_CASSETTE = f"""\
interactions:
- request:
    body: '{json.dumps(REQUEST)}'
    headers:
      {istr_new("Content-Type")} - application/json
      {istr_new("X-Api-Key")} - {KEY}
    method: POST
    uri: https://api.anthropic.com/v1/messages
  response:
    body:
      string: '{json.dumps(MESSAGE)}'
    headers:
      {istr_new("Content-Type")} - application/json
      ? !!python/object/new:multidict._multidict.istr
        args: [Request-Id]
        state: {{}}
      : - req_011NewForm
    status:
      code: 200
      message: OK
    url: https://api.anthropic.com/v1/messages
version: 1
"""


def test_an_aiohttp_cassette_with_new_form_istr_keys_imports_shows_and_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "aiohttp-new.yaml"
    source.write_text(AIOHTTP_NEW_CASSETTE, encoding="utf-8")
    written = imported(source, tmp_path, capsys, VCRPY_YAML)
    (interaction,) = load_cassette(written).interactions
    assert interaction["request"]["headers"] == {"content-type": "application/json"}
    assert interaction["response"]["headers"]["request-id"] == "req_011NewForm"
    assert replay_messages(written, stream=False) == (MESSAGE, "")


@pytest.mark.parametrize(
    "value",
    [
        "!!python/object/new:multidict._multidict.istr [!!python/object/apply:os.system ['touch {marker}']]",
        "!!python/object/new:multidict._multidict.istr {{args: [x], state: {{a: !!python/name:os.system }}}}",
        "!!python/object/new:multidict._multidict.istr {{args: [x], kwds: {{a: b}}}}",
        "!!python/object/new:multidict._multidict.istr [a, b]",
        "!!python/object/new:os.system ['touch {marker}']",
    ],
    ids=["nested-apply", "state-with-a-name", "extra-key", "two-items", "another-callable"],
)
def test_the_new_form_constructor_reads_one_string_and_builds_nothing_else(value: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    source = tmp_path / "hostile.yaml"
    source.write_text(
        AIOHTTP_NEW_CASSETTE.replace(
            f"      {istr_new('X-Api-Key')}", f"      ? {value.format(marker=marker)}\n      :", 1
        )
    )
    with pytest.raises(HarnessError) as raised:
        import_file(source)
    assert raised.value.file == str(source) and raised.value.where
    assert not marker.exists()


def test_an_httprr_header_line_ending_in_a_bare_lf_is_read_as_go_reads_it(tmp_path: Path) -> None:
    # Traces whose scrubber rewrote a header by hand (langchaingo's) end that line in "\n", not "\r\n".
    trace = httprr_trace()
    size_line = trace.split(b"\n")[1]
    request_size, response_size = (int(n) for n in size_line.split())
    length_line = next(line for line in trace.split(b"\r\n") if line.startswith(b"Content-Length: "))
    hand_scrubbed = trace.replace(length_line + b"\r\n", length_line + b"\n", 1)
    hand_scrubbed = hand_scrubbed.replace(size_line, f"{request_size - 1} {response_size}".encode(), 1)
    source = tmp_path / "scrubbed.httprr"
    source.write_bytes(hand_scrubbed)
    first = import_file(source).interactions[0]
    assert first["request"]["headers"] == {"anthropic-version": "2023-06-01", "content-type": "application/json"}
    assert first["request"]["body"] == REQUEST


def test_a_gzipped_httprr_trace_imports_and_scan_reads_it(tmp_path: Path) -> None:
    import gzip

    from harness.cassette.scan import scan_paths

    source = tmp_path / "testdata" / "TestFruit.httprr.gz"  # langchaingo keeps its traces compressed
    source.parent.mkdir()
    source.write_bytes(gzip.compress(httprr_trace()))
    assert detect_format(source) == HTTPRR
    (written,) = import_paths([source.parent], tmp_path / "out")
    assert written.name == "TestFruit.yaml" and KEY not in written.read_text(encoding="utf-8")
    assert replay_messages(written) == (MESSAGE, "A pear.")
    assert any(finding.kind.startswith("anthropic-key") for finding in scan_paths([source]))
