"""What the Claude Code CLI (bundled with claude-agent-sdk) sends, measured through the recording proxy.

Records one `claude_agent_sdk.query()` session ("What does notes.txt say?", Read allowed) against the
local simulator's `read-file` model, then prints, per request: route, status, top-level fields, thinking,
effort, message roles, tool count, and the rules the cassette stored; then replays it from another folder
and prints both wall times; then records the same session at the SDK's Transport seam and replays it with
no CLI (a transport cassette), and prints those wall times too. No network: the simulator and the proxy
listen on loopback.

    .venv/bin/python -m bench.agent_sdk_requests [--model claude-sonnet-5]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.agent_sdk import AgentSdkSession
from harness.cassette.format import load_cassette


def _run(env: dict[str, str], work: Path, model: str, session: AgentSdkSession | None = None) -> list[Any]:
    from claude_agent_sdk import ClaudeAgentOptions, query

    prompt = "What does notes.txt say?"
    options = ClaudeAgentOptions(cwd=str(work), model=model, allowed_tools=["Read"], max_turns=4,
                                 env={**env, "HOME": str(work.parent / "home")})
    transport = session.transport(prompt, options) if session is not None and session.level == "transport" else None

    async def collect() -> list[Any]:
        return [message async for message in query(prompt=prompt, options=options, transport=transport)]

    return asyncio.run(collect())


def _session(root: Path, name: str, cassette: Path, mode: str, model: str, level: str = "http") -> float:
    work = root / name / "work"
    (work.parent / "home").mkdir(parents=True)
    work.mkdir()
    (work / "notes.txt").write_text("The launch code is 4217.\n")
    started = time.perf_counter()
    with AgentSdkSession(cassette, mode, upstream="simulator", sim_policy="read-file",  # type: ignore[arg-type]
                         level=level) as session:  # type: ignore[arg-type]
        _run(session.env, work, model, session)
    elapsed = time.perf_counter() - started
    problems = session.problems()
    if problems:
        raise SystemExit("\n".join(problems))
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="claude-sonnet-5")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="agent-sdk-bench-"))
    cassette = root / "session.yaml"
    recorded = _session(root, "record", cassette, "once", args.model)
    stored = load_cassette(cassette)
    for position, interaction in enumerate(stored.interactions, 1):
        request, body = interaction["request"], interaction["request"].get("body") or {}
        roles = [m.get("role") for m in body.get("messages", [])]
        print(f"#{position} {request['method']} {request['path']}?{request.get('query', '')} -> "
              f"{interaction.get('response', {}).get('status')}")
        print(f"   fields: {', '.join(sorted(body))}")
        print(f"   thinking: {body.get('thinking')}  output_config: {body.get('output_config')}  "
              f"max_tokens: {body.get('max_tokens')}  stream: {body.get('stream')}")
        print(f"   roles: {roles}  tools: {len(body.get('tools', []))}  "
              f"anthropic-beta: {request.get('headers', {}).get('anthropic-beta')}")
    rules = stored.meta.get("matching", {})
    print(f"stored rules: policy {rules.get('policy')}, presets {rules.get('presets')}, mask {rules.get('mask')}, "
          f"{len(rules.get('substitutions', []))} substitutions")
    replayed = _session(root, "replay-elsewhere", cassette, "none", args.model)
    print(f"record (proxy -> simulator): {recorded:.2f} s; replay (serve, another folder): {replayed:.2f} s")
    frames = root / "session.frames.yaml"
    recorded = _session(root, "record-transport", frames, "once", args.model, "transport")
    replayed = _session(root, "replay-transport", frames, "none", args.model, "transport")
    print(f"transport cassette: record (CLI -> simulator): {recorded:.2f} s; replay (no CLI): {replayed:.2f} s")


if __name__ == "__main__":
    main()
