"""Shared test setup. Test helpers in this folder import by one name each: `tests.x` (tests/ is a package).

The real-recordings corpus (55 recordings of the real API by other projects) is optional: it is
`$HARNESS_REAL_CASSETTES` when set (.ci/run sets it), else ../shared/real-cassettes beside the checkout.
Tests that read it carry `@pytest.mark.real_cassettes` (or call `require_real_cassettes()`) and are
skipped, with one line naming the folder, where it is absent: a fresh clone has nothing beside it. Under
`CI=true` (.ci/run), a test that the guarantees list cites fails the session if it skips (tests/guarantees.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
REAL_CASSETTES_VARIABLE = "HARNESS_REAL_CASSETTES"
REAL_CASSETTES = Path(os.environ.get(REAL_CASSETTES_VARIABLE) or REPO.parent / "shared" / "real-cassettes")


def real_cassettes_missing() -> str | None:
    """Why the corpus cannot be read (one line), or None when it is there."""
    if REAL_CASSETTES.is_dir():
        return None
    return f"real-recordings corpus not found at {REAL_CASSETTES} (set {REAL_CASSETTES_VARIABLE} to where it is)"


def require_real_cassettes() -> Path:
    """The corpus folder; skips the calling test when it is absent."""
    missing = real_cassettes_missing()
    if missing:
        pytest.skip(missing)
    return REAL_CASSETTES


def corpus_params(paths: list[Path]) -> list[object]:
    """Parameters over corpus files; where the corpus is absent, one that skips naming it (rather than
    pytest's "got empty parameter set", which does not say what is missing)."""
    if paths:
        return list(paths)
    return [pytest.param(None, marks=pytest.mark.real_cassettes, id="corpus-absent")]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "real_cassettes: reads the real-recordings corpus; skipped where it is absent")
    from tests.guarantees import register_in_ci

    register_in_ci(config)  # under CI=true a test the guarantees list cites may not skip


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("real_cassettes") is not None:
        require_real_cassettes()
