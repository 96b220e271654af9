"""Record and replay a Claude Agent SDK app: the SDK drives the Claude Code CLI as a subprocess, so its
requests are recorded and replayed over HTTP (`harness proxy` / `harness serve`), not in-process.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

`AgentSdkSession` starts, for one run, the replay server over a cassette, or (when recording) the
recording proxy in front of the live API or an in-process simulator, and gives the environment for
`ClaudeAgentOptions(env=...)`. After the run, `problems()` says what must fail a test: the first miss
(the CLI retries a refused request with a degraded one, so later misses only echo the first), a cassette
whose interactions were not all played, or a recording in which the upstream refused the client's
request (a 400 the CLI then worked around: the recording is not the run the app normally makes).
Drifts served under the `sequence` policy are warnings, listed by `drifts`.

The CLI gets a config folder of its own for the session (`CLAUDE_CONFIG_DIR`, empty, removed at the end),
so the recording is the one a fresh machine makes: a lived-in `~/.claude` (the user's CLAUDE.md, agents,
skills, plugins, cached feature flags) changes the CLI's requests, and CI has none of it. `fresh_config=False`
lets the CLI read the user's folder again.

    with AgentSdkSession("cassettes/read_notes.yaml", mode="none") as session:
        options = ClaudeAgentOptions(cwd=work, env=session.env, allowed_tools=["Read"])

At `level="transport"` the session records the SDK's frames at its `Transport` seam instead, and replays them
with no CLI and no server (harness.agent_sdk.transport): `query(..., transport=session.transport(prompt, options))`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from harness.cassette.recorder import Cassette, Mode
from harness.cassette.tolerant import HarnessDriftWarning as HarnessDriftWarning
from harness.cassette.tolerant import ToleratedDifference
from harness.errors import CassetteError, absolute
from harness.normalize import Normalization

LIVE_API = "https://api.anthropic.com"
SIMULATOR = "simulator"
# The key sent in replay never leaves the machine; the CLI insists on having one.
REPLAY_KEY = "replay-key-not-a-secret"
Level = Literal["http", "transport"]


@dataclass
class AgentSdkSession:
    """One Agent SDK run against a cassette: replayed (mode none, or once with the file present) or recorded."""

    path: Path
    mode: Mode = "none"
    normalize: Normalization | None = None
    upstream: str | None = None  # record modes: a URL, or "simulator" for an in-process one
    sim_policy: str | None = None  # the simulator's default policy when upstream is "simulator"
    sim_model: Any = None  # or a function model for it (harness.sim.function_model)
    allow_unused: bool = False
    allow_rejected: bool = False
    level: Level = "http"  # "transport": the SDK's frames, replayed with no CLI (harness.agent_sdk.transport)
    fresh_config: bool = True  # the CLI's config folder: an empty one of the session's, not the user's ~/.claude
    _servers: list[Any] = field(default_factory=list, init=False, repr=False)
    _main: Any = field(default=None, init=False, repr=False)  # the replay server or the recording proxy
    base_url: str = field(default="", init=False)
    config_dir: str | None = field(default=None, init=False)  # the session's CLAUDE_CONFIG_DIR, while it runs

    replaying: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        # Decided once: after a recording the file exists, and the session is still the one that recorded it.
        self.replaying = self.mode == "none" or (self.mode == "once" and self.path.exists())

    @property
    def cassette(self) -> Cassette | None:
        if self._main is None or self.level == "transport":
            return None
        return self._main.cassettes[0] if hasattr(self._main, "cassettes") else self._main.cassette

    def start(self) -> AgentSdkSession:
        if self.fresh_config and self.config_dir is None:
            self.config_dir = tempfile.mkdtemp(prefix="harness-claude-config-")
        if self.level == "transport":
            return self._start_for_transport()
        if self.replaying:
            from harness.serve import ReplayServer

            if not self.path.exists():  # said here, in pytest's words, before the server says it in its own
                raise CassetteError("no cassette here, and record mode 'none' only replays; record it first "
                                    "(pytest --record-mode=once)", file=absolute(self.path))

            self._servers.append(ReplayServer([self.path], normalize=self.normalize).start())
        else:
            from harness.proxy import RecordingProxy

            upstream = self.upstream or LIVE_API
            if upstream == SIMULATOR:
                from harness.sim import Simulator

                simulator = Simulator(policy=self.sim_policy, model=self.sim_model).start()
                self._servers.append(simulator)
                upstream = simulator.base_url
            self._servers.append(RecordingProxy(upstream, self.path, mode=self.mode, normalize=self.normalize).start())
        self._main = self._servers[-1]
        self.base_url = self._main.base_url
        return self

    def _start_for_transport(self) -> AgentSdkSession:
        # Replay needs no server at all; recording runs the CLI against the upstream itself (no proxy: the
        # transport cassette is the record).
        if self.replaying:
            if not self.path.exists():
                raise CassetteError("no transport cassette here, and record mode 'none' only replays; record it "
                                    "first (pytest --record-mode=once)", file=absolute(self.path))
            return self
        upstream = self.upstream or LIVE_API
        if upstream == SIMULATOR:
            from harness.sim import Simulator

            simulator = Simulator(policy=self.sim_policy, model=self.sim_model).start()
            self._servers.append(simulator)
            upstream = simulator.base_url
        self.base_url = upstream
        return self

    def transport(self, prompt: Any, options: Any) -> Any:
        """For `query(prompt=..., options=..., transport=...)` (level "transport"): in replay, the cassette
        answers the SDK with no CLI; when recording, the SDK's own CLI transport, its frames kept."""
        from harness.agent_sdk.transport import RecordingTransport, ReplayTransport, machine_of

        if self.level != "transport":
            raise ValueError("AgentSdkSession.transport() is for level='transport'; at level 'http' pass "
                             "session.env to ClaudeAgentOptions(env=...) instead")
        machine = machine_of(options)
        if self.replaying:
            self._main = ReplayTransport(self.path, machine=machine)
            return self._main
        import dataclasses

        from claude_agent_sdk import __version__ as sdk_version
        from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport
        from claude_agent_sdk.types import _configure_can_use_tool  # what query() does before it starts the CLI

        configured = _configure_can_use_tool(dataclasses.replace(options, env={**self.env, **(options.env or {})}))
        source = "simulator" if self._servers else "live"
        meta = {"source": source, "sdk_version": f"claude-agent-sdk {sdk_version}"}
        self._main = RecordingTransport(SubprocessCLITransport(prompt=prompt, options=configured), self.path,
                                        machine=machine, meta=meta)
        return self._main

    def stop(self) -> None:
        while self._servers:
            self._servers.pop().stop()
        if self.config_dir is not None:
            shutil.rmtree(self.config_dir, ignore_errors=True)
            self.config_dir = None

    def __enter__(self) -> AgentSdkSession:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    @property
    def env(self) -> dict[str, str]:
        """For `ClaudeAgentOptions(env=...)`: the CLI talks to this session's server, and to nothing else."""
        key = os.environ.get("ANTHROPIC_API_KEY") if not self.replaying else None
        env = {
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": key or REPLAY_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no telemetry, update checks or other calls
        }
        if self.config_dir is not None:
            env["CLAUDE_CONFIG_DIR"] = self.config_dir
        return env

    # -- after the run ---------------------------------------------------------------------------------
    @property
    def drifts(self) -> list[ToleratedDifference]:
        return list(self.cassette.drifts) if self.cassette is not None else []

    def first_miss(self) -> str | None:
        misses = getattr(self._main, "misses", None) or []
        return misses[0]["message"] if misses else None

    def problems(self) -> list[str]:
        """What must fail the test, most telling first."""
        found: list[str] = []
        if self.level == "transport":
            return self._transport_problems()
        miss = self.first_miss()
        if miss:
            found.append(f"the first request with no recording (the CLI's later retries only echo it):\n{miss}")
        cassette = self.cassette
        if cassette is None:
            return found
        if self.replaying and not miss and not self.allow_unused and cassette.unplayed:
            numbers = ", ".join(f"#{p + 1}" for p in cassette.unplayed[:10])
            found.append(f"{self.path}: {len(cassette.unplayed)} recorded interaction(s) were never played "
                         f"({numbers}); re-record, or allow_unused=True")
        if not self.replaying and cassette.rejected and not self.allow_rejected:
            lines = [f"request #{r['position'] + 1}: 400 {r['message']}" for r in cassette.rejected]
            found.append(f"{self.path}: the upstream refused the client's request and the client retried with a "
                         "changed one; the cassette holds both, so it is not the run the app normally makes:\n  "
                         + "\n  ".join(lines) + "\nFix the upstream (or pass allow_rejected=True to keep it).")
        return found

    def _transport_problems(self) -> list[str]:
        mismatch = getattr(self._main, "mismatch", None)
        if mismatch is not None:
            return [str(mismatch)]
        if self.replaying and self._main is not None and not self.allow_unused:
            left = len(self._main.cassette.frames) - self._main.played
            if left > 0:
                return [f"{self.path}: {left} recorded frame(s) were never played; re-record, or allow_unused=True"]
        return []
