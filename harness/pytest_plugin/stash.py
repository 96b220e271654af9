"""What the plugin's parts keep on a test item between setup, the call and the report.

The fixtures (harness.pytest_plugin.fixtures) store the test's open cassette or Agent SDK session here; the
plugin's hooks (harness.pytest_plugin), the drift report and the shared-cassette check read them back. On the
session's config: the project roots its cassettes' folders were found to belong to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.cassette.recorder import Cassette
    from harness.files import RootMemo

__all__ = ["AGENT_SDK_KEY", "CASSETTE_KEY", "ENDED_KEY", "FAILED_KEY", "PROJECT_ROOTS_KEY", "VERDICTS_KEY"]

CASSETTE_KEY: pytest.StashKey[Cassette] = pytest.StashKey()  # the test's open cassette (the `cassette` fixture)
AGENT_SDK_KEY: pytest.StashKey[Any] = pytest.StashKey()  # the test's AgentSdkSession (the `agent_sdk` fixture)
FAILED_KEY: pytest.StashKey[bool] = pytest.StashKey()  # the call failed: its cassette is left as an error leaves it
# The call ended with a report (passed, failed or skipped); never set when it was interrupted (Ctrl-C), whose
# cassette is then left as an interrupt leaves it: not written.
ENDED_KEY: pytest.StashKey[bool] = pytest.StashKey()
# The marker's on_miss / on_unplayed ("fail", "warn" or "ignore"): the plugin judges the test by them after its call.
VERDICTS_KEY: pytest.StashKey[dict[str, str]] = pytest.StashKey()
# On the config: folder -> project root, for every cassette the session opens (harness.files.project_roots_remembered).
PROJECT_ROOTS_KEY: pytest.StashKey[RootMemo] = pytest.StashKey()
