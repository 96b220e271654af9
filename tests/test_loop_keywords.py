"""run_loop takes the loop's options as named keywords (typed), not **overrides."""

from __future__ import annotations

import dataclasses
import inspect

from harness.loop import LoopConfig, run_loop, run_loop_async


def test_run_loop_names_every_loop_config_field_as_a_keyword() -> None:
    """Named keywords, not **overrides: a type checker and --help see each option of the loop."""

    fields = {field.name for field in dataclasses.fields(LoopConfig)}
    for driver in (run_loop, run_loop_async):
        parameters = inspect.signature(driver).parameters
        assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        assert fields <= set(parameters)
