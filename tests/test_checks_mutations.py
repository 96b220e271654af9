"""Proof that the checks catch regressions: mutate a good cassette, and exactly the check meant for the
mutation fails, with a reason naming the step; the unmutated cassette passes every check.

Bases: two real recordings (mirascope's is_error-then-retry HAR, pydantic-ai's four parallel tool
calls) and a Dayflow brief recorded in this test through the reference loop and the real Dayflow tools
(the model's replies scripted). When the bundled cassettes/dayflow/brief.yaml exists it is a base too.
Mutations edit the cassette consistently: a changed message is changed in every later request that
carries it, as a real run with that behaviour would have sent it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cassette.format import CassetteFile, save_cassette
from harness.checks import run_check
from harness.cli import main as harness_main
from harness.trajectory import Trajectory, load_cassette_any
from tests.conftest import require_real_cassettes
from tests.test_checks_support import (
    PARALLEL_TOOLS,
    REPO,
    TOOL_ERROR_HAR,
    dayflow_golden_checks,
    dayflow_items,
    record_dayflow,
)

BUNDLED_DAYFLOW = REPO / "cassettes" / "dayflow" / "brief.yaml"

# --- editing a cassette -------------------------------------------------------------------------------------------


def _calls(cassette: CassetteFile) -> list[dict[str, Any]]:
    return [i for i in cassette.interactions if i["request"].get("path", "").endswith("/v1/messages")]


def _response(interaction: dict[str, Any]) -> dict[str, Any]:
    body = interaction["response"].get("body")
    assert isinstance(body, dict), "mutations edit JSON responses"
    return body


def _tool_ids(step: int, cassette: CassetteFile) -> list[str]:
    return [b["id"] for b in _response(_calls(cassette)[step - 1])["content"] if b["type"] == "tool_use"]


def _every_message(cassette: CassetteFile) -> list[dict[str, Any]]:
    return [m for i in _calls(cassette) for m in i["request"]["body"]["messages"]]


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    return message["content"] if isinstance(message["content"], list) else []


def swap_results(cassette: CassetteFile) -> None:
    """The first two tool_results of step 1's answer trade places (the ids no longer follow the tool_use order)."""
    ids = _tool_ids(1, cassette)[:2]
    for message in _every_message(cassette):
        blocks = _blocks(message)
        positions = [n for n, b in enumerate(blocks) if b.get("type") == "tool_result" and b["tool_use_id"] in ids]
        if len(positions) == 2:
            first, second = positions
            blocks[first], blocks[second] = blocks[second], blocks[first]


def drop_result(cassette: CassetteFile) -> None:
    """The tool_result of step 1's last tool_use is never sent."""
    gone = _tool_ids(1, cassette)[-1]
    for message in _every_message(cassette):
        if isinstance(message["content"], list):
            message["content"] = [
                b for b in message["content"] if not (b.get("type") == "tool_result" and b["tool_use_id"] == gone)
            ]


def extra_call(cassette: CassetteFile) -> None:
    """Step 1 also calls send_email; its result is sent back in order, so the protocol itself holds."""
    ids = _tool_ids(1, cassette)
    extra = {"type": "tool_use", "id": "toolu_extra_0001", "name": "send_email", "input": {"to": "everyone"}}
    _response(_calls(cassette)[0])["content"].append(extra)
    for message in _every_message(cassette):
        blocks = _blocks(message)
        if message["role"] == "assistant" and any(b.get("id") == ids[-1] for b in blocks):
            blocks.append(copy.deepcopy(extra))
        last_result = [n for n, b in enumerate(blocks) if b.get("type") == "tool_result" and b["tool_use_id"] in ids]
        if message["role"] == "user" and last_result:
            blocks.insert(last_result[-1] + 1, {"type": "tool_result", "tool_use_id": extra["id"], "content": "sent"})


def missing_call(cassette: CassetteFile) -> None:
    """Step 1 never makes its last tool call (nor is it echoed or answered)."""
    gone = _tool_ids(1, cassette)[-1]
    body = _response(_calls(cassette)[0])
    body["content"] = [b for b in body["content"] if b.get("id") != gone]
    for message in _every_message(cassette):
        if isinstance(message["content"], list):
            message["content"] = [b for b in message["content"] if b.get("id") != gone and b.get("tool_use_id") != gone]


