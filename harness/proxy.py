"""`harness proxy`: a recording reverse proxy, so that any HTTP client (the TypeScript SDK, curl, another
language's SDK) can be recorded to a cassette.

The client points its base URL at the proxy (127.0.0.1 only); each request goes to the upstream (the
live API or the simulator) and the answer comes back as it arrives: an SSE stream is passed on chunk by
chunk, so the client sees the first token when the upstream sends it. Each exchange is written through
the same `Cassette.record` as the in-process recorder (allow-listed headers, secrets scrubbed, stable
request ids), streams as events with `offset_ms` from the start of the response.

Saving: after every exchange, atomically, before the client has read the end of its answer; so a
client that has finished can read the cassette, and SIGINT, SIGTERM or even SIGKILL leaves either the
previous file or a complete new one.

Failures are recorded as they happened and never dressed up as answers: an upstream 4xx/5xx goes to the
client and the cassette as it was; a connection failure before the answer is recorded as
`error: {kind, message}` and the client gets a 502 that says so; a stream cut mid-way is recorded with
`truncated: true` and the client's connection is cut at the same place. Each retry the client makes
arrives as its own request and becomes its own interaction.

In mode once (cassette present) and new_episodes, requests the cassette answers are replayed from it,
as with `use_cassette`.
"""

from __future__ import annotations

import argparse
import codecs
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import filelock
import httpx2

from harness.cassette.recorder import Cassette, CassetteMismatch, Mode, lock_path
from harness.cassette.rule_options import add_rule_arguments, rules_from_arguments
from harness.cassette.sse import SSE_CONTENT_TYPE, parse_sse
from harness.errors import HarnessError
from harness.httpserver import (
    FRAMING,
    HOP_BY_HOP,
    ClientDisconnected,
    IncomingRequest,
    LoopbackServer,
    Responder,
    api_error,
    run_until_stopped,
    send_miss,
    write_recorded,
)

PROXY_MODES: tuple[str, ...] = ("once", "new_episodes", "all", "rewrite")
PROXY_ERROR_HEADER = "x-harness-proxy-error"  # on the 502 the proxy sends when the upstream failed
RECORDED_HEADER = "x-harness-recorded"  # on answers that came from the upstream (and went to the cassette)
# Not forwarded upstream: the upstream's own host, framing we recompute, and the encoding, which the
# upstream client negotiates itself so that it can read (and record) the body decoded.
_NOT_FORWARDED = HOP_BY_HOP | FRAMING | {"host", "accept-encoding", "expect"}


