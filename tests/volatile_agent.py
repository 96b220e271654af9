"""An agent nobody tuned for replay: its tools return fresh ids, the time, today's date, a temp path and random
nonces, run concurrently, and hand their results back in the order they finish.

    python tests/volatile_agent.py CASSETTE MODE [BASE_URL]

Prints {"answer": ..., "order": [tool names in the order their results were sent]} as JSON. AGENT_CITY
(default Paris) is the one tool output that is not volatile; AGENT_SEED orders the tools' finishing times.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import random
import secrets
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable

import anthropic

from harness import use_cassette


async def new_ticket() -> str:
    now = datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017 (the fake clock replaces datetime)
    return json.dumps({"ticket_id": str(uuid.uuid4()), "created_at": now.isoformat()})


async def clock() -> str:
    return f"local time {time.strftime('%Y-%m-%d %H:%M:%S %Z', time.localtime())} ({time.time():.3f})"


async def scratch() -> str:
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "notes.txt")
    with open(path, "w") as notes:
        notes.write("draft")
    return f"saved the draft to {path}"


async def nonce() -> str:
    return json.dumps({"nonce": secrets.token_hex(16), "token": secrets.token_urlsafe(24)})


async def weather() -> str:
    return json.dumps({"city": os.environ.get("AGENT_CITY", "Paris"), "temp_c": 21, "sky": "clear"})


TOOLS: dict[str, Callable[[], Awaitable[str]]] = {
    "new_ticket": new_ticket, "clock": clock, "scratch": scratch, "nonce": nonce, "weather": weather}


async def run(base_url: str | None) -> dict[str, object]:
    today = datetime.date.today()
    system = f"You file tickets. Today is {today.isoformat()} ({today:%A, %B %d, %Y})."
    client = anthropic.AsyncAnthropic(base_url=base_url, max_retries=0)
    tools = [{"name": name, "description": f"the {name} tool", "input_schema": {"type": "object", "properties": {}}}
             for name in TOOLS]
    messages: list[dict[str, object]] = [{"role": "user", "content": "Open a ticket and tell me the weather."}]
    finishing = random.Random(os.environ.get("AGENT_SEED", "1"))
    order: list[str] = []
    while True:
        reply = await client.messages.create(model="sim-auto", max_tokens=1024, system=system, tools=tools,
                                             messages=messages)  # type: ignore[arg-type]
        messages.append({"role": "assistant", "content": [block.model_dump() for block in reply.content]})
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            text = "".join(block.text for block in reply.content if block.type == "text")
            return {"answer": text, "order": order}

        async def call(use: anthropic.types.ToolUseBlock, delay: float) -> dict[str, object]:
            await asyncio.sleep(delay)
            return {"type": "tool_result", "tool_use_id": use.id, "content": await TOOLS[use.name](),
                    "name": use.name}

        results = []
        for done in asyncio.as_completed([call(use, finishing.random() / 20) for use in uses]):
            result = await done  # appended as each tool finishes, as an async agent does
            order.append(str(result.pop("name")))
            results.append(result)
        messages.append({"role": "user", "content": results})


def main() -> None:
    cassette, mode = sys.argv[1], sys.argv[2]
    base_url = sys.argv[3] if len(sys.argv) > 3 else None
    with use_cassette(cassette, mode):  # type: ignore[arg-type]
        print(json.dumps(asyncio.run(run(base_url))))


if __name__ == "__main__":
    main()
