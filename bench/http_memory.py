"""Peak memory of the HTTP core under hostile uploads, measured on a `harness sim` process (its VmHWM).

Two loads, each on a fresh simulator:

- one upload of MB megabytes in 2-byte chunks (chunked transfer encoding): bytes of memory per byte sent;
- N clients at once, each sending a body of SIZE megabytes with a Content-Length: the simulator's peak.

    .venv/bin/python -m bench.http_memory                    # 8 MB chunked; 8 clients x 60 MB
    .venv/bin/python -m bench.http_memory --chunked-mb 28 --clients 8 --body-mb 60

Figures print; nothing is asserted (tests/test_hostile_content.py bounds the allocation instead).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MB = 1024 * 1024


@contextlib.contextmanager
def simulator() -> Iterator[tuple[int, int]]:
    """A `harness sim` child: (its port, its pid)."""
    with tempfile.TemporaryDirectory() as folder:
        url_file = Path(folder) / "url"
        process = subprocess.Popen([sys.executable, "-m", "harness.cli", "sim", "--port", "0", "--url-file",
                                    str(url_file)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not url_file.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            port = int(url_file.read_text().strip().rsplit(":", 1)[1])
            yield port, process.pid
        finally:
            process.terminate()
            process.wait(timeout=30)


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _head(extra: str) -> bytes:
    return (f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"x-api-key: sk-bench\r\n{extra}Connection: close\r\n\r\n").encode()


def _body(size: int) -> bytes:
    prefix, suffix = b'{"model": "sim-echo", "max_tokens": 1, "messages": [{"role": "user", "content": "', b'"}]}'
    return prefix + b"a" * max(0, size - len(prefix) - len(suffix)) + suffix


def _send(port: int, raw_parts: Iterator[bytes] | list[bytes], statuses: list[str]) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=300) as conn:
        try:
            for part in raw_parts:
                conn.sendall(part)
        except OSError:
            pass  # refused mid-upload: the status line says why
        received = b""
        with contextlib.suppress(OSError):
            while len(received) < 64 and (data := conn.recv(65536)):
                received += data
        statuses.append(received.split(b"\r\n", 1)[0].decode("latin-1", "replace") or "(no answer)")


def chunked(megabytes: int) -> None:
    body = _body(megabytes * MB)

    def parts() -> Iterator[bytes]:
        yield _head("Transfer-Encoding: chunked\r\n")
        batch = []
        for start in range(0, len(body), 2):
            piece = body[start:start + 2]
            batch.append(b"%x\r\n%s\r\n" % (len(piece), piece))
            if len(batch) == 65536:
                yield b"".join(batch)
                batch = []
        yield b"".join(batch) + b"0\r\n\r\n"

    with simulator() as (port, pid):
        idle = peak_mb(pid)
        statuses: list[str] = []
        started = time.perf_counter()
        _send(port, parts(), statuses)
        peak = peak_mb(pid)
    grown = peak - idle
    print(f"chunked upload of {megabytes} MB in 2-byte chunks: simulator peak {peak:.0f} MB (idle {idle:.0f} MB), "
          f"{grown:.0f} MB more = {grown / megabytes:.1f} bytes per byte sent; {statuses[0]}; "
          f"{time.perf_counter() - started:.1f} s")


def concurrent(clients: int, megabytes: int) -> None:
    body = _body(megabytes * MB)
    raw = [_head(f"Content-Length: {len(body)}\r\n"), body]
    with simulator() as (port, pid):
        idle = peak_mb(pid)
        statuses: list[str] = []
        threads = [threading.Thread(target=_send, args=(port, raw, statuses)) for _ in range(clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        peak = peak_mb(pid)
    answers = ", ".join(f"{statuses.count(s)} x {s!r}" for s in sorted(set(statuses)))
    print(f"{clients} clients x {megabytes} MB at once: simulator peak {peak:.0f} MB (idle {idle:.0f} MB); "
          f"answers: {answers}; {time.perf_counter() - started:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunked-mb", type=int, default=8)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--body-mb", type=int, default=60)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    chunked(args.chunked_mb)
    concurrent(args.clients, args.body_mb)


if __name__ == "__main__":
    main()
