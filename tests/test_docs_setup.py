"""The docs' first minutes (issue 41, item 7): `make docs` installs the docs extra only, the first `make eval`
says it is setting up before pip goes quiet, and no page reads empty on GitHub (which does not include `--8<--`
snippets): each such page links to the file it includes."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _planned(target: str) -> list[str]:
    """What `make TARGET` would run from a fresh clone (-B: every stamp out of date), without running it."""
    done = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=True)
    return done.stdout.splitlines()


@needs_make
def test_make_docs_installs_the_docs_extra_only() -> None:
    installs = [line for line in _planned("docs") if "pip install" in line]
    assert installs and all("'.[docs]'" in line for line in installs), installs
    assert not any("[dev]" in line for line in installs)


@needs_make
def test_the_first_make_eval_says_it_is_setting_up_before_pip_goes_quiet() -> None:
    lines = _planned("eval")
    pip = next(n for n, line in enumerate(lines) if "pip install" in line)
    said = [line for line in lines[:pip] if line.startswith("echo") and "setting up" in line]
    assert len(said) == 1, lines[:pip]


def test_a_page_that_includes_a_file_links_to_it_for_github() -> None:
    includes = 0
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for included in re.findall(r'^--8<-- "([^":]+)', text, flags=re.M):
            includes += 1
            links = re.findall(r'<p class="github-only">.*?<a href="([^"#]+)', text)
            assert any((page.parent / link).resolve() == (ROOT / included).resolve() for link in links), (
                f"{page.name} includes {included} but gives GitHub's readers no link to it")
    assert includes, "no page includes a file: the test reads nothing"
    css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    assert re.search(r"\.github-only\s*\{\s*display:\s*none", css)  # the site shows the file itself
