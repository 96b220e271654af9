"""Upload matching speed: what replaying a Files API upload costs, by the size of the file.

    .venv/bin/python -m bench.uploads                   # 100 KB, 1 MB, 10 MB; 5 repeats
    .venv/bin/python -m bench.uploads --sizes 1,50 --repeat 3

A multipart request is matched by its parts, so each replayed upload is parsed (the standard
library's email parser) and every part hashed. Two figures per size, the median of the repeats:

- parse + hash: `match_body_of` on the request bytes the SDK sends (what matching adds);
- replay: the whole `client.beta.files.upload` call answered from a cassette by `use_cassette`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anthropic
import httpx2

from harness.cassette.recorder import use_cassette
from harness.wire.multipart import match_body_of

UPLOADED = {"id": "file_bench", "type": "file", "filename": "blob.bin", "mime_type": "application/octet-stream",
            "size_bytes": 0, "created_at": "2026-09-07T08:00:00Z", "downloadable": False}


def _client() -> anthropic.Anthropic:
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=UPLOADED))
    return anthropic.Anthropic(api_key="bench", base_url="http://127.0.0.1:9", max_retries=0,
                               http_client=httpx2.Client(transport=transport))


def _median_ms(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _replay_ms(content: bytes, repeat: int) -> float:
    """Record one upload, then time its replay: loading the cassette (the part's hash checked), matching, answering."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "upload.yaml"
        with use_cassette(path, mode="once"):
            _client().beta.files.upload(file=("blob.bin", content))

        def replay() -> None:
            with use_cassette(path, mode="none"):
                _client().beta.files.upload(file=("blob.bin", content))

        return _median_ms(replay, repeat)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.1,1,10", help="file sizes in MB, comma-separated")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{'size':>8} | {'parse + hash':>13} | {'replay':>10}")
    for size in (float(item) for item in args.sizes.split(",")):
        content = os.urandom(int(size * 1024 * 1024))
        raw = httpx2.Request("POST", "http://x/v1/files", files={"file": ("blob.bin", content)}).read()
        parse = _median_ms(lambda: match_body_of(raw), args.repeat)  # noqa: B023
        replayed = _replay_ms(content, args.repeat)
        print(f"{size:>6g} MB | {parse:>10.1f} ms | {replayed:>7.1f} ms")


if __name__ == "__main__":
    main()
