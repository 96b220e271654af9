"""`use_cassette` and `Cassette`: record every Messages API exchange of any SDK client to a cassette, or replay it.

`Cassette` is one cassette in use, put together from one part per job:

- `storage.Storage`: the file, loaded as the mode says, and written back when the run ends well
  (`storage.recording_turn` takes the recording lock for every recorder of a cassette);
- `lookup.Matcher`: the index and matching, which recording answers each request, what was played, what missed;
- `capture.Capture`: the recorder, each exchange sent to the network as the cassette stores it, secrets out;
- `transport`: the replay transport, the in-process patch that routes a client's requests to the cassette.

So that

- a lookup is one hash of the request's bytes in an index (vcrpy scans every interaction, twice, per request);
- a miss raises `CassetteMismatch`, an `anthropic.AnthropicError`, which the SDK neither wraps into
  "Connection error." nor retries, carrying a diff against the nearest recorded request;
- what is written is our format: allow-listed headers, parsed bodies, SSE as events, secrets out;
- recorded retries replay with zero backoff (the SDK would otherwise really sleep 0.5-2 s each).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2

from harness.cassette import modes, other_clients, transport, verdict
from harness.cassette.capture import Capture, spans_for
from harness.cassette.fork import ForkReport, spend_of
from harness.cassette.format import CassetteFile
from harness.cassette.lookup import Lookup, Matcher
from harness.cassette.mismatch import CassetteMismatch
from harness.cassette.modes import MODES, Mode, is_mode, placeholder_credential, replaying_run
from harness.cassette.redact import Scrubber
from harness.cassette.shared_tls import shared_tls_contexts
from harness.cassette.storage import Storage, Turn, recording_turn
from harness.cassette.tolerant import ToleratedDifference
from harness.cassette.transport import REPLAYED_HEADER, AmbiguousCassette
from harness.cassette.verdict import MissWarning, UnplayedInteractions, UnplayedWarning, Verdict
from harness.egress import egress_guard
from harness.errors import CassetteError, HarnessError
from harness.normalize import MatchPolicy, Normalization

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider
else:  # OpenTelemetry is an optional extra: at run time (typing.get_type_hints) the hint reads as Any
    TracerProvider = Any

# What a request to another host than loopback is told inside a block that may not record (issue 37 item 5).
_REPLAY_HINT = ("{path} is replayed (mode {mode!r}), so code inside use_cassette may talk to loopback only. To record, "
                "use use_cassette(..., mode='new_episodes') (or 'rewrite'), or pytest --record-mode=new_episodes.")


def _checked(mode: str, path: str | Path) -> Mode:
    if not is_mode(mode):
        raise CassetteError(f"unknown record mode {mode!r}; use one of {', '.join(MODES)}", file=path)
    return mode


class Cassette:
    """One cassette in use: matching, playing and recording, whatever carries the requests.

    In-process, the transport patch (`installed`) calls `answer`, and vcrpy's capture calls `record`; the proxy and
    the replay server call `lookup`, `play` and `record` directly.

    Its parts keep their own state, and the library reaches them by name: `storage` (the file: path, mode, what
    was loaded and saved), `matcher` (the index, what was played, what missed) and `capture` (what was recorded,
    secrets out). What a user reads of a run is here: read-only `path`, `mode`, `existed`, `recorded`, `saved`,
    `requests_seen`, `misses`, `divergence`, `drifts`, `unplayed`, `new_interactions`, `rejected`; `served` (this
    run's exchanges in order, a list the cassette appends to); `provenance` (the proxy and the judge set it: what
    answered); `this_run()` and `fork_report()`.
    """

    allow_unused: bool = False  # the pytest plugin's marker option: unplayed recordings do not fail the test
    # Set, `save()` hands the cassette to it instead of writing: the pytest plugin collects what each test of a
    # shared cassette recorded in rewrite/all, to write it once for the session (harness.pytest_plugin.shared).
    deferred: Callable[[Cassette], None] | None = None

    def __init__(
        self,
        path: str | Path,
        mode: Mode = "none",
        *,
        ignore_fields: Sequence[str] = (),
        scrubbers: Sequence[Scrubber] = (),
        allow_repeats: bool = False,
        save_on_error: bool = False,
        note: str | None = None,
        secret_headers: Sequence[str] = (),
        rewrite_request_ids: bool = False,
        normalize: Normalization | None = None,
    ) -> None:
        self.storage = Storage(path, _checked(mode, path), note=note, rewrite_request_ids=rewrite_request_ids)
        self.save_on_error = save_on_error
        secrets: set[str] = set()  # the run's credentials: matching redacts live requests with them, saving too
        self.matcher = Matcher(self.storage.recorded, path=self.storage.path, mode=mode, existed=self.storage.existed,
                               rules=self.storage.rules(normalize), ignore_fields=ignore_fields,
                               allow_repeats=allow_repeats, secrets=secrets, secret_headers=secret_headers)
        self.capture = Capture(secrets=secrets, secret_headers=secret_headers, scrubbers=scrubbers)
        self.served: list[dict[str, Any]] = []  # this run's exchanges in order, played or recorded

    # -- what a user reads of the run: read-only views of the parts -------------------------------------
    @property
    def path(self) -> Path:
        """The cassette file."""
        return self.storage.path

    @property
    def mode(self) -> Mode:
        """The record mode: none, once, new_episodes, all, rewrite or fork."""
        return self.storage.mode

    @property
    def existed(self) -> bool:
        """Whether the file was there when the run began."""
        return self.storage.existed

    @property
    def recorded(self) -> CassetteFile:
        """The cassette as loaded when the run began (empty when there was none, or in rewrite)."""
        return self.storage.recorded

    @property
    def saved(self) -> Path | None:
        """Where `save()` last wrote the cassette; None until it has."""
        return self.storage.saved

    @property
    def requests_seen(self) -> int:
        """How many requests the run sent to the cassette so far, retries included."""
        return self.matcher.requests_seen

    @property
    def misses(self) -> list[CassetteMismatch]:
        """Every request with no recording to answer it, also those the caller caught and swallowed."""
        return self.matcher.misses

    @property
    def divergence(self) -> CassetteMismatch | None:
        """Mode fork: the first request that had no recording, from which the run was recorded afresh."""
        return self.matcher.divergence

    @property
    def drifts(self) -> list[ToleratedDifference]:
        """What the matching policy served anyway (volatile values, or tool output under `sequence`): warnings."""
        return self.matcher.drifts

    @property
    def new_interactions(self) -> list[dict[str, Any]]:
        """The exchanges this run recorded (sent to the network), as the cassette stores them."""
        return self.capture.new_interactions

    @property
    def rejected(self) -> list[dict[str, Any]]:
        """Recorded answers of 400 invalid_request_error: the request was wrong, not the recording."""
        return self.capture.rejected

    @property
    def spans(self) -> Any:
        """The run's telemetry (harness.telemetry.live.CassetteSpans) when traced, else None."""
        return self.capture.spans

    # -- what the modes mean --------------------------------------------------------------------------
    @property
    def replays(self) -> bool:
        return modes.replays(self.mode)

    @property
    def write_protected(self) -> bool:
        return self.storage.write_protected

    @property
    def unplayed(self) -> list[int]:
        """Positions of recorded interactions that this run never asked for."""
        return self.matcher.unplayed

    @property
    def provenance(self) -> dict[str, Any]:
        """What the run was recorded against (source, endpoint, SDK, fingerprints), once it recorded something."""
        return dict(self.capture.provenance)

    @provenance.setter
    def provenance(self, value: dict[str, Any]) -> None:
        self.capture.provenance = dict(value)

    # -- the transport-agnostic core: the transport patch, the proxy and the replay server all call these ---
    def lookup(self, method: str, path: str, query: str | None, raw_body: bytes | None,
               headers: Any = None) -> Lookup:
        """Register one request of the run and find the recording that answers it (`Matcher.lookup`)."""
        return self.matcher.lookup(method, path, query, raw_body, headers)

    def play(self, found: Lookup) -> dict[str, Any]:
        """Mark the recording that answers `found` as played and return its interaction (this run's values
        put back where the recording holds placeholders)."""
        interaction = self.matcher.play(found)
        self.served.append(interaction)
        return interaction

    def mismatch(self, found: Lookup) -> CassetteMismatch:
        """The error for a request with no recording left, with a diff against the nearest recorded one."""
        return self.matcher.mismatch(found)

    def record(
        self,
        *,
        method: str,
        url: str,
        request_headers: Any,
        request_body: bytes | str | None,
        status: int | None = None,
        response_headers: Any = (),
        response_body: bytes | str | None = None,
        events: list[dict[str, Any]] | None = None,
        truncated: bool = False,
        error: dict[str, str] | None = None,
        elapsed_ms: float | None = None,
    ) -> None:
        """Add one exchange as it happened: a response (body or SSE events) or a connection failure."""
        self.matcher.notice_client(request_headers)
        self.served.append(self.capture.record(
            rules=self.matcher.rules, method=method, url=url, request_headers=request_headers,
            request_body=request_body, status=status, response_headers=response_headers, response_body=response_body,
            events=events, truncated=truncated, error=error, elapsed_ms=elapsed_ms))

    # -- in-process: what the transport patch calls ----------------------------------------------------------
    def answer(self, request: httpx2.Request, raw_body: bytes) -> httpx2.Response | None:
        """The recorded response to `request`, or None when it should go to the network and be recorded.

        A recorded connection failure is raised as the httpx2 error the transport would have raised.
        """
        return transport.answer(self, request, raw_body)

    def record_failure(self, request: httpx2.Request, raw_body: bytes, error: httpx2.TransportError) -> None:
        """A request that got no response (vcrpy records only responses): kept, so that replay fails the
        same way and the SDK's retry of it replays too."""
        self.record(method=request.method, url=str(request.url), request_headers=request.headers.multi_items(),
                    request_body=raw_body, error=transport.failure_of(error))

    @contextlib.contextmanager
    def installed(self) -> Iterator[Cassette]:
        """Route the requests sent from this context (this thread, this asyncio task) to this cassette: the SDK's
        (transport) and those of other HTTP libraries (other_clients)."""
        with transport.routing(self), other_clients.intercepted():
            yield self

    def this_run(self) -> CassetteFile:
        """The run that just happened, from memory: each exchange as it was played or recorded, in order.

        Not the file: on a first recording it is not written yet, and in new_episodes it holds the old run too.
        """
        meta = {**self.recorded.meta, **self.provenance}
        return CassetteFile(meta=meta, interactions=list(self.served), path=self.path)

    # -- saving -------------------------------------------------------------------------------------------
    def interactions_to_save(self) -> list[dict[str, Any]]:
        return self.storage.interactions_to_save(self.capture.fresh(), played_order=self.matcher.played_order,
                                                 fingerprint_of=self.matcher.fingerprint_of)

    def redacted(self, interaction: dict[str, Any], position: int) -> dict[str, Any] | None:
        """One new interaction as it may be written (secrets out, hooks applied); None if a hook drops it.
        Request ids, when asked to be rewritten, are numbered by `interactions_to_save` at the final save."""
        return self.capture.redacted(interaction, position)

    def save(self) -> Path | None:
        if self.write_protected or not self.new_interactions:
            return None
        if self.deferred is not None:
            self.deferred(self)
            return None
        return self.storage.save(self.interactions_to_save(), provenance=self.provenance, rules=self.matcher.rules,
                                 played=len(self.matcher.played_order), divergence=self.divergence)

    def fork_report(self) -> ForkReport:
        """Mode fork: where the run parted from the recording and why; what was replayed (not paid again) and
        what was recorded, with tokens and list-price cost."""
        divergence = self.divergence
        replaced = len(self.unplayed) if divergence is not None else 0
        return ForkReport(
            path=self.path,
            first_divergent_request=divergence.position + 1 if divergence is not None else None,
            change=divergence.change if divergence is not None else None,
            replayed=spend_of(self.recorded.interactions[p] for p in self.matcher.played_order),
            recorded=spend_of(self.new_interactions),
            replaced=replaced,
            written=self.saved is not None,
        )


