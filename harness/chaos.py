"""`harness chaos`: replay a recorded run with a fault injected at one request, and see how the loop copes.

A recording only holds the failures that happened while it was made. Chaos replays the same run with a
failure put in at request N (0-based, counting every HTTP request the client sends, retries included,
the same index the simulator's faults use): a 429, 529 or 500; a timeout or a dropped connection before
any answer; a stream cut mid-way; or an `error` event in the middle of a stream. The recording for that
request stays unplayed, so when the SDK retries (it retries status errors and connection failures) the
retry is answered from the cassette and the run goes on as recorded; when it cannot retry (a stream it
has already started to hand out) the loop must end the run itself, with a typed outcome and the steps
done so far.

It works at the same seam as `use_cassette`: `ChaosCassette` is a `Cassette` whose `answer` strikes
at the chosen request: an error response, an httpx2 connection error raised where the transport would
raise it, or a response whose body stream fails part-way, where a dying connection would fail it.
Every retry sleeps zero seconds.

    with inject("cassettes/dayflow/brief.yaml", at=1, fault="529") as cassette:
        result = run_brief(anthropic.Anthropic(api_key="x", base_url="http://127.0.0.1:9"), model=...)
    assert cassette.fired  # the fault happened; result.outcome says how the run ended
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import httpx2
from anthropic._base_client import BaseClient

from harness.cassette.recorder import Cassette, Lookup
from harness.errors import HarnessError, absolute
from harness.sim.faults import CHAOS_KINDS, ERROR_STATUSES, KINDS, Fault, cut_body, stream_error
from harness.sim.faults import normalize_faults as normalize_fault_map
from harness.trajectory import Trajectory
from harness.wire.bodies import body_bytes, replay_headers
from harness.wire.sse import SSE_CONTENT_TYPE, render_sse

if TYPE_CHECKING:
    from harness.scenarios import Scenario

# kind -> what the client sees at the chosen request: the shared vocabulary's kinds that chaos can inject
FAULTS: dict[str, str] = {kind: KINDS[kind] for kind in CHAOS_KINDS}


@dataclass(frozen=True)
class FiredFault:
    """A fault that struck: at which request, of which kind, and whether that request asked to stream."""

    index: int
    kind: str
    method: str
    path: str
    streamed: bool

    def describe(self) -> str:
        how = "streamed" if self.streamed else "not streamed"
        return f"{self.kind} at request {self.index} ({self.method} {self.path}, {how})"


def normalize_faults(faults: Mapping[int, str]) -> dict[int, str]:
    """Check a {request index: kind} mapping; bad input is a HarnessError naming what is wrong."""
    checked = normalize_fault_map(faults, kinds=CHAOS_KINDS, first="the first request of the run")
    return {index: fault.kind for index, fault in checked.items()}


class ChaosCassette(Cassette):
    """A replay-only cassette that answers the requests at the indexes in `faults` with a failure.

    The recording that would have answered a faulted request is not played, so the SDK's retry (the
    next request) gets it. `fired` lists the faults that struck; `misses` the requests that had no
    recording at all (the cassette and the code disagree, which is no fault of the chaos).
    """

    def __init__(self, path: str | Path, faults: Mapping[int, str], **options: Any) -> None:
        super().__init__(path, "none", **options)
        self.faults = normalize_faults(faults)
        self.fired: list[FiredFault] = []
        self._fingerprints: dict[int, bytes] = {}  # request index -> fingerprint: a retry repeats its request's

    def lookup(self, method: str, path: str, query: str | None, raw_body: bytes | None,
               headers: Any = ()) -> Lookup:
        found = super().lookup(method, path, query, raw_body, headers)
        self._fingerprints[found.position_in_run] = found.fingerprint
        return found

    def was_retried(self, fault: FiredFault) -> bool:
        """Whether the client sent the faulted request again (the SDK's retry) right after the fault."""
        following = self._fingerprints.get(fault.index + 1)
        return following is not None and following == self._fingerprints.get(fault.index)

    def answer(self, request: httpx2.Request, raw_body: bytes) -> httpx2.Response | None:
        kind = self.faults.get(self.requests_seen)  # the index this request is about to get
        if kind is None:
            return super().answer(request, raw_body)
        path, _, query = request.url.raw_path.decode("ascii").partition("?")
        found = self.lookup(request.method, path, query, raw_body, request.headers)  # counts it; a miss raises here
        assert found.position is not None  # mode none: lookup found a recording or raised
        streamed = isinstance(found.body, dict) and found.body.get("stream") is True
        self.fired.append(FiredFault(found.position_in_run, kind, found.method, found.path, streamed))
        recorded = self.recorded.interactions[found.position]
        struck, answer = _strike(kind, recorded, streamed, request)
        # The run's own record holds what the client got: the fault, where the recording would have been.
        self.served.append({"request": recorded["request"], **struck})
        if isinstance(answer, Exception):
            raise answer
        return answer

    @contextlib.contextmanager
    def installed(self) -> Iterator[ChaosCassette]:
        # Replay never waits: not for a retry-after, not for the SDK's exponential backoff.
        with super().installed(), mock.patch.object(BaseClient, "_calculate_retry_timeout", _no_wait):
            yield self


def _no_wait(self: Any, *args: Any, **kwargs: Any) -> float:
    return 0.0


# ---------------------------------------------------------------------------------------------------
# The faults


def _strike(kind: str, recorded: Mapping[str, Any], streamed: bool,
            request: httpx2.Request) -> tuple[dict[str, Any], httpx2.Response | Exception]:
    """What the client gets instead of the recording, in the wire form the simulator gives the same fault
    (`harness.sim.faults`): the response, or the connection error to raise; with it, the exchange as a
    cassette stores it (`response` or `error`), so that the run's record holds the fault too."""
    fault = Fault(kind)
    kind = fault.struck_kind(streamed)
    if kind in ERROR_STATUSES:
        status, error_type, message = ERROR_STATUSES[kind]
        body = {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_chaos"}
        headers = replay_headers({"headers": fault.error_headers(kind)}, content_type="application/json")
        stored = {"status": status, "headers": dict(fault.error_headers(kind)), "body": body}
        return {"response": stored}, httpx2.Response(status, headers=headers,
                                                     stream=httpx2.ByteStream(json.dumps(body).encode("utf-8")))
    if kind == "timeout":
        error: Exception = httpx2.ReadTimeout("timed out (injected by harness chaos)", request=request)
        return {"error": {"kind": "timeout", "message": str(error)}}, error
    response = recorded.get("response")
    if kind == "disconnect" or not isinstance(response, Mapping):  # a recorded failure itself: nothing to cut
        error = httpx2.RemoteProtocolError("Server disconnected without sending a response (injected by harness "
                                           "chaos)", request=request)
        return {"error": {"kind": "disconnect", "message": str(error)}}, error
    events = list(response.get("events") or [])
    if kind == "sse-error":
        sent = [*events[: fault.strike_at(len(events))], {"event": "error", "data": stream_error()}]
        return ({"response": {**response, "events": sent}},
                httpx2.Response(200, headers=replay_headers(response, content_type=SSE_CONTENT_TYPE),
                                stream=httpx2.ByteStream(render_sse(sent))))
    # cut-stream: the head and the start of the body arrive, then the connection is gone.
    if "events" in response:
        kept = events[: fault.strike_at(len(events))]
        stored, prefix = {**response, "events": kept, "truncated": True}, render_sse(kept)
    else:
        prefix = cut_body(body_bytes(response))
        stored = {key: value for key, value in response.items() if key not in ("body", "body_text", "body_base64")}
        stored.update(body_text=prefix.decode("utf-8", "replace"), truncated=True)
    return {"response": stored}, httpx2.Response(int(response.get("status") or 200), headers=replay_headers(response),
                                                 stream=_CutStream(prefix, request))


class _CutStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """A body that delivers its first bytes and then fails the way a dropped connection does."""

    def __init__(self, prefix: bytes, request: httpx2.Request) -> None:
        self._prefix = prefix
        self._request = request

    def _cut(self) -> httpx2.RemoteProtocolError:
        return httpx2.RemoteProtocolError(
            "peer closed connection without sending complete message body (injected by harness chaos)",
            request=self._request,
        )

    def __iter__(self) -> Iterator[bytes]:
        if self._prefix:
            yield self._prefix
        raise self._cut()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._prefix:
            yield self._prefix
        raise self._cut()


@contextlib.contextmanager
def inject(path: str | Path, *, at: int | None = None, fault: str | None = None,
           faults: Mapping[int, str] | None = None, **options: Any) -> Iterator[ChaosCassette]:
    """Replay `path` (mode none) with `fault` at request `at`, or with every fault in `faults`.

    Options are `use_cassette`'s (ignore_fields, allow_repeats). No lock is taken: nothing is written.
    """
    chosen = dict(faults or {})
    if at is not None or fault is not None:
        if at is None or fault is None:
            raise HarnessError("inject: give both at= and fault= (or a faults={index: kind} mapping)")
        chosen[at] = fault
    if not chosen:
        raise HarnessError("inject: no fault given; pass at= and fault=, or faults={index: kind}")
    cassette = ChaosCassette(path, chosen, **options)
    with cassette.installed():
        yield cassette


class RunHung(BaseException):  # not Exception: no `except Exception` in a loop may swallow it
    """Raised in the main thread when a run outlives its `time_limit`."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail with RunHung if the block runs longer than `seconds` (pytest-timeout, in five lines).

    A SIGALRM interval timer interrupts the main thread wherever it waits (a read, a sleep, a lock);
    RunHung derives from BaseException so that the agent loop, which turns every Exception into an
    outcome, cannot mistake a hang for an ordinary failure. Outside the main thread it only runs the block.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise RunHung(f"still running after {seconds:g} s: the run hung")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------------------------------------
# A bundled scenario under a fault, and the command


def outcome_word(trajectory: Trajectory) -> str:
    """How a run ended, in the loop's words, read from its exchanges alone: ended (end_turn or a stop
    sequence), error (its last request never got a message), refused, max_tokens, context_window; a run
    that stopped on any other stop_reason (a tool_use nobody answered) is `stopped at <reason>`; `nothing`
    when it made no Messages API call."""
    outcome = trajectory.outcome
    if outcome is None:
        return "nothing"
    if outcome.kind == "error":
        return "error"
    words = {"end_turn": "ended", "stop_sequence": "ended", "refusal": "refused", "max_tokens": "max_tokens",
             "model_context_window_exceeded": "context_window"}
    return words.get(outcome.stop_reason or "", f"stopped at {outcome.stop_reason}")


@dataclass
class ChaosRun:
    """One scenario replayed twice from its cassette, as recorded and with the fault; each run read from the
    exchanges it made (`Trajectory`), whatever the scenario returned."""

    scenario: str
    cassette: Path
    recorded: Trajectory
    recorded_requests: int
    result: Trajectory
    requests: int
    fired: list[FiredFault]
    retried: bool  # the client sent the faulted request again

    @property
    def same_as_recorded(self) -> bool:
        return self.result.comparable() == self.recorded.comparable()

    def to_dict(self) -> dict[str, Any]:
        result = self.result
        outcome = result.outcome
        return {
            "scenario": self.scenario,
            "cassette": str(self.cassette),
            "fired": [fault.__dict__ for fault in self.fired],
            "retried": self.retried,
            "same_as_recorded": self.same_as_recorded,
            "recorded": {"outcome": outcome_word(self.recorded), "steps": len(self.recorded.steps),
                         "requests": self.recorded_requests},
            "result": {"outcome": outcome_word(result), "steps": len(result.steps),
                       "reason": outcome.describe() if outcome else "no Messages API call",
                       "incomplete": outcome_word(result) != "ended", "requests": self.requests,
                       "tool_calls": [call.name for call in result.tool_calls]},
        }


def scenario_for(cassette: str | Path, name: str | None = None, *, scenario_set: str | None = None) -> Scenario:
    """The scenario that records `cassette`: the project's (`[tool.loop-harness.scenarios]`), found by name or
    by its cassette path; with `scenario_set`, that installed set's scenario named `name` or whose cassette path
    `cassette` ends with."""
    if not Path(cassette).is_file():
        raise HarnessError("no such cassette", file=absolute(cassette))
    if scenario_set is not None:
        return _set_scenario_for(cassette, name, scenario_set)
    from harness.project import load_project
    from harness.scenarios import scenario_sets

    project = load_project()
    if name is not None:
        return project.scenario(name)
    resolved = Path(cassette).resolve()
    for known in project.scenarios:
        item = project.scenario(known)
        if item.cassette_path.resolve() == resolved:
            return item
    sets = "".join(f", or {each.flag} for {each.called}" for each in scenario_sets())
    raise HarnessError(
        f"no scenario in {project.describe_config()} records this cassette (known: "
        f"{', '.join(project.scenarios) or 'none'}); pass --scenario NAME{sets}",
        file=absolute(cassette),
    )


def _set_scenario_for(cassette: str | Path, name: str | None, set_name: str) -> Scenario:
    from harness.scenarios import scenario_set  # a package's set, registered through an entry point

    found_set = scenario_set(set_name)
    if name is not None:
        return found_set.scenario(name)
    found = found_set.recording(cassette)
    if found is None:
        raise HarnessError(f"no scenario of {found_set.called} records this cassette; pass --scenario NAME "
                           f"(known: {found_set.known()})", file=absolute(cassette))
    return found


def _replay(item: Scenario, path: Path, faults: Mapping[int, str]) -> tuple[Any, ChaosCassette]:
    from harness.scenarios import client_factory

    # An empty fault map is the plain replay, through the same code path as the faulted one.
    cassette = ChaosCassette(path, faults)
    with cassette.installed():
        return item.run(client_factory(item, base_url="http://127.0.0.1:9")), cassette  # never reached: replay


def run_chaos(cassette: str | Path, *, at: int, fault: str, scenario: str | None = None,
              scenario_set: str | None = None) -> ChaosRun:
    """Replay the scenario of `cassette` as recorded, then with `fault` at request `at`.

    A scenario that fails on the plain replay, with no fault at all, is bad input (HarnessError), never
    blamed on the fault; only a failure under the fault is the agent's crash.
    """
    path = Path(cassette)
    item = scenario_for(path, scenario, scenario_set=scenario_set)
    normalize_faults({at: fault})
    try:
        _, clean = _replay(item, path, {})
    except HarnessError:
        raise
    except Exception as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise HarnessError(f"the scenario {item.name!r} fails on a plain replay of this cassette, with no fault "
                           f"injected: {type(err).__name__}: {reason}", file=path) from None
    if clean.misses:
        raise HarnessError(f"the scenario {item.name!r} does not replay from this cassette: {clean.misses[0]}",
                           file=path)
    if at >= clean.requests_seen:
        raise HarnessError(f"--at {at}: the recorded run sends only {clean.requests_seen} request(s) "
                           f"(indexes 0 to {clean.requests_seen - 1})", file=path)
    _, faulted = _replay(item, path, {at: fault})
    retried = any(faulted.was_retried(struck) for struck in faulted.fired)
    return ChaosRun(item.name, path, Trajectory.from_cassette(clean.this_run()), clean.requests_seen,
                    Trajectory.from_cassette(faulted.this_run()), faulted.requests_seen, faulted.fired, retried)


__all__ = ["FAULTS", "ChaosCassette", "ChaosRun", "FiredFault", "RunHung", "inject", "normalize_faults",
           "outcome_word", "run_chaos", "scenario_for", "time_limit"]
