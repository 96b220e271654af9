"""The HTML reports opened in a real browser (headless Chromium), as a person would open them from disk.

- `--dump-dom`: the rendered document holds the case names, a failed check's reason and the SVG charts;
- `--screenshot`: the page paints (a PNG of the window's size, not a blank one);
- the DevTools protocol over `--remote-debugging-pipe` (stdlib only: NUL-separated JSON on fds 3 and 4):
  the page makes no network request but itself, logs no error (a blocked fetch would), and its charts
  have a rendered size. A planted external image proves the request check sees what it looks for.

Every host resolves to nothing (`--host-resolver-rules`), so even a page that tried could not leave the
machine. Skipped, saying so, when no Chromium is installed (Debian: `apt-get install -y chromium`).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import struct
import subprocess
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as harness_main
from tests.test_report_support import make_project, record_candidate, run_eval

CHROMIUM = next(
    (
        found
        for name in ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
        if (found := shutil.which(name))
    ),
    None,
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on this machine (Debian: apt-get install -y chromium); .ci/run installs it"
)
WINDOW = (1280, 1600)
SECONDS = 120  # a ceiling for a wedged browser, never a measurement


def browser_flags(user_data: Path) -> list[str]:
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-features=NetworkTimeServiceQuerying",
        f"--user-data-dir={user_data}",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--hide-scrollbars",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
    ]


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    user_data = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run(
        [CHROMIUM, *browser_flags(user_data), *args], capture_output=True, text=True, timeout=SECONDS, check=True
    )


class DevTools:
    """Chromium driven over --remote-debugging-pipe: write JSON + NUL to fd 3, read JSON + NUL from fd 4."""

    def __init__(self, user_data: Path) -> None:
        command_read, self.command_write = os.pipe()
        self.events_read, events_write = os.pipe()

        def wire() -> None:  # in the child: put the pipe ends on fds 3 and 4 (first out of their way)
            import fcntl

            commands = fcntl.fcntl(command_read, fcntl.F_DUPFD, 100)
            events = fcntl.fcntl(events_write, fcntl.F_DUPFD, 100)
            os.dup2(commands, 3)
            os.dup2(events, 4)

        self.process = subprocess.Popen(
            [CHROMIUM, *browser_flags(user_data), "--remote-debugging-pipe", "about:blank"],
            preexec_fn=wire,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(command_read)
        os.close(events_write)
        self.buffer = b""
        self.events: list[dict[str, Any]] = []
        self.last_id = 0
        self.session: str | None = None

    def _message(self) -> dict[str, Any]:
        deadline = time.monotonic() + SECONDS
        while b"\0" not in self.buffer:
            ready, _, _ = select.select([self.events_read], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("Chromium sent nothing")
            chunk = os.read(self.events_read, 1 << 16)
            if not chunk:
                raise EOFError("Chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict[str, Any] | None = None, *, page: bool = True) -> dict[str, Any]:
        self.last_id += 1
        message: dict[str, Any] = {"id": self.last_id, "method": method, "params": params or {}}
        if page and self.session:
            message["sessionId"] = self.session
        os.write(self.command_write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._message()
            if reply.get("id") == self.last_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        while not any(event.get("method") == method for event in self.events):
            self.events.append(self._message())
        return next(event for event in self.events if event.get("method") == method)

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, page=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, page=False)[
            "sessionId"
        ]
        for domain in ("Network", "Page", "Log", "Runtime"):
            self.send(f"{domain}.enable")
        self.send("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        return self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})["result"]["value"]

    def requested(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def problems(self) -> list[str]:
        logged = [e["params"]["entry"] for e in self.events if e.get("method") == "Log.entryAdded"]
        console = [e["params"] for e in self.events if e.get("method") == "Runtime.consoleAPICalled"]
        return [f"{entry['level']}: {entry['text']}" for entry in logged if entry["level"] in ("error", "warning")] + [
            f"console.{call['type']}" for call in console
        ]

    def close(self) -> None:
        with contextlib.suppress(EOFError, OSError, TimeoutError):
            self.send("Browser.close", page=False)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.command_write)
        os.close(self.events_read)


def png_facts(path: Path) -> tuple[int, int, int]:
    """(width, height, distinct byte values in the pixel data) of a PNG, with the standard library only."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    idat, position = b"", 8
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position : position + 8])
        if kind == b"IDAT":
            idat += data[position + 8 : position + 8 + length]
        position += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    project = make_project(tmp_path_factory.mktemp("project"))
    record_candidate(project)
    out = tmp_path_factory.mktemp("out")
    code, results = run_eval(project, out, "--html", str(out / "report.html"))
    assert code == 1  # a check failed (the project also holds a case that cannot run: 1 wins over 2)
    compare = [
        str(project / "cassettes"),
        str(project / "candidates"),
        "--suite",
        str(project / "suites" / "compare.yaml"),
        "--allow-different-cases",
        "--html",
        str(out / "compare.html"),
    ]
    assert harness_main(["compare", *compare]) == 1
    return {"results": results, "report": out / "report.html", "compare": out / "compare.html"}


