"""The README's two promises about the layout, now held by the layer table (tests/test_layers.py, which checks
every module, every import and every cycle): the library never imports the demo, and the data stages import
only themselves and the stages before them."""

from __future__ import annotations

from tests.test_layers import IMPORTS, LAYERS, _floor

STAGES = ("harness.cassette", "harness.trajectory", "harness.checks", "harness.evals", "harness.report")


def test_the_library_never_imports_the_demo_at_import_time() -> None:
    """Stronger than its name: not at import time, not lazily, not under TYPE_CHECKING."""
    found = [f"{module} -> {target}" for module, targets in IMPORTS.items() if not module.startswith("harness_demo")
             for target in targets if target.split(".")[0] == "harness_demo"]
    assert found == []


def test_stages_import_only_themselves_and_the_stages_before_them() -> None:
    floors = [_floor(stage) for stage in STAGES]
    assert floors == sorted(floors) and len(set(floors)) == len(STAGES), [LAYERS[f][0] for f in floors if f]
    upward = [f"{module} -> {target}" for module, targets in IMPORTS.items() if module.startswith(STAGES)
              for target in targets if target.startswith(STAGES) and _floor(target) > _floor(module)]
    assert upward == []
