"""The public surface as callers and their tools see it: `use_cassette` names its keywords (a misspelt one fails
at the call), and `harness`'s lazy exports are the real objects to a type checker, not `Any`."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest

import harness
from harness.cassette.recorder import Cassette, use_cassette
from harness.errors import CassetteError
from harness.normalize import Normalization
from tests.conftest import REPO


def test_a_misspelt_option_fails_at_the_call_not_when_the_block_is_entered(tmp_path: Path) -> None:
    path = tmp_path / "never-recorded.yaml"  # entering mode none here would fail too: the typo must fail first
    with pytest.raises(TypeError, match="ignore_feilds"):
        use_cassette(path, "none", ignore_feilds=["metadata"])  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="alow_repeats"):
        @use_cassette(path, "none", alow_repeats=True)  # type: ignore[call-arg]
        def run() -> None:  # never called: decorating already failed
            raise AssertionError("unreachable")
    with pytest.raises(CassetteError, match="unknown record mode 'sometimes'"):
        use_cassette(path, "sometimes")  # type: ignore[arg-type]
    assert not path.exists()


def test_use_cassette_names_every_option_with_its_type() -> None:
    parameters = inspect.signature(use_cassette).parameters
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    cassette_options = {name for name, p in inspect.signature(Cassette).parameters.items()
                        if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert cassette_options <= set(parameters), "every Cassette option is a keyword of use_cassette"
    hints = typing.get_type_hints(use_cassette.__init__)
    assert hints["normalize"] == Normalization | None
    assert hints["lock_timeout"] == float | None
    assert typing.get_args(hints["mode"]) == ("none", "once", "new_episodes", "all", "rewrite", "fork")


def _type_checking_imports() -> dict[str, str]:
    """name -> module, as imported under `if TYPE_CHECKING:` in harness/__init__.py."""
    tree = ast.parse((REPO / "harness" / "__init__.py").read_text(encoding="utf-8"))
    blocks = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    assert len(blocks) == 1, "one TYPE_CHECKING block of explicit imports"
    imported: dict[str, str] = {}
    for statement in blocks[0].body:
        assert isinstance(statement, ast.ImportFrom) and statement.module is not None
        for alias in statement.names:
            assert alias.asname == alias.name, f"{alias.name}: `import x as x` is what checkers read as a re-export"
            imported[alias.name] = statement.module
    return imported


def test_the_type_checking_imports_are_the_lazy_exports() -> None:
    assert _type_checking_imports() == harness._EXPORTS
    assert "Cassette" in harness.__all__ and harness.Cassette is Cassette
    for name, module in harness._EXPORTS.items():
        assert getattr(harness, name) is getattr(importlib.import_module(module), name), name


def test_import_harness_still_loads_none_of_them() -> None:
    eager = sorted({*harness._EXPORTS.values(), "anthropic", "httpx2", "vcr"})
    done = subprocess.run([sys.executable, "-c", f"import harness, sys; print([m for m in {eager!r} "
                           "if m in sys.modules])"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_type_checker_sees_the_real_types(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[dev]')")
    snippet = tmp_path / "uses_harness.py"
    snippet.write_text(textwrap.dedent("""\
        from pathlib import Path

        import harness

        def check(path: Path) -> None:
            with harness.use_cassette(path, mode="none", allow_repeats=True) as cassette:
                reveal_type(cassette)
                reveal_type(cassette.misses)
                reveal_type(cassette.divergence)
            harness.use_cassette(path, mode="none", ignore_feilds=["metadata"])
            harness.use_cassette(path, mode="sometimes")
            reveal_type(harness.load_trajectory)
        """), encoding="utf-8")
    # Third-party packages left out (Any to the checker): the harness's own types are what is checked, cheaply.
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-site-packages", "--follow-imports=silent", "--ignore-missing-imports",
         "--no-error-summary", "--cache-dir", str(tmp_path / "cache"), snippet.name],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**os.environ, "MYPYPATH": str(REPO)})
    lines = [line.split(": ", 1)[1] for line in done.stdout.splitlines() if line.startswith(f"{snippet.name}:")]
    assert 'note: Revealed type is "harness.cassette.recorder.Cassette"' in lines, done.stdout
    assert 'note: Revealed type is "list[harness.cassette.mismatch.CassetteMismatch]"' in lines
    assert 'note: Revealed type is "harness.cassette.mismatch.CassetteMismatch | None"' in lines
    # Trajectory is defined in harness.trajectory.model, re-exported by the harness.trajectory package.
    assert any(line.startswith('note: Revealed type is "def (path: ') and "harness.trajectory.model.Trajectory" in line
               for line in lines), lines
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 2, errors
    assert 'Unexpected keyword argument "ignore_feilds" for "use_cassette"' in errors[0]
    assert 'Argument "mode" to "use_cassette"' in errors[1] and "Literal['sometimes']" in errors[1]


READ_OF_A_RUN = ("path", "mode", "existed", "recorded", "saved", "requests_seen", "misses", "divergence", "drifts",
                 "unplayed", "new_interactions", "rejected", "spans")


def test_the_cassette_forwards_nothing_and_what_a_user_reads_is_read_only(tmp_path: Path) -> None:
    # No attribute of Cassette is a forwarding descriptor: the library reaches storage, matcher, capture by name.
    descriptors = {name: type(value).__name__ for name, value in vars(Cassette).items()
                   if hasattr(value, "__get__") and not isinstance(value, (property, staticmethod, classmethod))
                   and not inspect.isfunction(value) and not name.startswith("__")}
    assert descriptors == {}
    cassette = Cassette(tmp_path / "run.yaml", "once")
    for name in READ_OF_A_RUN:
        documented = vars(Cassette)[name]
        assert isinstance(documented, property) and documented.fset is None and documented.__doc__, name
        with pytest.raises(AttributeError):
            setattr(cassette, name, None)
    assert cassette.path == cassette.storage.path and cassette.mode == "once"
    assert cassette.requests_seen == cassette.matcher.requests_seen == 0
    assert cassette.new_interactions is cassette.capture.new_interactions