def test_the_rendered_report_shows_cases_failures_and_charts(reports: dict[str, Any], tmp_path: Path) -> None:
    dom = chromium(tmp_path, "--dump-dom", reports["report"].as_uri()).stdout
    results = reports["results"]
    for case in results["cases"]:
        assert case["id"] in dom
    failing = next(k for c in results["cases"] for k in c["checks"] if not k["passed"])
    assert failing["reason"].replace("'", "&#39;") in dom or failing["reason"] in dom
    assert dom.count('<svg class="chart"') == 1 + sum(1 for c in results["cases"] if c["trajectory"])
    assert "no such cassette" in dom


def test_the_rendered_comparison_shows_the_flip(reports: dict[str, Any], tmp_path: Path) -> None:
    dom = chromium(tmp_path, "--dump-dom", reports["compare"].as_uri()).stdout
    assert "dayflow/brief/brief.yaml" in dom and "promotions_filtered" in dom
    assert "pass → fail" in dom and "First divergence at <strong>step 1</strong>" in dom
    assert "## Offers" in dom


@pytest.mark.parametrize("which", ["report", "compare"])
def test_the_page_paints(reports: dict[str, Any], tmp_path: Path, which: str) -> None:
    shot = tmp_path / f"{which}.png"
    chromium(tmp_path, f"--screenshot={shot}", reports[which].as_uri())
    width, height, distinct = png_facts(shot)
    assert (width, height) == WINDOW
    assert distinct > 16, "a blank page would paint one or two colours"


@pytest.mark.parametrize("which", ["report", "compare"])
def test_the_page_requests_nothing_and_its_charts_have_size(
    reports: dict[str, Any], tmp_path: Path, which: str
) -> None:
    devtools = DevTools(tmp_path / "devtools")
    try:
        url = reports[which].as_uri()
        devtools.open(url)
        sizes = devtools.evaluate(
            "[...document.querySelectorAll('svg.chart')].map(s => s.getBoundingClientRect())"
            ".map(r => [Math.round(r.width), Math.round(r.height)])"
        )
        bars = devtools.evaluate("document.querySelectorAll('svg.chart rect[data-kind]').length")
        title = devtools.evaluate("document.title")
    finally:
        devtools.close()
    assert devtools.requested() == [url], "the page fetched something besides itself"
    assert devtools.problems() == []
    assert sizes and all(width > 100 and height > 50 for width, height in sizes)
    assert bars > 0 and title.startswith("harness ")


def test_the_request_check_sees_an_external_fetch(tmp_path: Path) -> None:
    planted = tmp_path / "planted.html"
    planted.write_text('<!doctype html><title>x</title><img src="http://example.com/pixel.png">', encoding="utf-8")
    devtools = DevTools(tmp_path / "devtools")
    try:
        devtools.open(planted.as_uri())
        devtools.evaluate("document.readyState")
    finally:
        devtools.close()
    assert "http://example.com/pixel.png" in devtools.requested()


def test_png_facts_reads_what_chromium_writes(tmp_path: Path) -> None:
    # A 1x1 PNG made here: the helper must read sizes and pixels, or the paint test proves nothing.
    raw = b"\x00\x12\x34\x56"

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    path = tmp_path / "one.png"
    path.write_bytes(png)
    assert png_facts(path) == (1, 1, 4)
