"""Faults the simulator injects on demand, keyed by the index of a /v1/messages request.

A fault fires once, at its index; the SDK's retry arrives as the next index and is answered normally,
which is how tests prove that a client retries (or does not). The shapes of 429/529/500 bodies and
headers are synthetic: no real recording of them exists in the corpus (see QUIRKS.md), so they follow
the documented error envelope.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from harness.errors import HarnessError

# kind -> what a client sees
FAULT_KINDS: dict[str, str] = {
    "429": "HTTP 429 rate_limit_error with retry-after and anthropic-ratelimit-* headers",
    "529": "HTTP 529 overloaded_error",
    "500": "HTTP 500 api_error",
    "slow": "the normal answer, after `delay` seconds of silence",
    "disconnect": "the connection is closed before any status line is sent",
    "cut-stream": "the connection is closed mid-body: after `after_events` SSE events, or half the JSON",
    "sse-error": "a stream that emits `event: error` (overloaded_error) after `after_events` events; "
    "a non-streaming request gets a 529 instead",
}


@dataclass(frozen=True)
class Fault:
    """One injected failure. `kind` is a key of FAULT_KINDS; the other fields tune it."""

    kind: str
    delay: float = 1.0  # seconds, for "slow"
    retry_after: float = 0.01  # seconds, for 429/529/500: sent as retry-after (whole s) and retry-after-ms
    after_events: int = 3  # SSE events sent before "cut-stream" / "sse-error" strike

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            known = ", ".join(FAULT_KINDS)
            raise HarnessError(f"unknown fault kind {self.kind!r}; known kinds: {known}")
        if self.delay < 0 or self.retry_after < 0 or self.after_events < 0:
            raise HarnessError(f"fault {self.kind!r}: delay, retry_after and after_events must be >= 0")


def normalize_faults(faults: Mapping[int, str | Fault] | None) -> dict[int, Fault]:
    """Validate a {request index: kind or Fault} mapping; strings become Faults with default options."""
    normalized: dict[int, Fault] = {}
    for index, fault in (faults or {}).items():
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise HarnessError(
                f"fault index {index!r} must be an int >= 0 (0 = the first /v1/messages request)"
            )
        normalized[index] = fault if isinstance(fault, Fault) else Fault(str(fault))
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
    options: dict[str, float | int] = {}
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
                options[name] = int(raw) if name == "after_events" else float(raw)
            except ValueError:
                raise HarnessError(f"fault {spec!r}: option {name} needs a number, got {raw!r}") from None
    return index, Fault(kind, **options)  # type: ignore[arg-type]
