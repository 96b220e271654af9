"""Shared test setup. Test helpers in this folder import either as `tests.x` or as `x`."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
REAL_CASSETTES = REPO.parent / "shared" / "real-cassettes"

if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
