"""What a run cost at list prices, priced as the invoice prices it.

The prices are data: `harness/prices.toml` (dated by its `as_of`, with its source), read into a
`PriceTable`. Set `HARNESS_PRICES` to a TOML file of the same shape to replace or extend any of it (a
negotiated rate, a model released after the table), or pass `prices=` to `estimate_cost` / `cost_of`.

A response's cost is the sum of its billed parts:
- every pass of `usage.iterations` at its own model's price (a compaction pass, an advisor's or a fallback
  model's pass), or the usage as one pass where the response lists none;
- input, output, cache reads, and cache writes at their TTL's rate (`cache_creation.ephemeral_1h_input_tokens`
  at the 1-hour rate, the rest at the 5-minute rate);
- the per-use fees of server tools (`usage.server_tool_use`: web search requests, web fetch requests);
- for a Message Batches result, the tokens at the batch discount (the tool fees in full).

Not modelled, so such runs read low: long-context surcharges (prompts over 200K tokens), the priority
tier, code execution's container hours, and data-residency multipliers. A model without a price gives
`None`: no number is better than a wrong one.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.run import TOKEN_KINDS, Usage

__all__ = [
    "COST_KINDS",
    "PRICES",
    "PRICES_ENV",
    "Cost",
    "Price",
    "PriceTable",
    "cost_of",
    "default_prices",
    "estimate_cost",
    "load_prices",
    "price_for",
]

PRICES_ENV = "HARNESS_PRICES"
_SHIPPED = Path(__file__).with_name("prices.toml")
# The parts a cost is reported in: the token kinds (harness.run.TOKEN_KINDS), then each server tool's fees.
SERVER_TOOL_FEES = ("web_search_requests", "web_fetch_requests")
COST_KINDS: tuple[str, ...] = (*TOKEN_KINDS, "web_search", "web_fetch")
_FEE_KIND = {"web_search_requests": "web_search", "web_fetch_requests": "web_fetch"}


@dataclass(frozen=True)
class Price:
    """USD per million tokens, by kind of token (its fields are `harness.run.TOKEN_KINDS`, and the 1-hour
    cache write)."""

    input: float
    output: float
    cache_write: float  # 5-minute TTL
    cache_read: float
    cache_write_1h: float = 0.0


@dataclass(frozen=True)
class Cost:
    """A cost in USD, by kind (`COST_KINDS`) and by billed pass (`message`, `compaction`, ...)."""

    total: float
    by_kind: Mapping[str, float] = field(default_factory=dict)
    by_pass: Mapping[str, float] = field(default_factory=dict)

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.total + other.total, _sum_maps(self.by_kind, other.by_kind), _sum_maps(self.by_pass, other.by_pass)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": round(self.total, 6),
            "by_kind": {kind: round(value, 6) for kind, value in self.by_kind.items() if value},
            "by_pass": {name: round(value, 6) for name, value in self.by_pass.items() if value},
        }


def _sum_maps(one: Mapping[str, float], other: Mapping[str, float]) -> dict[str, float]:
    out = dict(one)
    for key, value in other.items():
        out[key] = out.get(key, 0.0) + value
    return out


# What may follow a family id: a snapshot date ("-20251001", Vertex "@20251001"), "-latest", and a
# Bedrock version tail ("-v1:0"). Anything else (e.g. "claude-opus-4" + "-9") is a different model.
_SUFFIX = re.compile(r"(?:[-@]\d{8}|-latest)?(?:-v\d+(?::\d+)?)?")
_REGION_PREFIXES = ("anthropic.", "us.anthropic.", "eu.anthropic.", "apac.anthropic.", "global.anthropic.")


@dataclass(frozen=True)
class PriceTable:
    """Model prices, server tool fees and the batch rate, as of a date."""

    as_of: str
    models: Mapping[str, Price]
    server_tools: Mapping[str, float]  # USD per request, by usage.server_tool_use field
    batch: float  # the share of the list price a Message Batches token costs
    source: str | None = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any], *, file: Path, base: PriceTable | None = None) -> PriceTable:
        """A table from parsed TOML; with `base`, what `data` sets replaces base's and the rest is kept."""
        rates = _table(data, "rates", file)
        defaults = {"cache_write_5m": 1.25, "cache_write_1h": 2.0, "cache_read": 0.1, "batch": 0.5}
        if base is not None:
            defaults["batch"] = base.batch
        for key, value in rates.items():
            if key not in defaults:
                raise HarnessError(f"{file}: [rates] has no key {key!r} (known: {', '.join(defaults)})")
            defaults[key] = _number(value, f"rates.{key}", file)
        models = dict(base.models) if base is not None else {}
        for family, entry in _table(data, "models", file).items():
            if not isinstance(entry, Mapping):
                raise HarnessError(f"{file}: models.{family} must be a table such as {{ input = 3.0, output = 15.0 }}")
            unknown = set(entry) - {"input", "output", "cache_write", "cache_write_1h", "cache_read"}
            if unknown:
                raise HarnessError(f"{file}: models.{family} has unknown keys {sorted(unknown)}")
            per_million = _number(entry.get("input"), f"models.{family}.input", file)
            models[str(family).lower()] = Price(
                input=per_million,
                output=_number(entry.get("output"), f"models.{family}.output", file),
                cache_write=_optional(entry, "cache_write", family, file, per_million * defaults["cache_write_5m"]),
                cache_read=_optional(entry, "cache_read", family, file, per_million * defaults["cache_read"]),
                cache_write_1h=_optional(
                    entry, "cache_write_1h", family, file, per_million * defaults["cache_write_1h"]
                ),
            )
        tools = dict(base.server_tools) if base is not None else {}
        for name, fee in _table(data, "server_tools", file).items():
            if name not in SERVER_TOOL_FEES:
                raise HarnessError(f"{file}: [server_tools] has no key {name!r} (known: {', '.join(SERVER_TOOL_FEES)})")
            tools[name] = _number(fee, f"server_tools.{name}", file)
        as_of = data.get("as_of") or (base.as_of if base is not None else "undated")  # a TOML date or text
        return cls(
            as_of=str(as_of),
            models=models,
            server_tools=tools,
            batch=defaults["batch"],
            source=data.get("source", base.source if base else None),
        )

    def price_for(self, model: str) -> Price | None:
        """The price of `model` (alias, dated id, Bedrock or Vertex id), or None when it is not known."""
        if not isinstance(model, str):  # a damaged file's model: a number, a list, nothing
            return None
        name = model.strip().lower()
        for prefix in _REGION_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        # Longest family first, so "claude-opus-4-5-..." is never read as "claude-opus-4" + a suffix.
        for family in sorted(self.models, key=len, reverse=True):
            if name.startswith(family) and _SUFFIX.fullmatch(name[len(family) :]):
                return self.models[family]
        return None

    def cost(self, model: str, usage: Usage) -> Cost | None:
        """What `usage` cost on `model` (each iteration at its own model's price), or None when a pass ran
        on a model without a price."""
        by_kind = dict.fromkeys(COST_KINDS, 0.0)
        by_pass: dict[str, float] = {}
        share = self.batch if usage.batch else 1.0
        for entry in usage.entries:
            price = self.price_for(entry.model or model)
            if price is None:
                return None
            parts = {
                "input": entry.input * price.input,
                "output": entry.output * price.output,
                "cache_write": (entry.cache_write - min(entry.cache_write_1h, entry.cache_write)) * price.cache_write
                + min(entry.cache_write_1h, entry.cache_write) * price.cache_write_1h,
                "cache_read": entry.cache_read * price.cache_read,
            }
            for kind, micro in parts.items():
                by_kind[kind] += micro * share / 1_000_000
            by_pass[entry.type] = by_pass.get(entry.type, 0.0) + sum(parts.values()) * share / 1_000_000
        for name in SERVER_TOOL_FEES:
            by_kind[_FEE_KIND[name]] += getattr(usage, name) * self.server_tools.get(name, 0.0)
        return Cost(total=sum(by_kind.values()), by_kind=by_kind, by_pass=by_pass)


