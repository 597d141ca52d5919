"""Statistics over replications: means, Student-t confidence intervals, paired differences.

The quantiles of Student's t distribution are computed here rather than taken
from SciPy, which is not a dependency of the package: for a whole number of
degrees of freedom ν the two-sided probability P(|T| ≤ t) is a finite sum
(Abramowitz and Stegun, 26.7.3 and 26.7.4), and the quantile is found by
bisection to the last bits of a float. ``tests/experiments/test_stats.py``
compares it with SciPy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Confidence level of every interval the report shows.
LEVEL = 0.95


def _within(t: float, df: int) -> float:
    """P(|T| ≤ t) for Student's t with ``df`` degrees of freedom (A&S 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2:
        # cos θ + (2/3) cos³ θ + (2·4)/(3·5) cos⁵ θ + ... up to cos^(ν-2) θ
        term = total = math.cos(theta) if df > 1 else 0.0
        for j in range(1, (df - 1) // 2):
            term *= cos2 * (2 * j) / (2 * j + 1)
            total += term
        return 2.0 / math.pi * (theta + sin * total)
    # 1 + (1/2) cos² θ + (1·3)/(2·4) cos⁴ θ + ... up to cos^(ν-2) θ
    term = total = 1.0
    for j in range(1, df // 2):
        term *= cos2 * (2 * j - 1) / (2 * j)
        total += term
    return sin * total


def t_quantile(level: float, df: int) -> float:
    """The t with P(|T| ≤ t) = ``level``: the factor of a two-sided interval.

    Args:
        level: The confidence level, e.g. 0.95.
        df: Degrees of freedom, a whole number ≥ 1.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level!r}")
    if int(df) != df or df < 1:
        raise ValueError(f"df must be a whole number >= 1, got {df!r}")
    df = int(df)
    lo, hi = 0.0, 1.0
    while _within(hi, df) < level:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _within(mid, df) < level:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass(frozen=True)
class Estimate:
    """A mean over replications with its confidence interval.

    Attributes:
        n: Number of values (replications).
        mean: Their mean.
        sd: Their sample standard deviation (n - 1 in the denominator; NaN for n < 2).
        half_width: Half the width of the two-sided interval (NaN for n < 2).
    """

    n: int
    mean: float
    sd: float
    half_width: float

    @property
    def low(self) -> float:
        """Lower end of the interval."""
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        """Upper end of the interval."""
        return self.mean + self.half_width


def estimate(values: Sequence[float], level: float = LEVEL) -> Estimate:
    """Mean and Student-t confidence interval of ``values`` (NaN values are left out).

    The interval is mean ± t(level, n - 1) · sd / √n: it assumes the values
    are independent replications (different seeds) of roughly normal spread.
    """
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return Estimate(0, math.nan, math.nan, math.nan)
    mean = math.fsum(xs) / n
    if n < 2:
        return Estimate(n, mean, math.nan, math.nan)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    return Estimate(n, mean, sd, t_quantile(level, n - 1) * sd / math.sqrt(n))


def paired(
    values: Mapping[Any, float], reference: Mapping[Any, float], level: float = LEVEL
) -> Estimate:
    """Mean and interval of ``values - reference`` over the keys (seeds) both have.

    Pairing by seed removes what the two share (with common random numbers,
    the workload and the transition-time draws), so the interval of the
    difference is usually much narrower than those of the two means.
    """
    keys = [k for k in values if k in reference]
    return estimate([values[k] - reference[k] for k in keys], level)