class use_cassette:  # a class, so one object is both the context manager and the decorator
    """Record to or replay from a cassette: `with use_cassette(path, mode=...)` or `@use_cassette(path)`.

    Modes: none (replay only; a request with no recording fails with a diff), once (record when the
    file does not exist, else like none), new_episodes (replay what matches, record the rest), all
    (send every request, replacing the recordings it renews), rewrite (record afresh; the old file
    is replaced only when the run ends well), fork (replay the recorded prefix while requests match,
    record from the first divergent request on; the old file is replaced only when the run ends well,
    and `cassette.fork_report()` says what was replayed and what re-recorded, and why).

    Options: `ignore_fields` (JSON paths left out of matching), `scrubbers` (hooks that edit or drop an
    interaction before it is written), `allow_repeats` (serve a recording again), `save_on_error` (write what
    was recorded even when the block raised), `note` (stored in the cassette), `secret_headers` (more headers
    whose values are credentials), `rewrite_request_ids` (number the recorded request ids), `normalize`
    (normalization rules and matching policy), `match_policy` (the policy alone: "volatile", the default,
    tolerates changed uuids, timestamps and the like in tool output, harness.volatile; "strict" does not;
    "sequence" tolerates any change of tool output), `lock_timeout` (seconds to wait for another recorder of
    this cassette, else HARNESS_LOCK_TIMEOUT, else 300). `tracer_provider` (else OpenTelemetry's global one, when
    set) gets a GenAI chat span for each exchange the cassette records. A misspelt option fails at the call.

    As the block ends (harness.cassette.verdict): a miss the code inside caught and swallowed is raised again
    (`on_miss`: "fail", the default, "warn" or "ignore"); in a replay, recorded interactions never played warn
    (`on_unplayed`: "warn", the default, "fail" raising UnplayedInteractions, or "ignore").
    """

    def __init__(
        self,
        path: str | Path,
        mode: Mode = "none",
        *,
        ignore_fields: Sequence[str] = (),
        scrubbers: Sequence[Scrubber] = (),
        allow_repeats: bool = False,
        save_on_error: bool = False,
        note: str | None = None,
        secret_headers: Sequence[str] = (),
        rewrite_request_ids: bool = False,
        normalize: Normalization | None = None,
        match_policy: MatchPolicy | None = None,
        lock_timeout: float | None = None,
        tracer_provider: TracerProvider | None = None,
        on_miss: Verdict = "fail",
        on_unplayed: Verdict = "warn",
    ) -> None:
        self.path = Path(path)
        self.mode = _checked(mode, self.path)
        if match_policy is not None:  # a shorthand for the policy of `normalize`
            try:
                normalize = (normalize or Normalization()).merged(Normalization(policy=match_policy))
            except HarnessError as err:
                raise CassetteError(str(err), file=self.path) from None
        self.lock_timeout = lock_timeout
        self.tracer_provider = tracer_provider
        self.on_miss = verdict.checked("on_miss", on_miss, self.path)
        self.on_unplayed = verdict.checked("on_unplayed", on_unplayed, self.path)
        # Cassette's own options, as given: each use (a decorated function is called many times) builds one.
        self.options: dict[str, Any] = {
            "ignore_fields": ignore_fields, "scrubbers": scrubbers, "allow_repeats": allow_repeats,
            "save_on_error": save_on_error, "note": note, "secret_headers": secret_headers,
            "rewrite_request_ids": rewrite_request_ids, "normalize": normalize,
        }
        self._routing: contextlib.ExitStack | None = None
        self._turn: Turn | None = None
        self.cassette: Cassette | None = None

    # -- the enter/exit path: take the recording turn, open the cassette, route requests to it; then undo ---------
    def __enter__(self) -> Cassette:
        # Two recorders of one cassette (xdist workers, two terminals, a proxy) take turns, whole runs at a
        # time, so their interactions never interleave; a holder that never lets go is named, then given up on.
        turn = recording_turn(self.path, self.mode, timeout=self.lock_timeout)
        try:
            cassette = Cassette(self.path, self.mode, **self.options)
            cassette.capture.spans = spans_for(self.tracer_provider)
            routing = contextlib.ExitStack()
            if cassette.write_protected:  # a replay: a client made inside needs no key (CI has none)
                routing.enter_context(egress_guard(_REPLAY_HINT.format(path=self.path, mode=self.mode)))
                routing.enter_context(placeholder_credential())
                routing.enter_context(shared_tls_contexts())  # ...nor a CA bundle load of its own
            else:
                if (run_hint := replaying_run()) is not None:  # a test's own recording block in a run that replays
                    routing.enter_context(egress_guard(f"{self.path} asks for mode {self.mode!r}, {run_hint}"))
                if transport.records_on_loopback():  # recording against harness sim: no key either, for code
                    routing.enter_context(placeholder_credential())  # that asks the environment for one first
            routing.enter_context(cassette.installed())
        except BaseException:
            turn.release()
            raise
        self._turn, self._routing, self.cassette = turn, routing, cassette
        return cassette

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self._routing is not None and self.cassette is not None and self._turn is not None
        routing, cassette, turn = self._routing, self.cassette, self._turn
        self._routing, self.cassette, self._turn = None, None, None
        try:
            routing.close()
            # save_on_error is for a block that raised an error; an interrupt (Ctrl-C, a stopped pytest session)
            # never replaces a recording, whatever the options.
            if exc_type is None or (cassette.save_on_error and issubclass(exc_type, Exception)):
                cassette.save()
        finally:
            turn.release()
        verdict.judge(cassette, on_miss=self.on_miss, on_unplayed=self.on_unplayed, raised=exc)

    def _again(self) -> use_cassette:
        """A fresh context with the same arguments: each call of a decorated function enters its own."""
        return use_cassette(self.path, self.mode, lock_timeout=self.lock_timeout, tracer_provider=self.tracer_provider,
                            on_miss=self.on_miss, on_unplayed=self.on_unplayed, **self.options)

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(function):
            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with self._again():
                    return await function(*args, **kwargs)

            return run_async

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self._again():
                return function(*args, **kwargs)

        return run


__all__ = [
    "MODES",
    "REPLAYED_HEADER",
    "AmbiguousCassette",
    "Cassette",
    "CassetteMismatch",
    "Lookup",
    "MissWarning",
    "Mode",
    "UnplayedInteractions",
    "UnplayedWarning",
    "use_cassette",
]
