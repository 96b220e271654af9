"""No secret reaches the disk, whichever way a run is captured: the in-process recorder, `harness proxy`,
or `harness import` of a foreign cassette. And `harness scan` (run by CI) finds one that got there.

One scripted exchange carries every form a credential takes in a live run: the API key as `x-api-key`,
an OAuth token as `Authorization: Bearer`, a session cookie, `set-cookie` in the answer, the
organization id in the `anthropic-organization-id` header and inside a 429 message, and the key echoed
back by the model, pasted into a user message and returned inside a tool_result. The check reads every
byte of every file written (temp files included) and decodes any base64 body before looking.
"""

from __future__ import annotations

import base64
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
from harness.cli import main
from harness.proxy import RecordingProxy
from tests.loopback_server import loopback_server

REPO = Path(__file__).resolve().parents[1]
API_KEY = "sk-ant-api03-PLANTEDapikey-Qm7vX2pL9sR4tY8wZ1nB6cD3fG5hJ0kA"
OAUTH_TOKEN = "sk-ant-oat01-PLANTEDoauth-Vb8nM3qW6eR1tZ4yU7iO0pA2sD5"
ODD_TOKEN = "PLANTED-oddly-shaped-credential-77aa"  # matches no pattern: only the exact-value scrub catches it
ORG_ID = "3f6c2a9e-8b1d-4e7a-9c5f-1a2b3c4d5e6f"
SESSION = "PLANTEDsessioncookie0123456789"
CF_BM = "PLANTEDcfbm.0123456789abcdef-ABCDEF"
SECRETS = (API_KEY, OAUTH_TOKEN, ODD_TOKEN, ORG_ID, SESSION, CF_BM)

MODEL = "claude-sonnet-5"
TOOLS = [{"name": "read_env", "description": "Read the .env file.", "input_schema": {"type": "object"}}]


# ---------------------------------------------------------------------------------------------------
# The exchange: what the client sends and what the "live" upstream answers


def conversation() -> list[dict[str, Any]]:
    """The request bodies of one run: a pasted key, a tool_result holding the key and the org id, a 429."""
    first = {"model": MODEL, "max_tokens": 256, "tools": TOOLS,
             "messages": [{"role": "user", "content": f"Check my setup. My key is {API_KEY}, token {ODD_TOKEN}."}]}
    tool_use = {"type": "tool_use", "id": "toolu_01", "name": "read_env", "input": {}}
    second = {**first, "messages": [
        *first["messages"],
        {"role": "assistant", "content": [tool_use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                                      "content": f"ANTHROPIC_API_KEY={API_KEY}\nORG={ORG_ID}\nTOKEN={ODD_TOKEN}"}]},
    ]}
    limited = {"model": MODEL, "max_tokens": 16, "messages": [{"role": "user", "content": "one more"}]}
    streamed = {**limited, "stream": True, "messages": [{"role": "user", "content": "stream it back"}]}
    return [first, second, limited, streamed]


