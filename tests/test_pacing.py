"""The pacer against the simulator's rate limiter, on one fake clock: concurrent trials, no sleeps.

A small discrete-event world: C workers each run trials of R requests one after another; an attempt goes
when `Pacer.try_send` lets it, reaches the limiter `ADMIT_DELAY` later (admission and headers happen
there, as in the simulator), and its answer arrives `LATENCY` after it went. A 429 is retried after its
retry-after, as the SDK does. The limiter is the simulator's own (`harness.sim.ratelimit`).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from harness.pacing import Bucket, Cost, Pacer, Ticket, parse_buckets, request_cost
from harness.run import retry_after_seconds
from harness.sim.ratelimit import RateLimiter, RateLimits, rfc3339
from harness.sim.tokens import count_input

START = 1_800_000_000.0
ADMIT_DELAY = 0.02
LATENCY = 0.4


class FakeClock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@dataclass
class World:
    limits: RateLimits
    workers: int
    body: dict[str, Any]
    output_tokens: int = 5
    clock: FakeClock = field(default_factory=FakeClock)
    answered: list[float] = field(default_factory=list)  # times of 200s
    refused: int = 0

    def run(self, seconds: float) -> Pacer:
        limiter = RateLimiter(RateLimits(self.limits.rpm, self.limits.itpm, self.limits.otpm, clock=self.clock))
        pacer = Pacer(clock=self.clock)
        cost = request_cost(self.body)
        events: list[tuple[float, int, Callable[[], None]]] = []
        order = itertools.count()
        parked: list[Callable[[], None]] = []  # workers waiting for an answer

        def at(when: float, action: Callable[[], None]) -> None:
            heapq.heappush(events, (when, next(order), action))

        def attempt() -> None:
            outcome = pacer.try_send(cost)
            if outcome is None:
                parked.append(attempt)
            elif isinstance(outcome, float):
                at(outcome, attempt)
            else:
                at(self.clock.now + ADMIT_DELAY, lambda: arrive(outcome))

        def arrive(ticket: Ticket) -> None:
            admission = limiter.admit(self.body)
            if admission.error is None:
                limiter.settle(admission, self.output_tokens)
            headers = {**limiter.headers(), **admission.headers}
            status = 429 if admission.error else 200
            at(self.clock.now + LATENCY - ADMIT_DELAY, lambda: answer(ticket, status, headers))

        def answer(ticket: Ticket, status: int, headers: dict[str, str]) -> None:
            pacer.observe(ticket, status, headers)
            waiting = list(parked)
            parked.clear()
            for resume in waiting:
                at(self.clock.now, resume)
            if status == 429:
                self.refused += 1
                at(self.clock.now + (retry_after_seconds(headers) or 1.0), attempt)
            else:
                self.answered.append(self.clock.now)
                at(self.clock.now, attempt)  # the worker's next request (trials run back to back)

        for _ in range(self.workers):
            at(START, attempt)
        while events and events[0][0] <= START + seconds:
            when, _, action = heapq.heappop(events)
            self.clock.now = when
            action()
        return pacer

    def rate_between(self, start: float, end: float) -> float:
        """Answers per minute from `start` to `end` seconds into the run."""
        count = sum(1 for t in self.answered if START + start <= t < START + end)
        return count * 60 / (end - start)


BODY = {"model": "claude-sonnet-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hello " * 40}]}


@pytest.mark.parametrize("workers", [2, 4, 16])
def test_concurrent_trials_at_a_request_limit_meet_no_429_and_run_near_the_limit(workers: int) -> None:
    world = World(RateLimits(rpm=120), workers, BODY)  # 2 workers alone could send 2 * 60 / LATENCY = 300 a minute
    pacer = world.run(600)
    assert world.refused == 0
    assert pacer.stats.rate_limited == pacer.stats.unpaced == pacer.stats.blind == 0
    # Once the bucket's first minute's worth is spent (a burst the API allows too), the steady rate is the limit.
    steady = world.rate_between(120, 600)
    assert 0.95 * 120 <= steady <= 120 * 1.01


def test_an_input_token_limit_paces_by_tokens_not_requests() -> None:
    per_request = count_input(BODY)
    itpm = per_request * 30  # 30 requests a minute fit
    world = World(RateLimits(rpm=1000, itpm=itpm), 8, BODY)
    pacer = world.run(600)
    assert world.refused == 0 and pacer.stats.unpaced == 0
    assert 0.95 * 30 <= world.rate_between(120, 600) <= 30 * 1.01


def test_an_output_token_limit_counts_max_tokens_until_the_answer_settles_it() -> None:
    # max_tokens 64 is reserved at admission and 5 written: the limiter gives 59 back, so the rate is set by
    # the 5 tokens really written, while the pacer must leave room for the whole reservation.
    otpm = 600
    world = World(RateLimits(otpm=otpm), 8, BODY, output_tokens=5)
    pacer = world.run(600)
    assert world.refused == 0 and pacer.stats.unpaced == 0
    assert 0.9 * otpm / 5 <= world.rate_between(120, 600) <= otpm / 5 * 1.01


def test_without_pacing_the_same_trials_meet_429s() -> None:
    """The control: the same world with a pacer that never waits is refused (so the tests above can fail)."""

    class Reckless(Pacer):
        def try_send(self, cost: Cost) -> Ticket | float | None:
            with self._changed:
                return self._issue(cost, blind=False)

    world = World(RateLimits(rpm=120), 8, BODY)
    original = Pacer.__init__
    reckless = Reckless.__new__(Reckless)
    original(reckless, clock=world.clock)
    limiter = RateLimiter(RateLimits(rpm=120, clock=world.clock))
    refused = 0
    for _ in range(200):
        ticket = reckless.try_send(request_cost(BODY))
        assert isinstance(ticket, Ticket)
        admission = limiter.admit(BODY)
        reckless.observe(ticket, 429 if admission.error else 200, {**limiter.headers(), **admission.headers})
        refused += admission.error is not None
        world.clock.now += 0.1
    assert refused > 0 and reckless.stats.unpaced == refused


def test_the_first_attempt_goes_alone_until_headers_arrive() -> None:
    clock = FakeClock()
    pacer = Pacer(clock=clock)
    first = pacer.try_send(Cost())
    assert isinstance(first, Ticket) and first.blind
    assert pacer.try_send(Cost()) is None  # no headers yet: wait for the first answer
    limiter = RateLimiter(RateLimits(rpm=60, clock=clock))
    limiter.admit(BODY)
    pacer.observe(first, 200, limiter.headers())
    second = pacer.try_send(Cost())
    assert isinstance(second, Ticket) and not second.blind


def test_a_429_holds_everyone_until_its_retry_after() -> None:
    clock = FakeClock()
    pacer = Pacer(clock=clock)
    ticket = pacer.try_send(Cost())
    assert isinstance(ticket, Ticket)
    pacer.observe(ticket, 429, {"retry-after": "7"})
    assert pacer.stats.rate_limited == pacer.stats.blind == 1 and pacer.stats.unpaced == 0
    assert pacer.try_send(Cost()) == pytest.approx(clock.now + 7)
    clock.now += 7
    assert isinstance(pacer.try_send(Cost()), Ticket)


def test_headers_are_read_as_the_api_writes_them() -> None:
    seen = START
    headers = {
        "anthropic-ratelimit-requests-limit": "120",
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": rfc3339(seen + 60),
        "Anthropic-Ratelimit-Input-Tokens-Limit": "1000",  # header names are case-insensitive
        "Anthropic-Ratelimit-Input-Tokens-Remaining": "1000",
        "Anthropic-Ratelimit-Input-Tokens-Reset": "2027-01-01T00:00:00.5+00:00",
        "anthropic-ratelimit-output-tokens-limit": "lots",  # unreadable: left out
    }
    buckets = parse_buckets(headers, seen)
    assert set(buckets) == {"requests", "input-tokens"}
    requests = buckets["requests"]
    assert requests == Bucket(120, 0, seen + 60, seen)
    assert requests.level(seen + 30) == pytest.approx(60)
    assert requests.time_for(1, seen) == pytest.approx(seen + 0.5)
    assert requests.level(seen + 90) == 120
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "1"}) == 0.25
    assert retry_after_seconds({"retry-after": "soon"}) is None


def test_request_cost_counts_more_input_than_the_simulator_does() -> None:
    cost = request_cost(BODY)
    assert cost.requests == 1 and cost.output_tokens == 64
    assert cost.input_tokens >= count_input(BODY)
    assert cost.of("tokens") == cost.input_tokens + 64
