"""Exit codes as documented, and no traceback at the edges (issue 38, item 8): 0 ok, 1 a check failed (whatever else
the run holds), 2 bad input or a file that cannot be written, 130 interrupted; a disk that is full or read-only is
one line naming the file and the reason; one broken golden errors its own case while the others run; a long
parametrized id still gives a cassette file name the file system takes."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main as harness_main
from harness.evals.results import validate_results
from tests.test_judge import CRITERION, GOLDEN, clone_of_dayflow, edit_rubric

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
BRIEF = REPO / "cassettes" / "dayflow" / "brief.yaml"


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "cassettes").mkdir()
    shutil.copyfile(BRIEF, tmp_path / "cassettes" / "brief.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@contextlib.contextmanager
def _tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at `folder` (root only: where a user cannot mount one, the caller skips, saying so)."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip()})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def read_only_folder(project: Path) -> Iterator[Path]:
    """A folder nothing can be written in: mode 0555 for a user, a read-only mount for root (who ignores modes)."""
    folder = project / "out"
    if os.geteuid() != 0:
        folder.mkdir()
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    if shutil.which("mount") is None:
        pytest.skip("root with no mount command: no way to make a read-only folder")
    with _tmpfs(folder, "ro,size=64k") as mounted:
        yield mounted


@pytest.fixture
def full_folder(project: Path) -> Iterator[Path]:
    """A folder on a disk with no space left: a 64 KiB tmpfs, filled."""
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("a full disk needs a tmpfs mount, which needs root")
    with _tmpfs(project / "full", "size=64k") as mounted:
        with contextlib.suppress(OSError), (mounted / "filler").open("wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
        yield mounted


def _one_line_naming(err: str, path: Path, reason: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and str(path) in lines[0] and reason in lines[0], err


# --- a disk that cannot take the write ------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["read_only_folder", "full_folder"])
def test_bless_into_a_disk_that_cannot_take_it_is_one_line_exit_2(
    where: str, request: pytest.FixtureRequest, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = request.getfixturevalue(where)
    target = folder / "brief.json"
    capsys.readouterr()
    assert harness_main(["bless", "cassettes/brief.yaml", "--golden", str(target), "--yes"]) == 2
    reason = "Read-only file system" if where == "read_only_folder" and os.geteuid() == 0 else (
        "Permission denied" if where == "read_only_folder" else "No space left on device")
    _one_line_naming(capsys.readouterr().err, target, reason)
    assert not target.exists() and [p.name for p in folder.iterdir()] in ([], ["filler"])  # no temp file left


@pytest.mark.parametrize("where", ["read_only_folder", "full_folder"])
def test_eval_reports_into_a_disk_that_cannot_take_them_are_one_line_exit_2(
    where: str, request: pytest.FixtureRequest, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert harness_main(["bless", "cassettes/brief.yaml", "--yes"]) == 0
    folder = request.getfixturevalue(where)
    capsys.readouterr()
    views = ["--junit", str(folder / "r.xml"), "--html", str(folder / "r.html")]
    code = harness_main(["eval", "golden/brief.json", *views])
    err = capsys.readouterr().err
    assert code == 2, err
    _one_line_naming(err, folder / "r.xml", "harness eval: ")


def test_an_os_error_from_a_command_is_one_line_exit_2_as_a_subprocess(project: Path) -> None:
    """The same, seen as CI sees it: a real process, its stderr and its exit code (/dev/full: no space left)."""
    (project / "golden").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "eval", str(REPO / "golden" / "dayflow" / "brief.json"),
         "--json", "/dev/full/results.json"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "/dev/full" in done.stderr and "Traceback" not in done.stderr


# --- exit codes from results ----------------------------------------------------------------------------------------


def test_a_regression_beside_a_judgement_to_redo_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A failed check is a failed run (1) even when the same case also holds a judged check that needs re-judging:
    CI must read "the agent regressed", not "broken setup"."""
    project = clone_of_dayflow(tmp_path)
    edit_rubric(project / GOLDEN, criterion=CRITERION + "; and more")
    golden = json.loads((project / GOLDEN).read_text(encoding="utf-8"))
    budgets = next(check for check in golden["checks"] if check["check"] == "budgets")
    budgets["params"]["max_steps"] = 1  # the run takes 3: a regression
    (project / GOLDEN).write_text(json.dumps(golden), encoding="utf-8")
    out = project / "r.json"
    assert harness_main(["eval", str(project / GOLDEN), "--json", str(out)]) == 1
    results = json.loads(out.read_text(encoding="utf-8"))
    validate_results(results)
    assert results["summary"]["status"] == "failed" and results["summary"]["needs_rejudging"] == 1
    printed = capsys.readouterr().out
    assert "FAIL" in printed and "needs re-judging" in printed


