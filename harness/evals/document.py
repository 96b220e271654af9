"""The results document as types: what `harness eval` writes and every report view reads.

TypedDicts, free at run time (the document stays plain JSON data); harness/evals/results.schema.json stays the
contract, and tests/test_results_document.py holds these keys to it (required and optional alike), so the two
cannot drift apart. A key the schema leaves optional is `NotRequired` here (no postponed annotations: Python 3.11 reads
NotRequired only from real ones).
"""

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "Attempt",
    "CaseCassette",
    "CaseError",
    "CaseGolden",
    "CaseResult",
    "CaseTimings",
    "CaseTrajectory",
    "CheckRecord",
    "ResultsDocument",
    "RunDetail",
    "Shard",
    "Status",
    "Step",
    "StepRequest",
    "SuiteSummary",
    "Summary",
    "TokenUsage",
    "Tool",
    "TrajectoryOutcome",
]

Status = Literal["passed", "failed", "error"]


class TokenUsage(TypedDict):
    input: int
    output: int
    cache_write: int
    cache_read: int
    total: int
    cache_write_1h: NotRequired[int]
    server_tool_use: NotRequired[dict[str, int]]
    iterations: NotRequired[list[dict[str, Any]]]
    batch: NotRequired[bool]


class Tool(TypedDict):
    name: str
    version: str


class Shard(TypedDict):
    index: int
    total: int
    suite_id: str
    weight: int
    plan: list[str]


class Summary(TypedDict):
    status: Status
    cases: int
    passed: int
    failed: int
    errored: int
    checks: int
    checks_passed: int
    checks_failed: int
    usage: TokenUsage
    cost_usd: float
    cost_known: bool
    duration_ms: float | None
    needs_rejudging: NotRequired[int]


class SuiteSummary(TypedDict):
    name: str
    path: str | None
    description: str | None
    root: str | None
    cases: list[str]
    passed: int
    failed: int
    errored: int


class CaseCassette(TypedDict):
    path: str
    absolute_path: str
    sha256: str | None
    bytes: int | None
    recorded_from: str | None
    recorded_at: str | None
    imported_from: dict[str, Any] | None
    fingerprints: dict[str, Any]
    interactions: int | None


class CaseGolden(TypedDict):
    name: str
    path: str | None
    sha256: str | None
    run: str | int


class TrajectoryOutcome(TypedDict):
    kind: Literal["stop", "error"]
    stop_reason: NotRequired[str | None]
    step: NotRequired[int | None]
    status: NotRequired[int | None]
    error_type: NotRequired[str | None]
    error_message: NotRequired[str | None]


class StepRequest(TypedDict):
    model: str | None
    max_tokens: int | None
    stream: bool
    tools: list[str | None]
    tools_fingerprint: str | None
    system: str | None
    system_text: str | None
    message_count: int | None


class Attempt(TypedDict):
    status: int | None
    ok: bool
    error_type: str | None
    error_message: str | None
    stream: bool


class Step(TypedDict):
    index: int
    run: int
    request: StepRequest
    added: list[dict[str, Any]]
    response: dict[str, Any]  # id, model, blocks, stop_reason, stop_sequence
    usage: TokenUsage
    usage_counted: bool
    cost_usd: float | None
    tool_calls: list[dict[str, Any]]  # id, name, input, step, server, result
    attempts: list[Attempt]
    duration_ms: float | None


class RunDetail(TypedDict):
    index: int
    steps: list[int]
    outcome: dict[str, Any]
    failed_request: dict[str, Any] | None  # request (a StepRequest), added
    failed_attempts: list[Attempt]


class CaseTrajectory(TypedDict):
    model: str | None
    runs: int
    runs_checked: list[int]
    steps: int
    tool_calls: int
    tool_errors: int
    attempts: int
    outcome: TrajectoryOutcome | None
    stop_reasons: list[str | None]
    tool_sequence: list[dict[str, Any]]  # step, name, server, is_error
    final_text: str
    skipped_interactions: int
    recorded_duration_ms: float | None
    step_details: NotRequired[list[Step]]
    run_details: NotRequired[list[RunDetail]]


class CheckRecord(TypedDict):
    id: str
    check: str
    passed: bool
    reason: str
    step: int | None
    evidence: dict[str, Any]
    params: dict[str, Any]
    duration_ms: float
    score: NotRequired[float | None]
    judge: NotRequired[dict[str, Any]]


class CaseError(TypedDict):
    reason: str
    file: str | None
    where: str | None


class CaseTimings(TypedDict):
    load_ms: float | None
    checks_ms: float | None
    total_ms: float | None


class CaseResult(TypedDict):
    id: str
    suite: str
    status: Status
    cassette: CaseCassette
    golden: CaseGolden
    trajectory: CaseTrajectory | None
    usage: TokenUsage | None
    cost_usd: float | None
    checks: list[CheckRecord]
    error: CaseError | None
    timings: CaseTimings
    needs_rejudging: NotRequired[list[str]]
    cost_by_kind: NotRequired[dict[str, float]]


class ResultsDocument(TypedDict):
    results_version: Literal[1]
    tool: Tool
    created_at: str
    golden_dir: str | None
    shard: NotRequired[Shard]
    summary: Summary
    suites: list[SuiteSummary]
    cases: list[CaseResult]
