"""List prices of Claude models, and the cost of a run's token usage.

Prices are USD per million tokens. A cache write is priced at the 5-minute TTL rate (1.25x input);
1-hour cache writes (2x input) and long-context surcharges are not modelled, so a run using them is
under-estimated. A model we have no price for gives `None`: no number is better than a wrong one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.run import TOKEN_KINDS, Usage

__all__ = ["PRICES", "Price", "estimate_cost", "price_for"]


@dataclass(frozen=True)
class Price:
    """USD per million tokens, by kind of token (its fields are `harness.run.TOKEN_KINDS`)."""

    input: float
    output: float
    cache_write: float  # 5-minute TTL
    cache_read: float


def _tier(input_price: float, output_price: float) -> Price:
    # Anthropic prices cache writes (5m) at 1.25x and cache reads at 0.1x the input rate for every model.
    return Price(input_price, output_price, round(input_price * 1.25, 4), round(input_price * 0.1, 4))


_OPUS_4 = _tier(15.0, 75.0)
_OPUS_4_5 = _tier(5.0, 25.0)
_SONNET = _tier(3.0, 15.0)
_HAIKU_4_5 = _tier(1.0, 5.0)

# Keyed by model family id (the undated alias). Published list prices, except where marked ASSUMPTION.
PRICES: dict[str, Price] = {
    "claude-opus-4": _OPUS_4,  # Opus 4 (claude-opus-4-20250514): $15 / $75
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4-1": _OPUS_4,  # Opus 4.1: $15 / $75
    "claude-opus-4-5": _OPUS_4_5,  # Opus 4.5: $5 / $25
    "claude-opus-4-6": _OPUS_4_5,  # Opus 4.6: $5 / $25 (same tier as 4.5)
    "claude-opus-4-7": _OPUS_4_5,  # ASSUMPTION: priced like Opus 4.5/4.6; not verified
    "claude-opus-4-8": _OPUS_4_5,  # ASSUMPTION: priced like Opus 4.5/4.6; not verified
    "claude-sonnet-4": _SONNET,  # Sonnet 4 (claude-sonnet-4-20250514): $3 / $15
    "claude-sonnet-4-0": _SONNET,
    "claude-sonnet-4-5": _SONNET,  # Sonnet 4.5: $3 / $15 (prompts over 200K tokens cost more; not modelled)
    "claude-sonnet-4-6": _SONNET,  # Sonnet 4.6: $3 / $15
    "claude-sonnet-5": _SONNET,  # ASSUMPTION: priced like Sonnet 4.x; not verified
    "claude-haiku-4-5": _HAIKU_4_5,  # Haiku 4.5: $1 / $5
}

# What may follow a family id: a snapshot date ("-20251001", Vertex "@20251001"), "-latest", and a
# Bedrock version tail ("-v1:0"). Anything else (e.g. "claude-opus-4" + "-9") is a different model.
_SUFFIX = re.compile(r"(?:[-@]\d{8}|-latest)?(?:-v\d+(?::\d+)?)?")


def price_for(model: str) -> Price | None:
    """The price of `model` (alias, dated id, Bedrock or Vertex id), or None when it is not known."""
    if not isinstance(model, str):  # a damaged file's model: a number, a list, nothing
        return None
    name = model.strip().lower()
    for prefix in ("anthropic.", "us.anthropic.", "eu.anthropic.", "apac.anthropic.", "global.anthropic."):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    # Longest family first, so "claude-opus-4-5-..." is never read as "claude-opus-4" + a suffix.
    for family in sorted(PRICES, key=len, reverse=True):
        if name.startswith(family) and _SUFFIX.fullmatch(name[len(family) :]):
            return PRICES[family]
    return None


def estimate_cost(model: str, usage: Usage) -> float | None:
    """USD cost of `usage` on `model`, or None for a model without a known price.

    Other shapes of usage become a `Usage` first: `Usage.from_api` (the SDK's or the API's JSON),
    `Usage.from_dict` (ours, as `to_dict` writes it).
    """
    price = price_for(model)
    if price is None:
        return None
    return sum(getattr(usage, kind) * getattr(price, kind) for kind in TOKEN_KINDS) / 1_000_000
