"""Hostile content inside well-formed files and requests: bounded, sanitized, never a hang.

- a golden's regular expression that backtracks catastrophically fails its check, naming the golden and the
  pattern, instead of hanging `harness eval`; every user pattern goes through harness.patterns;
- a recorded header value holding CR/LF is written as one header line by every server of the HTTP core;
- control characters in a cassette (a clipboard write, a window title, a clear screen) reach the terminal
  shown, not acted on, from every command;
- the HTTP core reads a chunked body into one buffer, refuses one over the limit with 413, and bounds the
  bodies held at once across requests (503 when there is no room).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import socket
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.httpserver import LoopbackServer
from harness.httpserver.answers import Responder
from harness.httpserver.incoming import BodyBudget, HardenedHandler, IncomingRequest, MalformedRequest, read_body
from harness.patterns import PatternTimeout, compile_pattern
from harness.serve import ReplayServer

REPO = Path(__file__).resolve().parents[1]
ESCAPES = "\x1b]52;c;cHduZWQ=\x07 \x1b]0;pwned\x07 \x1b[2J\x1b[H \x9b31m"


def _message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}


def write_cassette(path: Path, final_text: str, tool_input: dict[str, Any], headers: dict[str, str] | None = None,
                   **request: Any) -> Path:
    """Two exchanges: a tool call with `tool_input`, then `final_text`; `request`: more fields of each request."""
    tool_use = {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": tool_input}
    first = [{"role": "user", "content": "go"}]
    second = [*first, {"role": "assistant", "content": [tool_use]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "ok"}]}]
    interactions = [
        {"request": {"method": "POST", "path": "/v1/messages",
                     "body": {"model": "claude-sonnet-5", "max_tokens": 64, "messages": messages, **request}},
         "response": {"status": 200, "headers": headers or {}, "body": body}}
        for messages, body in ((first, _message([tool_use], "tool_use")),
                               (second, _message([{"type": "text", "text": final_text}], "end_turn")))
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"harness": {"format_version": 1, "source": "simulator"},
                                    "interactions": interactions}, allow_unicode=False), encoding="utf-8")
    return path


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "golden").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    return root


# ---------------------------------------------------------------------------------------------------------
# Regular expressions a golden holds


def test_a_catastrophic_pattern_fails_its_check_naming_the_golden_instead_of_hanging_eval(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_cassette(root / "cassettes" / "run.yaml", "a" * 5000 + "!", {"path": "x" * 5000})
    checks = [{"check": "final_answer", "params": {"not_regex": ["(a+)+$"]}},
              {"check": "tool_permissions",
               "params": {"deny": [{"name": "*", "path": "$.path", "regex": "(x+x+)+y"}]}}]
    golden = root / "golden" / "hostile.json"
    golden.write_text(json.dumps({"name": "hostile", "cassettes": ["cassettes/run.yaml"], "checks": checks}))
    # With re, either pattern backtracks for longer than the age of the universe: the child would be killed.
    done = subprocess.run([sys.executable, "-m", "harness.cli", "eval", "golden/hostile.json"], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    out = " ".join(done.stdout.split())
    for pattern in ("'(a+)+$'", "'(x+x+)+y'"):
        assert f"golden/hostile.json: the regular expression {pattern} took more than" in out, out
    assert "0/2 checks passed" in out


def test_a_pattern_that_runs_out_of_time_names_itself() -> None:
    with pytest.raises(PatternTimeout, match=r"'\(x\+x\+\)\+y' took more than"):
        compile_pattern("(x+x+)+y").search("x" * 5000)
    assert compile_pattern("(?<=a)b", 2).search("AB") is not None, "re's syntax and flags, lookbehind included"


def test_a_recorded_schema_pattern_that_backtracks_is_a_problem_of_the_answer_not_a_hang(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "(x+x+)+y"}},
              "patternProperties": {"^(b+)+$": {"type": "string"}}}
    cassette = write_cassette(tmp_path / "run.yaml", json.dumps({"a": "x" * 5000, "b" * 5000 + "!": "v"}),
                              {"path": "a"}, output_config={"format": {"type": "json_schema", "schema": schema}})
    done = subprocess.run([sys.executable, "-m", "harness.cli", "show", str(cassette)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert "not valid" in out and "'(x+x+)+y' took more than" in out, out


_USER_PATTERN_MODULES = ["harness/checks", "harness/normalize.py"]
_RE_CALLS = {"compile", "search", "match", "fullmatch", "sub", "subn", "finditer", "findall", "split"}


def test_every_user_pattern_goes_through_the_one_helper() -> None:
    """In the checks and the matching rules, `re` runs only patterns written in the code (a literal, or an
    escaped literal): anything else is a user's pattern and must go through harness.patterns."""
    files = [path for entry in _USER_PATTERN_MODULES for path in sorted((REPO / entry).glob("**/*.py"))
             or [REPO / entry]]
    offenders = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                    and node.func.attr in _RE_CALLS and node.args):
                pattern = node.args[0]
                literal = isinstance(pattern, ast.Constant) or (
                    isinstance(pattern, ast.BinOp) and "re.escape" in ast.unparse(pattern))
                if not literal:
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert offenders == []


