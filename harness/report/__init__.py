"""Reports: every view of an eval run is a projection of its results document.

- `results_markdown`, `results_junit`, `results_html`: results document -> text;
- `compare_results`: two results documents -> a comparison document (flips, divergence, deltas, trials),
  with `comparison_markdown`, `comparison_junit`, `comparison_html` as its views;
- `pass_at_k`, `pass_hat_k`: scores of a case recorded several times (harness.report.trials).

Imported lazily, so that `harness record` (which names trial files) does not load jinja2.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "results_markdown": "harness.report.markdown",
    "comparison_markdown": "harness.report.markdown",
    "results_junit": "harness.report.junit",
    "comparison_junit": "harness.report.junit",
    "results_html": "harness.report.html",
    "comparison_html": "harness.report.html",
    "compare_results": "harness.report.compare",
    "comparison_exit_code": "harness.report.compare",
    "CaseSetMismatch": "harness.report.compare",
    "write_results_reports": "harness.report.outputs",
    "write_comparison_reports": "harness.report.outputs",
    "pass_at_k": "harness.report.trials",
    "pass_hat_k": "harness.report.trials",
    "TrialStats": "harness.report.trials",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'harness.report' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
