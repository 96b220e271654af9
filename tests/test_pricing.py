from __future__ import annotations

import pytest
from anthropic.types import Usage as SdkUsage

from harness.pricing import PRICES, estimate_cost, price_for
from harness.run import Usage

MILLION = 1_000_000


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
        ("claude-opus-4-5@20251101", "claude-opus-4-5"),
        ("claude-opus-4-20250514", "claude-opus-4"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-opus-4-6", "claude-opus-4-6"),
        ("claude-sonnet-5", "claude-sonnet-5"),
        ("claude-sonnet-4-latest", "claude-sonnet-4"),
    ],
)
def test_dated_ids_and_aliases_match_their_family(model: str, family: str) -> None:
    assert price_for(model) is PRICES[family]


@pytest.mark.parametrize(
    "model", ["claude-opus-4-9", "claude-sonnet-5-5", "claude-3-haiku-20240307", "sim-dayflow", "gpt-4o", ""]
)
def test_unknown_models_have_no_price_rather_than_a_wrong_one(model: str) -> None:
    assert price_for(model) is None
    assert estimate_cost(model, Usage(input=1000, output=1000)) is None


def test_list_prices_per_million_tokens() -> None:
    one_million_each = Usage(input=MILLION, output=MILLION)
    assert estimate_cost("claude-sonnet-4-5", one_million_each) == pytest.approx(3 + 15)
    assert estimate_cost("claude-haiku-4-5", one_million_each) == pytest.approx(1 + 5)
    assert estimate_cost("claude-opus-4-5", one_million_each) == pytest.approx(5 + 25)
    assert estimate_cost("claude-opus-4-1", one_million_each) == pytest.approx(15 + 75)


def test_cache_writes_and_reads_are_priced_apart_from_input() -> None:
    for family, price in PRICES.items():
        assert price.cache_write == pytest.approx(price.input * 1.25), family
        assert price.cache_read == pytest.approx(price.input * 0.1), family
    writes = estimate_cost("claude-sonnet-4-5", Usage(cache_write=MILLION))
    reads = estimate_cost("claude-sonnet-4-5", Usage(cache_read=MILLION))
    assert (writes, reads) == (pytest.approx(3.75), pytest.approx(0.30))


def test_usage_in_any_of_its_shapes_costs_the_same() -> None:
    ours = Usage(input=3074, output=1360, cache_write=200, cache_read=900)
    sdk = SdkUsage(input_tokens=3074, output_tokens=1360, cache_creation_input_tokens=200, cache_read_input_tokens=900)
    as_dict = ours.to_dict()
    cost = estimate_cost("claude-sonnet-5", ours)
    expected = (3074 * 3 + 1360 * 15 + 200 * 3.75 + 900 * 0.3) / MILLION
    assert cost == pytest.approx(expected)
    assert estimate_cost("claude-sonnet-5", Usage.from_api(sdk)) == pytest.approx(expected)
    assert estimate_cost("claude-sonnet-5", Usage.from_dict(as_dict)) == pytest.approx(expected)
