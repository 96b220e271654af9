"""The simulator: a real HTTP server on loopback that answers like the Messages API.

POST /v1/messages (with or without ?beta=true) and POST /v1/messages/count_tokens; GET /health for
scripts that wait for it. Each /v1/messages request gets the next index (0-based); a fault registered
at that index fires instead of (or around) the normal answer (kinds and wire form: `harness.sim.faults`,
shared with `harness chaos`). Otherwise: auth, validation, the model
(`harness.sim.models`; a script's turn may ask for a fault too),
then JSON or an SSE stream sent event by event with a flush after each (chunked framing). A request
with `thread` (the message-threads beta) is answered from the conversation the server holds for it;
see `harness.sim.threads`. Files, Message Batches and Models are served by `harness.sim.routes`.

Headers copy the real service's (request-id, anthropic-ratelimit-*, x-should-retry on errors) plus
`x-harness-simulator: 1`, `x-harness-sim-model` (the simulator model that answered, e.g. sim-auto) and
`x-harness-sim-policy` (its bare name). Rate-limit reset times are real time, as the API sends them (when the
bucket is full again, RFC 3339), read from `RateLimits.clock` (the wall clock unless a test gives a fake
one); with limits configured (`rate_limits`) the headers carry the limiter's live state. The bodies do not
depend on the time, so a re-recording differs from the first only in those reset headers.

The HTTP side (reading and checking requests, timeouts, streaming writes, stop) is the server core's,
`harness.httpserver`: `Simulator` is a `LoopbackServer` and `_Exchange` answers one request.
"""

from __future__ import annotations

import ipaddress
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.httpserver import Clock, LoopbackServer
from harness.httpserver.answers import Responder
from harness.httpserver.incoming import IncomingRequest
from harness.sim import context_edits, ids
from harness.sim.conversation import INVENTED_HEADER, Conversation, Reply, invented_header
from harness.sim.faults import ERROR_STATUSES, Fault, cut_body, normalize_faults, stream_error
from harness.sim.models import MODEL_HEADER, Chosen, Models, UnknownModel, min_cacheable_tokens, not_found
from harness.sim.policies import POLICIES
from harness.sim.ratelimit import RateLimits, rfc3339
from harness.sim.responses import build_message, dumps, error_body
from harness.sim.routes import Resources
from harness.sim.stream import encode_event, message_events
from harness.sim.structured import FormatUnsatisfied
from harness.sim.threads import Threads, ThreadTurn, thread_kind
from harness.sim.tokens import CacheLedger, count_input
from harness.sim.validation import (
    ApiError,
    check_auth,
    check_count_tokens_request,
    check_messages_request,
    combine_turns,
)

SIMULATED_NOW = "2026-09-07T08:00:00Z"  # Dayflow's fixed "today"
REQUESTS_LIMIT = 4000
TOKENS_LIMIT = 2_400_000
INPUT_TOKENS_LIMIT = 2_000_000
OUTPUT_TOKENS_LIMIT = 400_000

_ERROR_FAULTS = {kind: ApiError(*status) for kind, status in ERROR_STATUSES.items()}
_STATUS_TEXT = {529: "Site Overloaded"}


@dataclass(frozen=True)
class Served:
    """One request the simulator answered, for tests and the CLI log."""

    index: int | None  # position among /v1/messages requests; None for other paths
    path: str
    status: int  # 0 when the connection was dropped before a status line
    policy: str | None
    fault: str | None
    stream: bool
    retry_count: str | None  # the SDK's x-stainless-retry-count header
    thread: str | None = None  # "create" or "continue" for a message-threads request
    model: str | None = None  # the simulator model that answered: sim-auto, sim-dayflow, sim-<script>...


def _bind_address(host: str) -> str:
    if host == "localhost":
        return "127.0.0.1"
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise HarnessError(
            f"host {host!r} is not a loopback address; the simulator binds 127.0.0.1, ::1 "
            "or localhost only, so that it is never reachable from another machine"
        )
    return host


