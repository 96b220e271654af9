"""How numbers, statuses and deltas read in every report, so Markdown, JUnit and HTML say them alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.checks.base import counted as counted  # one rule for plurals, reasons and reports alike
from harness.run import TOKEN_KINDS as KINDS

# Control characters a terminal acts on (ESC starts a clipboard write, a title change, a screen clear; C1's
# 0x9b is CSI on its own), each shown as its Unicode control picture (ESC as ␛, one cell wide like the
# character it stands for); newline and tab are text. DEL shows as ␡, C1 as the replacement character.
_CONTROL_PICTURES = {code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in "\n\t"}
_CONTROL_PICTURES[0x7F] = "\u2421"
_CONTROL_PICTURES.update({code: "\ufffd" for code in range(0x80, 0xA0)})


def visible(text: str) -> str:
    """`text` fit for a terminal whoever wrote it (a cassette, a model, an upstream): no control character
    reaches the terminal; each is shown instead."""
    return text.translate(_CONTROL_PICTURES) if not text.isprintable() else text


KIND_LABELS = {
    "input": "input",
    "output": "output",
    "cache_write": "cache write",
    "cache_read": "cache read",
    "total": "total",
}
ICONS = {"passed": "✅", "failed": "❌", "error": "⚠️"}
STATUS_WORDS = {"passed": "passed", "failed": "failed", "error": "error"}


def tokens(value: float | int | None) -> str:
    if value is None:
        return "–"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}"


def cost(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:.4f}"


# A cost's parts (harness.pricing.COST_KINDS) as every report names them.
COST_LABELS = {**{kind: label for kind, label in KIND_LABELS.items() if kind != "total"},
               "web_search": "web search", "web_fetch": "web fetch"}


def cost_parts(by_kind: Mapping[str, float]) -> list[str]:
    """The non-zero parts of a cost by kind, in the order of COST_LABELS: ["input $0.0312", ...]."""
    return [f"{COST_LABELS.get(kind, kind)} ${by_kind[kind]:.4f}"
            for kind in (*COST_LABELS, *(k for k in by_kind if k not in COST_LABELS)) if by_kind.get(kind)]


def signed(value: float | int | None, *, money: bool = False) -> str:
    """+12 / −3 / ±0 (a real minus sign, so a column of deltas lines up and reads as numbers)."""
    if value is None:
        return "–"
    if value == 0:
        return "±0"
    sign = "+" if value > 0 else "−"
    size = abs(value)
    body = f"${size:.4f}" if money else tokens(size)
    return f"{sign}{body}"


def usage_line(usage: Mapping[str, Any] | None) -> str:
    if not usage:
        return "no usage"
    return " · ".join(f"{KIND_LABELS[kind]} {tokens(usage.get(kind, 0))}" for kind in KINDS)


def check_step(check: Mapping[str, Any]) -> str:
    return "" if check.get("step") is None else str(check["step"])


def one_line(text: str | None, limit: int = 300) -> str:
    """A reason on one line, clipped: table cells and XML attributes hold no newlines."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def error_text(error: Mapping[str, Any] | None) -> str:
    if not error:
        return "the case could not run"
    where = " ".join(str(part) for part in (error.get("file"), error.get("where")) if part)
    return f"{where}: {error.get('reason', '')}" if where else str(error.get("reason", ""))


def side_text(side: Mapping[str, Any], k: int) -> str:
    """One side of a compared case: 'passed', 'failed', '3/5 passed · pass@1 0.60 ...' or 'error (1/5)'."""
    from harness.report.trials import TrialStats

    stats = TrialStats(n=side["trials"]["n"], c=side["trials"]["c"])
    if side["errored"]:
        return f"error ({side['errored']}/{stats.n})"
    return stats.describe(k)


def divergence_short(found: Mapping[str, Any] | None) -> str:
    """'step 1 (request)', 'the request run 1 ended on … (request)', or '–' when the runs do not part."""
    if not found or found.get("where") == "unknown":
        return "–"
    return f"{found.get('label') or 'step ' + str(found.get('step'))} ({found['where']})"


def summary_cost_delta(summary: Mapping[str, Any]) -> str:
    text = signed(summary["cost_delta"], money=True)
    return text if summary.get("cost_delta_known", True) else f"{text} (priced cases only)"


def interval(found: Mapping[str, Any] | None, *, money: bool = False, rate: bool = False) -> str:
    """'[0.44, 1.00]', '[−30, +270]': a 95% interval as reports print it ('' when there is none)."""
    if not found:
        return ""
    if rate:
        return f"[{found['low']:.2f}, {found['high']:.2f}]"
    return f"[{signed(found['low'], money=money)}, {signed(found['high'], money=money)}]"


def trial_rates(case: Mapping[str, Any]) -> str:
    """With several trials a side: 'pass rate 1.00 [0.44, 1.00] → 0.33 [0.06, 0.79], Δ −0.67 [−0.94, +0.06],
    p 0.40 (within noise) · flaky'; '' for one trial a side (the flip says it all)."""
    stats = case.get("significance")
    if not stats or max(case["baseline"]["trials"]["n"], case["candidate"]["trials"]["n"]) < 2:
        return "flaky" if case.get("flaky") else ""
    diff = stats["difference"]

    def rate(value: float) -> str:  # a signed rate difference, two places, a real minus sign
        return f"{'−' if value < 0 else '+'}{abs(value):.2f}"

    noise = "more than noise" if stats["significant"] else "within noise"
    text = (
        f"pass rate {stats['baseline']['estimate']:.2f} {interval(stats['baseline'], rate=True)} → "
        f"{stats['candidate']['estimate']:.2f} {interval(stats['candidate'], rate=True)}, "
        f"Δ {rate(diff['estimate'])} [{rate(diff['low'])}, {rate(diff['high'])}], p {stats['p_value']:.2g} ({noise})"
    )
    return text + (" · flaky" if case.get("flaky") else "")


def delta_with_interval(case: Mapping[str, Any], what: str) -> str:
    """'Δ tokens +120 [−30, +270]' (mean per trial, 95% Welch interval where both sides have two trials or more)."""
    intervals = case.get("delta_intervals") or {}
    if what == "tokens":
        text = f"Δ tokens {signed((case.get('usage_delta') or {}).get('total'))}"
        extra = interval(intervals.get("tokens"))
    else:
        text = f"Δ cost {signed(case.get('cost_delta'), money=True)}"
        extra = interval(intervals.get("cost_usd"), money=True)
    return f"{text} {extra}" if extra else text
