"""Message Batches as the harness sees them: polling that never waits on replay, and a batch's results
as exchanges, one conversation per `custom_id`.

A batch in a cassette is a create (`POST /v1/messages/batches`, its requests' params), polls (`GET
/v1/messages/batches/{id}`, identical requests served in recorded order) and the results (`GET
.../results`, JSON Lines, one line per request carrying its custom_id). The trajectory builder reads
each result as one step of a run labelled with its custom_id, so checks and reports see a batch eval
as one run per request.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

from harness.jsondata import mapping_at
from harness.run import Exchange
from harness.wire.bodies import REPLAYED_HEADER  # the wire's: no SDK, no cassette

BATCHES_PATH = "/v1/messages/batches"
_RESULTS_PATH = re.compile(r"^/v1/messages/batches/([^/]+)/results/?$")


def wait_for_batch(client: Any, batch_id: str, *, interval: float = 10.0, timeout: float | None = None,
                   sleep: Callable[[float], None] = time.sleep) -> Any:
    """Poll `client.messages.batches.retrieve` until the batch has ended; returns the ended MessageBatch.

    A poll answered from a cassette is followed by no wait at all: the recorded polls are served in
    order, so a replay reaches the end as the recording did, at once. `timeout` counts the seconds
    waited (TimeoutError past it).
    """
    waited = 0.0
    while True:
        response = client.messages.batches.with_raw_response.retrieve(batch_id)
        batch = response.parse()
        pause = _pause(batch, response.headers, waited, interval, timeout)
        if pause is None:
            return batch
        if pause:
            sleep(pause)
            waited += pause


async def wait_for_batch_async(client: Any, batch_id: str, *, interval: float = 10.0,
                               timeout: float | None = None,
                               sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> Any:
    """`wait_for_batch` for an `AsyncAnthropic` client."""
    waited = 0.0
    while True:
        response = await client.messages.batches.with_raw_response.retrieve(batch_id)
        batch = await response.parse()
        pause = _pause(batch, response.headers, waited, interval, timeout)
        if pause is None:
            return batch
        if pause:
            await sleep(pause)
            waited += pause


def _pause(batch: Any, headers: Mapping[str, str], waited: float, interval: float,
           timeout: float | None) -> float | None:
    """Seconds to wait before the next poll (0 after a replayed one), or None once the batch has ended."""
    if batch.processing_status == "ended":
        return None
    if REPLAYED_HEADER in headers:
        return 0.0
    if timeout is not None and waited >= timeout:
        raise TimeoutError(f"batch {batch.id} is still {batch.processing_status} after {waited:g} s")
    return interval


def result_lines(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The JSON Lines of a stored results response (one line may have been stored parsed, as `body`)."""
    if isinstance(response.get("body"), dict):
        return [response["body"]]
    lines = []
    for line in str(response.get("body_text") or "").splitlines():
        if line.strip():
            try:
                parsed = json.loads(line)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                lines.append(parsed)
    return lines


def batch_exchanges(interactions: Iterable[Mapping[str, Any]]) -> Iterator[Exchange]:
    """One Exchange per result line of every batch whose results the cassette holds, labelled with its
    custom_id, its request being the params the batch was created with."""
    params: dict[str, dict[str, Any]] = {}  # batch id -> custom_id -> params
    for position, interaction in enumerate(interactions):
        request, response = interaction.get("request") or {}, interaction.get("response") or {}
        path = str(request.get("path", "")).rstrip("/")
        if response.get("status") != 200:
            continue
        if request.get("method") == "POST" and path == BATCHES_PATH:
            created, body = response.get("body"), request.get("body")
            if isinstance(created, dict) and isinstance(body, dict) and isinstance(body.get("requests"), list):
                params[str(created.get("id"))] = {
                    str(item.get("custom_id")): item.get("params") or {}
                    for item in body["requests"] if isinstance(item, dict)
                }
            continue
        found = _RESULTS_PATH.match(path)
        if request.get("method") != "GET" or found is None:
            continue
        sent = params.get(found.group(1), {})
        for line in result_lines(response):
            yield _exchange(line, sent, position)


def _exchange(line: Mapping[str, Any], sent: Mapping[str, Any], position: int) -> Exchange:
    custom_id = str(line.get("custom_id"))
    result = mapping_at(line, "result")
    request = sent.get(custom_id) or {"messages": []}
    if result.get("type") == "succeeded" and isinstance(result.get("message"), Mapping):
        return Exchange(request=request, message=result["message"], status=200, interaction=position,
                        label=custom_id)
    error = mapping_at(result, "error")
    inner = mapping_at(error, "error")
    return Exchange(request=request, message=None, status=None, interaction=position, label=custom_id,
                    error_type=str(inner.get("type") or result.get("type") or "errored"),
                    error_message=inner.get("message") or f"batch result {result.get('type')}")
