"""The code blocks of the docs (README.md and docs/**/*.md), and what a test does with each.

A page's blocks run in order in one scratch project of their own, so a page reads as a session a person
could type. What each block is, is said by its language and by a directive, an HTML comment the site does
not show, on the line before it:

- `text`: output shown to the reader, never run;
- `python`, `toml`, `yaml`, `json`, `ini` whose first line is a comment naming a path (`# my_agent.py`):
  a file, written to that path in the project;
- `python` with no path: a script, run with this interpreter in the project; it must exit 0;
- `sh`, `bash`, `console`: run with bash in the project; they must exit 0;
- `<!-- docs-test: file PATH -->`: a file written to PATH (for JSON, which has no comments);
- `<!-- docs-test: skip: REASON -->`: not run, for the reason given (a key, a GitHub runner...);
- `<!-- docs-test: exit N -->`: a shell block that must exit N (a failing compare, a miss shown on purpose).

A page picks its starting project with a directive anywhere in it: `<!-- docs-setup: weather -->` (the
new user's weather agent of the README), `<!-- docs-setup: repo -->` (a copy of this repository's
bundled suite: pyproject.toml, cassettes/, golden/, evals/, and the hand-written server-tool cassettes
of tests/server_tools/), `<!-- docs-setup: tested-by tests/test_x.py -->`
(a walkthrough a test of its own follows word for word, asserting more than exit codes), else an empty
project with a pyproject.toml.
Any other block fails the docs test, so a block cannot be added without saying what it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RUN_LANGUAGES = frozenset({"sh", "bash", "console"})
FILE_LANGUAGES = frozenset({"python", "toml", "yaml", "json", "ini"})
_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
_DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(?P<what>[^>]*?)\s*-->\s*$")
_SETUP = re.compile(r"<!--\s*docs-setup:\s*(?P<name>[\w./ -]+?)\s*-->")
_SNIPPET = re.compile(r'^--8<-- "(?P<path>[^":]+)(?::(?P<start>\d+)(?::(?P<end>\d+))?|:(?P<section>[\w-]+))?"\s*$')
_PATH_LINE = re.compile(r"^(?:#|//)\s*(?P<path>[\w./-]+\.(?:py|toml|yaml|yml|json|ini|cfg))\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    body: str
    directive: str | None  # the docs-test directive on the line before, if any

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def file_path(self) -> str | None:
        """The project path a file block is written to (its first line names it)."""
        if self.directive and self.directive.startswith("file "):
            return self.directive.split(None, 1)[1]
        first = self.body.splitlines()[0] if self.body else ""
        found = _PATH_LINE.match(first.strip())
        return found.group("path") if found else None

    @property
    def skip_reason(self) -> str | None:
        if self.directive and self.directive.startswith("skip"):
            return self.directive.partition(":")[2].strip() or None
        return None

    @property
    def expected_exit(self) -> int:
        if self.directive and self.directive.startswith("exit"):
            return int(self.directive.split()[1])
        return 0

    def kind(self) -> str:
        """run | file | script | output | skip, or a reason this block is not allowed as it is."""
        if self.directive is not None and self.directive.startswith("skip"):
            return "skip" if self.skip_reason else f"{self.where}: a skip needs a reason (`skip: why`)"
        if self.language == "text":
            return "output"
        if self.language in RUN_LANGUAGES:
            return "run"
        if self.language in FILE_LANGUAGES and self.file_path:
            return "file"
        if self.language == "python":
            return "script"
        return (
            f"{self.where}: a ```{self.language or '(no language)'} block must be `text` (output), a file "
            "naming its path on its first line, a shell block, or carry `<!-- docs-test: skip: REASON -->`"
        )


def _expanded(page: Path) -> str:
    """The page as the site shows it: each `--8<-- "path:start:end"` line (a pymdownx snippet, paths from the
    repository root) replaced by those lines of that file, so that an included file's blocks are tested too."""
    out = []
    for row in page.read_text(encoding="utf-8").splitlines():
        found = _SNIPPET.match(row)
        if found is None:
            out.append(row)
            continue
        lines = (_repo_of(page) / found.group("path")).read_text(encoding="utf-8").splitlines()
        if found.group("section"):
            marks = [
                n
                for n, line in enumerate(lines)
                if f"--8<-- [start:{found.group('section')}]" in line
                or f"--8<-- [end:{found.group('section')}]" in line
            ]
            out.extend(lines[marks[0] + 1 : marks[1]])
            continue
        start, end = int(found.group("start") or 1), int(found.group("end") or len(lines))
        out.extend(lines[start - 1 : end])
    return "\n".join(out) + "\n"


def _repo_of(page: Path) -> Path:
    return next(parent for parent in page.resolve().parents if (parent / "mkdocs.yml").is_file())


def page_blocks(page: Path) -> list[Block]:
    text = _expanded(page)
    blocks = []
    for found in _FENCE.finditer(text):
        line = text.count("\n", 0, found.start()) + 1
        before = text[: found.start()].rstrip("\n ").rsplit("\n", 1)[-1]
        directive = _DIRECTIVE.search(before)
        body = "\n".join(row[len(found.group("indent")) :] for row in found.group("body").splitlines())
        blocks.append(
            Block(page, line, found.group("lang"), body + "\n", directive.group("what") if directive else None)
        )
    return blocks


def page_setup(page: Path) -> str:
    found = _SETUP.search(_expanded(page))
    return found.group("name") if found else "empty"


def doc_pages(repo: Path) -> list[Path]:
    """README.md and the site's pages (docs/notes/ holds drafts the site leaves out, as mkdocs.yml says)."""
    pages = sorted(page for page in (repo / "docs").rglob("*.md") if "notes" not in page.relative_to(repo).parts)
    return [repo / "README.md", *pages]