def answer(body: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    """The upstream's answer to one request: status, headers (secrets included), body."""
    headers = [("request-id", "req_011PLANTEDreqid"), ("anthropic-organization-id", ORG_ID),
               ("set-cookie", f"__cf_bm={CF_BM}; path=/; HttpOnly"), ("set-cookie", f"_cfuvid={SESSION}; path=/")]
    last = body["messages"][-1]["content"]
    if last == "one more":
        error = {"type": "error", "error": {"type": "rate_limit_error", "message": (
            f"This request would exceed the rate limit for your organization ({ORG_ID}) of 50 requests per "
            "minute.")}, "request_id": "req_011PLANTEDreqid"}
        return 429, [*headers, ("content-type", "application/json"), ("retry-after", "0")], json.dumps(error).encode()
    if isinstance(last, str) and last.startswith("Check"):
        content = [{"type": "text", "text": f"I see your key {API_KEY}; let me read the env."},
                   {"type": "tool_use", "id": "toolu_01", "name": "read_env", "input": {}}]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": f"Your org is {ORG_ID} and your key is {API_KEY}. Rotate both."}]
        stop = "end_turn"
    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": MODEL, "content": content,
               "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 10}}
    if body.get("stream"):
        # Tokens arrive in small pieces: every secret in the echoed text is cut across several deltas, as a
        # model's stream cuts it, so no single event holds a whole one.
        text, pieces, sizes = content[0]["text"], [], [20, 30, 40, 200]
        while text:
            pieces.append(text[: sizes[len(pieces) % len(sizes)]])
            text = text[len(pieces[-1]):]
        deltas = [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": piece}}) for piece in pieces]
        events = [("message_start", {"type": "message_start", "message": {**message, "content": [],
                                                                          "stop_reason": None}}),
                  ("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}}),
                  *deltas,
                  ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                  ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                     "usage": {"output_tokens": 10}}),
                  ("message_stop", {"type": "message_stop"})]
        raw = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
        return 200, [*headers, ("content-type", "text/event-stream")], raw
    return 200, [*headers, ("content-type", "application/json")], json.dumps(message).encode()


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        status, headers, raw = answer(body)
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with loopback_server(_Upstream) as url:
        yield url


def run_conversation(base_url: str) -> None:
    """Send the run with every credential form: x-api-key, Authorization: Bearer, a cookie."""
    cookie = {"cookie": f"sessionKey={SESSION}; theme=dark", "x-odd-auth": ODD_TOKEN}
    keyed = anthropic.Anthropic(api_key=API_KEY, base_url=base_url, max_retries=0, default_headers=cookie)
    bearer = anthropic.Anthropic(api_key=None, auth_token=OAUTH_TOKEN, base_url=base_url, max_retries=0)
    odd = anthropic.Anthropic(api_key=ODD_TOKEN, base_url=base_url, max_retries=0)
    first, second, limited, streamed = conversation()
    assert keyed.messages.create(**first).stop_reason == "tool_use"
    assert bearer.messages.create(**second).stop_reason == "end_turn"
    with pytest.raises(anthropic.RateLimitError):
        odd.messages.create(**limited)
    with keyed.messages.stream(**{k: v for k, v in streamed.items() if k != "stream"}) as events:
        assert ORG_ID in events.get_final_text()  # the live answer really carried the secret
    for client in (keyed, bearer, odd):
        client.close()


# ---------------------------------------------------------------------------------------------------
# The check: every byte of every file written


def assert_no_secret_in(folder: Path) -> int:
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert files, f"nothing was written to {folder}"
    for path in files:
        raw = path.read_bytes()
        hidden = [base64.b64decode(chunk) for chunk in _base64_bodies(raw)] + _streamed_texts(raw)
        for secret in SECRETS:
            for piece in pieces_of(secret):  # a tail left after a partial redaction is a leak too
                assert piece not in raw, f"{piece!r} of {secret} reached {path}"
                assert all(piece not in body for body in hidden), f"{piece!r} of {secret} is hidden in {path}"
    return len(files)


def pieces_of(secret: str, width: int = 12) -> list[bytes]:
    return [secret[start:start + width].encode() for start in range(len(secret) - width + 1)]


def _streamed_texts(raw: bytes) -> list[bytes]:
    """Each streamed block's text as the client puts it together: a secret cut across deltas, joined."""
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError:
        return []
    joined: list[bytes] = []
    for interaction in (data or {}).get("interactions") or [] if isinstance(data, dict) else []:
        blocks: dict[int, str] = {}
        for event in (interaction.get("response") or {}).get("events") or []:
            payload = event.get("data")
            if isinstance(payload, dict) and payload.get("type") == "content_block_delta":
                delta = payload.get("delta") or {}
                piece = delta.get("text") or delta.get("partial_json") or delta.get("thinking") or ""
                blocks[payload.get("index", 0)] = blocks.get(payload.get("index", 0), "") + piece
        joined.extend(text.encode() for text in blocks.values())
    return joined


def _base64_bodies(raw: bytes) -> list[str]:
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError:
        return []
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            found.extend(v for k, v in value.items() if k == "body_base64" and isinstance(v, str))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(data)
    return found


def assert_the_run_is_still_there(path: Path) -> None:
    """Redaction must not throw the run away: four exchanges, the 429 and the stream among them."""
    cassette = load_cassette(path)
    statuses = [i["response"]["status"] for i in cassette.interactions]
    assert statuses == [200, 200, 429, 200]
    assert "events" in cassette.interactions[3]["response"]
    text = path.read_text(encoding="utf-8")
    assert "<redacted:anthropic-key:1>" in text and "<redacted:organization-id:1>" in text


def test_the_recorder_writes_no_secret(upstream: str, tmp_path: Path) -> None:
    folder = tmp_path / "recorded"
    with use_cassette(folder / "run.yaml", mode="once"):
        run_conversation(upstream)
    assert_the_run_is_still_there(folder / "run.yaml")
    assert_no_secret_in(folder)


def test_the_proxy_writes_no_secret(upstream: str, tmp_path: Path) -> None:
    folder = tmp_path / "proxied"
    with RecordingProxy(upstream, folder / "run.yaml", mode="once") as proxy:
        run_conversation(proxy.base_url)
    assert_the_run_is_still_there(folder / "run.yaml")
    assert_no_secret_in(folder)


def foreign_exchanges() -> list[dict[str, Any]]:
    """The same run as a foreign recorder would have kept it: every header, as sent and received."""
    sent = [
        [("x-api-key", API_KEY), ("cookie", f"sessionKey={SESSION}; theme=dark"), ("x-odd-auth", ODD_TOKEN)],
        [("authorization", f"Bearer {OAUTH_TOKEN}")],
        [("x-api-key", ODD_TOKEN)],
        [("x-api-key", API_KEY), ("cookie", f"sessionKey={SESSION}")],
    ]
    exchanges = []
    for body, headers in zip(conversation(), sent, strict=True):
        status, response_headers, raw = answer(body)
        exchanges.append({"request_headers": [("anthropic-version", "2023-06-01"), *headers], "body": body,
                          "status": status, "response_headers": response_headers, "raw": raw.decode()})
    return exchanges


def write_vcrpy(path: Path) -> None:
    def grouped(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name, value in pairs:
            out.setdefault(name, []).append(value)
        return out

    interactions = [{
        "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages", "body": json.dumps(x["body"]),
                    "headers": grouped(x["request_headers"])},
        "response": {"status": {"code": x["status"], "message": "OK"}, "headers": grouped(x["response_headers"]),
                     "body": {"string": x["raw"]}},
    } for x in foreign_exchanges()]
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}), encoding="utf-8")


