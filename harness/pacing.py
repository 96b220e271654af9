"""Pacing: send Messages API requests only when the API's rate-limit headers say there is room.

One `Pacer` is shared by every client of a run (`harness record --trials N --concurrency C` gives all its
trials one), since the API's limits are per organisation, not per connection. It keeps no timer of its own:
all it knows comes from the headers the API sends on every answer,

    anthropic-ratelimit-{requests,input-tokens,output-tokens,tokens}-{limit,remaining,reset}
    retry-after (on a 429)

read as the API documents them: each limit is a bucket holding `limit`, holding `remaining` when the
answer was sent and full again at `reset` (RFC 3339), refilled steadily in between. An attempt waits until
every bucket it draws on has room for it, counting as spent what the attempts already in flight draw
(their answers may not be in the headers yet; counting one twice only keeps a little room in reserve, it
does not lower the steady rate, which is the refill rate). What an attempt draws: one request, its input
tokens (estimated from the body's size, one token per 3 bytes: above the simulator's count and, for English
text in JSON, the API's; text that tokenizes denser may meet a 429, which its retry-after then paces) and
its `max_tokens` of output (what the API reserves at admission). Before any headers have arrived, one attempt
goes alone and the others wait for its answer. After a 429, nothing goes until its retry-after has passed.

With the anthropic SDK, `pacer.middleware()` goes in the client's `middleware=[...]`; the SDK calls it
once per HTTP attempt, retries included. The pacer never re-sends anything: retries stay the SDK's (a
429 is retried after its retry-after, as the SDK always does, and the retry waits at the pacer until
every trial may send again), so a recording holds the same attempts a replay makes.

Counted for the report: attempts, the time spent waiting, 429s, and of those the "unpaced" ones: a 429
for an attempt the pacer let go while it had headers (it should have known); a 429 on the very first
attempt, before any headers, is blind instead.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harness.run import retry_after_seconds

if TYPE_CHECKING:
    from anthropic import Middleware

Clock = Callable[[], float]  # seconds since the epoch (the reset times are wall-clock timestamps)

KINDS = ("requests", "input-tokens", "output-tokens", "tokens")
BYTES_PER_TOKEN = 3  # a request body's bytes per input token, on the safe side for text and JSON
_POLL_SECONDS = 0.05  # how often an asyncio waiter looks again while an answer is due
_PATHS = ("/messages", "/v1/messages")  # what the Messages API rate limits (the SDK's path has no /v1)


@dataclass(frozen=True)
class Cost:
    """What one attempt draws from each limit."""

    requests: int = 1
    input_tokens: int = 0
    output_tokens: int = 0

    def of(self, kind: str) -> int:
        return {"requests": self.requests, "input-tokens": self.input_tokens, "output-tokens": self.output_tokens,
                "tokens": self.input_tokens + self.output_tokens}[kind]


def request_cost(body: Any) -> Cost:
    """The cost of a Messages API request body: one request, input by its size, output by max_tokens."""
    if not isinstance(body, Mapping):
        return Cost()
    size = len(json.dumps(body, default=str, ensure_ascii=False).encode("utf-8"))
    output = body.get("max_tokens")
    return Cost(1, math.ceil(size / BYTES_PER_TOKEN), output if isinstance(output, int) and output > 0 else 0)


@dataclass(frozen=True)
class Bucket:
    """One limit as an answer's headers described it, at `seen` (local clock)."""

    limit: int
    remaining: int
    reset: float  # when it is full again, seconds since the epoch
    seen: float

    def level(self, now: float) -> float:
        """Its content at `now`, refilled in a straight line from (seen, remaining) to (reset, limit)."""
        if now >= self.reset or self.reset <= self.seen:
            return float(self.limit)
        if now <= self.seen:
            return float(self.remaining)
        return self.remaining + (self.limit - self.remaining) * (now - self.seen) / (self.reset - self.seen)

    def time_for(self, amount: float, now: float) -> float:
        """The earliest time from `now` at which the level reaches `amount` (amount <= limit)."""
        if self.level(now) >= amount:
            return now
        if amount <= self.remaining or self.reset <= self.seen:
            return now
        return self.seen + (amount - self.remaining) * (self.reset - self.seen) / (self.limit - self.remaining)


def parse_buckets(headers: Mapping[str, str], seen: float) -> dict[str, Bucket]:
    """The limits an answer's headers describe; a kind with a missing or unreadable header is left out."""
    lowered = {name.lower(): value for name, value in headers.items()}
    found: dict[str, Bucket] = {}
    for kind in KINDS:
        try:
            limit = int(lowered[f"anthropic-ratelimit-{kind}-limit"])
            remaining = int(lowered[f"anthropic-ratelimit-{kind}-remaining"])
            reset = datetime.fromisoformat(lowered[f"anthropic-ratelimit-{kind}-reset"]).timestamp()
        except (KeyError, ValueError):
            continue
        if limit > 0:
            found[kind] = Bucket(limit, max(0, min(remaining, limit)), reset, seen)
    return found


@dataclass(frozen=True)
class Ticket:
    """One attempt the pacer let go."""

    number: int
    cost: Cost
    blind: bool  # let go before any headers had arrived


@dataclass
class PacerStats:
    attempts: int = 0
    waited_seconds: float = 0.0
    rate_limited: int = 0  # 429s answered
    unpaced: int = 0  # of those, for attempts let go with headers in hand
    blind: int = 0  # of those, for attempts let go before any headers


