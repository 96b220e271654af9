"""Every secret field of today's bodies (issue 27, item 5).

- An MCP server's `authorization_token` (and the other fields the SDK's types name as credentials) never
  reaches the disk, whatever its shape, through the recorder, `harness proxy` or `harness import`; an
  echo of it (an MCP tool's error text) goes with it; `harness scan` finds it in every file type it reads.
- The API's opaque values, `signature`, `encrypted_content`, `encrypted_stdout`, `encrypted_index` and
  `redacted_thinking.data`, pass byte for byte through record, import, redaction and replay, even where
  their base64 happens to hold a credential shape that the same text elsewhere would lose.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anthropic
import pytest
import yaml

from harness.cassette.format import load_cassette
from harness.cassette.importer import import_paths
from harness.cassette.recorder import use_cassette
from harness.cassette.redact import redact_interaction, redact_live_request
from harness.cassette.scan import scan_paths
from harness.proxy import RecordingProxy
from tests.loopback_server import loopback_server
from tests.test_secrets import pieces_of

OFFLINE = "http://127.0.0.1:9"
# No digit, no vendor prefix: only its field name says it is a credential.
MCP_TOKEN = "mcp-deepwiki-bearer-token-QWERTYuiopasdfghjklzxcv"
# Opaque values holding what would be credential shapes anywhere else (a Google refresh token, an AWS id).
SIGNATURE = "EqQBCkYIARgCIkB" + "1//0gOPAQUErefreshTokenShape0123456789abcd" + "+AKIAOPAQUESIGNATURE12/Zm9vYmFy=="
ENCRYPTED_CONTENT = "EuMBCioIARgC" + "AKIAOPAQUEENCRYPTED1" + "/1//0gOPAQUEencryptedcontent0123456789xyz=="
ENCRYPTED_STDOUT = "RW5jcnlwdGVk" + "1//0gOPAQUEstdout0123456789abcdefghijk" + "/AKIAOPAQUESTDOUT0001"
ENCRYPTED_INDEX = "Eo8BCioIAhgB" + "1//0gOPAQUEindex0123456789abcdefghijklm=="
REDACTED_DATA = "EmwKAhgBEgy" + "AKIAOPAQUEREDACTED01" + "/1//0gOPAQUEredactedthinking0123456789=="
OPAQUE = (SIGNATURE, ENCRYPTED_CONTENT, ENCRYPTED_STDOUT, ENCRYPTED_INDEX, REDACTED_DATA)
MODEL = "claude-sonnet-4-5"
BETAS = ["mcp-client-2025-11-20"]


def request_body() -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "What are the top-level sections of the ellmer docs?"}],
        "mcp_servers": [
            {"type": "url", "url": "https://mcp.deepwiki.com/mcp", "name": "deepwiki", "authorization_token": MCP_TOKEN}
        ],
    }


def answer() -> dict[str, Any]:
    """A message with every opaque field, and an MCP tool result that echoes the token (as a 401 might)."""
    return {
        "id": "msg_01Opaque",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [
            {"type": "thinking", "thinking": "Look it up.", "signature": SIGNATURE},
            {"type": "redacted_thinking", "data": REDACTED_DATA},
            {
                "type": "mcp_tool_use",
                "id": "mcptoolu_01",
                "name": "read_wiki_structure",
                "server_name": "deepwiki",
                "input": {"repoName": "tidyverse/ellmer"},
            },
            {
                "type": "mcp_tool_result",
                "tool_use_id": "mcptoolu_01",
                "is_error": True,
                "content": [{"type": "text", "text": f"401 Unauthorized: token {MCP_TOKEN} was revoked"}],
            },
            {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "ellmer"}},
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_01",
                "content": [
                    {
                        "type": "web_search_result",
                        "url": "https://ellmer.tidyverse.org",
                        "title": "ellmer",
                        "encrypted_content": ENCRYPTED_CONTENT,
                        "page_age": None,
                    }
                ],
            },
            {"type": "server_tool_use", "id": "srvtoolu_02", "name": "code_execution", "input": {"code": "ls"}},
            {
                "type": "code_execution_tool_result",
                "tool_use_id": "srvtoolu_02",
                "content": {
                    "type": "encrypted_code_execution_result",
                    "content": [],
                    "encrypted_stdout": ENCRYPTED_STDOUT,
                    "return_code": 0,
                    "stderr": "",
                },
            },
            {
                "type": "text",
                "text": "Overview, Core Architecture, Usage Guide.",
                "citations": [
                    {
                        "type": "web_search_result_location",
                        "url": "https://ellmer.tidyverse.org",
                        "title": "ellmer",
                        "cited_text": "Overview",
                        "encrypted_index": ENCRYPTED_INDEX,
                    }
                ],
            },
            {"type": "compaction", "content": "Earlier turns, summarised.", "encrypted_content": ENCRYPTED_CONTENT},
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 884, "output_tokens": 119},
    }


def stream_of(message: dict[str, Any]) -> bytes:
    """The same message streamed: the signature arrives as a signature_delta."""
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}})
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "thinking":
            events += [
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                    },
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "thinking_delta", "thinking": block["thinking"]},
                    },
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "signature_delta", "signature": SIGNATURE},
                    },
                ),
            ]
        else:
            events.append(
                ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 119},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        assert body["mcp_servers"][0]["authorization_token"] == MCP_TOKEN, "the live request carries the token"
        streamed = bool(body.get("stream"))
        raw = stream_of(answer()) if streamed else json.dumps(answer()).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if streamed else "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with loopback_server(_Upstream) as url:
        yield url


def run(base_url: str) -> list[dict[str, Any]]:
    """One JSON call and one streamed call, as the SDK gives them back."""
    client = anthropic.Anthropic(api_key="sk-test-key-for-loopback", base_url=base_url, max_retries=0)
    try:
        created = client.beta.messages.create(**request_body(), betas=BETAS)
        with client.beta.messages.stream(**request_body(), betas=BETAS) as stream:
            streamed = stream.get_final_message()
    finally:
        client.close()
    return [created.to_dict(), streamed.to_dict()]


def opaque_values(message: dict[str, Any]) -> list[str]:
    found: list[str] = []

    def walk(value: Any, holder: dict[str, Any] | None = None, key: str | None = None) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                walk(item, value, name)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif key in ("signature", "encrypted_content", "encrypted_stdout", "encrypted_index") or (
            key == "data" and holder is not None and holder.get("type") == "redacted_thinking"
        ):
            found.append(value)

    walk(message)
    return found


EXPECTED_OPAQUE = [SIGNATURE, REDACTED_DATA, ENCRYPTED_CONTENT, ENCRYPTED_STDOUT, ENCRYPTED_INDEX, ENCRYPTED_CONTENT]


def assert_no_token_in(folder: Path) -> None:
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert files
    for path in files:
        raw = path.read_bytes()
        for piece in pieces_of(MCP_TOKEN):
            assert piece not in raw, f"{piece!r} of the MCP token reached {path}"


def assert_opaque_kept(path: Path) -> None:
    """Each opaque value is on disk exactly as the API sent it, in the JSON answer and in the stream."""
    text = path.read_text(encoding="utf-8")
    for value in OPAQUE:
        assert value in text, f"{value[:20]}… was altered on disk"
    json_answer, streamed = (interaction["response"] for interaction in load_cassette(path).interactions)
    assert opaque_values(json_answer["body"]) == EXPECTED_OPAQUE
    signatures = [
        event["data"]["delta"]["signature"]
        for event in streamed["events"]
        if event["data"].get("delta", {}).get("type") == "signature_delta"
    ]
    assert signatures == [SIGNATURE]


# ---------------------------------------------------------------------------------------------------
# The recorder, the proxy, the importer


def test_an_mcp_token_is_not_on_disk_after_recording_and_opaque_values_replay_byte_for_byte(
    upstream: str, tmp_path: Path
) -> None:
    path = tmp_path / "recorded" / "mcp.yaml"
    with use_cassette(path, mode="once"):
        live = run(upstream)
    assert [opaque_values(message) for message in live] == [EXPECTED_OPAQUE] * 2
    assert_no_token_in(path.parent)
    assert_opaque_kept(path)
    stored = load_cassette(path).interactions[0]
    assert stored["request"]["body"]["mcp_servers"][0]["authorization_token"] == "<redacted:authorization-token:1>"
    echoed = stored["response"]["body"]["content"][3]["content"][0]["text"]
    assert echoed == "401 Unauthorized: token <redacted:authorization-token:1> was revoked", "its echo goes too"

    # Replay redacts the live request's token the same way, so it matches; the SDK gets the opaque values back.
    with use_cassette(path, mode="none") as cassette:
        replayed = run(OFFLINE)
    assert cassette.unplayed == []
    assert [opaque_values(message) for message in replayed] == [EXPECTED_OPAQUE] * 2


def test_an_mcp_token_is_not_on_disk_after_proxying_and_opaque_values_are_kept(upstream: str, tmp_path: Path) -> None:
    path = tmp_path / "proxied" / "mcp.yaml"
    with RecordingProxy(upstream, path, mode="once") as proxy:
        run(proxy.base_url)
    assert_no_token_in(path.parent)
    assert_opaque_kept(path)


def vcrpy_cassette() -> dict[str, Any]:
    def interaction(stream: bool) -> dict[str, Any]:
        body = {**request_body(), "stream": True} if stream else request_body()
        return {
            "request": {
                "method": "POST",
                "uri": "https://api.anthropic.com/v1/messages?beta=true",
                "body": json.dumps(body),
                "headers": {"content-type": ["application/json"], "anthropic-beta": BETAS},
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": ["text/event-stream" if stream else "application/json"]},
                "body": {"string": (stream_of(answer()).decode() if stream else json.dumps(answer()))},
            },
        }

    return {"interactions": [interaction(False), interaction(True)], "version": 1}


def test_an_mcp_token_is_not_on_disk_after_importing_and_the_import_replays(tmp_path: Path) -> None:
    source = tmp_path / "foreign" / "mcp.yaml"
    source.parent.mkdir()
    source.write_text(yaml.safe_dump(vcrpy_cassette()), encoding="utf-8")
    assert MCP_TOKEN in source.read_text()
    [written] = import_paths([source], tmp_path / "imported")
    assert_no_token_in(tmp_path / "imported")
    assert_opaque_kept(written)
    with use_cassette(written, mode="none") as cassette:
        replayed = run(OFFLINE)
    assert cassette.unplayed == [] and [opaque_values(m) for m in replayed] == [EXPECTED_OPAQUE] * 2


def test_redaction_leaves_opaque_values_alone_where_the_same_text_elsewhere_is_redacted() -> None:
    message = answer()
    message["content"].append({"type": "text", "text": f"leaked: {SIGNATURE}"})  # the same text, not opaque
    interaction = {
        "request": {"method": "POST", "path": "/v1/messages", "body": request_body()},
        "response": {"status": 200, "body": message},
    }
    before = copy.deepcopy(interaction)
    redacted = redact_interaction(interaction, position=0)
    assert redacted is not None and interaction == before, "redaction works on a copy"
    assert opaque_values(redacted["response"]["body"]) == EXPECTED_OPAQUE
    leaked = redacted["response"]["body"]["content"][-1]["text"]
    assert "AKIAOPAQUESIGNATURE12" not in leaked and "<redacted:aws-access-key-id:1>" in leaked, "the shapes are live"
    # The live side of replay: the same request redacts to the same body, so it matches.
    _, live = redact_live_request("", request_body(), raw=json.dumps(request_body()).encode())
    assert live == redacted["request"]["body"]


@pytest.mark.parametrize(
    ("field", "holder", "kind"),
    [
        (
            "authorization_token",
            {"type": "url", "name": "deepwiki", "url": "https://mcp.example.com"},
            "authorization-token",
        ),
        ("authorization_token", {"type": "github_repository", "url": "https://github.com/o/r"}, "authorization-token"),
        ("secret_value", {"type": "environment_variable", "secret_name": "DB_PASSWORD"}, "secret-value"),
        ("token", {"type": "static_bearer", "mcp_server_url": "https://mcp.example.com"}, "bearer-token"),
        ("access_token", {"type": "mcp_oauth", "mcp_server_url": "https://mcp.example.com"}, "access-token"),
        ("refresh_token", {"client_id": "client", "token_endpoint": "https://auth.example.com/token"}, "refresh-token"),
        ("client_secret", {"type": "client_secret_post"}, "client-secret"),
        ("signing_secret", {"id": "whep_01"}, "signing-secret"),
        ("tunnel_token", {"type": "tunnel_token", "id": "tun_01"}, "tunnel-token"),
    ],
)
def test_each_credential_field_of_the_sdks_types_is_redacted_whatever_its_shape(
    field: str, holder: dict[str, Any], kind: str
) -> None:
    value = "plainlettersonly-noshape"
    body = {"params": [{**holder, field: value}], "echo": f"the server said {value}"}
    redacted = redact_interaction({"request": {"method": "POST", "path": "/v1/x", "body": body}}, position=0)
    assert redacted is not None
    assert redacted["request"]["body"] == {
        "params": [{**holder, field: f"<redacted:{kind}:1>"}],
        "echo": f"the server said <redacted:{kind}:1>",
    }


def test_a_short_tool_argument_named_like_a_field_is_not_a_credential() -> None:
    # Below the minimum length a value is an argument (`"token": "abc"`), not a credential.
    body = {"input": {"access_token": "abc", "password": "radiance"}}
    redacted = redact_interaction({"request": {"method": "POST", "path": "/v1/x", "body": body}}, position=0)
    assert redacted is not None and redacted["request"]["body"] == body


# ---------------------------------------------------------------------------------------------------
# harness scan, in every file type it reads


def httprr_trace() -> bytes:
    body = json.dumps(request_body()).encode()
    request = (
        f"POST https://api.anthropic.com/v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\n"
        f"Content-Length: {len(body)}\r\nContent-Type: application/json\r\n\r\n"
    ).encode() + body
    response = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + json.dumps(answer()).encode()
    return b"httprr trace v1\n" + f"{len(request)} {len(response)}\n".encode() + request + response


@pytest.mark.parametrize("name", ["run.yaml", "run.json", "run.har", "TestRun.httprr", "run.yaml.gz", "ruby.yml"])
def test_scan_finds_an_mcp_token_in_every_file_type(name: str, tmp_path: Path) -> None:
    import gzip

    cassette = vcrpy_cassette()
    path = tmp_path / name
    if name.endswith(".httprr"):
        path.write_bytes(httprr_trace())
    elif name == "run.json":
        path.write_text(json.dumps(cassette))
    elif name == "run.har":
        entries = [
            {
                "request": {
                    "method": "POST",
                    "url": "https://api.anthropic.com/v1/messages",
                    "headers": [],
                    "postData": {"mimeType": "application/json", "text": i["request"]["body"]},
                },
                "response": {
                    "status": 200,
                    "headers": [],
                    "content": {"mimeType": "application/json", "text": i["response"]["body"]["string"]},
                },
            }
            for i in cassette["interactions"]
        ]
        path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    elif name.endswith(".gz"):
        path.write_bytes(gzip.compress(yaml.safe_dump(cassette).encode()))
    else:  # Ruby's VCR keeps a body it thinks binary as `!binary` base64: only the decoded body shows the token
        import base64

        encoded = base64.b64encode(json.dumps(request_body()).encode()).decode()
        path.write_text(
            "http_interactions:\n- request:\n    method: post\n    uri: https://api.anthropic.com/v1/messages\n"
            f"    body:\n      encoding: ASCII-8BIT\n      string: !binary |-\n        {encoded}\n"
            "recorded_with: VCR 6.3.1\n"
        )
    findings = scan_paths([path])
    assert any(f.kind.startswith("credential-field") for f in findings), findings
    assert all(MCP_TOKEN not in str(f) for f in findings), "scan never prints the secret itself"
    assert not any(value[:10] in str(f) for f in findings for value in OPAQUE if f.kind.startswith("credential-field"))


def test_scan_flags_nothing_in_a_redacted_recording(upstream: str, tmp_path: Path) -> None:
    path = tmp_path / "mcp.yaml"
    with use_cassette(path, mode="once"):
        run(upstream)
    assert not [f for f in scan_paths([path]) if f.kind.startswith("credential-field")]


def test_scan_finds_a_key_an_httprr_stream_cuts_across_deltas_and_chunks(tmp_path: Path) -> None:
    key = "sk-ant-api03-STREAMEDhttprr-" + "z" * 30
    deltas = [key[i : i + 9] for i in range(0, len(key), 9)]
    events = [
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
    ]
    events += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
        )
        for piece in deltas
    ]
    sse = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
    chunked = (
        b"".join(f"{len(sse[i : i + 50]):x}\r\n".encode() + sse[i : i + 50] + b"\r\n" for i in range(0, len(sse), 50))
        + b"0\r\n\r\n"
    )
    request = b"POST https://api.anthropic.com/v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n"
    response = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n" + chunked
    path = tmp_path / "TestStream.httprr"
    path.write_bytes(b"httprr trace v1\n" + f"{len(request)} {len(response)}\n".encode() + request + response)
    assert key.encode() not in path.read_bytes(), "no raw pass can see it"
    findings = scan_paths([path])
    assert [f.kind for f in findings] == ["anthropic-key (in a joined stream)"], findings
