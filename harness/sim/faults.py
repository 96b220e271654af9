"""The one fault vocabulary: the failures the simulator and `harness chaos` inject, and their wire form.

A fault strikes one request, chosen by its index (0-based, retries counted), and fires once; the SDK's
retry arrives as the next index and is answered normally, which is how tests prove that a client
retries (or does not). The simulator puts a fault on the wire (`harness sim --fault`,
`Simulator(faults=...)`, a script's turn); chaos puts it where the transport would (`harness.chaos`).
Both take from here the kinds, the error statuses with their bodies and headers, the event a stream
fails with and the point where a stream is cut. The shapes of 429/529/500 bodies and headers are
synthetic: no real recording of them exists in the corpus (see QUIRKS.md), so they follow the
documented error envelope.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from harness.errors import HarnessError

# kind -> what a client sees
KINDS: dict[str, str] = {
    "429": "HTTP 429 rate_limit_error with retry-after and anthropic-ratelimit-* headers",
    "529": "HTTP 529 overloaded_error",
    "500": "HTTP 500 api_error",
    "slow": "the normal answer, after `delay` seconds of silence",
    "timeout": "no answer before the client's read timeout (httpx2.ReadTimeout)",
    "disconnect": "the connection is closed before any status line is sent",
    "cut-stream": "the connection is closed mid-body: after `after_events` SSE events, or half the JSON",
    "sse-error": "a stream that emits `event: error` (overloaded_error) after `after_events` events; "
    "a non-streaming request gets a 529 instead",
}
# Where each kind can be injected. Only the simulator can be slow (chaos replays in no time); only chaos
# raises a timeout where the transport would (a simulator can only be slower than the client's timeout).
SIMULATOR_KINDS: tuple[str, ...] = ("429", "529", "500", "slow", "disconnect", "cut-stream", "sse-error")
CHAOS_KINDS: tuple[str, ...] = ("429", "529", "500", "timeout", "disconnect", "cut-stream", "sse-error")
FAULT_KINDS: dict[str, str] = {kind: KINDS[kind] for kind in SIMULATOR_KINDS}  # the simulator's
# Kinds that take the place of the answer: nothing of the answer reaches the client.
REPLACING_KINDS: tuple[str, ...] = ("429", "529", "500", "timeout", "disconnect")

# status kinds -> (HTTP status, error type, message), in the Messages API's error envelope
ERROR_STATUSES: dict[str, tuple[int, str, str]] = {
    "429": (429, "rate_limit_error",
            "Number of requests has exceeded your per-minute rate limit "
            "(https://docs.claude.com/en/api/rate-limits); see the response headers for current usage. "
            "Please try again later."),
    "529": (529, "overloaded_error", "Overloaded"),
    "500": (500, "api_error", "Internal server error"),
}


@dataclass(frozen=True)
class Fault:
    """One injected failure. `kind` is a key of KINDS; the other fields tune it."""

    kind: str
    delay: float = 1.0  # seconds, for "slow"
    retry_after: float = 0.01  # seconds, for 429/529/500: sent as retry-after (whole s) and retry-after-ms
    after_events: int = 3  # SSE events sent before "cut-stream" / "sse-error" strike

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise HarnessError(f"unknown fault kind {self.kind!r}; known kinds: {', '.join(KINDS)}")
        if self.delay < 0 or self.retry_after < 0 or self.after_events < 0:
            raise HarnessError(f"fault {self.kind!r}: delay, retry_after and after_events must be >= 0")

    def struck_kind(self, streamed: bool) -> str:
        """The kind as it strikes: an "sse-error" on a request that did not stream is a 529 (no stream to break)."""
        return "529" if self.kind == "sse-error" and not streamed else self.kind

    def error_headers(self, kind: str) -> dict[str, str]:
        """Headers of the error answer of status kind `kind`: retryable, with the wait in whole seconds (what
        the real API sends) and in milliseconds (which the SDK prefers)."""
        headers = {
            "x-should-retry": "true",
            "retry-after": str(int(self.retry_after)),
            "retry-after-ms": str(round(self.retry_after * 1000)),
        }
        if kind == "429":
            headers["anthropic-ratelimit-requests-remaining"] = "0"
        return headers

    def strike_at(self, events: int) -> int:
        """How many of a stream's `events` are sent before "cut-stream" or "sse-error" strikes. A fault always
        fires: with fewer events than `after_events`, it strikes before the last one (message_stop)."""
        return min(self.after_events, max(events - 1, 0))


def stream_error() -> dict[str, Any]:
    """The data of the `event: error` an "sse-error" puts in the stream."""
    return {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def cut_body(data: bytes) -> bytes:
    """What a "cut-stream" lets through of a whole (JSON) body before the connection goes: half of it."""
    return data[: len(data) // 2]


def normalize_faults(faults: Mapping[int, str | Fault] | None, *, kinds: Iterable[str] = SIMULATOR_KINDS,
                     first: str = "the first /v1/messages request") -> dict[int, Fault]:
    """Validate a {request index: kind or Fault} mapping against `kinds`; strings become Faults with
    default options. `first` says what index 0 is, for the error message."""
    allowed = tuple(kinds)
    normalized: dict[int, Fault] = {}
    for index, fault in (faults or {}).items():
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise HarnessError(f"fault index {index!r} must be an int >= 0 (0 = {first})")
        kind = fault.kind if isinstance(fault, Fault) else str(fault)
        if kind not in allowed:
            raise HarnessError(f"unknown fault {kind!r}; use one of {', '.join(allowed)}")
        normalized[index] = fault if isinstance(fault, Fault) else Fault(kind)
    return normalized


_OPTION_TYPES = {field.name: field.type for field in fields(Fault) if field.name != "kind"}


def parse_fault_spec(spec: str) -> tuple[int, Fault]:
    """Parse the CLI form `IDX:KIND[:option=value,...]`, e.g. `0:429`, `2:slow:delay=0.5`."""
    parts = spec.split(":", 2)
    if len(parts) < 2 or not parts[0].strip().isdigit():
        raise HarnessError(
            f"fault {spec!r}: expected IDX:KIND[:option=value,...], e.g. 0:429 or 2:slow:delay=0.5"
        )
    index, kind = int(parts[0]), parts[1].strip()
    if kind not in SIMULATOR_KINDS:
        raise HarnessError(f"fault {spec!r}: unknown kind {kind!r}; use one of {', '.join(SIMULATOR_KINDS)}")
    fault = Fault(kind)  # its defaults, then each option given
    if len(parts) == 3 and parts[2].strip():
        for item in parts[2].split(","):
            name, _, raw = item.partition("=")
            name = name.strip()
            if name not in _OPTION_TYPES or not raw.strip():
                known = ", ".join(_OPTION_TYPES)
                raise HarnessError(
                    f"fault {spec!r}: option {item!r} is not name=value with a name in: {known}"
                )
            try:
                if name == "after_events":
                    fault = replace(fault, after_events=int(raw))
                elif name == "delay":
                    fault = replace(fault, delay=float(raw))
                else:
                    fault = replace(fault, retry_after=float(raw))
            except ValueError:
                raise HarnessError(f"fault {spec!r}: option {name} needs a number, got {raw!r}") from None
    return index, fault