class Pacer:
    """Lets attempts go when the last rate-limit headers leave room for them (thread-safe)."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self.clock = clock
        self.stats = PacerStats()
        self._buckets: dict[str, Bucket] = {}
        self._heard = False  # any headers yet
        self._blocked_until = 0.0  # a 429's retry-after
        self._in_flight: dict[int, Cost] = {}
        self._numbers = 0
        self._changed = threading.Condition()

    # -- the core: no waiting, no threads; the caller's clock ----------------------------------------------
    def try_send(self, cost: Cost) -> Ticket | float | None:
        """A ticket when the attempt may go now; else when it may (seconds since the epoch), or None when
        that depends on an answer still to come (the first attempt's, or those in flight)."""
        with self._changed:
            now = self.clock()
            if self._blocked_until > now:
                return self._blocked_until
            if not self._heard:
                return self._issue(cost, blind=True) if not self._in_flight else None
            ready_at = now
            for kind, bucket in self._buckets.items():
                held = sum(spent.of(kind) for spent in self._in_flight.values())
                need = min(cost.of(kind), bucket.limit) + held
                if need > bucket.limit:
                    return None  # room only once answers in flight have come back
                ready_at = max(ready_at, bucket.time_for(need, now))
            if ready_at > now:
                return ready_at
            return self._issue(cost, blind=False)

    def observe(self, ticket: Ticket, status: int | None, headers: Mapping[str, str]) -> None:
        """The answer to a ticket's attempt (status None: it failed without one, e.g. a connection error)."""
        with self._changed:
            now = self.clock()
            self._in_flight.pop(ticket.number, None)
            fresh = parse_buckets(headers, now)
            for kind, bucket in fresh.items():
                # Answers overtake each other; keep whichever account leaves less room now.
                known = self._buckets.get(kind)
                if known is None or bucket.level(now) <= known.level(now):
                    self._buckets[kind] = bucket
            self._heard = self._heard or bool(fresh)
            if status == 429:
                self.stats.rate_limited += 1
                if ticket.blind:
                    self.stats.blind += 1
                else:
                    self.stats.unpaced += 1
                wait = retry_after_seconds(headers)
                self._blocked_until = max(self._blocked_until, now + (wait if wait is not None else 1.0))
            self._changed.notify_all()

    def _issue(self, cost: Cost, *, blind: bool) -> Ticket:
        self._numbers += 1
        self._in_flight[self._numbers] = cost
        self.stats.attempts += 1
        return Ticket(self._numbers, cost, blind)

    def _try_after(self, cost: Cost, started: float) -> Ticket | float | None:
        """`try_send` for a waiter that began at `started`: when the attempt may go, the wait is counted."""
        outcome = self.try_send(cost)
        if isinstance(outcome, Ticket):
            with self._changed:
                self.stats.waited_seconds += time.monotonic() - started
        return outcome

    # -- blocking, for threads ------------------------------------------------------------------------------
    def acquire(self, cost: Cost) -> Ticket:
        """Wait until the attempt may go (woken early by any answer), and let it go."""
        started = time.monotonic()
        while True:
            outcome = self._try_after(cost, started)
            if isinstance(outcome, Ticket):
                return outcome
            with self._changed:
                timeout = None if outcome is None else max(0.0, outcome - self.clock())
                # An answer may have come between try_send and here: a short timeout covers it.
                self._changed.wait(timeout=min(timeout, 1.0) if timeout is not None else 1.0)

    async def acquire_async(self, cost: Cost) -> Ticket:
        """`acquire` for asyncio: the same decisions, waiting with asyncio.sleep (polling while an answer is due)."""
        started = time.monotonic()
        while True:
            outcome = self._try_after(cost, started)
            if isinstance(outcome, Ticket):
                return outcome
            wait = _POLL_SECONDS if outcome is None else max(0.0, outcome - self.clock())
            await asyncio.sleep(min(wait, _POLL_SECONDS) if outcome is None else wait)

    def middleware(self) -> Middleware:
        """For `anthropic.Anthropic(middleware=[...])` (or AsyncAnthropic): every Messages API attempt of the
        client goes through this pacer."""
        return _pacing_middleware(self)


def _pacing_middleware(pacer: Pacer) -> Middleware:
    from anthropic import Middleware

    class PacingMiddleware(Middleware):
        def handle(self, request: Any, call_next: Any) -> Any:
            if not _rate_limited(request):
                return call_next(request)
            ticket = pacer.acquire(request_cost(request.json))
            try:
                response = call_next(request)
            except BaseException:
                pacer.observe(ticket, None, {})
                raise
            pacer.observe(ticket, response.status_code, response.headers)
            return response

        async def handle_async(self, request: Any, call_next: Any) -> Any:
            if not _rate_limited(request):
                return await call_next(request)
            ticket = await pacer.acquire_async(request_cost(request.json))
            try:
                response = await call_next(request)
            except BaseException:
                pacer.observe(ticket, None, {})
                raise
            pacer.observe(ticket, response.status_code, response.headers)
            return response

    return PacingMiddleware()


def _rate_limited(request: Any) -> bool:
    """A Messages API call: count_tokens, files, batches and models have limits of their own."""
    return request.method.upper() == "POST" and request.url.split("?")[0].rstrip("/") in _PATHS