# ---------------------------------------------------------------------------------------------------------
# Headers


class _Sink:
    """The part of a request handler a Responder writes through, recording the raw head."""

    def __init__(self) -> None:
        self.wfile = io.BytesIO()
        self.close_connection = False
        self.request_version = "HTTP/1.1"
        self.headers_sent: list[bytes] = []

    def send_response(self, status: int, reason: str | None = None) -> None:
        self.wfile.write(f"HTTP/1.1 {status} {reason or 'OK'}\r\n".encode("latin-1"))

    def send_header(self, name: str, value: str) -> None:
        self.wfile.write(f"{name}: {value}\r\n".encode("latin-1"))

    def end_headers(self) -> None:
        self.wfile.write(b"\r\n")


def test_a_header_value_with_crlf_is_one_header_line() -> None:
    sink = _Sink()
    Responder(sink).send_body(200, [("x-evil", "a\r\nset-cookie: pwned=1"), ("bad\r\nname", "v"),
                                    ("request-id", "req_01\x00\x1b")], b"{}", reason="OK\r\nx-split: 1")
    head = sink.wfile.getvalue().split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    assert not any(line.lower().startswith(("set-cookie", "x-split", "bad")) for line in head), head
    assert "x-evil: a set-cookie: pwned=1" in head and "request-id: req_01 " in head


def _raw_get(port: int, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(raw)
        received = b""
        with contextlib.suppress(ConnectionResetError):
            while data := conn.recv(65536):
                received += data
    return received


def test_serve_writes_a_recorded_crlf_header_as_one_line(tmp_path: Path) -> None:
    cassette = write_cassette(tmp_path / "run.yaml", "done", {"path": "a"},
                              headers={"request-id": "req_01\r\nset-cookie: pwned=1"})
    body = json.dumps({"model": "claude-sonnet-5", "max_tokens": 64,
                       "messages": [{"role": "user", "content": "go"}]}).encode()
    with ReplayServer([cassette]) as server:
        answer = _raw_get(server.port, b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: k\r\n"
                          b"content-type: application/json\r\nConnection: close\r\n"
                          b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    assert head[0].startswith("HTTP/1.1 200"), head
    assert not any(line.lower().startswith("set-cookie") for line in head), head
    assert "request-id: req_01 set-cookie: pwned=1" in head


# ---------------------------------------------------------------------------------------------------------
# The terminal


def test_show_and_eval_show_control_characters_instead_of_sending_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path)
    write_cassette(root / "cassettes" / "run.yaml", f"# Title {ESCAPES}\nhello {ESCAPES}", {"path": ESCAPES})
    (root / "golden" / "esc.json").write_text(json.dumps({
        "name": "esc", "cassettes": ["cassettes/run.yaml"],
        "checks": [{"check": "final_answer", "params": {"sections": ["Summary"]}}]}))
    monkeypatch.chdir(root)
    monkeypatch.setenv("FORCE_COLOR", "1")  # colour on: the console's own escapes still reach the terminal
    assert main(["show", "cassettes/run.yaml"]) == 0
    assert main(["eval", "golden/esc.json"]) == 1
    captured = capsys.readouterr()
    for stream in (captured.out, captured.err):
        for sequence in ("\x1b]52", "\x1b]0;", "\x1b[2J", "\x1b[H", "\x07", "\x9b"):
            assert sequence not in stream, f"{sequence!r} reached the terminal"
    assert "␛]52;c;cHduZWQ=" in captured.out and "␛]0;pwned" in captured.out, "shown, visibly"
    assert "\x1b[" in captured.out, "the console's own colour is kept"


# ---------------------------------------------------------------------------------------------------------
# Memory


def _headers(**fields: str) -> Message:
    message = Message()
    for name, value in fields.items():
        message[name.replace("_", "-")] = value
    return message


def _chunked(body: bytes, size: int) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size])
                    for i in range(0, len(body), size)) + b"0\r\n\r\n"


