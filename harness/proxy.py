"""`harness proxy`: a recording reverse proxy, so that any HTTP client (the TypeScript SDK, curl, another
language's SDK) can be recorded to a cassette.

The client points its base URL at the proxy (127.0.0.1 only); each request goes to the upstream (the
live API or the simulator) and the answer comes back as it arrives: an SSE stream is passed on chunk by
chunk, so the client sees the first token when the upstream sends it. Each exchange is written through
the same `Cassette.record` as the in-process recorder (allow-listed headers, secrets scrubbed, stable
request ids), streams as events with `offset_ms` from the start of the response.

Saving: each exchange is appended to a journal beside the cassette (`.NAME.journal`, one fsynced line)
once the client has its answer, in time that does not grow with the cassette; the cassette is written
once, atomically, at stop, and the journal removed. SIGINT and SIGTERM stop the proxy that way; SIGKILL
leaves the previous cassette untouched and the journal, which the next proxy on that cassette folds in
before it starts. A save that fails (a full disk) never costs the client its answer nor makes a second
upstream call: it is logged at once and reported at stop, when the whole cassette is written again.

Failures are recorded as they happened and never dressed up as answers: an upstream 4xx/5xx goes to the
client and the cassette as it was; a connection failure before the answer is recorded as
`error: {kind, message}` and the client gets a 502 that says so; a stream cut mid-way is recorded with
`truncated: true` and the client's connection is cut at the same place. Each retry the client makes
arrives as its own request and becomes its own interaction.

In mode once (cassette present) and new_episodes, requests the cassette answers are replayed from it,
as with `use_cassette`. In mode fork the recorded prefix is replayed while requests match, and from the
first divergent request on every request goes to the upstream and is recorded; the cassette is written
once, when the proxy stops (SIGINT, SIGTERM), so a proxy killed mid-run leaves the old file; what the
fork replayed (not paid again) and re-recorded is printed then.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2

from harness.cassette import modes
from harness.cassette.journal import Journal, journal_path, read_journal
from harness.cassette.recorder import Cassette, CassetteMismatch, Mode
from harness.cassette.redact import redact_target, shown_url
from harness.cassette.storage import UnansweredRun, recording_turn
from harness.cassette.transport import failure_kind
from harness.errors import HarnessError
from harness.httpserver import LoopbackServer
from harness.httpserver.answers import ClientDisconnected, Responder, api_error, send_miss, write_recorded
from harness.httpserver.incoming import IncomingRequest
from harness.wire.bodies import FRAMING, HOP_BY_HOP
from harness.wire.sse import SSE_CONTENT_TYPE, parse_sse

PROXY_MODES: tuple[str, ...] = ("once", "new_episodes", "all", "rewrite", "fork")
PROXY_ERROR_HEADER = "x-harness-proxy-error"  # on the 502 the proxy sends when the upstream failed
RECORDED_HEADER = "x-harness-recorded"  # on answers that came from the upstream (and went to the cassette)
# The events that end a streamed answer: a client that has one has the answer, so it is journaled first.
_FINAL_EVENTS = frozenset({"message_stop", "error"})
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


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _shown(request: IncomingRequest) -> str:
    """Method and target for a log line: a credential in the query (`?key=`) does not reach the log."""
    return f"{request.method} {redact_target(request.target)}"


class RecordingProxy(LoopbackServer):
    """Forwards to `upstream`, answers the client as the upstream answers, records each exchange.

        with Simulator() as sim, RecordingProxy(sim.base_url, "run.yaml") as proxy:
            client = anthropic.Anthropic(base_url=proxy.base_url, api_key="sim")
    """

    server_name = "harness-proxy"

    def __init__(self, upstream: str, cassette: str | Path, *, mode: Mode = "once", port: int = 0,
                 timeout: float = 600.0, verbose: bool = False, lock_timeout: float | None = None,
                 **cassette_options: Any) -> None:
        super().__init__(port=port)
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HarnessError(f"--upstream {upstream!r} is not an http(s) URL such as https://api.anthropic.com")
        if mode not in PROXY_MODES:
            raise HarnessError(f"proxy mode {mode!r}: use one of {', '.join(PROXY_MODES)} "
                               "(to replay only, use `harness serve`)")
        self.upstream = upstream.rstrip("/")
        self.shown_upstream = shown_url(self.upstream)  # what a log line, the banner or the lock's holder says
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self.verbose = verbose
        # The same lock as use_cassette: a proxy and a Python recorder never write one cassette at once.
        self._file_lock = recording_turn(cassette, mode, timeout=lock_timeout,
                                         who=f"harness proxy --upstream {self.shown_upstream}")
        try:
            self.recovered = _recover_journal(Path(cassette), cassette_options)
            if self.recovered:
                self._log(f"folded {self.recovered} exchanges a killed proxy left in its journal into {cassette}",
                          always=True)
            self.cassette = Cassette(cassette, mode, **cassette_options)
        except BaseException:
            self._file_lock.release()
            raise
        self.replayed = 0  # answers served from the cassette
        self.save_failures: list[str] = []  # journal or cassette writes that failed, reported at stop
        self._journal = Journal(self.cassette.path)
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
            text = miss.describe("proxy")
            self._log(f"{_shown(request)} -> miss, answered 400:\n{text}", always=True)
            send_miss(responder, text)
        elif interaction is not None:
            self._log(f"{_shown(request)} -> replayed from the cassette")
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
            self._failed(request, responder, failure_kind(error), _describe(error), started)
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
            self._failed(request, responder, failure_kind(error), _describe(error), started)
            return
        position = self._record(request, response, started, response_body=body)
        self._log(f"{_shown(request)} -> {response.status_code} (recorded #{self.recorded})")
        self._write_journal(position)  # durable before the client has its answer: a kill now loses nothing it saw
        responder.send_body(response.status_code, self._client_headers(response), body, reason=response.reason_phrase)

    def _pass_stream(self, request: IncomingRequest, responder: Responder, response: httpx2.Response,
                     started: float) -> None:
        head_at = time.monotonic()
        splitter = _EventSplitter()
        events: list[dict[str, Any]] = []
        upstream_failure: str | None = None
        client_gone = False
        held = b""  # from the chunk that ends the answer on: sent once the exchange is journaled
        try:
            responder.send_head(response.status_code, self._client_headers(response), chunked=True,
                                reason=response.reason_phrase)
            for chunk in response.iter_bytes():
                offset = round((time.monotonic() - head_at) * 1000, 1)
                fed = splitter.feed(chunk)
                events.extend({**event, "offset_ms": offset} for event in fed)
                if held or any(event.get("event") in _FINAL_EVENTS for event in fed):
                    held += chunk  # the client has the whole answer once it has this: journal it first
                else:
                    responder.write_chunk(chunk)  # as it came: the client sees each event when the upstream sends it
        except httpx2.RequestError as error:
            upstream_failure = f"{failure_kind(error)}: {_describe(error)}"
        except ClientDisconnected:
            client_gone = True
        if upstream_failure is None and not client_gone:
            offset = round((time.monotonic() - head_at) * 1000, 1)
            events.extend({**event, "offset_ms": offset} for event in splitter.close())
        truncated = upstream_failure is not None or client_gone
        position = self._record(request, response, started, events=events, truncated=truncated)
        # Durable before the client sees the end of its stream (the last chunk): a client that has a whole answer
        # has it in the journal too, whenever the proxy is killed.
        self._write_journal(position)
        what = f"{response.status_code} stream, {len(events)} events"
        if upstream_failure:
            with contextlib.suppress(ClientDisconnected):
                responder.write_chunk(held)  # all the upstream sent, journaled: then cut where it was cut
            self._log(f"{_shown(request)} -> {what}, then the upstream failed "
                      f"({upstream_failure}); recorded #{self.recorded} as truncated", always=True)
            responder.drop()  # the client's stream ends where the upstream's did
        elif client_gone:
            self._log(f"{_shown(request)} -> {what}, then the client hung up; "
                      f"recorded #{self.recorded} as truncated", always=True)
        else:
            self._log(f"{_shown(request)} -> {what} (recorded #{self.recorded})")
            responder.write_chunk(held)
            responder.finish()

    def _failed(self, request: IncomingRequest, responder: Responder, kind: str, message: str,
                started: float) -> None:
        position = self._record(request, None, started, error={"kind": kind, "message": message})
        self._log(f"{_shown(request)} -> upstream {kind} ({message}); "
                  f"recorded #{self.recorded} as a {kind} failure, answered 502", always=True)
        text = (f"harness proxy: the upstream {self.shown_upstream} failed before answering ({kind}: {message}). "
                f"The cassette records the {kind}, not this 502.")
        self._write_journal(position)  # durable before the client hears of it
        responder.send_json(502, api_error("api_error", text), [(PROXY_ERROR_HEADER, kind)])

    # -- the cassette -----------------------------------------------------------------------------------
    def _client_headers(self, response: httpx2.Response) -> list[tuple[str, str]]:
        kept = [(name, value) for name, value in response.headers.multi_items()
                if name.lower() not in HOP_BY_HOP and name.lower() not in FRAMING]
        return [*kept, (RECORDED_HEADER, "1")]

    def _record(self, request: IncomingRequest, response: httpx2.Response | None, started: float,
                **outcome: Any) -> int | None:
        """Add the exchange to the cassette in memory (quick, and in the order exchanges ended); its position
        among the new interactions, or None once stopped. `_write_journal` makes it durable."""
        elapsed_ms = (time.monotonic() - started) * 1000
        with self._lock:
            if self._closed:  # stop() has written the cassette for the last time
                return None
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
            return len(self.cassette.new_interactions) - 1

    def _write_journal(self, position: int | None) -> None:
        """Append one exchange to the journal. A failure is logged and kept for the report at stop: the
        client already has its answer, and the exchange is still in memory for the save at stop. A fork keeps
        no journal: it replaces the old file only at a graceful stop, so a killed fork leaves the old file."""
        if position is None or self.cassette.mode == "fork":
            return
        with self._lock:
            if self._closed:
                return
            interaction = self.cassette.redacted(self.cassette.new_interactions[position], position)
            header = {"mode": self.cassette.mode, "provenance": self.cassette.provenance,
                      "note": self.cassette.storage.note}
        if interaction is None:
            return
        try:
            self._journal.append(header, position, interaction)
        except (OSError, ValueError, HarnessError) as err:
            self._save_failed(f"exchange #{position + 1} could not be written to {self._journal.path}: "
                              f"{getattr(err, 'strerror', None) or err}")

    def _save_failed(self, reason: str) -> None:
        with self._lock:
            self.save_failures.append(reason)
        print(f"harness proxy: {reason}", file=sys.stderr, flush=True)

    def _save(self) -> bool:
        """Write the cassette; whether the journal may go (all it held is in the cassette, or worth nothing)."""
        try:
            self.cassette.save()
        except UnansweredRun as err:  # the old cassette stays; a journal of connection failures would not help
            self._save_failed(str(err))
            return True
        except (HarnessError, OSError) as err:
            self._save_failed(f"could not save the cassette {self.cassette.path}: "
                              f"{getattr(err, 'strerror', None) or err}; the journal {self._journal.path} "
                              "keeps what was recorded")
            return False
        return True

    def stop(self, grace: float = 5.0) -> None:
        super().stop(grace)
        with self._lock:
            if self._closed:
                return
            self._closed = True
        saved = self._save()
        if saved:
            self._journal.remove()  # everything it held is in the cassette now
        else:
            self._journal.close()
        self._client.close()
        self._file_lock.release()

    def _log(self, line: str, *, always: bool = False) -> None:
        if self.verbose or always:
            print(f"harness proxy: {line}", file=sys.stderr, flush=True)


def _recover_journal(cassette: Path, options: dict[str, Any]) -> int:
    """Fold in the journal a killed proxy left beside `cassette`; the number of exchanges it held."""
    path = journal_path(cassette)
    if not os.path.lexists(path):  # lexists: a planted link is read (and refused) rather than passed over
        return 0
    found = read_journal(path)
    if found is None or not found[1]:
        path.unlink(missing_ok=True)
        return 0
    header, interactions = found
    journaled = header.get("mode")
    mode: Mode = journaled if modes.is_mode(journaled) and journaled in PROXY_MODES else "new_episodes"
    if modes.write_protected(mode, cassette.exists()):  # once over an existing cassette: add the run's exchanges
        mode = "new_episodes"
    recovered = Cassette(cassette, mode, **{**options, "note": header.get("note") or options.get("note")})
    recovered.capture.new_interactions = interactions
    if isinstance(header.get("provenance"), dict):
        recovered.provenance = header["provenance"]
    try:
        recovered.save()
    except UnansweredRun as err:  # connection failures only: nothing to fold in, and the cassette stays as it is
        print(f"harness proxy: the journal {path} was not folded in: {err.reason}", file=sys.stderr, flush=True)
        path.unlink(missing_ok=True)
        return 0
    path.unlink(missing_ok=True)
    return len(interactions)
