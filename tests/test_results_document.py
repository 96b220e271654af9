"""The typed results document (harness.evals.document) holds the keys of the JSON Schema, which stays the
contract: each object of the schema has a TypedDict with its required keys required and its other keys
NotRequired, and the report views take the typed document."""

from __future__ import annotations

import json
from typing import Any, get_type_hints

import pytest

from harness.evals import document
from tests.conftest import REPO

SCHEMA = json.loads((REPO / "harness" / "evals" / "results.schema.json").read_text(encoding="utf-8"))


def _at(pointer: str) -> dict[str, Any]:
    node: Any = SCHEMA
    for part in pointer.split("/"):
        node = node[part]
    if "oneOf" in node:  # `X or null`: the object of the two
        node = next(option for option in node["oneOf"] if option.get("type") == "object")
    return node


TYPES = {
    "ResultsDocument": "",
    "Tool": "properties/tool",
    "Shard": "properties/shard",
    "Summary": "properties/summary",
    "TokenUsage": "$defs/usage",
    "SuiteSummary": "properties/suites/items",
    "CaseResult": "$defs/case",
    "CaseCassette": "$defs/case/properties/cassette",
    "CaseGolden": "$defs/case/properties/golden",
    "CaseTrajectory": "$defs/case/properties/trajectory",
    "TrajectoryOutcome": "$defs/case/properties/trajectory/properties/outcome",
    "CheckRecord": "$defs/case/properties/checks/items",
    "CaseError": "$defs/case/properties/error",
    "CaseTimings": "$defs/case/properties/timings",
    "Attempt": "$defs/attempt",
    "Step": "$defs/step",
    "RunDetail": "$defs/run_detail",
    "StepRequest": "$defs/step_request",
}


@pytest.mark.parametrize("name", sorted(TYPES))
def test_each_typed_dict_has_the_schema_s_keys(name: str) -> None:
    typed = getattr(document, name)
    schema = SCHEMA if not TYPES[name] else _at(TYPES[name])
    required = set(schema.get("required", ()))
    assert set(typed.__required_keys__) == required, name
    assert set(typed.__optional_keys__) == set(schema["properties"]) - required, name
    get_type_hints(typed)  # every annotation resolves


def test_every_type_is_listed_and_every_listed_type_is_tested() -> None:
    typed_dicts = {name for name in document.__all__ if isinstance(getattr(document, name), type)}
    assert typed_dicts == set(TYPES)


def test_the_report_views_read_the_typed_document() -> None:
    from harness.report import compare, html, junit, markdown, outputs

    for view, parameter in ((markdown.results_markdown, "results"), (junit.results_junit, "results"),
                            (html.results_html, "results"), (outputs.write_results_reports, "results"),
                            (compare.compare_results, "baseline"), (compare.compare_results, "candidate")):
        assert get_type_hints(view)[parameter] is document.ResultsDocument, view.__name__