def _table(data: Mapping[str, Any], key: str, file: Path) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise HarnessError(f"{file}: [{key}] must be a table")
    return value


def _number(value: Any, where: str, file: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise HarnessError(f"{file}: {where} must be a non-negative number (USD), not {value!r}")
    return float(value)


def _optional(entry: Mapping[str, Any], key: str, family: str, file: Path, default: float) -> float:
    return _number(entry[key], f"models.{family}.{key}", file) if key in entry else round(default, 6)


def load_prices(path: str | Path, *, over: PriceTable | None = None) -> PriceTable:
    """A price table from a TOML file; with `over`, the file's entries replace or extend that table's."""
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as err:
        raise HarnessError(f"{file}: cannot read the price table ({err.strerror or err})") from None
    except tomllib.TOMLDecodeError as err:
        raise HarnessError(f"{file}: not TOML: {err}") from None
    return PriceTable.from_data(data, file=file, base=over)


@cache
def _shipped() -> PriceTable:
    return load_prices(_SHIPPED)


@cache
def _overridden(path: str) -> PriceTable:
    return load_prices(path, over=_shipped())


def default_prices() -> PriceTable:
    """The shipped table, with the file `HARNESS_PRICES` names (if any) laid over it."""
    override = os.environ.get(PRICES_ENV)
    return _overridden(override) if override else _shipped()


PRICES: Mapping[str, Price] = _shipped().models  # the shipped list prices by model family


def price_for(model: str, *, prices: PriceTable | None = None) -> Price | None:
    """The price of `model` (alias, dated id, Bedrock or Vertex id), or None when it is not known."""
    return (prices or default_prices()).price_for(model)


def cost_of(model: str, usage: Usage, *, prices: PriceTable | None = None) -> Cost | None:
    """The cost of `usage` on `model`, by kind and by billed pass; None for a model without a known price."""
    return (prices or default_prices()).cost(model, usage)


def estimate_cost(model: str, usage: Usage, *, prices: PriceTable | None = None) -> float | None:
    """USD cost of `usage` on `model`, or None for a model without a known price.

    Other shapes of usage become a `Usage` first: `Usage.from_api` (the SDK's or the API's JSON),
    `Usage.from_dict` (ours, as `to_dict` writes it).
    """
    cost = cost_of(model, usage, prices=prices)
    return None if cost is None else cost.total