def test_a_chunked_body_of_tiny_chunks_costs_about_its_size() -> None:
    body = b"ab" * (512 * 1024)  # 1 MB in 2-byte chunks: a list of chunk objects cost ~20 MB
    raw = io.BytesIO(_chunked(body, 2))
    tracemalloc.start()
    try:
        read = read_body(raw, _headers(transfer_encoding="chunked"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert read == body
    assert peak < 4 * len(body), f"{peak / len(body):.1f} bytes of memory per byte read"


def test_a_body_over_the_limit_is_refused_with_413(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.httpserver import incoming

    monkeypatch.setattr(incoming, "MAX_BODY_BYTES", 1000)
    for raw, headers in ((_chunked(b"x" * 1001, 100), _headers(transfer_encoding="chunked")),
                         (b"x" * 1001, _headers(content_length="1001"))):
        with pytest.raises(MalformedRequest) as refused:
            read_body(io.BytesIO(raw), headers)
        assert refused.value.status == 413


class _Holding(LoopbackServer):
    """Answers each request after `release` is set, so that its body stays held meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.arrived = threading.Event()

    def handle(self, request: IncomingRequest, responder: Responder) -> None:
        self.arrived.set()
        self.release.wait(20)
        responder.send_json(200, {"size": len(request.body)})


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> Iterator[BodyBudget]:
    budget = BodyBudget(limit=1000, wait=0.3)
    monkeypatch.setattr(HardenedHandler, "budget", budget)
    yield budget


def _post(port: int, body: bytes, chunked: bool = False) -> bytes:
    framing = b"Transfer-Encoding: chunked\r\n" if chunked else b"Content-Length: %d\r\n" % len(body)
    return _raw_get(port, b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + framing + b"\r\n"
                    + (_chunked(body, 100) if chunked else body))


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_bodies_held_at_once_are_bounded_across_requests(chunked: bool, small_budget: BodyBudget) -> None:
    with _Holding() as server:
        first: list[bytes] = []
        holder = threading.Thread(target=lambda: first.append(_post(server.port, b"a" * 800)))
        holder.start()
        assert server.arrived.wait(20)
        assert small_budget.held == 800
        refused = _post(server.port, b"b" * 800, chunked)  # no room while the first is held
        assert refused.startswith(b"HTTP/1.1 503"), refused[:200]
        assert b"overloaded_error" in refused
        server.release.set()
        holder.join(20)
        assert first[0].startswith(b"HTTP/1.1 200")
        assert _post(server.port, b"c" * 800, chunked).startswith(b"HTTP/1.1 200"), "room again once it is answered"
    assert small_budget.held == 0