def cut_at_max_tokens(cassette: CassetteFile) -> None:
    """The final answer stops at max_tokens, a few characters short."""
    body = _response(_calls(cassette)[-1])
    body["stop_reason"] = "max_tokens"
    texts = [b for b in body["content"] if b["type"] == "text"]
    texts[-1]["text"] = texts[-1]["text"][:-3]


def mention_promotion(cassette: CassetteFile) -> None:
    """The brief lists the weekend sale it was told to skip."""
    body = _response(_calls(cassette)[-1])
    texts = [b for b in body["content"] if b["type"] == "text"]
    texts[-1]["text"] += "\n\n## Offers\n- Brightside Deals: 40% off everything, this weekend only"


def identical_retry(cassette: CassetteFile) -> None:
    """After the failed call of step 1, step 2 sends the very same call again, and fails the same way."""
    first = next(b for b in _response(_calls(cassette)[0])["content"] if b["type"] == "tool_use")
    second = next(b for b in _response(_calls(cassette)[1])["content"] if b["type"] == "tool_use")
    failure = next(
        b
        for m in _every_message(cassette)
        for b in _blocks(m)
        if b.get("type") == "tool_result" and b["tool_use_id"] == first["id"]
    )
    second["input"] = copy.deepcopy(first["input"])
    for message in _every_message(cassette):
        for block in _blocks(message):
            if block.get("id") == second["id"]:
                block["input"] = copy.deepcopy(first["input"])
            if block.get("type") == "tool_result" and block["tool_use_id"] == second["id"]:
                block["content"], block["is_error"] = failure["content"], True


# --- the bases and their goldens ----------------------------------------------------------------------------------


def har_checks() -> list[dict[str, Any]]:
    return [
        {"check": "tool_ids_matched"},
        {"check": "self_correction", "params": {"require_error": True}},
        {
            "check": "trajectory_match",
            "params": {"mode": "strict", "args": "ignore", "expected": [{"name": "passphrase_test_tool"}] * 2},
        },
        {"check": "final_answer", "params": {"contains": ["cake is a lie"]}},
        {"check": "outcome"},
        {"check": "budgets", "params": {"max_steps": 5, "max_tokens": {"output": 400}}},
        {"check": "no_repeated_calls"},
    ]


def parallel_checks() -> list[dict[str, Any]]:
    names = ["Alice", "Bob", "Charlie", "Daisy"]
    return [
        {"check": "tool_ids_matched"},
        {"check": "self_correction"},
        {
            "check": "trajectory_match",
            "params": {
                "mode": "unordered",
                "expected": [{"name": "retrieve_entity_info", "input": {"name": n}} for n in names],
            },
        },
        {"check": "final_answer", "params": {"contains": ["Daisy is the youngest"]}},
        {"check": "outcome"},
        {"check": "budgets", "params": {"max_steps": 3, "max_tool_calls": 6, "max_tokens": {"total": 3000}}},
        {"check": "no_repeated_calls"},
    ]


def bundled_dayflow_checks() -> list[dict[str, Any]]:
    from harness.commands.bless import propose_checks

    trajectory = Trajectory.from_cassette(load_cassette_any(BUNDLED_DAYFLOW))
    promotional, needs_reply = dayflow_items()
    checks = []
    for name, derived, defaults in propose_checks(trajectory, headroom=2.0):
        params = {**defaults, **derived}
        if name == "promotions_filtered" or name == "final_answer":
            continue
        checks.append({"check": name, "params": params} if params else {"check": name})
    checks.append({"check": "promotions_filtered", "params": {"promotional": promotional, "needs_reply": needs_reply}})
    return checks


@pytest.fixture(scope="module")
def dayflow_cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dayflow") / "brief.yaml"
    record_dayflow(path)
    return path


BASES: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "har-tool-error": har_checks,
    "parallel-tools": parallel_checks,
    "dayflow": dayflow_golden_checks,
    "bundled-dayflow": bundled_dayflow_checks,
}