def test_a_regression_beside_a_judge_that_cannot_be_asked_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same when the judge could not be asked at all (`--judge record` with no key): still the regression."""
    project = clone_of_dayflow(tmp_path)
    edit_rubric(project / GOLDEN, criterion="something new")
    golden = json.loads((project / GOLDEN).read_text(encoding="utf-8"))
    next(check for check in golden["checks"] if check["check"] == "budgets")["params"]["max_steps"] = 1
    (project / GOLDEN).write_text(json.dumps(golden), encoding="utf-8")
    out = project / "r.json"
    assert harness_main(["eval", str(project / GOLDEN), "--judge", "record", "--json", str(out)]) == 1
    (case,) = json.loads(out.read_text(encoding="utf-8"))["cases"]
    assert case["status"] == "failed" and "ANTHROPIC_API_KEY" in case["error"]["reason"]
    assert "recording a judgement needs ANTHROPIC_API_KEY" in capsys.readouterr().out


def _golden(project: Path, name: str, data: object) -> Path:
    path = project / "golden" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


GOOD = {"name": "good", "cassettes": ["cassettes/brief.yaml"], "checks": [{"check": "tool_ids_matched"}]}
FAILING = {"name": "failing", "cassettes": ["cassettes/brief.yaml"],
           "checks": [{"check": "budgets", "params": {"max_steps": 1}}]}


@pytest.mark.parametrize(
    ("broken", "place", "reason"),
    [
        ({"name": "broken", "cassettes": ["cassettes/brief.yaml"], "checks": [{"check": "outcom"}]},
         "$.checks[0].check", "outcome"),
        ('{"name": "broken", "cassettes": [', "line 1", "not valid JSON"),
    ],
)
def test_one_broken_golden_errors_its_case_and_the_others_run(
    project: Path, capsys: pytest.CaptureFixture[str], broken: object, place: str, reason: str
) -> None:
    _golden(project, "good", GOOD)
    bad = _golden(project, "broken", broken)
    out = project / "r.json"
    assert harness_main(["eval", "golden", "--json", str(out)]) == 2
    results = json.loads(out.read_text(encoding="utf-8"))
    validate_results(results)
    statuses = {case["golden"]["path"]: case["status"] for case in results["cases"]}
    assert statuses == {"golden/good.json": "passed", "golden/broken.json": "error"}
    (errored,) = [case for case in results["cases"] if case["status"] == "error"]
    assert errored["error"]["file"].endswith("broken.json") and place in (errored["error"]["where"] or "")
    assert reason in errored["error"]["reason"]
    printed = capsys.readouterr().out
    assert "ERROR" in printed and str(bad.name) in printed and "pass " in printed

    _golden(project, "failing", FAILING)  # a failed check beside a broken golden: still 1
    assert harness_main(["eval", "golden"]) == 1


def test_a_suite_naming_a_broken_or_missing_golden_errors_those_cases_only(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _golden(project, "good", GOOD)
    _golden(project, "broken", {"name": "broken", "cassettes": ["cassettes/brief.yaml"], "checks": "all"})
    (project / "evals").mkdir()
    (project / "evals" / "s.yaml").write_text(
        "name: s\ncases:\n  - golden: good.json\n  - golden: broken.json\n  - golden: gone.json\n", encoding="utf-8"
    )
    out = project / "r.json"
    assert harness_main(["eval", "--json", str(out)]) == 2
    results = json.loads(out.read_text(encoding="utf-8"))
    validate_results(results)
    assert [case["status"] for case in results["cases"]] == ["passed", "error", "error"]
    broken, gone = results["cases"][1]["error"], results["cases"][2]["error"]
    assert broken["file"].endswith("broken.json") and broken["where"] == "$.checks"
    assert gone["file"].endswith("s.yaml") and gone["where"] == "$.cases[2].golden" and "gone.json" in gone["reason"]


# --- bless with nothing to bless ------------------------------------------------------------------------------------


def test_bless_with_nothing_to_bless_says_so_and_exits_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert harness_main(["bless", "cassettes/brief.yaml", "--yes"]) == 0
    before = (project / "golden" / "brief.json").read_bytes()
    capsys.readouterr()
    assert harness_main(["bless", "cassettes/brief.yaml", "--yes"]) == 1
    printed = capsys.readouterr().out
    assert printed.startswith("nothing to bless: ")
    assert "golden/brief.json is up to date with cassettes/brief.yaml" in printed
    assert (project / "golden" / "brief.json").read_bytes() == before


# --- a long parametrized id ------------------------------------------------------------------------------------------

LONG_IDS = '''
import pytest

LONG = "x" * 300

@pytest.mark.parametrize("city", [LONG, LONG + "y"], ids=[LONG, LONG + "y"])
@pytest.mark.cassette
def test_weather(anthropic_client, city):
    reply = anthropic_client.messages.create(
        model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": city[:20]}])
    assert reply.content
'''


def test_a_parametrize_id_too_long_for_a_file_name_gets_a_short_stable_cassette_name(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_long=LONG_IDS)
    pytester.runpytest("--record-mode=once", "--simulator=auto").assert_outcomes(passed=2)
    names = sorted(path.name for path in (pytester.path / "cassettes" / "test_long").iterdir())
    assert len(names) == 2 and all(len(name.encode()) <= 200 for name in names), names
    assert all(name.startswith("test_weather-" + "x" * 100) for name in names)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)  # replays: the same names again
    assert sorted(path.name for path in (pytester.path / "cassettes" / "test_long").iterdir()) == names


# --- Ctrl-C during harness record -------------------------------------------------------------------------------------

SLOW_AGENT = '''
import os, time

def slow(client):
    client.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}])
    open(os.environ["READY"], "w").close()
    time.sleep(120)
'''

# Where a test suite runs in the background (no job control, nohup, some CI), SIGINT arrives ignored: Ctrl-C is
# what is tested, so the child puts Python's own handler back first.
RECORD = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
          "from harness.cli import main; sys.exit(main(['record']))")


@pytest.mark.parametrize("existed", [True, False], ids=["kept", "new"])
def test_ctrl_c_during_record_says_what_was_kept_and_exits_130(tmp_path: Path, existed: bool) -> None:
    import signal
    import time

    from harness.sim import Simulator

    (tmp_path / "pyproject.toml").write_text('[tool.loop-harness.scenarios]\nslow = "slow_agent:slow"\n')
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT)
    cassette = tmp_path / "cassettes" / "slow.yaml"
    if existed:
        cassette.parent.mkdir()
        shutil.copyfile(BRIEF, cassette)
    ready = tmp_path / "ready"
    with Simulator() as sim:
        env = {**os.environ, "ANTHROPIC_BASE_URL": sim.base_url, "READY": str(ready), "PYTHONPATH": str(tmp_path)}
        child = subprocess.Popen([sys.executable, "-c", RECORD], cwd=tmp_path, env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            for _ in range(600):
                if ready.exists() or child.poll() is not None:
                    break
                time.sleep(0.1)
            assert ready.exists(), child.communicate(timeout=5)
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=60)
        finally:
            child.kill()
    assert child.returncode == 130, out + err
    assert "Traceback" not in err
    said = "left as it was" if existed else "not written"
    assert f"harness record: interrupted: cassettes/slow.yaml {said}" in err, err
    if existed:
        assert cassette.read_bytes() == BRIEF.read_bytes()
    else:
        assert not cassette.exists()


QUICK_AGENT = '''
import os, time

def make(name):
    def scenario(client):
        client.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": name}])
        open(os.path.join(os.environ["READY"], name), "w").close()
        time.sleep(3)
    return scenario

a, b, c = make("a"), make("b"), make("c")
'''


def test_ctrl_c_with_concurrency_lets_the_recordings_under_way_finish_and_starts_no_other(tmp_path: Path) -> None:
    import signal
    import time

    from harness.sim import Simulator

    (tmp_path / "pyproject.toml").write_text(
        '[tool.loop-harness.scenarios]\na = "quick_agent:a"\nb = "quick_agent:b"\nc = "quick_agent:c"\n')
    (tmp_path / "quick_agent.py").write_text(QUICK_AGENT)
    ready = tmp_path / "ready"
    ready.mkdir()
    command = RECORD.replace("main(['record'])", "main(['record', '--concurrency', '2'])")
    with Simulator() as sim:
        env = {**os.environ, "ANTHROPIC_BASE_URL": sim.base_url, "READY": str(ready), "PYTHONPATH": str(tmp_path)}
        child = subprocess.Popen([sys.executable, "-c", command], cwd=tmp_path, env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            for _ in range(600):
                if len(list(ready.iterdir())) == 2 or child.poll() is not None:
                    break
                time.sleep(0.05)
            assert len(list(ready.iterdir())) == 2, child.communicate(timeout=5)
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=60)
        finally:
            child.kill()
    assert child.returncode == 130, out + err
    started = sorted(path.name for path in ready.iterdir())
    (never,) = {"a", "b", "c"} - set(started)
    assert f"harness record: interrupted: cassettes/{never}.yaml not written" in err, err
    assert all((tmp_path / "cassettes" / f"{name}.yaml").is_file() for name in started), out + err
    assert not (tmp_path / "cassettes" / f"{never}.yaml").exists() and "Traceback" not in err
