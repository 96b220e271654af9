"""Mutated cassettes through every reader: a clean refusal (HarnessError, exit 2) or a clean read, never a
traceback, a hang or a huge allocation. The seeded mutator is bench/fuzz.py's; here with a small budget,
there with a longer run that prints figures."""

from __future__ import annotations

import resource
import threading
from pathlib import Path

import pytest

from bench.fuzz import fuzz, read_every_way, seed_cassettes
from harness.cassette.recorder import use_cassette
from harness.cli import main
from harness.errors import CassetteError
from harness.serve import ReplayServer
from tests.conftest import REAL_CASSETTES

REPO = Path(__file__).resolve().parents[1]
BUDGET_SECONDS = 4.0
STREAM = REPO / "cassettes" / "dayflow" / "brief_stream.yaml"


def test_the_fuzz_budget_finds_no_traceback() -> None:
    found = fuzz(10_000, seed=17, budget=BUDGET_SECONDS, include_real=False)
    assert found.cases > 0
    assert found.tracebacks == [], "\n\n".join(f"case {seed} from {source}:\n{trace}"
                                               for seed, source, trace in found.tracebacks[:5])


def test_the_fuzz_budget_over_the_real_cassettes_finds_no_traceback() -> None:
    if not REAL_CASSETTES.is_dir():
        pytest.skip("the real-cassette corpus (../shared/real-cassettes) is not beside this clone")
    found = fuzz(10_000, seed=18, budget=BUDGET_SECONDS, include_real=True)
    assert found.cases > 0
    assert found.tracebacks == [], "\n\n".join(f"case {seed} from {source}:\n{trace}"
                                               for seed, source, trace in found.tracebacks[:5])


def _edited(tmp_path: Path, old: str, new: str, count: int = 1) -> Path:
    text = STREAM.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "edited.yaml"
    path.write_text(text.replace(old, new, count), encoding="utf-8")
    return path


def _run_capped(target: Path) -> BaseException | None:
    """read_every_way in a thread under a 1.5 GB address-space cap: an index that allocated would fail."""
    outcome: list[BaseException | None] = []
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)

    def read() -> None:
        try:
            read_every_way(target)
            outcome.append(None)
        except BaseException as err:
            outcome.append(err)

    # The cap is 1.5 GB above the address space the process already has mapped (its virtual size, not its
    # resident size: a worker that imported much maps far more than it touches, and a cap below that
    # leaves no room even to start the reading thread).
    mapped = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (mapped + 1_500_000_000, hard))
    try:
        worker = threading.Thread(target=read)
        worker.start()
        worker.join(60)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert outcome, "the reader hung"
    return outcome[0]


def test_a_delta_index_of_200_million_is_refused_without_allocating(tmp_path: Path) -> None:
    path = _edited(tmp_path, "index: 0", "index: 200000000", count=-1)
    error = _run_capped(path)
    assert isinstance(error, CassetteError), error
    assert "index 200000000" in str(error) and str(path) in str(error) and "interactions[" in str(error)


