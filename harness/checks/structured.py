"""output_schema: the final answer is JSON valid against a schema (structured outputs).

A run that asked for structured output (`client.messages.parse(output_format=Model)` sends
`output_config.format`, the older beta `output_format`) answers with JSON; this check holds the answer to a
schema the golden gives: a JSON Schema inline (`schema`, what `harness bless` proposes: the schema the request
sent), or a pydantic model by `module:Model` (`model`, imported from the project, validated by pydantic itself).
A schema changed since the run (a field renamed, one required more) fails it, naming the place in the answer.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from harness.checks.base import CheckResult, CheckSpec, fail, ok
from harness.patterns import BadPattern, schema_validator
from harness.trajectory import Trajectory

__all__ = ["CHECKS", "output_schema"]

NAME = "output_schema"


def _place(path: Iterable[Any]) -> str:
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return where or "the answer"


def _model(target: str) -> Any:
    """The pydantic model `module:Model`, imported as the project's tests import it (the project root on the path)."""
    from harness.project import project_root

    root = str(project_root())
    if root not in sys.path:
        sys.path.insert(0, root)
    module_name, _, attribute = target.partition(":")
    model = getattr(importlib.import_module(module_name), attribute, None)
    if model is None or not hasattr(model, "model_validate_json"):
        raise ValueError(f"{target} is not a pydantic model (no model_validate_json)")
    return model


def output_schema(trajectory: Trajectory, params: Mapping[str, Any]) -> CheckResult:
    step = trajectory.final_step
    text = trajectory.final_text
    where = f"step {step.index}" if step is not None else "the run"
    if step is None or not text.strip():
        return fail(NAME, f"{where}: the run gave no final answer to validate", step=step.index if step else None)
    try:
        instance = json.loads(text)
    except ValueError as err:
        return fail(NAME, f"{where}: the final answer is not JSON: {err}", step=step.index, answer=text[:200])
    if "model" in params:
        try:
            model = _model(str(params["model"]))
        except Exception as err:  # the user's module: whatever importing it raises
            return fail(NAME, f"cannot use model {params['model']!r}: {type(err).__name__}: {err}", step=step.index)
        try:
            model.model_validate_json(text)
        except Exception as err:  # pydantic.ValidationError, without importing pydantic here
            errors = err.errors() if hasattr(err, "errors") else []
            first = errors[0] if errors else {"loc": (), "msg": str(err)}
            return fail(NAME, f"{where}: the final answer does not validate against {params['model']}: "
                        f"{_place(first.get('loc', ()))}: {first.get('msg')}", step=step.index)
        return ok(NAME, f"{where}: the final answer validates against {params['model']}", step=step.index)
    error = next(iter(schema_validator(params["schema"]).iter_errors(instance)), None)
    if error is not None:
        return fail(NAME, f"{where}: the final answer does not validate against the schema: "
                    f"{_place(error.absolute_path)}: {error.message}", step=step.index,
                    schema_path=list(error.absolute_schema_path))
    return ok(NAME, f"{where}: the final answer validates against the schema", step=step.index)


def _bad_params(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A schema that is not a JSON Schema, or a model that is not `module:Model`, refused when the golden loads."""
    from jsonschema.exceptions import SchemaError

    if "schema" in params:
        try:
            schema_validator(params["schema"]).check_schema(params["schema"])
        except SchemaError as err:
            return [("schema", f"not a JSON Schema: {err.message}")]
        except BadPattern as err:
            return [("schema", f"a pattern that does not compile: {err}")]
    model = params.get("model")
    if isinstance(model, str) and (model.count(":") != 1 or not all(model.split(":"))):
        return [("model", f"must be \"module:Model\", got {model!r}")]
    return []


CHECKS = (
    CheckSpec(
        name=NAME,
        function=output_schema,
        description="The final answer is JSON valid against a schema: a JSON Schema inline, or a pydantic model.",
        params_schema={
            "type": "object",
            "properties": {
                "schema": {"type": "object", "description": "a JSON Schema the answer must validate against "
                           "(bless writes the one the request sent)"},
                "model": {"type": "string", "description": "a pydantic model, `module:Model`, imported from the "
                          "project"},
            },
            "oneOf": [{"required": ["schema"]}, {"required": ["model"]}],
        },
        validate_params=_bad_params,
    ),
)
