"""The simulator accepts the request shapes the installed SDK's param types allow, and refuses the rest.

The accepted shapes are read from anthropic's TypedDicts, so these tests walk the same types: a new
literal in an SDK release is exercised here the day it is installed, and a shape that the simulator
refuses while the SDK allows it fails one of them.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import anthropic
import pytest
import yaml
from anthropic.types.beta import BetaThinkingConfigParam
from anthropic.types.beta.beta_context_management_config_param import BetaContextManagementConfigParam

from harness.errors import HarnessError
from harness.sim import Simulator
from harness.sim.request_shapes import check_request_shape, effort_levels, literal_values, message_roles
from tests.conftest import REAL_CASSETTES, REPO

# What claude-agent-sdk 0.2.189 (Claude Code CLI 2.1.332) sends first for claude-sonnet-5, measured
# through `harness proxy` (long texts and eleven of its twelve tools cut for the test).
CLI_FIRST_REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-5",
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>\nAttribution\n</system-reminder>"},
                                     {"type": "text", "text": "What does notes.txt say?"}]},
        {"role": "system", "content": [{"type": "text", "text": "<system-reminder>\n# Environment\n"
                                        " - Primary working directory: /tmp/work\n</system-reminder>"}]},
    ],
    "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.4f9; cc_entrypoint=sdk-py;"},
               {"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK.",
                "cache_control": {"type": "ephemeral"}}],
    "tools": [{"name": "Read", "description": "Reads a file.", "input_schema": {
        "type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}}],
    "metadata": {"user_id": '{"device_id":"d0","account_uuid":"","session_id":"s0"}'},
    "max_tokens": 64000,
    "thinking": {"type": "adaptive", "display": "updates"},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    "output_config": {"effort": "high"},
}


@pytest.fixture(scope="module")
def client() -> typing.Iterator[anthropic.Anthropic]:
    with Simulator() as sim:
        yield anthropic.Anthropic(base_url=sim.base_url, api_key="sim-key", max_retries=0)


def _post(client: anthropic.Anthropic, body: dict[str, Any], query: str = "") -> Any:
    try:
        return client.post(f"/v1/messages{query}", body=body, cast_to=anthropic.types.Message)
    except anthropic.APIStatusError as error:
        return error


@pytest.mark.parametrize("query", ["", "?beta=true"])
def test_the_claude_code_cli_first_request_is_answered(client: anthropic.Anthropic, query: str) -> None:
    answer = _post(client, CLI_FIRST_REQUEST, query)
    assert isinstance(answer, anthropic.types.Message), answer
    # Answered by sim-auto (a Claude model id no scripted model claims), which calls the offered tools.
    assert answer.stop_reason == "tool_use"


def test_system_messages_are_the_sdks_third_role() -> None:
    assert set(message_roles()) == {"user", "assistant", "system"}
    assert set(literal_values(typing.get_type_hints(anthropic.types.SystemMessageParam)["role"])) == {"system"}


def _thinking_members() -> list[type]:
    return [member for member in typing.get_args(BetaThinkingConfigParam)]


@pytest.mark.parametrize("member", _thinking_members(), ids=lambda m: m.__name__)
def test_every_thinking_config_and_display_the_sdk_declares_is_accepted(client: anthropic.Anthropic,
                                                                        member: type) -> None:
    hints = typing.get_type_hints(member)
    kind = literal_values(hints["type"])[0]
    config: dict[str, Any] = {"type": kind}
    if "budget_tokens" in typing.get_type_hints(member).get("__required__", {}) or kind == "enabled":
        config["budget_tokens"] = 2048
    displays = literal_values(hints["display"]) if "display" in hints else (None,)
    for display in displays:
        body = {**CLI_FIRST_REQUEST, "thinking": {**config, **({"display": display} if display else {})}}
        answer = _post(client, body)
        assert isinstance(answer, anthropic.types.Message), (kind, display, answer)


def test_every_context_management_edit_type_is_known() -> None:
    edits = typing.get_type_hints(BetaContextManagementConfigParam)["edits"]
    item = typing.get_args(edits)[0] if typing.get_args(edits) else None
    for member in typing.get_args(item) or ():
        tag = literal_values(typing.get_type_hints(member)["type"])[0]
        assert check_request_shape({"context_management": {"edits": [{"type": tag}]}}) is None, tag


@pytest.mark.parametrize("level", effort_levels())
def test_every_effort_level_is_accepted_by_a_model_that_takes_it(client: anthropic.Anthropic, level: str) -> None:
    body = {**CLI_FIRST_REQUEST, "model": "claude-opus-4-7", "output_config": {"effort": level}}
    assert isinstance(_post(client, body), anthropic.types.Message)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"bogus_field": 1}, "bogus_field: Extra inputs are not permitted"),
        ({"thinking": {"type": "adaptive", "display": "loud"}},
         "thinking.display: Input should be 'summarized', 'omitted' or 'updates'"),
        ({"thinking": {"type": "sometimes"}}, "thinking: Input tag 'sometimes' found using 'type' does not match"),
        ({"context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all", "when": 1}]}},
         "context_management.edits.0.when: Extra inputs are not permitted"),
        ({"output_config": {"effort": "ultra"}}, "This model does not support effort level 'ultra'"),
        ({"model": "claude-opus-4-6", "output_config": {"effort": "xhigh"}},
         "This model does not support effort level 'xhigh'. Supported levels: high, low, max, medium."),
    ],
)
def test_what_no_sdk_type_allows_is_refused(client: anthropic.Anthropic, change: dict[str, Any],
                                            message: str) -> None:
    answer = _post(client, {**CLI_FIRST_REQUEST, **change})
    assert isinstance(answer, anthropic.BadRequestError), answer
    assert answer.body["error"]["message"].startswith(message)


def _recorded_bodies(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    bodies = []
    for path in sorted(folder.rglob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        for interaction in (data or {}).get("interactions") or []:
            request = interaction.get("request") or {}
            body = request.get("body")
            if isinstance(body, dict) and str(request.get("path", "")).endswith("/v1/messages"):
                bodies.append((f"{path.name}", body))
    return bodies


def test_every_bundled_recording_has_a_shape_the_types_allow() -> None:
    bodies = _recorded_bodies(REPO / "cassettes")
    assert bodies
    refused = [(name, check_request_shape(body)) for name, body in bodies if check_request_shape(body)]
    assert refused == []


def test_every_real_recording_has_a_shape_the_types_allow() -> None:
    if not REAL_CASSETTES.exists():
        pytest.skip(f"real-cassette corpus not found at {REAL_CASSETTES}")
    from harness.cassette.importer import import_file

    refused = []
    for path in sorted(REAL_CASSETTES.rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".har", ".json") or not path.is_file():
            continue
        try:
            cassette = import_file(path)
        except HarnessError:  # not every file of the corpus is a cassette (fixtures, notes)
            continue
        for interaction in cassette.interactions:
            body = interaction["request"].get("body")
            if isinstance(body, dict) and "messages" in body:
                problem = check_request_shape(body)
                if problem:
                    refused.append((path.name, problem))
    assert refused == []
