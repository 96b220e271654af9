"""A new user's project in a temporary folder: pyproject.toml naming one scenario, their agent beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

# The user's agent of the README's first section, copied into each project.
AGENT = (Path(__file__).parent / "weather_agent.py").read_text(encoding="utf-8")


def weather_project(root: Path, monkeypatch: pytest.MonkeyPatch, module: str) -> Path:
    """`root` as the user's project, made the working directory, with no key or base URL in the environment.
    `module` names the agent's module: a name of its own per test file, so two projects in one worker never
    share an entry in sys.modules."""
    root.mkdir()
    (root / "pyproject.toml").write_text(f'[tool.loop-harness.scenarios]\nweather = "{module}:weather"\n')
    (root / f"{module}.py").write_text(AGENT)
    monkeypatch.chdir(root)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return root