def load_base(name: str, dayflow_cassette: Path) -> CassetteFile:
    path = {
        "har-tool-error": TOOL_ERROR_HAR,
        "parallel-tools": PARALLEL_TOOLS,
        "dayflow": dayflow_cassette,
        "bundled-dayflow": BUNDLED_DAYFLOW,
    }[name]
    if name in ("har-tool-error", "parallel-tools"):
        require_real_cassettes()
    if name == "bundled-dayflow" and not path.exists():
        pytest.skip("the bundled cassettes/dayflow/brief.yaml is not recorded yet")
    return copy.deepcopy(load_cassette_any(path))


def verdicts(cassette: CassetteFile, checks: list[dict[str, Any]]) -> dict[str, Any]:
    trajectory = Trajectory.from_cassette(cassette)
    return {c["check"]: run_check(c["check"], trajectory, c.get("params")) for c in checks}


@pytest.mark.parametrize("base", list(BASES))
def test_the_unmutated_base_passes_every_check(base: str, dayflow_cassette: Path) -> None:
    results = verdicts(load_base(base, dayflow_cassette), BASES[base]())
    assert {name: r.reason for name, r in results.items() if not r.passed} == {}


MUTATIONS = [
    # base, mutation, the one check that must fail, the step its reason must name
    ("dayflow", mention_promotion, "promotions_filtered", 2),
    ("bundled-dayflow", mention_promotion, "promotions_filtered", None),
    ("dayflow", swap_results, "tool_ids_matched", 2),
    ("dayflow", drop_result, "tool_ids_matched", 2),
    ("dayflow", extra_call, "trajectory_match", 1),
    ("dayflow", missing_call, "trajectory_match", 2),
    ("dayflow", cut_at_max_tokens, "outcome", 2),
    ("parallel-tools", swap_results, "tool_ids_matched", 2),
    ("parallel-tools", drop_result, "tool_ids_matched", 2),
    ("parallel-tools", extra_call, "trajectory_match", 1),
    ("parallel-tools", missing_call, "trajectory_match", 2),
    ("parallel-tools", cut_at_max_tokens, "outcome", 2),
    ("har-tool-error", identical_retry, "self_correction", 2),
    ("har-tool-error", cut_at_max_tokens, "outcome", 3),
]


@pytest.mark.parametrize(
    ("base", "mutate", "check", "step"),
    MUTATIONS,
    ids=[f"{base}-{mutate.__name__}" for base, mutate, _, _ in MUTATIONS],
)
def test_each_mutation_is_caught_by_exactly_its_check(
    base: str, mutate: Callable[[CassetteFile], None], check: str, step: int | None, dayflow_cassette: Path
) -> None:
    cassette = load_base(base, dayflow_cassette)
    mutate(cassette)
    results = verdicts(cassette, BASES[base]())
    failed = {name: r for name, r in results.items() if not r.passed}
    assert set(failed) == {check}, {name: r.reason for name, r in failed.items()}
    result = failed[check]
    if step is None:  # a bundled recording: its last step, whatever its number
        step = Trajectory.from_cassette(cassette).steps[-1].index
    assert result.step == step
    assert result.reason.startswith(f"step {step}:"), result.reason


def test_harness_eval_fails_a_mutated_cassette_and_passes_the_original(
    tmp_path: Path, dayflow_cassette: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    good = load_cassette_any(dayflow_cassette)
    bad = copy.deepcopy(good)
    drop_result(bad)
    save_cassette(good, tmp_path / "cassettes" / "good.yaml")
    save_cassette(bad, tmp_path / "cassettes" / "bad.yaml")
    for name in ("good", "bad"):
        golden = {"name": name, "cassettes": [f"cassettes/{name}.yaml"], "checks": dayflow_golden_checks()}
        (tmp_path / "golden").mkdir(exist_ok=True)
        (tmp_path / "golden" / f"{name}.json").write_text(json.dumps(golden), encoding="utf-8")
    assert harness_main(["eval", str(tmp_path / "golden" / "good.json")]) == 0
    out = tmp_path / "results.json"
    assert harness_main(["eval", str(tmp_path / "golden" / "bad.json"), "--json", str(out)]) == 1
    capsys.readouterr()
    results = json.loads(out.read_text(encoding="utf-8"))
    (case,) = results["cases"]
    failing = [c for c in case["checks"] if not c["passed"]]
    assert [(c["check"], c["step"]) for c in failing] == [("tool_ids_matched", 2)]
    assert "has no tool_result in the next user turn" in failing[0]["reason"]
