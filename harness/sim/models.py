"""Which simulator model answers a request, and the names it goes by.

Choice, first match wins:
1. a model name `sim-<name>[:options]` names a simulator model: a scripted policy (`sim-dayflow`,
   `sim-repeat`, ...), `sim-auto`, a script loaded with `--script` (`sim-<its name>`), or `sim-function`
   for `Simulator(model=callable)`; a `sim-` name that names none is the real API's 404;
2. any other name that is not a Claude model id (`claude-...`) is the real API's 404 `not_found_error`,
   whose message lists the simulator models;
3. the header `x-harness-sim-policy` (a name as in 1);
4. the simulator's default model (`--default-model`, `Simulator(default_model=...)`, a callable model or
   the first script);
5. the tools in the request: read_inbox -> dayflow, query_db -> sql (the demo's models, added through
   harness.plugins, each naming the tools that pick it);
6. `sim-auto`, for any other agent.

A model answers a `Conversation` with a `Reply` (which may carry a `Fault` to answer with) or an `ApiError`.
Every response names the model that answered in the header `x-harness-sim-model`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

import typing_extensions
from anthropic.types.model import Model as SdkModel

from harness.sim import auto
from harness.sim.conversation import Conversation, Reply
from harness.sim.policies import MODEL_PREFIX, POLICIES, POLICY_HEADER, auto_detected
from harness.sim.validation import ApiError

MODEL_HEADER = "x-harness-sim-model"
FUNCTION = "function"
Answer = Reply | ApiError  # a Reply may carry a Fault (Reply.fault) to answer with
Model = Callable[[Conversation], Answer]



def sdk_model_ids() -> tuple[str, ...]:
    """The Claude model ids the installed SDK names (its `Model` type), newest first as it lists them."""
    literals = (Literal, typing_extensions.Literal)  # the SDK spells it typing_extensions'
    return tuple(value for member in get_args(SdkModel) if get_origin(member) in literals for value in get_args(member))


def _families() -> tuple[str, ...]:
    """Model families: the first word of each SDK model id that is not a version (opus, sonnet, haiku...),
    and the older `instant`."""
    words = {next(part for part in model.split("-")[1:] if not part[0].isdigit()) for model in sdk_model_ids()}
    return tuple(sorted(words | {"instant"}))


# Claude model ids as the API names them: a family with versions and dates around it (claude-sonnet-4-5,
# claude-3-5-haiku-20241022, claude-opus-4-5@20251101, claude-mythos-preview), or claude-N (claude-2.1).
_CLAUDE_ID = re.compile(
    rf"^claude-(?:[0-9][0-9.]*-)*(?:{'|'.join(_families())})(?:-[a-z0-9.]+)*(?:@[a-z0-9.-]+)?$|^claude-[0-9][0-9.]*$"
)


def is_claude_model_id(name: str) -> bool:
    """A name the API would take as a Claude model: `claude-sonnet-4-6` yes, `claude-does-not-exist` no."""
    return bool(_CLAUDE_ID.match(name))


# The minimum cacheable prompt length, per model (prefix of its id, longest first): a prefix marked for caching that is
# shorter is not cached, and the response reports no cache write (the API raises no error either). From the prompt
# caching guide's table as of SDK 2.15 (quoted in anthropics/anthropic-sdk-python#1194, newer models from its
# current table): 512 for the 5-family Opus, Fable and Mythos; 4096 for Opus 4.5 and 4.6 and Haiku 4.5; 2048 for
# Opus 4.7 and the Haiku 3 models; 1024 for every other Claude model.
MIN_CACHEABLE_TOKENS: dict[str, int] = {
    "claude-opus-5": 512,
    "claude-fable-5": 512,
    "claude-mythos-5": 512,
    "claude-opus-4-7": 2048,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}
DEFAULT_MIN_CACHEABLE_TOKENS = 1024


def min_cacheable_tokens(model: str) -> int:
    """The shortest prefix a request for `model` can cache. The simulator's own models (`sim-*`) take any length,
    so that a test can rehearse caching with a short prompt; a Claude model id follows the API's table."""
    if model.lower().startswith(MODEL_PREFIX):
        return 0
    found = max((prefix for prefix in MIN_CACHEABLE_TOKENS if model.startswith(prefix)), key=len, default=None)
    return MIN_CACHEABLE_TOKENS[found] if found else DEFAULT_MIN_CACHEABLE_TOKENS


