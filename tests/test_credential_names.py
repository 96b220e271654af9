"""One list of credential names (harness.cassette.credential_names) for the recorder, the proxy, the importer and
`harness scan`: a query parameter or a field named for a credential (`subscription-key`, `password`,
`private_token`, `client_secret`, ...) never reaches the disk and is flagged by scan; counts and cursors
(`max_tokens`, `input_tokens`, `page_token`) are not credentials.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anthropic
import pytest
import yaml

from harness.cassette.credential_names import is_credential_name
from harness.cassette.importer import import_paths
from harness.cassette.recorder import use_cassette
from harness.cassette.scan import scan_paths
from harness.proxy import RecordingProxy
from tests.loopback_server import loopback_server

MODEL = "claude-sonnet-5"
# Query credentials of every length and shape: a short password with no digit, a token, a subscription key.
QUERY = {"subscription-key": "PLANTEDsubscriptionkey", "password": "hunter", "private_token": "PLANTEDprivatetok"}
KEPT_QUERY = {"page_token": "page_PLANTEDcursor01", "limit": "20"}


def _answer() -> bytes:
    return json.dumps({"id": "msg_01", "type": "message", "role": "assistant", "model": MODEL,
                       "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 10}}).encode()


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        raw = _answer()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with loopback_server(_Upstream) as url:
        yield url


def _ask(base_url: str) -> None:
    client = anthropic.Anthropic(api_key="x" * 12, base_url=base_url, max_retries=0,
                                 default_query={**QUERY, **KEPT_QUERY})
    client.messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    client.close()


def assert_no_query_credential(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for name, value in QUERY.items():
        assert f"{name}={value}" not in text and value not in text, f"?{name}= was written in clear"
    assert "page_token=page_PLANTEDcursor01" in text, "a cursor is not a credential: it is kept to match pages"


def test_the_recorder_writes_no_query_credential(upstream: str, tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with use_cassette(path, mode="once"):
        _ask(upstream)
    assert_no_query_credential(path)
    with use_cassette(path, mode="none") as cassette:  # the live query is redacted alike, so it replays
        _ask("http://127.0.0.1:9")
    assert cassette.unplayed == []


def test_the_proxy_writes_no_query_credential(upstream: str, tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with RecordingProxy(upstream, path, mode="once") as proxy:
        _ask(proxy.base_url)
    assert_no_query_credential(path)


def test_the_importer_writes_no_query_credential(tmp_path: Path) -> None:
    query = "&".join(f"{name}={value}" for name, value in {**QUERY, **KEPT_QUERY}.items())
    source = tmp_path / "foreign" / "run.yaml"
    source.parent.mkdir()
    source.write_text(yaml.safe_dump({"version": 1, "interactions": [{
        "request": {"method": "POST", "uri": f"https://api.anthropic.com/v1/messages?{query}", "headers": {},
                    "body": json.dumps({"model": MODEL, "max_tokens": 8,
                                        "messages": [{"role": "user", "content": "hi"}]})},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {"Content-Type": ["application/json"]},
                     "body": {"string": _answer().decode()}}}]}), encoding="utf-8")
    [written] = import_paths([source], tmp_path / "imported")
    assert_no_query_credential(written)


# What the docs say scan flags, in the forms a cassette or fixture holds it.
FLAGGED = {
    "access_token.json": json.dumps({"access_token": "plainlettersonly-noshape"}),
    "refresh_token.yaml": "refresh_token: plainlettersonly-noshape\n",
    "client_secret.json": json.dumps({"client_secret": "plainlettersonly-noshape"}),
    "form-body.yaml": "request:\n  body: access_token=plainlettersonly&token_type=bearer\n",
    "json-in-text.md": 'The tool returned {"refresh_token": "plainlettersonly"} and stopped.\n',
    "query-key.yaml": "uri: https://generativelanguage.googleapis.com/v1/models?key=plainletters\n",
    "stored-query.yaml": "request:\n  query: key=plainletters&alt=sse\n",
    "har-query.har": json.dumps({"log": {"entries": [{"request": {
        "url": "https://x.test/v1", "queryString": [{"name": "subscription-key", "value": "PLANTED0key"}]}}]}}),
    "short-password.yaml": "db:\n  password: hunt3r22\n",
    "hunter2.json": json.dumps({"login": {"user": "me", "password": "hunter2"}}),
    "pass-form.txt": "user=me&pass=hunter2\n",
    "short-password.json": json.dumps({"config": {"password": "Tr0ub4dor&3"}}),
    "form.txt": "grant_type=password&username=me&password=s3cretpw9\n",
    "private_token.md": "curl 'https://gitlab.test/api?private_token=PLANTEDtok'\n",
}
LOOK_ALIKES = {
    "counts.json": json.dumps({"max_tokens": 40960000, "usage": {"input_tokens": 12345678, "output_tokens": 23456789,
                                                                "cache_read_input_tokens": 34567890},
                               "tokens": 45678901, "max_tokens_to_sample": 56789012}),
    "counts.yaml": "max_tokens: 40960000\ninput_tokens: 12345678\ntokens: 45678901\n",
    "fields.json": json.dumps({"signature": "EqQBCkgIARABGAIiQL2PLANTED0sig", "token_type": "Bearer",
                               "key_name": "prod-key-2024", "page_token": "page_0123456789",
                               "public_key": "ssh-ed25519-AAAAC3Nza0123456789", "cache_key": "v1:12345678:abc",
                               "key": "reports/2024/q3.csv", "password": "radiance",
                               "access_token": "<redacted:access-token:1>"}),
    "prose.md": "A token budget of 4096 applies; the password: correct horse battery staple.\n",
}


@pytest.mark.parametrize("name", list(FLAGGED))
def test_scan_flags_every_credential_the_docs_name(name: str, tmp_path: Path) -> None:
    (tmp_path / name).write_text(FLAGGED[name], encoding="utf-8")
    findings = scan_paths([tmp_path])
    assert findings, f"{name}: {FLAGGED[name]!r} was not flagged"
    assert all("plainletters" not in str(finding) or "…" in str(finding) for finding in findings)


def test_scan_flags_no_count_cursor_or_argument(tmp_path: Path) -> None:
    for name, text in LOOK_ALIKES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert scan_paths([tmp_path]) == []


@pytest.mark.parametrize(("name", "in_query", "expected"), [
    ("subscription-key", True, True), ("Ocp-Apim-Subscription-Key", False, True), ("private_token", False, True),
    ("SecretAccessKey", False, True), ("clientSecret", False, True), ("passwd", False, True),
    ("accesstoken", False, True), ("x-amz-signature", True, True), ("key", True, True), ("sig", True, True),
    ("key", False, False), ("signature", False, False), ("auth", False, False),
    ("max_tokens", True, False), ("input_tokens", False, False), ("tokens", False, False),
    ("page_token", True, False), ("pass", True, True), ("pass", False, False),
    ("next_page_token", True, False), ("public_key", False, False),
    ("token_type", False, False), ("key_name", False, False), ("monkey", True, False),
])
def test_one_list_of_credential_names(name: str, in_query: bool, expected: bool) -> None:
    assert is_credential_name(name, in_query=in_query) is expected