class Simulator(LoopbackServer):
    """A Messages API simulator on loopback, served from a daemon thread. Use as a context manager.

    The HTTP side (reading and checking requests, timeouts, the listen queue, streaming writes, stop) is
    the server core's (`harness.httpserver`); this class holds the simulated service and its routes.
    """

    server_name = "harness-sim"

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: Mapping[int, str | Fault] | None = None,
        seed: int = 0,
        policy: str | None = None,
        verbose: bool = False,
        threads: bool = True,
        model: str | Callable[[dict[str, Any]], Any] | None = None,
        scripts: Sequence[str | Path] = (),
        clock: Clock = time,
        rate_limits: RateLimits | None = None,
    ) -> None:
        """`model`: the default model for requests that name a Claude model id, either a simulator model
        name (`sim-auto:serial`, `sim-<script>`) or a callable (a function model, see
        `harness.sim.function_model`). `scripts`: YAML model scripts, each served as `sim-<name>`; the
        first is the default when `model` does not say otherwise. `policy` is the older name of `model`.
        `clock`: what a "slow" fault sleeps on (the `time` module; a test passes a fake one).
        `rate_limits`: per-minute limits enforced with 429s (`harness.sim.ratelimit`); default none."""
        from harness.sim.script import load_script

        super().__init__(host=_bind_address(host), port=port)
        self.seed = seed
        self.clock = clock
        self.verbose = verbose
        loaded = [load_script(path) for path in scripts]
        self.models = Models(
            seed=seed,
            scripts={script.name: script.model for script in loaded},
            function=model if callable(model) else None,
        )
        named = model if isinstance(model, str) else policy
        if named:
            default: str | None = named
        elif callable(model):
            default = "function"
        else:
            default = loaded[0].name if loaded else None
        try:
            self.policy = self.models.resolve(default, "default model").name if default else None
        except UnknownModel as err:
            raise HarnessError(str(err)) from None
        self.faults: dict[int, Fault] = normalize_faults(faults)
        self.served: list[Served] = []
        self._ledger = CacheLedger()
        self.threads = Threads(enabled=threads)
        self.resources = Resources(seed, self.models.names, rate_limits)
        self.wall_clock = rate_limits.clock if rate_limits is not None else time.time  # for the reset headers
        self._lock = threading.Lock()
        self._requests_seen = 0

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> Simulator:
        super().start()
        return self

    def stop(self, grace: float = 0.0) -> None:
        """Stop serving. With `grace`, first give answers still being sent up to that many seconds."""
        super().stop(grace)

    def __enter__(self) -> Simulator:
        return self.start()

    def handle(self, request: IncomingRequest, responder: Responder) -> None:
        _Exchange(self, request, responder).answer()

    @property
    def requests_seen(self) -> int:
        with self._lock:
            return self._requests_seen

    # -- used by the handler -----------------------------------------------------------------------
    def _next_index(self) -> int:
        with self._lock:
            index = self._requests_seen
            self._requests_seen += 1
            return index

    def _record(self, served: Served) -> None:
        with self._lock:
            self.served.append(served)
        if self.verbose:
            fault = f" fault={served.fault}" if served.fault else ""
            policy = f" model={served.model}" if served.model else ""
            where = f"#{served.index} " if served.index is not None else ""
            thread = f" thread={served.thread}" if served.thread else ""
            print(
                f"harness sim: {where}POST {served.path} -> {served.status or 'dropped'}{policy}{thread}{fault}",
                file=sys.stderr,
                flush=True,
            )