def test_a_stream_cut_off_at_index_is_exit_2_naming_the_file(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    text = STREAM.read_text(encoding="utf-8")
    path = tmp_path / "cut.yaml"
    path.write_text(text[: text.index("index: ", len(text) // 2) + len("index: ")], encoding="utf-8")
    for command in (["show", str(path)], ["show", "--json", str(path)]):
        assert main(command) == 2
        assert str(path) in capsys.readouterr().err


@pytest.mark.parametrize("scalar", ["2026-09-07", "!!binary aGVsbG8=", "!!set {a, b}", "2026-09-07T08:00:00Z"])
def test_yaml_only_scalars_are_refused_at_load_by_every_reader(tmp_path: Path, scalar: str) -> None:
    head, _, body = STREAM.read_text(encoding="utf-8").partition("\ninteractions:")
    model_line = next(line for line in body.splitlines() if line.strip().startswith("model:"))
    path = tmp_path / "dated.yaml"
    body = body.replace(model_line, model_line.split(":")[0] + f": {scalar}", 1)  # a request body's model
    path.write_text(head + "\ninteractions:" + body, encoding="utf-8")
    for read in (lambda: ReplayServer([path]), lambda: use_cassette(path, "none").__enter__(),
                 lambda: read_every_way(path)):
        with pytest.raises(CassetteError) as refused:
            read()
        assert str(path) in str(refused.value) and "$.interactions[" in str(refused.value)
        assert "quote it" in str(refused.value)


def test_pricing_and_fingerprints_take_values_of_any_type() -> None:
    from harness.jsondata import fingerprint
    from harness.pricing import estimate_cost, price_for
    from harness.run import Usage

    for model in (5, None, ["claude-sonnet-4"], {"a": 1}, True):
        assert price_for(model) is None  # type: ignore[arg-type]
    assert estimate_cost("claude-sonnet-4", Usage.from_api({"input_tokens": {"x": 1}, "output_tokens": -5})) == 0.0
    assert fingerprint({1: "a", "b": 2}) == fingerprint({1: "a", "b": 2})


def test_every_bundled_cassette_still_reads_cleanly() -> None:
    for path in seed_cassettes(include_real=False):
        read_every_way(path)


# Found by the fuzz budget raised to 8,000 cases with a replay step (bench/fuzz.py replay_each_request): a lone
# surrogate escaped in a double-quoted scalar (`"\ud800"`) reached request_fingerprint, which cannot encode it; a
# `messages` that is not a list broke the nearest-request search of a miss; a reason phrase that is not ASCII
# broke the replayed response. (seed, case) of bench/fuzz.py's mutator over the bundled cassettes.
FUZZ_SEED_CASES = [(6, 14), (6, 132), (2, 1222)]


@pytest.mark.parametrize(("seed", "number"), FUZZ_SEED_CASES, ids=lambda value: str(value))
def test_the_fuzz_cases_that_broke_replay_are_refused_or_read_cleanly(seed: int, number: int) -> None:
    found = fuzz(number + 1, seed=seed, include_real=False)
    assert found.cases == number + 1
    assert found.tracebacks == [], "\n\n".join(f"case {case} from {source}:\n{trace}"
                                               for case, source, trace in found.tracebacks)


@pytest.mark.parametrize(
    ("old", "new", "place"),
    [
        ("        content: Today is Monday, 7 September 2026 (2026-09-07). Write my morning brief.",
         '        content: "\\ud800 Today"', "line 23, column"),
        ("      max_tokens: 2048", '      "\\udc80k": 1\n      max_tokens: 2048', "line 20, column"),
        ("    path: /v1/messages", '    path: "/v1/messages\\ud800"', "line 15, column"),
    ],
    ids=["value", "key", "path"],
)
def test_a_lone_surrogate_is_refused_at_load_by_every_reader(tmp_path: Path, old: str, new: str, place: str) -> None:
    """Half of a UTF-16 pair is no text (it reached request_fingerprint, which could not encode it): refused at
    load with its line, even where a parse of the same bytes was cached before this was refused."""
    text = STREAM.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "surrogate.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    for read in (lambda: ReplayServer([path]), lambda: use_cassette(path, "none").__enter__(),
                 lambda: read_every_way(path)):
        with pytest.raises(CassetteError) as refused:
            read()
        assert str(path) in str(refused.value) and place in str(refused.value) and "escape" in str(refused.value)


def test_a_miss_against_odd_shapes_and_a_reason_that_is_not_ascii_replay_cleanly(tmp_path: Path) -> None:
    text = STREAM.read_text(encoding="utf-8")
    path = tmp_path / "odd.yaml"
    odd = text.replace("    status: 200\n", "    status: 200\n    reason: Ok \u202e\ufffd\n", 1)
    head, _, rest = odd.partition("      messages:\n")
    body = rest.split("\n", 1)[1]
    while body.startswith("      -") or body.startswith("        "):  # the first request's messages: a number now
        body = body.split("\n", 1)[1]
    path.write_text(head + "      messages: 7\n" + body, encoding="utf-8")
    read_every_way(path)
