"""The run model: one Usage for every shape the API and our files give, retry-after read one way."""

from __future__ import annotations

import httpx2
import pytest
from anthropic.types import Usage as SdkUsage

from harness.run import TOKEN_KINDS, USAGE_FIELDS, Exchange, Usage, retry_after_seconds


def test_usage_reads_the_sdk_object_the_api_json_and_its_own_dict_alike() -> None:
    sdk = SdkUsage(input_tokens=30, output_tokens=12, cache_creation_input_tokens=5, cache_read_input_tokens=None)
    wire = {"input_tokens": 30, "output_tokens": 12, "cache_creation_input_tokens": 5}
    ours = Usage(input=30, output=12, cache_write=5)
    assert Usage.from_api(sdk) == Usage.from_api(wire) == ours == Usage.from_dict(ours.to_dict())
    assert list(ours.to_dict()) == list(USAGE_FIELDS) == [*TOKEN_KINDS, "total"]
    assert (ours + ours).total == 2 * ours.total == 94


@pytest.mark.parametrize("damage", [-5, True, "12", {"x": 1}, 1e16, None])
def test_a_count_that_is_not_a_plain_non_negative_number_reads_as_zero(damage: object) -> None:
    assert Usage.from_api({"input_tokens": damage, "output_tokens": 7}) == Usage(output=7)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "1500", "retry-after": "2"}, 1.5),  # the precise one first, as the SDK does
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),
        ({"retry-after": "-1"}, None),
        ({}, None),
    ],
)
def test_retry_after_prefers_milliseconds_and_ignores_what_it_cannot_read(headers: dict, seconds: float | None) -> None:
    assert retry_after_seconds(httpx2.Headers(headers)) == seconds


def test_a_stored_error_response_is_an_exchange_with_its_retry_after() -> None:
    interaction = {
        "request": {"method": "POST", "path": "/v1/messages", "body": {"model": "m", "messages": []}},
        "response": {"status": 429, "headers": {"Retry-After": "4"},
                     "body": {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}},
    }
    exchange, _ = Exchange.from_interaction(3, interaction)
    assert exchange is not None and not exchange.ok
    assert exchange.failure() == {"status": 429, "error_type": "rate_limit_error", "error_message": "slow down",
                                  "retry_after": 4.0}
    assert exchange.interaction == 3
