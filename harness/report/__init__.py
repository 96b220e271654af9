"""Reports: every view of an eval run is a projection of its results document.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

- `results_markdown`, `results_junit`, `results_html`: results document -> text;
- `compare_results`: two results documents -> a comparison document (flips, divergence, deltas, trials),
  with `comparison_markdown`, `comparison_junit`, `comparison_html` as its views;
- `pass_at_k`, `pass_hat_k`: scores of a case recorded several times (harness.report.trials).

Reports only read documents: nothing here imports the eval machinery that writes them (harness.evals), except
the `harness compare` command module, which runs suites when given cassette folders. The names below are
loaded on first use only for start-up time (the HTML view pulls jinja2, and a command that reads one helper
should not pay for it); a type checker sees them through the TYPE_CHECKING imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.report.compare import CaseSetMismatch, compare_results, comparison_exit_code
    from harness.report.html import comparison_html, results_html
    from harness.report.junit import comparison_junit, results_junit
    from harness.report.markdown import comparison_markdown, results_markdown
    from harness.report.outputs import write_comparison_reports, write_results_reports
    from harness.report.trials import TrialStats, pass_at_k, pass_hat_k

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

__all__ = [
    "CaseSetMismatch",
    "TrialStats",
    "compare_results",
    "comparison_exit_code",
    "comparison_html",
    "comparison_junit",
    "comparison_markdown",
    "pass_at_k",
    "pass_hat_k",
    "results_html",
    "results_junit",
    "results_markdown",
    "write_comparison_reports",
    "write_results_reports",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'harness.report' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
