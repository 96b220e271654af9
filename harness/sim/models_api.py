"""The Models API, simulated: what `/v1/messages` accepts is what `models.list` lists and `models.retrieve` finds.

Listed: the simulator's own models (`sim-*`), then the Claude model ids the installed SDK names (its `Model`
type), which messages answer with the default model (`sim-auto` unless told otherwise). Retrieved: any of
those, and any other id messages accept as a Claude model (`harness.sim.models.is_claude_model_id`, e.g. a
dated `claude-sonnet-4-5-20250929`); a name messages refuse is the API's 404 here too. Every entry says that
the simulator answers for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from anthropic._data import DEPRECATED_MODELS  # the SDK's own table: it warns on these ids

from harness.sim.models import is_claude_model_id, sdk_model_ids
from harness.sim.resources import Answer, Call, method_not_allowed, not_found, page

CREATED_AT = "2026-09-07T08:00:00Z"


def model_info(model_id: str) -> dict[str, Any]:
    if model_id.startswith("sim-"):
        name = f"Simulator: {model_id.removeprefix('sim-').replace('-', ' ')}"
    else:
        name = f"{model_id} (answered by the harness simulator)"
    lifecycle = "deprecated" if model_id in DEPRECATED_MODELS else "active"
    return {"type": "model", "id": model_id, "display_name": name, "created_at": CREATED_AT, "lifecycle": lifecycle}


class ModelsApi:
    def __init__(self, model_ids: Callable[[], Sequence[str]]) -> None:
        self._model_ids = model_ids  # asked on each call: the models a simulator knows may grow

    def listed(self) -> list[str]:
        return list(dict.fromkeys([*self._model_ids(), *sdk_model_ids()]))

    def answer(self, call: Call) -> Answer:
        if call.method != "GET":
            raise method_not_allowed(call)
        known = self.listed()
        if not call.segments:
            return Answer.json(page([model_info(model) for model in known], call.query))
        if len(call.segments) == 1 and (call.segments[0] in known or is_claude_model_id(call.segments[0])):
            return Answer.json(model_info(call.segments[0]))
        raise not_found(f"model: {'/'.join(call.segments)}")
