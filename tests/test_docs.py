"""The docs cannot rot: every code block of README.md and docs/ is run (or says why not), and the site builds.

- every block says what it is (tests/docs_blocks.py: output, a file, a script, a shell session, or a skip
  with its reason); a block that says nothing fails here, naming its page and line;
- each page's blocks run in order in a scratch project of its own, outside this repository, with the
  installed `harness` and `pytest` first on PATH and no key, base URL or harness variable in the
  environment: a block that stops working fails, showing its output;
- the README and the user's pages import only from `harness`'s public surface (`harness/__init__.py`'s
  `__all__`), never from a module under it: docs/how-it-is-built.md, the contributor's map, may name internals;
- `mkdocs build --strict` passes (a broken link or anchor, a page missing from the nav, a reference page that
  does not generate), and the built site is looked at in headless Chromium: the index and the checks
  reference paint, and the reference lists every check the registry knows.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.docs_blocks import Block, doc_pages, page_blocks, page_setup

PAGES = doc_pages(REPO)
RUNNABLE = ("run", "file", "script")
SECONDS = 900  # a ceiling for a wedged block, never a measurement
MKDOCS = Path(sys.executable).parent / "mkdocs"


def _page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


CONTRIBUTORS_MAP = REPO / "docs" / "how-it-is-built.md"
LIBRARY = "harness"


def deep_imports(source: str) -> list[str]:
    """Each import in `source` of a module under `harness.` (`from harness.x import y`, `import harness.x`), and
    each `from harness import NAME` of a NAME that is not public."""
    public = set(harness_all())
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith(LIBRARY + "."):
                found.append(f"from {node.module} import {', '.join(alias.name for alias in node.names)}")
            elif node.module == LIBRARY:
                found.extend(f"from harness import {alias.name} (not in harness.__all__)" for alias in node.names
                             if alias.name not in public)
        elif isinstance(node, ast.Import):
            found.extend(f"import {alias.name}" for alias in node.names if alias.name.startswith(LIBRARY + "."))
    return found


def harness_all() -> list[str]:
    import harness

    return list(harness.__all__)


def test_the_readme_and_the_users_pages_import_only_the_public_surface() -> None:
    deep = [
        f"{block.where}: {line}"
        for page in PAGES
        if page != CONTRIBUTORS_MAP
        for block in page_blocks(page)
        if block.language == "python"
        for line in deep_imports(block.body)
    ]
    assert deep == []


def test_the_import_reader_finds_deep_and_unknown_imports() -> None:
    source = ("import harness\nfrom harness import use_cassette, secret_helper\n"
              "from harness.agent_sdk.transport import TransportMismatch\nimport harness.cassette.recorder\n"
              "from harness_demo.dayflow import run_brief\n")
    assert deep_imports(source) == [
        "from harness import secret_helper (not in harness.__all__)",
        "from harness.agent_sdk.transport import TransportMismatch",
        "import harness.cassette.recorder",
    ]


def test_every_block_says_what_it_is() -> None:
    problems = [
        kind
        for page in PAGES
        for block in page_blocks(page)
        if (kind := block.kind()) not in (*RUNNABLE, "output", "skip")
    ]
    assert not problems, "\n".join(problems)


def test_a_block_that_says_nothing_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n```yaml\nkey: value\n```\n\n<!-- docs-test: skip -->\n```sh\nfalse\n```\n")
    kinds = [block.kind() for block in page_blocks(page)]
    assert kinds[0].startswith(f"{page}:3: a ```yaml block must be")
    assert "a skip needs a reason" in kinds[1]


def _environment() -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ANTHROPIC_", "PYTEST_", "HARNESS_", "CLAUDE_")) and key != "PYTHONPATH"
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "100"
    env["NO_COLOR"] = "1"
    return env


def _start_project(setup: str, project: Path) -> None:
    project.mkdir()
    if setup == "repo":
        for name in ("cassettes", "golden", "evals", "tests/server_tools"):
            shutil.copytree(REPO / name, project / name)
        shutil.copy(REPO / "pyproject.toml", project / "pyproject.toml")
    elif setup == "weather":
        (project / "pyproject.toml").write_text('[tool.loop-harness.scenarios]\nweather = "my_agent:weather"\n')
        shutil.copy(REPO / "tests" / "weather_agent.py", project / "my_agent.py")
    else:
        (project / "pyproject.toml").write_text("[tool.loop-harness]\n")


def _run(block: Block, project: Path, env: dict[str, str]) -> None:
    kind = block.kind()
    if kind == "file":
        target = project / str(block.file_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.body, encoding="utf-8")
        return
    command = ["bash", "-c", block.body] if kind == "run" else [sys.executable, "-c", block.body]
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=SECONDS, stdin=subprocess.DEVNULL
    )
    assert done.returncode == block.expected_exit, (
        f"{block.where}: exit {done.returncode}, expected {block.expected_exit}\n"
        f"--- block\n{block.body}--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
    )


RUN_PAGES = [
    page
    for page in PAGES
    if any(block.kind() in ("run", "script") for block in page_blocks(page))
    and not page_setup(page).startswith("tested-by ")
]
WALKTHROUGHS = [page for page in PAGES if page_setup(page).startswith("tested-by ")]


@pytest.mark.parametrize("page", WALKTHROUGHS, ids=_page_id)
def test_a_walkthrough_is_followed_by_the_test_it_names(page: Path) -> None:
    test_file = REPO / page_setup(page).split(None, 1)[1]
    assert test_file.is_file(), f"{page}: names {test_file}, which does not exist"
    assert "README.md" in test_file.read_text(encoding="utf-8"), f"{test_file} does not read the walkthrough"


@pytest.mark.parametrize("page", RUN_PAGES, ids=_page_id)
def test_the_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    _start_project(page_setup(page), project)
    env = _environment()
    env["HOME"] = str(tmp_path / "home")
    for block in page_blocks(page):
        if block.kind() in RUNNABLE:
            _run(block, project, env)


needs_mkdocs = pytest.mark.skipif(
    not MKDOCS.exists(),
    reason=f"mkdocs is not installed beside {sys.executable} (it comes with the dev extra: pip install -e '.[dev]')",
)


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"},
        capture_output=True,
        text=True,
        timeout=SECONDS,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return site


@needs_mkdocs
def test_the_site_builds_strict_with_every_check_in_its_reference(built_site: Path) -> None:
    from harness.checks.registry import check_names

    reference = (built_site / "reference" / "checks" / "index.html").read_text(encoding="utf-8")
    missing = [name for name in check_names() if f'id="{name}"' not in reference]
    assert not missing, f"checks missing from the generated reference: {missing}"
    cli = (built_site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    from harness.cli import COMMANDS

    assert all(f"harness {name}" in cli for name in COMMANDS)


@needs_mkdocs
@pytest.mark.parametrize("page", ["index.html", "reference/checks/index.html"])
def test_a_built_page_paints_in_a_real_browser(built_site: Path, page: str, tmp_path: Path) -> None:
    from tests.test_html_browser import CHROMIUM, WINDOW, chromium, png_facts

    if CHROMIUM is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install -y chromium); .ci/run installs it")
    shot = tmp_path / "page.png"
    chromium(tmp_path, f"--screenshot={shot}", (built_site / page).as_uri())
    width, height, distinct = png_facts(shot)
    assert (width, height) == WINDOW
    assert distinct > 16, f"{page}: a blank page would paint one or two colours"
    dom = chromium(tmp_path, "--dump-dom", (built_site / page).as_uri()).stdout
    assert "loop-harness" in dom