def write_har(path: Path) -> None:
    entries = [{
        "startedDateTime": "2026-09-07T07:00:00Z", "time": 10,
        "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages",
                    "headers": [{"name": n, "value": v} for n, v in x["request_headers"]],
                    "postData": {"mimeType": "application/json", "text": json.dumps(x["body"])}},
        "response": {"status": x["status"], "headers": [{"name": n, "value": v} for n, v in x["response_headers"]],
                     "content": {"mimeType": dict(x["response_headers"])["content-type"],
                                 "text": base64.b64encode(x["raw"].encode()).decode(), "encoding": "base64"}},
    } for x in foreign_exchanges()]
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}), encoding="utf-8")


@pytest.mark.parametrize("writer", [write_vcrpy, write_har], ids=["vcrpy", "har"])
def test_the_importer_writes_no_secret(writer: Any, tmp_path: Path) -> None:
    source = tmp_path / "foreign" / ("run.har" if writer is write_har else "run.yaml")
    source.parent.mkdir()
    writer(source)
    assert API_KEY.encode() in source.read_bytes() or API_KEY.encode() in base64.b64decode(
        json.loads(source.read_text())["log"]["entries"][0]["response"]["content"]["text"]), "precondition"
    out = tmp_path / "imported"
    [written] = import_paths([source], out)
    assert_the_run_is_still_there(written)
    assert_no_secret_in(out)


# ---------------------------------------------------------------------------------------------------
# harness scan


def test_scan_exits_1_on_each_planted_secret_and_names_the_line(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    for number, planted in enumerate([f"x-api-key: {API_KEY}", f"authorization: Bearer {ODD_TOKEN}",
                                      f"message: for your organization ({ORG_ID}) of 50",
                                      f"set-cookie: __cf_bm={CF_BM}", f"text: 'sessionKey={SESSION}'",
                                      f"oauth: {OAUTH_TOKEN}"]):
        folder = tmp_path / f"case{number}"
        folder.mkdir()
        (folder / "clean.yaml").write_text("harness:\n  format_version: 1\ninteractions: []\n")
        (folder / "leak.yaml").write_text(f"harness:\n  format_version: 1\n  note: x\n# {planted}\n")
        assert main(["scan", str(folder)]) == 1, planted
        out = capsys.readouterr().out
        assert f"{folder / 'leak.yaml'}:4:" in out, out
        assert "clean.yaml" not in out
        assert all(secret not in out for secret in SECRETS), "scan printed the secret it found"


def test_scan_exits_0_on_the_bundled_cassettes_and_goldens(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            upstream: str) -> None:
    """What CI runs: `harness scan cassettes golden`. Where cassettes/ is not recorded yet, a fresh
    recording of every scenario stands in for it."""
    from harness_demo.scenarios import SCENARIOS, record_scenario

    cassettes = REPO / "cassettes"
    if not any(cassettes.rglob("*.yaml")):
        cassettes = tmp_path / "cassettes"
        for item in SCENARIOS:
            record_scenario(item, cassettes)
    planted = tmp_path / "planted" / "run.yaml"
    with use_cassette(planted, mode="once"):
        run_conversation(upstream)  # a run that carried every secret form, redacted on its way to the disk
    assert main(["scan", str(cassettes), str(REPO / "golden"), str(planted)]) == 0, capsys.readouterr().out
    assert "no secrets found" in capsys.readouterr().out


def test_loading_the_credential_shapes_leaves_the_process_warnings_where_they_were() -> None:
    # detect-secrets calls logging.captureWarnings(True) when imported; a user's pytest run would lose its warnings.
    import subprocess
    import sys

    code = ("import warnings\nbefore = warnings.showwarning\n"
            "from harness.cassette.credentials import shapes\nshapes()\n"
            "assert 'detect_secrets' in __import__('sys').modules\nassert warnings.showwarning is before\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
