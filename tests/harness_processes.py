"""Start a `harness` command that serves on loopback (proxy, serve, sim) as a subprocess, and find its URL."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def start_serving_command(url_file: Path, *argv: str) -> tuple[subprocess.Popen[str], str]:
    """Run `harness ARGV... --port 0 --url-file URL_FILE`; return the process and the URL it wrote."""
    url_file.unlink(missing_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *argv, "--port", "0", "--url-file", str(url_file)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    deadline = time.monotonic() + 60  # a readiness signal, not a speed test: a loaded 2-core machine is slow
    while time.monotonic() < deadline:
        if url_file.exists() and url_file.read_text().strip():
            return process, url_file.read_text().strip()
        if process.poll() is not None:
            break
        time.sleep(0.025)
    process.kill()
    raise AssertionError(f"harness {argv[0]} did not start: {process.communicate()}")
