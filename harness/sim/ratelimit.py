"""Rate limits for the simulator: requests, input tokens and output tokens per minute, as the API enforces them.

Off unless asked for (`harness sim --rpm 120`, `Simulator(rate_limits=RateLimits(rpm=120))`). Each limit is a
token bucket, the algorithm the API documents: its capacity is the per-minute limit, it refills continuously
at limit/60 per second, and a request is refused while any bucket it draws on is short. What a request draws:

- requests: 1;
- input tokens: the request's input as the simulator counts it (`harness.sim.tokens.count_input`);
- output tokens: its `max_tokens` at admission, adjusted to the tokens really written once the answer is
  built (the API estimates OTPM from max_tokens first and corrects it at the end, too).

Every /v1/messages answer then carries the API's headers with this state: `anthropic-ratelimit-{requests,
input-tokens,output-tokens,tokens}-{limit,remaining,reset}`, the reset an RFC 3339 timestamp in whole seconds
(when the bucket is full again, rounded up, as the API sends it); a refusal is a 429 `rate_limit_error` with
`retry-after` in whole seconds (rounded up: a retry at that time is admitted, unless other requests took the
room first). The clock is injectable: tests drive a fake one, never sleep.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from harness.sim.tokens import count_input
from harness.sim.validation import ApiError

Clock = Callable[[], float]  # seconds since the epoch, like time.time

_WINDOW = 60.0  # the API's limits are per minute
_DOCS = "https://docs.claude.com/en/api/rate-limits"
_WHAT = {"requests": "requests", "input-tokens": "input tokens", "output-tokens": "output tokens"}


@dataclass(frozen=True)
class RateLimits:
    """Per-minute limits the simulator enforces; None leaves that one unlimited (its headers stay the defaults)."""

    rpm: int | None = None  # requests per minute
    itpm: int | None = None  # input tokens per minute
    otpm: int | None = None  # output tokens per minute
    clock: Clock = field(default=time.time, compare=False, repr=False)  # a fake one in tests

    def __post_init__(self) -> None:
        for name in ("rpm", "itpm", "otpm"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"rate limit {name} must be a whole number of 1 or more, got {value!r}")

    @property
    def any(self) -> bool:
        return any(value is not None for value in (self.rpm, self.itpm, self.otpm))


def rfc3339(seconds: float) -> str:
    """`seconds` since the epoch, rounded up to a whole second, as the API writes its reset times."""
    return datetime.fromtimestamp(math.ceil(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Bucket:
    """One token bucket: `capacity` units, refilled at capacity/60 per second."""

    def __init__(self, capacity: int, now: float) -> None:
        self.capacity = capacity
        self.rate = capacity / _WINDOW
        self.level = float(capacity)
        self.at = now

    def refill(self, now: float) -> None:
        if now > self.at:
            self.level = min(float(self.capacity), self.level + (now - self.at) * self.rate)
            self.at = now

    def wait_for(self, amount: int) -> float:
        """Seconds until `amount` fits (a request larger than the bucket waits for a full one)."""
        short = min(amount, self.capacity) - self.level
        return max(0.0, short / self.rate)

    def take(self, amount: int) -> None:
        self.level -= min(amount, self.capacity)

    def give_back(self, amount: int) -> None:
        self.level = min(float(self.capacity), self.level + amount)

    def headers(self, name: str, now: float) -> dict[str, str]:
        full_at = now + (self.capacity - self.level) / self.rate
        return {
            f"anthropic-ratelimit-{name}-limit": str(self.capacity),
            f"anthropic-ratelimit-{name}-remaining": str(max(0, math.floor(self.level))),
            f"anthropic-ratelimit-{name}-reset": rfc3339(full_at),
        }


@dataclass(frozen=True)
class Admission:
    """The limiter's answer to one request: admitted (error None) or a 429 with its extra headers."""

    error: ApiError | None
    headers: Mapping[str, str]  # retry-after and the spent bucket's remaining 0 on a refusal, else empty
    output_reserved: int = 0