class _EventSplitter:
    """Cuts a byte stream into complete SSE events as they arrive (an event ends at a blank line)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._held_cr = ""  # a chunk that ends in "\r" may be half of a "\r\n"

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        text = self._held_cr + self._decoder.decode(data)
        self._held_cr = "\r" if text.endswith("\r") else ""
        text = text.removesuffix("\r") if self._held_cr else text
        self._buffer += text.replace("\r\n", "\n").replace("\r", "\n")
        events: list[dict[str, Any]] = []
        while "\n\n" in self._buffer:
            block, self._buffer = self._buffer.split("\n\n", 1)
            events.extend(parse_sse(block))
        return events

    def close(self) -> list[dict[str, Any]]:
        """The events of a stream that ended without a final blank line."""
        rest = self._buffer + self._decoder.decode(b"", final=True)
        self._buffer = ""
        return parse_sse(rest) if rest.strip() else []


def _failure_kind(error: httpx2.RequestError) -> str:
    if isinstance(error, httpx2.ConnectError | httpx2.ConnectTimeout):
        return "connect"
    if isinstance(error, httpx2.TimeoutException):
        return "timeout"
    return "disconnect"


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__


class RecordingProxy(LoopbackServer):
    """Forwards to `upstream`, answers the client as the upstream answers, records each exchange.

        with Simulator() as sim, RecordingProxy(sim.base_url, "run.yaml") as proxy:
            client = anthropic.Anthropic(base_url=proxy.base_url, api_key="sim")
    """

    server_name = "harness-proxy"

    def __init__(self, upstream: str, cassette: str | Path, *, mode: Mode = "once", port: int = 0,
                 timeout: float = 600.0, verbose: bool = False, **cassette_options: Any) -> None:
        super().__init__(port=port)
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HarnessError(f"--upstream {upstream!r} is not an http(s) URL such as https://api.anthropic.com")
        if mode not in PROXY_MODES:
            raise HarnessError(f"proxy mode {mode!r}: use one of {', '.join(PROXY_MODES)} "
                               "(to replay only, use `harness serve`)")
        self.upstream = upstream.rstrip("/")
        self._origin = f"{parts.scheme}://{parts.netloc}"
        # The same lock as use_cassette: a proxy and a Python recorder never write one cassette at once.
        self._file_lock = filelock.FileLock(lock_path(Path(cassette)))
        self._file_lock.acquire(timeout=30)
        try:
            self.cassette = Cassette(cassette, mode, **cassette_options)
        except BaseException:
            self._file_lock.release()
            raise
        self.verbose = verbose
        self.replayed = 0  # answers served from the cassette
        self._lock = threading.Lock()  # the Cassette is not thread-safe; requests arrive on many threads
        self._closed = False
        loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
        # trust_env off for loopback: an HTTP(S)_PROXY in the environment must not capture a local upstream.
        self._client = httpx2.Client(timeout=httpx2.Timeout(timeout, connect=min(timeout, 10.0)),
                                     follow_redirects=False, trust_env=not loopback)

    @property
    def recorded(self) -> int:
        """Exchanges recorded so far (each saved as it ended)."""
        return len(self.cassette.new_interactions)

    # -- one request ------------------------------------------------------------------------------------
    def handle(self, request: IncomingRequest, responder: Responder) -> None:
        if not request.target.startswith("/"):
            # An absolute-form or odd target ("@host/...") would change which host the upstream URL names.
            responder.send_json(400, api_error("invalid_request_error", f"harness proxy: request target "
                                               f"{request.target!r} is not a path; send requests to the proxy "
                                               "as to the API, with the proxy as base URL"))
            return
        interaction: dict[str, Any] | None = None
        miss: CassetteMismatch | None = None
        with self._lock:
            try:
                found = self.cassette.lookup(request.method, request.path, request.query, request.body,
                                             request.headers)
                if found.position is not None:
                    interaction = self.cassette.play(found)
                    self.replayed += 1
            except CassetteMismatch as error:
                miss = error
        if miss is not None:
            self._log(f"{request.method} {request.target} -> miss, answered 400:\n{miss}", always=True)
            send_miss(responder, str(miss))
        elif interaction is not None:
            self._log(f"{request.method} {request.target} -> replayed from the cassette")
            write_recorded(responder, interaction)
        else:
            self._forward(request, responder)

    def _forward(self, request: IncomingRequest, responder: Responder) -> None:
        headers = [(name, value) for name, value in request.headers if name.lower() not in _NOT_FORWARDED]
        upstream_request = self._client.build_request(request.method, self.upstream + request.target,
                                                      headers=headers, content=request.body)
        started = time.monotonic()
        try:
            response = self._client.send(upstream_request, stream=True)
        except httpx2.RequestError as error:
            self._failed(request, responder, _failure_kind(error), _describe(error), started)
            return
        try:
            if response.headers.get("content-type", "").startswith(SSE_CONTENT_TYPE):
                self._pass_stream(request, responder, response, started)
            else:
                self._pass_body(request, responder, response, started)
        finally:
            response.close()

    def _pass_body(self, request: IncomingRequest, responder: Responder, response: httpx2.Response,
                   started: float) -> None:
        # A JSON answer is read whole before the client sees its head: if the upstream dies mid-body, the
        # client can still be told so with a 502 (its head is not on the wire yet).
        try:
            body = response.read()
        except httpx2.RequestError as error:
            self._failed(request, responder, _failure_kind(error), _describe(error), started)
            return
        self._record(request, response, started, response_body=body)
        self._log(f"{request.method} {request.target} -> {response.status_code} (recorded #{self.recorded})")
        responder.send_body(response.status_code, self._client_headers(response), body,
                            reason=response.reason_phrase)

    def _pass_stream(self, request: IncomingRequest, responder: Responder, response: httpx2.Response,
                     started: float) -> None:
        head_at = time.monotonic()
        splitter = _EventSplitter()
        events: list[dict[str, Any]] = []
        upstream_failure: str | None = None
        client_gone = False
        try:
            responder.send_head(response.status_code, self._client_headers(response), chunked=True,
                                reason=response.reason_phrase)
            for chunk in response.iter_bytes():
                offset = round((time.monotonic() - head_at) * 1000, 1)
                events.extend({**event, "offset_ms": offset} for event in splitter.feed(chunk))
                responder.write_chunk(chunk)  # as it came: the client sees each event when the upstream sends it
        except httpx2.RequestError as error:
            upstream_failure = f"{_failure_kind(error)}: {_describe(error)}"
        except ClientDisconnected:
            client_gone = True
        if upstream_failure is None and not client_gone:
            offset = round((time.monotonic() - head_at) * 1000, 1)
            events.extend({**event, "offset_ms": offset} for event in splitter.close())
        truncated = upstream_failure is not None or client_gone
        self._record(request, response, started, events=events, truncated=truncated)
        what = f"{response.status_code} stream, {len(events)} events"
        if upstream_failure:
            self._log(f"{request.method} {request.target} -> {what}, then the upstream failed ({upstream_failure}); "
                      f"recorded #{self.recorded} as truncated", always=True)
            responder.drop()  # the client's stream ends where the upstream's did
        elif client_gone:
            self._log(f"{request.method} {request.target} -> {what}, then the client hung up; "
                      f"recorded #{self.recorded} as truncated", always=True)
        else:
            self._log(f"{request.method} {request.target} -> {what} (recorded #{self.recorded})")
            responder.finish()

    def _failed(self, request: IncomingRequest, responder: Responder, kind: str, message: str,
                started: float) -> None:
        self._record(request, None, started, error={"kind": kind, "message": message})
        self._log(f"{request.method} {request.target} -> upstream {kind} ({message}); "
                  f"recorded #{self.recorded} as a {kind} failure, answered 502", always=True)
        text = (f"harness proxy: the upstream {self.upstream} failed before answering ({kind}: {message}). "
                f"The cassette records the {kind}, not this 502.")
        responder.send_json(502, api_error("api_error", text), [(PROXY_ERROR_HEADER, kind)])

    # -- the cassette -----------------------------------------------------------------------------------
    def _client_headers(self, response: httpx2.Response) -> list[tuple[str, str]]:
        kept = [(name, value) for name, value in response.headers.multi_items()
                if name.lower() not in HOP_BY_HOP and name.lower() not in FRAMING]
        return [*kept, (RECORDED_HEADER, "1")]

    def _record(self, request: IncomingRequest, response: httpx2.Response | None, started: float,
                **outcome: Any) -> None:
        elapsed_ms = (time.monotonic() - started) * 1000
        with self._lock:
            if self._closed:  # stop() has written the cassette for the last time
                return
            if response is not None:
                outcome.update(status=response.status_code, response_headers=response.headers.multi_items())
            self.cassette.record(method=request.method, url=self._origin + request.target,
                                 request_headers=request.headers, request_body=request.body,
                                 elapsed_ms=elapsed_ms, **outcome)
            rejected = self.cassette.rejected[-1] if self.cassette.rejected else None
            if rejected is not None and rejected["position"] == self.recorded - 1:
                self._log(f"warning: the upstream refused request #{self.recorded} (400: {rejected['message']}); "
                          "the client may retry with a changed request. Both are in the cassette: check that the "
                          "recording is the run you meant", always=True)
            self._save()

    def _save(self) -> None:
        try:
            self.cassette.save()
        except HarnessError as err:  # the exchange stays in memory; the next save tries again
            print(f"harness proxy: could not save the cassette: {err}", file=sys.stderr, flush=True)

    def stop(self, grace: float = 5.0) -> None:
        super().stop(grace)
        with self._lock:
            if not self._closed:
                self._closed = True
                self._save()
                self._client.close()
                self._file_lock.release()

    def _log(self, line: str, *, always: bool = False) -> None:
        if self.verbose or always:
            print(f"harness proxy: {line}", file=sys.stderr, flush=True)


# -- the command ------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--upstream", required=True,
                        help="where requests go: https://api.anthropic.com, or the simulator's URL")
    parser.add_argument("--cassette", required=True, type=Path, help="the cassette file to record to")
    parser.add_argument("--mode", choices=PROXY_MODES, default="once",
                        help="once (default): record a new cassette, replay an existing one; new_episodes: replay "
                        "what matches, record the rest; all: send everything, renew what it records; rewrite: "
                        "record afresh")
    parser.add_argument("--port", type=int, default=8766, help="port on 127.0.0.1; 0 picks a free one (default 8766)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds to wait on the upstream (read timeout; default 600)")
    add_rule_arguments(parser)
    parser.add_argument("--url-file", type=Path, help="write the proxy's base URL to this file once listening")
    parser.add_argument("--quiet", action="store_true", help="log only failures and misses")


def run(args: argparse.Namespace) -> int:
    proxy = RecordingProxy(args.upstream, args.cassette, mode=args.mode, port=args.port, timeout=args.timeout,
                           verbose=not args.quiet, normalize=rules_from_arguments(args))

    def report() -> None:
        print(f"harness proxy: stopped; {proxy.recorded} exchanges recorded to {args.cassette}, "
              f"{proxy.replayed} replayed from it", file=sys.stderr, flush=True)

    run_until_stopped(
        proxy,
        banner=f"harness proxy: listening on {{url}} -> {proxy.upstream}, recording to {args.cassette} "
        f"(mode {args.mode}; set ANTHROPIC_BASE_URL={{url}})",
        url_file=args.url_file,
        on_stop=report,
    )
    return 0
