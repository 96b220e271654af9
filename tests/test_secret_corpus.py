"""A corpus of planted credentials, one per form and place, and of innocent look-alikes.

Forms: every credential the run itself sends (x-api-key, Bearer, anthropic-admin-api-key, x-goog-api-key,
x-amz-security-token, a SigV4 access key id, `?key=`, a header the user names; by the first-party, Vertex
and Bedrock clients), each of an odd shape so that only the exact-value scrub can catch it; and vendor
shapes in bodies (AWS ids, secret keys and session tokens, GCP tokens and keys, Google client secrets and
refresh tokens, PEM keys, GitHub, OpenAI, Slack, JWT, Anthropic).

Places: the prompt, a tool_result, a base64 document block, the query, a JSON answer, an SSE answer whose
key begins in content_block_start and ends in the deltas, a binary upload and download, and (imported)
gzip `!!binary` and HAR base64 bodies, a token refresh and a cloud metadata fetch.

The recorder, the proxy and the importer must write none of it (no 12-character piece, raw, base64-decoded
or joined across a stream); the look-alikes must reach the disk as they were; `harness scan` must find each
planted form in a raw file of every form it reads and flag no look-alike.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anthropic
import pytest
import yaml

from harness.cassette.format import load_cassette
from harness.cassette.importer import import_paths
from harness.cassette.recorder import CassetteMismatch, use_cassette
from harness.cassette.scan import scan_paths
from harness.proxy import RecordingProxy
from tests.loopback_server import loopback_server
from tests.test_secrets import _base64_bodies, _streamed_texts, pieces_of

MODEL = "claude-sonnet-5"

# Vendor shapes, each in the context that makes it one (an AWS secret key is 40 base64 characters: only
# its field name tells it from any other). kind -> (the secret, the text it is planted in).
_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiPLANTED0KEY1"
_SESSION = "IQoJb3JpZ2luX2VjEPLANTEDsessiontoken" + "Zm9vYmFyYmF6cXV4" * 6
_PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0PLANTEDprivatekeyZm9vYmFy\n"
        "YmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg==\n-----END RSA PRIVATE KEY-----")
SHAPES: dict[str, tuple[str, str]] = {
    "anthropic-key": ("sk-ant-api03-CORPUSkey-Xq7vY2pL9sR4tY8wZ1nB6cD3fG5hJ0kAb", "{}"),
    "aws-access-key-id": ("AKIAQ4PLANTEDZ7X2Y3W", "access key {}"),
    "aws-temporary-key-id": ("ASIAQ4PLANTEDZ7X2Y3V", "temporary key {}"),
    "aws-secret-key": (_AWS_SECRET, "aws_secret_access_key = {}"),
    "aws-session-token": (_SESSION, "aws_session_token={}"),
    "gcp-access-token": ("ya29.a0AfB_byPLANTEDgcpaccesstoken0123456789", "{}"),
    "google-api-key": ("AIzaSyPLANTED0123456789abcdefghijklmnop", "{}"),
    "google-client-secret": ("GOCSPX-PLANTEDclientsecret01234", "{}"),
    "google-refresh-token": ("1//0gPLANTEDrefreshtoken0123456789abcdefgh", "{}"),
    "private-key": (_PEM, "{}"),
    "github-token": ("ghp_PLANTEDgithub0123456789abcdefghijklm", "{}"),
    "github-fine-grained": ("github_pat_11PLANTED0123456789_abcdefghijklmnopqrstuvwxyz", "{}"),
    "openai-key": ("sk-proj-PLANTEDopenai0123456789abcdefghijklmnop", "{}"),
    "slack-token": ("xoxb-123456789012-1234567890123-PLANTEDslack0123", "{}"),
    "jwt": ("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJQTEFOVEVEIn0.c2lnbmF0dXJlUExBTlRFRDAxMjM0NTY3ODk", "{}"),
    # HTTP Basic credentials (user:password in base64) as a tool echoes a request's headers.
    "basic-auth": ("cGxhbnRlZDpQTEFOVEVELWJhc2ljLTAwMTE=", "Authorization: Basic {}"),
}
SHAPE_TEXT = "\n".join(template.format(secret) for secret, template in SHAPES.values())

# What the run itself sends: odd shapes, so nothing but the exact-value scrub removes their echoes.
SENT = {
    "x-api-key": "PLANTED-sent-xapikey-0001",
    "bearer": "PLANTED-sent-bearer-0002",
    "anthropic-admin-api-key": "PLANTED-sent-admin-0003",
    "x-goog-api-key": "PLANTED-sent-googkey-0004",
    "x-amz-security-token": "PLANTED-sent-amztoken-0005",
    "sigv4": "PLANTEDSIGV4KEYID0006",
    "query": "PLANTED-sent-querykey-0007",
    "x-my-gateway-key": "PLANTED-sent-custom-0008",
    "vertex": "PLANTED-sent-vertex-0009",
    "bedrock": "PLANTED-sent-bedrock-0010",
}
SIGV4 = (f"AWS4-HMAC-SHA256 Credential={SENT['sigv4']}/20261130/us-east-1/bedrock/aws4_request, "
         "SignedHeaders=host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7")
PLANTED = [secret for secret, _ in SHAPES.values()] + list(SENT.values())

# Look-alikes: prose and ids that share a word or a shape with a credential, and must be left alone.
LOOK_ALIKES = [
    "Bearer authentication sends the token in a header; see RFC 6750 for Bearer tokens.",
    "George joined on 3f6c2a9e-8b1d-4e7a-9c5f-1a2b3c4d5e6f and forgot his password again.",
    "The organic farm's api key rotation policy is documented; a token budget of 4096 applies.",
    "sk-learn is not a key; AKIA alone is not either; neither is ya29 or the word secret_access_key.",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8, request req_011CWbzicpaYMyAiiXobLkzi",
    "password: correct horse battery staple",
    "Basic authentication (RFC 7617) is the basic plan; Basic Plan 2026 costs less.",
]
LOOK_ALIKE_TEXT = "\n".join(LOOK_ALIKES)


def echo_text(headers: dict[str, str], query: str) -> str:
    """What the upstream answers: every credential the request carried, and every shape, back."""
    sent = [value for name, value in headers.items()
            if name in ("x-api-key", "anthropic-admin-api-key", "x-goog-api-key", "x-amz-security-token",
                        "x-my-gateway-key")]
    authorization = headers.get("authorization", "")
    sent.append(authorization.split(" ", 1)[-1])
    if authorization.startswith("AWS4-"):
        sent.append(SENT["sigv4"])
    sent.extend(value for _, value in parse_qsl(query))
    return f"{SHAPES['anthropic-key'][0]} is your key. You sent {' and '.join(sent)}.\n{SHAPE_TEXT}"


def message(text: str) -> dict[str, Any]:
    return {"id": "msg_01", "type": "message", "role": "assistant", "model": MODEL,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10}}


def sse(text: str) -> bytes:
    """A stream whose key starts in content_block_start (11 characters) and ends across 7-character deltas."""
    pieces = [text[index:index + 7] for index in range(11, len(text), 7)]
    events = [("message_start", {"type": "message_start", "message": {**message(""), "content": [],
                                                                      "stop_reason": None}}),
              ("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": text[:11]}}),
              *[("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": piece}}) for piece in pieces],
              ("content_block_stop", {"type": "content_block_stop", "index": 0}),
              ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                 "usage": {"output_tokens": 10}}),
              ("message_stop", {"type": "message_stop"})]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


BINARY = b"\xff\xfe\x00PK\x03\x04" + SHAPES["anthropic-key"][0].encode() + b"\x00\xff" + SENT["x-api-key"].encode()
FILE_META = {"id": "file_01", "type": "file", "filename": "keys.bin", "mime_type": "application/octet-stream",
             "size_bytes": len(BINARY), "created_at": "2026-11-30T00:00:00Z", "downloadable": True}


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, content_type: str, raw: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("request-id", "req_011PLANTEDcorpus")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        self._send(200, "application/octet-stream", BINARY)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["content-length"]))
        url = urlsplit(self.path)
        if url.path.startswith("/v1/files"):
            self._send(200, "application/json", json.dumps(FILE_META).encode())
            return
        body = json.loads(raw)
        text = echo_text({k.lower(): v for k, v in self.headers.items()}, url.query)
        if body.get("stream") or url.path.endswith(":streamRawPredict"):
            self._send(200, "text/event-stream", sse(text))
        else:
            self._send(200, "application/json", json.dumps(message(text)).encode())


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with loopback_server(_Upstream) as url:
        yield url


def prompt() -> list[dict[str, Any]]:
    """A user turn holding every shape and the sent x-api-key, in text, a tool_result and a text document."""
    document = base64.b64encode(f"keys.txt\n{SHAPE_TEXT}\n{SENT['x-api-key']}".encode()).decode()
    return [
        {"role": "user", "content": f"My setup:\n{SHAPE_TEXT}\nand {SENT['x-api-key']}\n{LOOK_ALIKE_TEXT}"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "read_env", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": SHAPE_TEXT},
            {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": document}},
        ]},
    ]


def run(base_url: str, *, files: bool = True) -> list[str]:
    """One run with every client and every credential form; the texts it got back."""
    request = {"model": MODEL, "max_tokens": 64, "messages": prompt()}
    extra = {"anthropic-admin-api-key": SENT["anthropic-admin-api-key"], "x-goog-api-key": SENT["x-goog-api-key"],
             "x-amz-security-token": SENT["x-amz-security-token"], "x-my-gateway-key": SENT["x-my-gateway-key"]}
    keyed = anthropic.Anthropic(api_key=SENT["x-api-key"], base_url=base_url, max_retries=0, default_headers=extra,
                                default_query={"key": SENT["query"]})
    bearer = anthropic.Anthropic(api_key=None, auth_token=SENT["bearer"], base_url=base_url, max_retries=0)
    signed = anthropic.Anthropic(api_key=None, base_url=base_url, max_retries=0,
                                 default_headers={"Authorization": SIGV4})
    vertex = anthropic.AnthropicVertex(region="us-east5", project_id="proj", access_token=SENT["vertex"],
                                       base_url=base_url, max_retries=0)
    bedrock = anthropic.AnthropicBedrock(api_key=SENT["bedrock"], aws_region="us-east-1", base_url=base_url,
                                         max_retries=0)
    texts = [keyed.messages.create(**request).content[0].text]
    with bearer.messages.stream(**request) as stream:
        texts.append(stream.get_final_text())
    texts.append(signed.messages.create(**request).content[0].text)
    texts.append(vertex.messages.create(**request).content[0].text)
    texts.append(bedrock.messages.create(**request).content[0].text)
    if files:  # multipart bodies have a random boundary: matching them on replay is another issue's
        keyed.beta.files.upload(file=("keys.bin", BINARY, "application/octet-stream"))
        texts.append(keyed.beta.files.download("file_01").read().decode("latin-1"))
    for client in (keyed, bearer, signed, vertex, bedrock):
        client.close()
    return texts


def assert_nothing_planted_in(folder: Path) -> None:
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert files, f"nothing was written to {folder}"
    for path in files:
        raw = path.read_bytes()
        hidden = [base64.b64decode(chunk) for chunk in _base64_bodies(raw)] + _streamed_texts(raw)
        hidden += [_joined_with_start(raw)]
        for secret in PLANTED:
            for piece in pieces_of(secret):
                assert piece not in raw, f"{piece!r} of {secret[:12]}… reached {path}"
                assert all(piece not in body for body in hidden), f"{piece!r} of {secret[:12]}… is hidden in {path}"


def _joined_with_start(raw: bytes) -> bytes:
    """Every stream's text as the client joins it: the block start's text, then the deltas."""
    data = yaml.safe_load(raw) if raw.lstrip()[:1] not in (b"{", b"[") else json.loads(raw)
    joined = []
    for interaction in (data or {}).get("interactions") or [] if isinstance(data, dict) else []:
        for event in (interaction.get("response") or {}).get("events") or []:
            payload = event.get("data") if isinstance(event, dict) else None
            if isinstance(payload, dict):
                holder = payload.get("content_block") or payload.get("delta") or {}
                joined.append(str(holder.get("text") or ""))
    return "".join(joined).encode()


def assert_look_alikes_kept(path: Path, look_alikes: list[str] = LOOK_ALIKES) -> None:
    text = json.dumps(load_cassette(path).to_data()["interactions"], ensure_ascii=False)
    for look_alike in look_alikes:
        assert json.dumps(look_alike)[1:-1] in text, f"{look_alike!r} was rewritten"


# ---------------------------------------------------------------------------------------------------
# The recorder and the proxy


def test_the_recorder_writes_no_planted_form_and_the_run_replays(upstream: str, tmp_path: Path) -> None:
    folder = tmp_path / "recorded"
    with use_cassette(folder / "run.yaml", mode="once", secret_headers=["x-my-gateway-key"]):
        live = run(upstream)
    assert SHAPES["anthropic-key"][0] in live[1] and SENT["bearer"] in live[1], "the live stream carried them"
    assert_nothing_planted_in(folder)
    assert_look_alikes_kept(folder / "run.yaml")
    text = (folder / "run.yaml").read_text(encoding="utf-8")
    assert "<redacted:aws-secret-key:1>" in text and "<redacted:credential:" in text
    assert "req_011PLANTEDcorpus" in text, "request ids are kept"

    # The prompt held every shape: redacted the same way before matching, the run replays with no miss.
    with use_cassette(folder / "run.yaml", mode="none", secret_headers=["x-my-gateway-key"]) as cassette:
        replayed = run("http://127.0.0.1:9", files=False)
    assert all("<redacted:anthropic-key:1> is your key" in text for text in replayed)
    assert cassette.unplayed == [5, 6], "only the file upload and download (not replayed here) are left"


def test_the_proxy_writes_no_planted_form(upstream: str, tmp_path: Path) -> None:
    folder = tmp_path / "proxied"
    with RecordingProxy(upstream, folder / "run.yaml", mode="once",
                        secret_headers=["x-my-gateway-key"]) as proxy:
        run(proxy.base_url)
    assert_nothing_planted_in(folder)
    assert_look_alikes_kept(folder / "run.yaml")


def test_a_miss_never_shows_the_live_secret(upstream: str, tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with use_cassette(path, mode="once"):
        run(upstream, files=False)
    changed = anthropic.Anthropic(api_key="replay-key", base_url="http://127.0.0.1:9", max_retries=0)
    new_key = "sk-ant-api03-NEVERRECORDED-" + "q" * 30
    with use_cassette(path, mode="none", on_miss="ignore"), pytest.raises(CassetteMismatch) as miss:
        changed.messages.create(model=MODEL, max_tokens=64,
                                messages=[{"role": "user", "content": f"My setup: {new_key} {SHAPE_TEXT}"}])
    assert "<redacted:anthropic-key:" in str(miss.value), "the diff shows the placeholder ..."
    for secret in [new_key, *PLANTED]:
        assert secret[:16] not in str(miss.value), "... never the live secret"


# ---------------------------------------------------------------------------------------------------
# The importer: a Vertex run that also recorded google-auth's refresh and an AWS metadata fetch


def foreign_exchanges() -> list[dict[str, Any]]:
    token_refresh = ("grant_type=refresh_token&client_id=1234.apps.googleusercontent.com&client_secret="
                     f"{SHAPES['google-client-secret'][0]}&refresh_token=1%2F%2F0gPLANTEDrefreshtoken0123456789abcdefgh")
    refreshed = {"access_token": SHAPES["gcp-access-token"][0], "expires_in": 3599, "token_type": "Bearer",
                 "id_token": SHAPES["jwt"][0]}
    metadata = {"Code": "Success", "AccessKeyId": SHAPES["aws-temporary-key-id"][0],
                "SecretAccessKey": _AWS_SECRET, "Token": _SESSION, "Expiration": "2026-11-30T12:00:00Z"}
    vertex = "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/models"
    headers = {"authorization": f"Bearer {SENT['vertex']}", "x-goog-api-key": SENT["x-goog-api-key"],
               "x-my-gateway-key": SENT["x-my-gateway-key"]}
    request = json.dumps({"anthropic_version": "vertex-2023-10-16", "max_tokens": 64, "messages": prompt()})
    streamed = json.dumps({"anthropic_version": "vertex-2023-10-16", "max_tokens": 64, "messages": prompt(),
                           "stream": True})
    text = echo_text(headers, f"key={SENT['query']}")
    return [
        {"method": "POST", "uri": "https://oauth2.googleapis.com/token", "headers": {}, "body": token_refresh,
         "content_type": "application/json", "response": json.dumps(refreshed).encode()},
        {"method": "GET", "uri": "http://169.254.169.254/latest/meta-data/iam/security-credentials/role",
         "headers": {}, "body": None, "content_type": "text/plain", "response": json.dumps(metadata).encode()},
        {"method": "POST", "uri": f"{vertex}/{MODEL}:rawPredict", "headers": headers, "body": request,
         "content_type": "application/json", "response": json.dumps(message(text)).encode(), "gzip": True},
        {"method": "POST", "uri": f"{vertex}/{MODEL}:streamRawPredict?key={SENT['query']}", "headers": headers,
         "body": streamed, "content_type": "text/event-stream", "response": sse(text)},
        {"method": "POST", "uri": "https://api.anthropic.com/v1/files", "headers": {"x-api-key": SENT["x-api-key"]},
         "body": b"--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n" + BINARY + b"\r\n--b--\r\n",
         "content_type": "application/json", "response": json.dumps(FILE_META).encode()},
        {"method": "GET", "uri": "https://api.anthropic.com/v1/files/file_01/content",
         "headers": {"x-api-key": SENT["x-api-key"]}, "body": None, "content_type": "application/octet-stream",
         "response": BINARY},
    ]


def write_vcrpy(path: Path) -> None:
    interactions = []
    for x in foreign_exchanges():
        response_headers = {"Content-Type": [x["content_type"]], "request-id": ["req_011PLANTEDcorpus"]}
        body = x["response"]
        if x.get("gzip"):
            body = gzip.compress(body)
            response_headers["Content-Encoding"] = ["gzip"]
        interactions.append({
            "request": {"method": x["method"], "uri": x["uri"], "body": x["body"],
                        "headers": {name: [value] for name, value in x["headers"].items()}},
            "response": {"status": {"code": 200, "message": "OK"}, "headers": response_headers,
                         "body": {"string": body if isinstance(body, bytes) and not _utf8(body) else body.decode()}},
        })
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}), encoding="utf-8")


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def write_har(path: Path) -> None:
    entries = []
    for x in foreign_exchanges():
        body = x["body"]
        post = None if body is None else {"mimeType": "application/octet-stream",
                                          "text": body if isinstance(body, str) else body.decode("latin-1")}
        entries.append({
            "startedDateTime": "2026-11-30T07:00:00Z", "time": 10,
            "request": {"method": x["method"], "url": x["uri"], "postData": post,
                        "headers": [{"name": n, "value": v} for n, v in x["headers"].items()]},
            "response": {"status": 200, "headers": [{"name": "content-type", "value": x["content_type"]}],
                         "content": {"mimeType": x["content_type"], "encoding": "base64",
                                     "text": base64.b64encode(x["response"]).decode()}},
        })
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}), encoding="utf-8")


@pytest.mark.parametrize("writer", [write_vcrpy, write_har], ids=["vcrpy", "har"])
def test_the_importer_writes_no_planted_form(writer: Any, tmp_path: Path) -> None:
    source = tmp_path / "foreign" / ("run.har" if writer is write_har else "run.yaml")
    source.parent.mkdir()
    writer(source)
    assert scan_paths([source]), "precondition: the foreign file holds the planted forms"

    [written] = import_paths([source], tmp_path / "default", secret_headers=["x-my-gateway-key"])
    cassette = load_cassette(written)
    assert [i["request"]["host"] for i in cassette.interactions][-2:] == ["api.anthropic.com"] * 2
    assert len(cassette.interactions) == 4, "the token refresh and the metadata fetch are left out ..."
    assert cassette.meta["note"].startswith("skipped 2 non-Anthropic interaction(s)"), "... and counted"
    assert_nothing_planted_in(tmp_path / "default")

    [kept] = import_paths([source], tmp_path / "kept", keep_foreign_hosts=True, secret_headers=["x-my-gateway-key"])
    assert len(load_cassette(kept).interactions) == 6, "kept on request, and scrubbed"
    assert_nothing_planted_in(tmp_path / "kept")


# ---------------------------------------------------------------------------------------------------
# harness scan: each planted form in every file form it reads; no look-alike


def _stream_yaml(text: str) -> str:
    return yaml.safe_dump({"interactions": [{
        "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages", "body": "{}", "headers": {}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {"Content-Type": ["text/event-stream"]},
                     "body": {"string": sse(text).decode()}}}]})


def raw_forms(text: str) -> dict[str, bytes]:
    """`text` planted in each file form scan reads: name -> bytes."""
    har = {"log": {"version": "1.2", "entries": [{"request": {"method": "GET", "url": "https://x.test/"},
                                                 "response": {"status": 200, "content": {
                                                     "mimeType": "text/plain", "encoding": "base64",
                                                     "text": base64.b64encode(text.encode()).decode()}}}]}}
    binary = yaml.safe_dump({"interactions": [{"response": {"body": {"string": gzip.compress(text.encode())}}}]})
    return {
        "plain.YAML": yaml.safe_dump({"text": text}).encode(),
        "base64.har": json.dumps(har).encode(),
        "gzip-binary.yaml": binary.encode(),
        "whole.yaml.gz": gzip.compress(yaml.safe_dump({"text": text}).encode()),
        "split-stream.yml": _stream_yaml(f"{text} ").encode(),
        "plain.JSON": json.dumps({"text": text}).encode(),
    }


@pytest.mark.parametrize("kind", list(SHAPES))
def test_scan_finds_each_planted_form_in_every_file_form(kind: str, tmp_path: Path) -> None:
    secret, template = SHAPES[kind]
    for name, raw in raw_forms(template.format(secret)).items():
        (tmp_path / name).write_bytes(raw)
    flagged = {finding.file.name for finding in scan_paths([tmp_path])}
    assert flagged == set(raw_forms("x")), f"{kind} was missed in {set(raw_forms('x')) - flagged}"


def test_scan_finds_a_key_split_across_a_foreign_stream_and_names_its_line(tmp_path: Path) -> None:
    key = SHAPES["anthropic-key"][0]
    path = tmp_path / "stream.yaml"
    path.write_text(_stream_yaml(f"{key} and more"), encoding="utf-8")
    assert key not in path.read_text(encoding="utf-8"), "precondition: no line holds the whole key"
    [finding] = scan_paths([path])
    assert finding.kind == "anthropic-key (in a joined stream)" and finding.line > 1
    assert key not in str(finding)


def test_scan_flags_no_look_alike(tmp_path: Path) -> None:
    for name, raw in raw_forms(LOOK_ALIKE_TEXT).items():
        (tmp_path / name).write_bytes(raw)
    assert scan_paths([tmp_path]) == []


def test_a_prompt_holding_a_key_and_look_alikes_records_replays_and_evaluates(tmp_path: Path) -> None:
    """Against the simulator: the prompt holds an sk-ant key, "Bearer authentication" prose and a name beside
    a UUID; the recording redacts the key only, replays in mode none, and its trajectory evaluates."""
    from harness.sim import Simulator
    from harness.testing import assert_trajectory

    key = SHAPES["anthropic-key"][0]
    content = f"Check my key {key}. {LOOK_ALIKES[0]} {LOOK_ALIKES[1]}"
    path = tmp_path / "run.yaml"

    def ask(base_url: str) -> str:
        client = anthropic.Anthropic(api_key="sim", base_url=base_url, max_retries=0)
        reply = client.messages.create(model="sim-echo", max_tokens=256,
                                       messages=[{"role": "user", "content": content}])
        return reply.content[0].text

    with Simulator() as sim, use_cassette(path, mode="once"):
        live = ask(sim.base_url)
    assert key not in path.read_text(encoding="utf-8")
    assert_look_alikes_kept(path, LOOK_ALIKES[:2])
    with use_cassette(path, mode="none") as cassette:
        replayed = ask("http://127.0.0.1:9")
    assert cassette.unplayed == []
    assert replayed == live.replace(key, "<redacted:anthropic-key:1>")
    results = assert_trajectory(path, {"final_answer": {"contains": ["<redacted:anthropic-key:1>", "George"],
                                                        "not_contains": [key]}})
    assert [result.passed for result in results] == [True]


def test_serve_and_its_status_never_show_a_live_query_key(upstream: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from harness.serve import ReplayServer

    path = tmp_path / "run.yaml"
    with use_cassette(path, mode="once"):
        run(upstream, files=False)
    with ReplayServer([path]) as server:
        run(server.base_url, files=False)  # ?key= and the prompt's shapes: redacted live, so all match
        miss = anthropic.Anthropic(api_key="x" * 12, base_url=server.base_url, max_retries=0,
                                   default_query={"key": "PLANTED-live-querykey-0011"})
        with pytest.raises(anthropic.BadRequestError):
            miss.messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": SHAPE_TEXT}])
        status = json.dumps(server.status())
    logged = capsys.readouterr().err
    assert json.loads(status)["requests"] == 6 and len(json.loads(status)["misses"]) == 1
    for secret in [*PLANTED, "PLANTED-live-querykey-0011"]:
        assert secret[:16] not in status and secret[:16] not in logged
