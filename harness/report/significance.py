"""Is a difference between baseline and candidate more than noise? Intervals and tests for a comparison's trials.

- a pass rate, c of n trials: the Wilson score interval (right at 0/n and n/n, where the normal one collapses);
- the difference of two pass rates: Newcombe's hybrid score interval (his method 10, built from the two Wilson
  intervals), and Fisher's exact test (two-sided, summing every table as likely as the observed one or less);
- the difference of two means (tokens, cost per trial): Welch's interval, with Student's t quantile.

Exact arithmetic in the standard library, not scipy: Fisher's test is a sum of binomial coefficients (`math.comb`,
integers, so the p-value is exact), Wilson and Newcombe are closed forms over `statistics.NormalDist`, and the only
number a library would add is Student's quantile, taken from a table (df 1-30, then 40, 60, 120 and the normal
one; a fractional Welch df rounds down, which widens the interval). scipy would be a 40 MB dependency of every
install for three formulas. Cross-checked against published values in tests/test_compare_significance.py.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ALPHA", "Interval", "fisher_exact", "mean_difference", "rate_difference", "wilson"]

ALPHA = 0.05  # 95% intervals; a p-value under it is "more than noise"
_Z = statistics.NormalDist().inv_cdf(1 - ALPHA / 2)
# Student's t, 0.975 quantile (two-sided 95%), by degrees of freedom.
_T975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
    11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
    21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
    40: 2.021, 60: 2.000, 120: 1.980,
}  # fmt: skip


@dataclass(frozen=True)
class Interval:
    """An estimate and its 95% interval."""

    estimate: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def to_dict(self, digits: int = 6) -> dict[str, float]:
        return {"estimate": round(self.estimate, digits), "low": round(self.low, digits),
                "high": round(self.high, digits)}  # fmt: skip


def wilson(c: int, n: int) -> Interval:
    """The pass rate c/n with its Wilson score interval."""
    if n <= 0 or not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n and n > 0, got c={c}, n={n}")
    p = c / n
    z2 = _Z * _Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if c == 0 else max(0.0, centre - half)  # exact at the ends, where rounding leaves 1e-17
    high = 1.0 if c == n else min(1.0, centre + half)
    return Interval(p, low, high)


def rate_difference(before: tuple[int, int], after: tuple[int, int]) -> Interval:
    """after's pass rate minus before's ((c, n) each), with Newcombe's hybrid score interval."""
    b, a = wilson(*before), wilson(*after)
    d = a.estimate - b.estimate
    low = d - math.sqrt((a.estimate - a.low) ** 2 + (b.high - b.estimate) ** 2)
    high = d + math.sqrt((a.high - a.estimate) ** 2 + (b.estimate - b.low) ** 2)
    return Interval(d, max(-1.0, low), min(1.0, high))


def fisher_exact(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Two-sided p-value of Fisher's exact test on the 2x2 table of passes and failures, (c, n) per side."""
    (c1, n1), (c2, n2) = before, after
    passes = c1 + c2

    def weight(x: int) -> int:  # proportional to the hypergeometric probability of x passes on the first side
        return math.comb(n1, x) * math.comb(n2, passes - x)

    observed = weight(c1)
    support = range(max(0, passes - n2), min(n1, passes) + 1)
    # Tables no more likely than the observed one; the 1e-7 relative slack is the usual guard for ties.
    tail = sum(w for x in support if (w := weight(x)) * (1 - 1e-7) <= observed)
    return min(1.0, tail / math.comb(n1 + n2, passes))


def _t975(df: float) -> float:
    if df < 1:
        return _T975[1]
    known = [k for k in _T975 if k <= df]
    return _T975[max(known)] if df <= 120 else _Z


def mean_difference(before: Sequence[float], after: Sequence[float]) -> Interval | None:
    """mean(after) - mean(before) with Welch's 95% interval; None with fewer than two values on a side, and a
    zero-width interval where neither side varies."""
    if len(before) < 2 or len(after) < 2:
        return None
    d = statistics.fmean(after) - statistics.fmean(before)
    vb, va = statistics.variance(before) / len(before), statistics.variance(after) / len(after)
    spread = vb + va
    if spread == 0:
        return Interval(d, d, d)
    df = spread**2 / ((vb**2 / (len(before) - 1)) + (va**2 / (len(after) - 1)))
    half = _t975(df) * math.sqrt(spread)
    return Interval(d, d - half, d + half)


def rate_record(before: tuple[int, int], after: tuple[int, int]) -> dict[str, Any]:
    """The comparison's record of two pass rates: each with its interval, the difference, Fisher's p-value, and
    whether the change is more than noise (p < ALPHA)."""
    difference = rate_difference(before, after)
    p_value = fisher_exact(before, after)
    return {
        "baseline": wilson(*before).to_dict(),
        "candidate": wilson(*after).to_dict(),
        "difference": difference.to_dict(),
        "p_value": round(p_value, 6),
        "significant": p_value < ALPHA,
    }