class RateLimiter:
    """The simulator's buckets, shared by every request it answers (thread-safe)."""

    def __init__(self, limits: RateLimits) -> None:
        self.limits = limits
        self.clock = limits.clock
        now = self.clock()
        self._buckets: dict[str, _Bucket] = {
            name: _Bucket(capacity, now)
            for name, capacity in (("requests", limits.rpm), ("input-tokens", limits.itpm),
                                   ("output-tokens", limits.otpm))
            if capacity is not None
        }
        self._lock = threading.Lock()
        self.refused = 0  # 429s sent, for tests and the bench

    def admit(self, body: Mapping[str, Any]) -> Admission:
        """Take what the request draws from every bucket, or refuse it (taking nothing) with a 429."""
        output = body.get("max_tokens")
        draws = {
            "requests": 1,
            "input-tokens": count_input(dict(body)) if "input-tokens" in self._buckets else 0,
            "output-tokens": output if isinstance(output, int) and output > 0 else 0,
        }
        with self._lock:
            now = self.clock()
            for bucket in self._buckets.values():
                bucket.refill(now)
            waits = {name: bucket.wait_for(draws[name]) for name, bucket in self._buckets.items()}
            short = [name for name, wait in waits.items() if wait > 0]
            if short:
                self.refused += 1
                retry_after = max(1, math.ceil(max(waits.values())))
                headers = {"retry-after": str(retry_after)}
                for name in short:
                    level = self._buckets[name].level
                    headers[f"anthropic-ratelimit-{name}-remaining"] = str(max(0, math.floor(level)))
                return Admission(_refusal(short[0], self._buckets[short[0]].capacity), headers)
            for name, bucket in self._buckets.items():
                bucket.take(draws[name])
        return Admission(None, {}, output_reserved=draws["output-tokens"])

    def settle(self, admission: Admission, output_tokens: int) -> None:
        """Give back the part of the output reservation (max_tokens) the answer did not write."""
        bucket = self._buckets.get("output-tokens")
        unused = admission.output_reserved - output_tokens
        if bucket is None or admission.error is not None or unused <= 0:
            return
        with self._lock:
            bucket.refill(self.clock())
            bucket.give_back(unused)

    def headers(self) -> dict[str, str]:
        """The anthropic-ratelimit-* headers for the limits in force, as of now."""
        with self._lock:
            now = self.clock()
            out: dict[str, str] = {}
            for name, bucket in self._buckets.items():
                bucket.refill(now)
                out.update(bucket.headers(name, now))
            tokens = [self._buckets[name] for name in ("input-tokens", "output-tokens") if name in self._buckets]
            if len(tokens) == 2:  # the API's tokens-* sum input and output (see the real recordings)
                full_at = max(now + (b.capacity - b.level) / b.rate for b in tokens)
                out["anthropic-ratelimit-tokens-limit"] = str(sum(b.capacity for b in tokens))
                out["anthropic-ratelimit-tokens-remaining"] = str(sum(max(0, math.floor(b.level)) for b in tokens))
                out["anthropic-ratelimit-tokens-reset"] = rfc3339(full_at)
            return out


def _refusal(name: str, capacity: int) -> ApiError:
    if name == "requests":
        message = ("Number of requests has exceeded your per-minute rate limit "
                   f"({_DOCS}); see the response headers for current usage. Please try again later.")
    else:
        message = (f"This request would exceed your organization's rate limit of {capacity:,} {_WHAT[name]} per "
                   f"minute ({_DOCS}); see the response headers for current usage. Please reduce the prompt "
                   "length or the maximum tokens requested, or try again later.")
    return ApiError(429, "rate_limit_error", message)


def output_tokens_of(message: Mapping[str, Any] | None) -> int:
    """The output tokens an answer wrote (its usage), 0 when it has none."""
    usage = (message or {}).get("usage")
    value = usage.get("output_tokens") if isinstance(usage, Mapping) else None
    return value if isinstance(value, int) else 0