class UnknownModel(LookupError):
    """A name that names no simulator model. `source` is where it came from (model, header, default)."""

    def __init__(self, name: str, source: str, known: list[str], reason: str | None = None) -> None:
        self.name, self.source, self.known = name, source, known
        reason = reason or f"unknown simulator model {name!r}; known: {', '.join(known)}"
        super().__init__(f"{source}: {reason}")


@dataclass(frozen=True)
class Chosen:
    name: str  # as the header and the cassette say it: sim-auto:serial, sim-dayflow, sim-myscript
    policy: str  # the bare name (auto, dayflow, ...), for x-harness-sim-policy and the request log
    model: Model


class Models:
    """The models one simulator answers with: the scripted policies, sim-auto, scripts and a function."""

    def __init__(
        self,
        *,
        seed: int = 0,
        scripts: Mapping[str, Model] | None = None,
        function: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        self.seed = seed
        self.scripts = dict(scripts or {})
        self.function = function

    def names(self) -> list[str]:
        bare = [auto.NAME, *POLICIES, *self.scripts, *([FUNCTION] if self.function else [])]
        return [MODEL_PREFIX + name for name in bare]

    def resolve(self, name: str, source: str) -> Chosen:
        """The model a `sim-<name>[:options]` (prefix optional) names; UnknownModel when none."""
        bare, _, options = name.strip().lower().removeprefix(MODEL_PREFIX).partition(":")
        if bare == auto.NAME:
            try:
                parsed = auto.parse_options(options)
            except auto.BadOptions as err:
                raise UnknownModel(name, source, self.names(), reason=str(err)) from None
            label = parsed.label()
            return Chosen(f"{MODEL_PREFIX}auto{':' + label if label else ''}", auto.NAME, auto.model(parsed, self.seed))
        if options:
            raise UnknownModel(name, source, self.names(), reason=f"only sim-auto takes options, not {bare!r}")
        if bare in self.scripts:
            return Chosen(MODEL_PREFIX + bare, bare, self.scripts[bare])
        if bare == FUNCTION and self.function is not None:
            from harness.sim.function_model import function_model

            return Chosen(MODEL_PREFIX + FUNCTION, FUNCTION, function_model(self.function))
        if bare in POLICIES:
            return Chosen(MODEL_PREFIX + bare, bare, POLICIES[bare])
        raise UnknownModel(name, source, self.names())

    def choose(self, body: Mapping[str, Any], headers: Mapping[str, str], default: str | None) -> Chosen:
        model = str(body.get("model", ""))
        if model.lower().startswith(MODEL_PREFIX):
            return self.resolve(model, "model")
        if not is_claude_model_id(model):
            raise UnknownModel(model, "model", self.names())
        lowered = {name.lower(): value for name, value in headers.items()}
        if lowered.get(POLICY_HEADER):
            return self.resolve(lowered[POLICY_HEADER], POLICY_HEADER)
        if default:
            return self.resolve(default, "default model")
        tool_names = {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}
        for tool_name, policy in auto_detected():
            if tool_name in tool_names:
                return self.resolve(policy, "tools")
        return self.resolve(auto.NAME, "default model")


def not_found(err: UnknownModel) -> ApiError:
    """The real API's 404 for an unknown model (`model: NAME`), with the simulator's models added."""
    return ApiError(
        404,
        "not_found_error",
        f"model: {err.name} (the simulator answers Claude model ids and its own models: {', '.join(err.known)})",
    )
