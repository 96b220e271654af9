"""The Models API, simulated: every scripted model the simulator answers as, listed and retrieved."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.sim.resources import Answer, Call, method_not_allowed, not_found, page

CREATED_AT = "2026-09-07T08:00:00Z"


def model_info(model_id: str) -> dict[str, Any]:
    name = model_id.removeprefix("sim-").replace("-", " ")
    return {"type": "model", "id": model_id, "display_name": f"Simulator: {name}", "created_at": CREATED_AT}


class ModelsApi:
    def __init__(self, model_ids: Callable[[], Sequence[str]]) -> None:
        self._model_ids = model_ids  # asked on each call: the models a simulator knows may grow

    def answer(self, call: Call) -> Answer:
        if call.method != "GET":
            raise method_not_allowed(call)
        known = list(self._model_ids())
        if not call.segments:
            return Answer.json(page([model_info(model) for model in known], call.query))
        if len(call.segments) == 1 and call.segments[0] in known:
            return Answer.json(model_info(call.segments[0]))
        raise not_found(f"model: {'/'.join(call.segments)}")