class _Exchange:
    """One request and its answer: the sim's routes. The request arrives read and checked (framing, Host,
    target) by the server core, and the answer leaves through its `Responder`; Simulator(verbose=True) logs."""

    def __init__(self, sim: Simulator, request: IncomingRequest, responder: Responder) -> None:
        self.sim = sim
        self.request = request
        self.responder = responder
        self.headers = dict(request.headers)  # names as the client sent them
        self.path = request.path.rstrip("/")
        self.invented: str | None = None  # the INVENTED_HEADER of the answer, when the model made up tool inputs

    def answer(self) -> None:
        method, raw = self.request.method, self.request.body
        if method == "GET" and self.path == "/health":
            self._send_json(
                200,
                {"status": "ok", "simulator": "harness", "policies": list(POLICIES), "models": self.sim.models.names()},
                {"x-harness-simulator": "1"},
            )
        elif method == "POST" and self.path == "/v1/messages":
            self._messages(raw, self.path)
        elif method == "POST" and self.path == "/v1/messages/count_tokens":
            self._count_tokens(raw, self.path)
        elif not self._resources(method, raw):
            self._not_found(self.path)

    def _common_headers(self, request_id: str, index: int | None, chosen: Chosen | None) -> dict[str, str]:
        remaining = REQUESTS_LIMIT - 1 - (index or 0) % REQUESTS_LIMIT
        now = self.sim.wall_clock()
        headers = {"request-id": request_id, "x-harness-simulator": "1"}
        for name, limit, left in (
            ("requests", REQUESTS_LIMIT, remaining),
            ("tokens", TOKENS_LIMIT, TOKENS_LIMIT),
            ("input-tokens", INPUT_TOKENS_LIMIT, INPUT_TOKENS_LIMIT),
            ("output-tokens", OUTPUT_TOKENS_LIMIT, OUTPUT_TOKENS_LIMIT),
        ):
            headers[f"anthropic-ratelimit-{name}-limit"] = str(limit)
            headers[f"anthropic-ratelimit-{name}-remaining"] = str(left)
            # Unlimited buckets refill at limit/60 a second: full again once what was taken has come back.
            headers[f"anthropic-ratelimit-{name}-reset"] = rfc3339(now + (limit - left) * 60 / limit)
        headers.update(self.sim.resources.rate_limit_headers())  # the live state of configured limits
        if chosen:
            headers["x-harness-sim-policy"] = chosen.policy
            headers[MODEL_HEADER] = chosen.name
        return headers

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str], *, cut: bool = False) -> None:
        data = dumps(payload)
        head = {**headers, "content-type": "application/json"}.items()
        if cut:  # promise the whole body, deliver half, then drop the connection
            self.responder.send_head(status, head, length=len(data), reason=_STATUS_TEXT.get(status))
            self.responder.write(cut_body(data))
            self.responder.drop()
            return
        self.responder.send_body(status, head, data, reason=_STATUS_TEXT.get(status))

    def _send_error(
        self,
        error: ApiError,
        request_id: str,
        headers: Mapping[str, str],
        extra: Mapping[str, str] | None = None,
    ) -> None:
        should_retry = "true" if error.status in (408, 409, 429) or error.status >= 500 else "false"
        merged = {**headers, "x-should-retry": should_retry, **(extra or {})}
        self._send_json(error.status, error_body(error, request_id), merged)

    # -- routes ------------------------------------------------------------------------------------
    def _resources(self, method: str, raw: bytes) -> bool:
        """Files, Message Batches and Models (`harness.sim.routes`); False when the path is none of those."""
        url = self.request  # its path and query
        request_id = ids.request_id(self.sim.seed, ids.request_fingerprint([method, url.path, url.query]), -1)

        def answer_message(params: Any) -> tuple[dict[str, Any] | None, ApiError | None]:
            message, _chosen, error, _fault = self._answer(params, ids.request_fingerprint(params))
            return message, error

        answer = self.sim.resources.answer(method, url.path, url.query, self.headers, raw,
                                           base_url=self.sim.base_url, request_id=request_id,
                                           answer_message=answer_message)
        if answer is None:
            return False
        self.sim._record(Served(None, url.path, answer.status, None, None, False,
                                self.request.header("x-stainless-retry-count")))
        headers = {**self._common_headers(request_id, None, None), **answer.headers}
        if answer.status >= 400:
            headers["x-should-retry"] = "false"
        self.responder.send_body(answer.status, headers.items(), answer.body, reason=_STATUS_TEXT.get(answer.status))
        return True

    def _not_found(self, path: str) -> None:
        request_id = ids.request_id(self.sim.seed, ids.request_fingerprint(path), -1)
        self._send_error(
            ApiError(404, "not_found_error", "Not Found"),
            request_id,
            {"request-id": request_id, "x-harness-simulator": "1"},
        )

    @staticmethod
    def _parse(raw: bytes) -> tuple[Any, ApiError | None]:
        try:
            return json.loads(raw.decode("utf-8")), None
        except (UnicodeDecodeError, ValueError) as err:
            return None, ApiError(400, "invalid_request_error", f"The request body is not valid JSON: {err}")

    def _checked(self, raw: bytes, check: Callable[[Any], ApiError | None]) -> tuple[Any, ApiError | None]:
        error = check_auth(self.headers)
        if error:
            return None, error
        body, error = self._parse(raw)
        return body, error or check(body)

    def _count_tokens(self, raw: bytes, path: str) -> None:
        body, error = self._checked(raw, check_count_tokens_request)
        request_id = ids.request_id(self.sim.seed, ids.request_fingerprint(body if body else raw.hex()), -1)
        headers = self._common_headers(request_id, None, None)
        status = error.status if error else 200
        self.sim._record(
            Served(None, path, status, None, None, False, self.request.header("x-stainless-retry-count"))
        )
        if error:
            self._send_error(error, request_id, headers)
        else:
            self._send_json(200, {"input_tokens": count_input(body)}, headers)

    def _messages(self, raw: bytes, path: str) -> None:
        sim = self.sim
        index = sim._next_index()
        fault = sim.faults.get(index)
        try:
            loose = json.loads(raw)
        except ValueError:
            loose = None
        stream = isinstance(loose, dict) and loose.get("stream") is True
        # Hashing the request as sent keeps ids deterministic for threads too: a continue names the reply
        # it continues from, whose id is itself a hash of the conversation before it.
        fingerprint = ids.request_fingerprint(loose if loose is not None else raw.hex())
        request_id = ids.request_id(sim.seed, fingerprint, index)
        retry_count = self.request.header("x-stainless-retry-count")
        thread = thread_kind(loose)

        # Each path records before it writes: a client may act on the answer (and a test inspect
        # `served`) before this thread would get to run again.
        def record(status: int, chosen: Chosen | None, fired: Fault | None = fault) -> None:
            sim._record(
                Served(index, path, status, chosen.policy if chosen else None, fired.kind if fired else None,
                       stream, retry_count, thread, chosen.name if chosen else None)
            )

        if fault and self._fault_answers(fault, request_id, index, stream, record, None):
            return

        request_headers = self.headers
        body, error = self._checked(raw, lambda checked: sim.threads.check(checked, request_headers))
        turn: ThreadTurn | None = None
        if not error:
            turn, error = sim.threads.open(body)
        message: dict[str, Any] | None = None
        chosen: Chosen | None = None
        wanted: Fault | None = None
        admission = None
        try:
            if not error:
                admission = sim.resources.admit_message(turn.body if turn else body)
                error = admission.error if admission else None
            if not error:
                message, chosen, error, wanted = self._answer(turn.body if turn else body, fingerprint)
                sim.resources.settle_message(admission, message)
        finally:
            # A failed continue gives its reply back, so that the client can continue from it again.
            sim.threads.finish(turn, message)
        if wanted is not None:  # the model (a script's turn) asks for a fault
            fault = wanted
            if self._fault_answers(fault, request_id, index, stream, lambda status, c: record(status, c, wanted),
                                   chosen):
                return
        headers = self._common_headers(request_id, index, chosen)
        if self.invented:
            headers[INVENTED_HEADER] = self.invented
        if message is None:
            assert error is not None
            record(error.status, chosen, fault)
            # A scripted model's bug is not worth retrying: the same request fails the same way.
            extra = {"x-should-retry": "false"} if error.status == 500 else None
            if admission is not None and admission.error is not None:
                extra = dict(admission.headers)  # the rate limit's retry-after
            self._send_error(error, request_id, headers, extra)
            return
        record(200, chosen, fault)
        if stream:
            self._stream(message, headers, fault)
        else:
            self._send_json(200, message, headers, cut=bool(fault and fault.kind == "cut-stream"))

    def _answer(
        self, body: Any, fingerprint: str
    ) -> tuple[dict[str, Any] | None, Chosen | None, ApiError | None, Fault | None]:
        """(message, the model, error, a fault the model asks for) for the whole request: for a threaded
        continue, the stored conversation and fields plus the new turn, so that it is validated and answered
        like any other request."""
        sim = self.sim
        chosen: Chosen | None = None
        body = combine_turns(body)  # two user turns in a row are one turn to the API, and so to the model
        error = check_messages_request(body)
        if not error:
            try:
                chosen = sim.models.choose(body, self.headers, sim.policy)
            except UnknownModel as err:
                error = not_found(err) if err.source == "model" else ApiError(400, "invalid_request_error", str(err))
        if error:
            return None, chosen, error, None
        assert chosen is not None
        # Compaction blocks, a compaction request and context-management edits change what the model reads.
        edited = context_edits.apply(body, sim.seed, fingerprint)
        conversation = Conversation(edited.body)
        try:
            if edited.only_compaction:  # nothing is sampled after the compaction block
                outcome: Reply | ApiError = Reply([], "compaction")
            else:
                outcome = chosen.model(conversation)
            if isinstance(outcome, ApiError):
                return None, chosen, outcome, None
            if outcome.fault is not None and not outcome.content:  # a fault that replaces the answer
                return None, chosen, None, outcome.fault
            message = build_message(
                conversation,
                outcome,
                policy=chosen.policy,
                seed=sim.seed,
                fingerprint=fingerprint,
                usage=sim._ledger.usage(edited.body, min_cacheable_tokens(conversation.model)),
                edited=edited,
            )
            self.invented = invented_header(message["content"], outcome)
        except FormatUnsatisfied as err:
            return None, chosen, ApiError(400, "invalid_request_error", str(err)), None
        except Exception as err:  # a bug in a scripted model must reach the client as an API error
            return None, chosen, ApiError(500, "api_error", f"simulator model {chosen.name!r} failed: {err}"), None
        return message, chosen, None, outcome.fault

    def _fault_answers(
        self,
        fault: Fault,
        request_id: str,
        index: int,
        stream: bool,
        record: Callable[[int, Chosen | None], None],
        chosen: Chosen | None,
    ) -> bool:
        """Carry out a fault; True when it replaced the answer, False when the normal answer follows."""
        headers = self._common_headers(request_id, index, chosen)
        kind = fault.struck_kind(stream)
        if kind in _ERROR_FAULTS:
            record(_ERROR_FAULTS[kind].status, chosen)
            self._send_error(_ERROR_FAULTS[kind], request_id, headers, fault.error_headers(kind))
            return True
        if kind == "disconnect":
            record(0, chosen)
            self.responder.drop()
            return True
        if kind == "slow":
            self.sim.clock.sleep(fault.delay)
        return False

    def _stream(self, message: dict[str, Any], headers: Mapping[str, str], fault: Fault | None) -> None:
        self.responder.send_head(
            200,
            {**headers, "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}.items(),
            chunked=True,
        )
        events = message_events(message)
        strike = fault.kind if fault and fault.kind in ("cut-stream", "sse-error") else None
        strike_at = fault.strike_at(len(events)) if fault and strike else len(events)
        for sent, (name, data) in enumerate(events):
            if sent == strike_at:
                if strike == "cut-stream":
                    self.responder.drop()
                    return
                self.responder.write_chunk(encode_event("error", stream_error()))
                break
            self.responder.write_chunk(encode_event(name, data))
        self.responder.finish()
