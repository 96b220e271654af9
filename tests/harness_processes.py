"""Start a `harness` command that serves on loopback (proxy, serve, sim), as a subprocess or in a thread,
and wait for its readiness signal: the URL it writes to `--url-file` once it listens.

Every wait here ends on the command's own signal (the URL file, its exit), never on a deadline that counts
its interpreter start: on a loaded 2-core machine a command's imports alone take 2 to 7 s, and more when
other jobs share it. HANG_SECONDS only stops a test whose command is stuck."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HANG_SECONDS = 600.0  # a hang guard for waits that end on a signal: reached only when something is stuck
READY_TIMEOUT = HANG_SECONDS  # the older name, for the tests that join a command's thread with it
_LOOK_EVERY = 0.02  # seconds between looks at the URL file; the wait ends as soon as it is there


def wait_for_url(url_file: Path, *, running: Callable[[], bool], timeout: float = HANG_SECONDS) -> str | None:
    """The base URL a server wrote to `url_file` once listening, or None when `running()` turns false first
    (or, stuck, after `timeout`). The server writes the file atomically, so a URL read here is never half a URL."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()  # never set: a wait that a signal handler cannot cut short
    while time.monotonic() < deadline:
        if url_file.exists() and (url := url_file.read_text().strip()):
            return url
        if not running():
            return None
        pause.wait(_LOOK_EVERY)
    return None


def start_serving_command(url_file: Path, *argv: str) -> tuple[subprocess.Popen[str], str]:
    """Run `harness ARGV... --port 0 --url-file URL_FILE`; return the process and the URL it wrote."""
    url_file.unlink(missing_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *argv, "--port", "0", "--url-file", str(url_file)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    url = wait_for_url(url_file, running=lambda: process.poll() is None)
    if url is None:
        process.kill()
        raise AssertionError(f"harness {argv[0]} did not start: {process.communicate()}")
    return process, url


def start_serving_thread(url_file: Path, run: Callable[[], object]) -> tuple[threading.Thread, list[object], str]:
    """Run a command's `run(args)` (given as `run`, its arguments set) in a daemon thread; return the thread,
    a list that gets its return value when it ends, and the URL it wrote to `url_file`."""
    url_file.unlink(missing_ok=True)
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(run()), daemon=True)
    thread.start()
    url = wait_for_url(url_file, running=thread.is_alive)
    assert url is not None, f"the command never wrote its URL to {url_file}"
    return thread, result, url
