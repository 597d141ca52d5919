"""The workload screen: is the recent workload close enough to Markovian? (paper §III-A).

Two series are screened at every controller pass: interarrival times (each
stamped with the later arrival's submit time) and completed service times
(stamped with the completion time). A series keeps its samples from the last
``T_M`` seconds, at most the ``n_max`` newest (:class:`SampleWindow`). It is
accepted when it has at least ``n_min`` samples and

* ``|CV - 1| <= cv_tolerance``, with the population variance;
* ``|rho_1| <= max_lag1``, the Pearson correlation of consecutive pairs
  ``(v[i], v[i+1])`` with separate means for the left and right lists
  (1.0 when undefined, so three samples never pass);
* ``D <= ks_multiplier * ks_param / sqrt(n)``, with ``D`` the
  Kolmogorov-Smirnov distance to the exponential with the sample mean.

The pass is in ICON mode when the interarrival series is accepted and, if
service samples are required, the service series too (§2b; the authors'
``_series_markovianity``). Below 96 samples the sums are Python's ``sum``, as
in the authors' code, so the statistics are the floats their code gives on
the same Python (``sum`` is compensated from Python 3.12 on); the compiled
twin (:mod:`hpcpower.planning.markov`) gives the same. From 96 samples on,
sums run left to right in numpy and the KS term uses numpy's ``exp``, which
may differ from ``math.exp`` in the last bit.
"""

from __future__ import annotations

import math
import sys
from collections import deque
from dataclasses import dataclass
from operator import mul
from typing import NamedTuple

import numpy as np

from hpcpower.planning import markov

EPS = 1e-9


class SampleWindow:
    """Timestamped samples of one series: the last ``span_s`` seconds, at most ``max_samples``.

    Args:
        span_s: Length of the look-back window (``T_M``).
        max_samples: Most recent samples kept (older ones drop out).
    """

    def __init__(self, span_s: float, max_samples: int) -> None:
        if not max_samples >= 1:
            raise ValueError(f"a sample window keeps at least 1 sample, got {max_samples!r}")
        self.span_s = float(span_s)
        self.max_samples = int(max_samples)
        self._stamps: deque[float] = deque()
        # The values live in [_head, _tail) of a buffer twice the window's
        # size, moved to the front when full: the window is then a view,
        # with no copy per screening.
        self._buffer = np.empty(2 * self.max_samples)
        self._head = 0
        self._tail = 0
        #: Bumped whenever the content changes, so verdicts can be cached.
        self.version = 0

    def add(self, stamp_s: float, value: float) -> None:
        """Append a sample (stamps must not decrease)."""
        stamps = self._stamps
        stamps.append(float(stamp_s))
        if len(stamps) > self.max_samples:
            stamps.popleft()
            self._head += 1
        if self._tail == len(self._buffer):
            kept = self._tail - self._head
            self._buffer[:kept] = self._buffer[self._head : self._tail]
            self._head, self._tail = 0, kept
        self._buffer[self._tail] = value
        self._tail += 1
        self.version += 1

    def prune(self, now: float) -> None:
        """Drop samples stamped before ``now - span_s`` (a stamp on the edge stays)."""
        cutoff = float(now) - self.span_s
        stamps = self._stamps
        if stamps and stamps[0] < cutoff:
            while stamps and stamps[0] < cutoff:
                stamps.popleft()
                self._head += 1
            self.version += 1

    def values(self) -> list[float]:
        """The sample values, oldest first."""
        return self._buffer[self._head : self._tail].tolist()

    def array(self) -> np.ndarray:
        """The sample values, oldest first: a view, to read before the next add.

        (Writeable: numba compiles a twin afresh in every process for a
        read-only array instead of taking it from its cache.)
        """
        return self._buffer[self._head : self._tail]

    def __len__(self) -> int:
        return self._tail - self._head

    def __repr__(self) -> str:
        return f"<SampleWindow {len(self)} samples over the last {self.span_s:g} s>"


@dataclass(frozen=True)
class ScreenSettings:
    """Thresholds of the screen (see :class:`~hpcpower.policies.icon.config.IconConfig`)."""

    min_samples: int = 3
    cv_tolerance: float = 0.45
    max_lag1: float = 0.65
    ks_multiplier: float = 1.25
    ks_param: float = 3.0


class SeriesVerdict(NamedTuple):
    """The screen's verdict on one series (a named tuple: made at most passes).

    Attributes:
        name: ``"interarrival"`` or ``"service"``.
        required: Whether the series takes part in the verdict.
        n: Number of samples in the window.
        accepted: Whether the series passed.
        reason: ``"accepted"``, or the failed checks joined by commas
            (``cv``, ``lag1_autocorrelation``, ``exponential_ks``), or
            ``insufficient_samples_in_time_window`` / ``non_positive_mean``.
        mean: Sample mean (nan when not computed).
        cv: Coefficient of variation (population variance).
        lag1: Lag-1 autocorrelation.
        ks: KS distance to the fitted exponential.
        ks_limit: The KS acceptance limit for this ``n``.
    """

    name: str
    required: bool
    n: int
    accepted: bool
    reason: str
    mean: float = math.nan
    cv: float = math.nan
    lag1: float = math.nan
    ks: float = math.nan
    ks_limit: float = math.nan


class ScreenResult(NamedTuple):
    """The verdict on both series and the combined one (a named tuple).

    Attributes:
        accepted: True when the pass may run in ICON mode.
        reason: ``"accepted"`` or ``"arrival:<reason>;service:<reason>"``.
        arrival: Verdict on interarrival times.
        service: Verdict on service times.
    """

    accepted: bool
    reason: str
    arrival: SeriesVerdict
    service: SeriesVerdict


def _seq_sum(a: np.ndarray) -> float:
    """Left-to-right sum (as Python's ``sum``), not numpy's pairwise one."""
    return float(np.add.accumulate(a)[-1]) if len(a) else 0.0


def lag1_autocorrelation(values: np.ndarray) -> float:
    """Pearson correlation of consecutive pairs, separate means; 1.0 when undefined."""
    left = values[:-1]
    right = values[1:]
    if len(left) == 0:
        return 1.0
    dl = left - _seq_sum(left) / len(left)
    dr = right - _seq_sum(right) / len(right)
    num = _seq_sum(dl * dr)
    den = math.sqrt(_seq_sum(dl * dl) * _seq_sum(dr * dr))
    return num / den if den > EPS else 1.0


def ks_exponential(values: np.ndarray, mean: float) -> float:
    """Kolmogorov-Smirnov distance between the sample and Exp(mean)."""
    x = np.sort(values)
    n = len(x)
    cdf = 1.0 - np.exp(-x / mean)
    i = np.arange(1, n + 1)
    before = np.abs((i - 1) / n - cdf)
    after = np.abs(i / n - cdf)
    return float(max(0.0, before.max(), after.max()))


#: Below this many samples the statistics are computed with Python floats
#: (faster for short windows); above, with numpy. Both sum left to right.
_NUMPY_FROM = 96


def _stats_small(v: list[float]) -> tuple[float, float, float, float]:
    """(mean, cv, lag-1, KS) with scalar arithmetic, in the authors' order.

    Each deviation is computed once and reused, and sums take lists (faster
    than generators); the operations and their order are the authors'
    (``** 2`` stays a power, as theirs, which need not round as ``d * d``).
    """
    n = len(v)
    mean = sum(v) / n
    if mean <= EPS:
        return mean, math.nan, math.nan, math.nan
    variance = sum([(x - mean) ** 2 for x in v]) / n
    cv = math.sqrt(max(0.0, variance)) / mean
    left, right = v[:-1], v[1:]
    ml = sum(left) / len(left)
    mr = sum(right) / len(right)
    dl = [x - ml for x in left]
    dr = [y - mr for y in right]
    num = sum(map(mul, dl, dr))
    den = math.sqrt(sum([d**2 for d in dl]) * sum([d**2 for d in dr]))
    rho = num / den if den > EPS else 1.0
    # KS: the largest gap between the exponential cdf at the i-th smallest
    # sample and the empirical steps (i - 1) / n and i / n. No NaN can occur,
    # so the maximum does not depend on the order it is taken in.
    exp = math.exp
    ks = 0.0
    below = 0.0
    i = 0
    for x in sorted(v):
        i += 1
        cdf = 1.0 - exp(-x / mean)
        above = i / n
        gap = abs(below - cdf)
        if gap > ks:
            ks = gap
        gap = abs(above - cdf)
        if gap > ks:
            ks = gap
        below = above
    return mean, cv, rho, ks


def _stats_compiled(values: np.ndarray) -> tuple[float, float, float, float]:
    """:func:`_stats_numpy` of the finite non-negative ``values`` with the compiled twins."""
    scaled = np.empty(len(values))
    n, mean, cv, rho = markov.large_stats(values, scaled)
    if mean <= EPS:
        return mean, math.nan, math.nan, math.nan
    # numpy's exp, as the numpy form's (it may differ from libm's in the last bit).
    exp_scaled = np.exp(scaled[:n], out=scaled[:n])
    return mean, cv, rho, markov.ks_distance(exp_scaled)


def _stats_numpy(v: np.ndarray) -> tuple[float, float, float, float]:
    """(mean, cv, lag-1, KS) with numpy, sums left to right."""
    n = len(v)
    mean = _seq_sum(v) / n
    if mean <= EPS:
        return mean, math.nan, math.nan, math.nan
    d = v - mean
    variance = _seq_sum(d * d) / n
    cv = math.sqrt(max(0.0, variance)) / mean
    return mean, cv, lag1_autocorrelation(v), ks_exponential(v, mean)


#: Python's ``sum`` of floats is compensated from 3.12 on (see :mod:`hpcpower.planning.markov`).
_NEUMAIER = sys.version_info >= (3, 12)


def screen_series(
    values: list[float] | np.ndarray,
    settings: ScreenSettings,
    *,
    name: str,
    required: bool,
    compiled: bool = False,
) -> SeriesVerdict:
    """Screen one series of samples.

    Args:
        values: Sample values in time order (negative or non-finite ones are ignored).
        settings: The thresholds.
        name: Series name for diagnostics.
        required: If false, too few samples count as accepted.
        compiled: Compute short series with the compiled twin
            (:func:`hpcpower.planning.markov.small_stats`; the same floats).
    """
    stats = None
    if compiled:
        values = np.asarray(values, dtype=float)
        n, *small = markov.small_stats(values, 2.0, _NEUMAIER, _NUMPY_FROM)
        stats = small if n < _NUMPY_FROM else _stats_compiled(values)
    else:
        v = [x for x in values if math.isfinite(x) and x >= 0.0]
        n = len(v)
    if n < settings.min_samples:
        if not required:
            return SeriesVerdict(
                name, required, n, True, "optional_insufficient_samples_in_time_window"
            )
        return SeriesVerdict(name, required, n, False, "insufficient_samples_in_time_window")
    if stats is not None:
        mean, cv, rho, ks = stats
    elif n < _NUMPY_FROM:
        mean, cv, rho, ks = _stats_small(v)
    else:
        mean, cv, rho, ks = _stats_numpy(np.asarray(v, dtype=float))
    if mean <= EPS:
        return SeriesVerdict(name, required, n, False, "non_positive_mean", mean=mean)
    limit = settings.ks_multiplier * settings.ks_param / math.sqrt(n)
    failed = []
    if not abs(cv - 1.0) <= settings.cv_tolerance:
        failed.append("cv")
    if not abs(rho) <= settings.max_lag1:
        failed.append("lag1_autocorrelation")
    if not ks <= limit:
        failed.append("exponential_ks")
    return SeriesVerdict(
        name,
        required,
        n,
        not failed,
        ",".join(failed) or "accepted",
        mean=mean,
        cv=cv,
        lag1=rho,
        ks=ks,
        ks_limit=limit,
    )


def combine(arrival: SeriesVerdict, service: SeriesVerdict, require_service: bool) -> ScreenResult:
    """The pass-level verdict from the two series verdicts."""
    accepted = arrival.accepted and (service.accepted or not require_service)
    reasons = []
    if not arrival.accepted:
        reasons.append(f"arrival:{arrival.reason}")
    if require_service and not service.accepted:
        reasons.append(f"service:{service.reason}")
    return ScreenResult(accepted, "accepted" if accepted else ";".join(reasons), arrival, service)


class WorkloadScreen:
    """Both sample windows and the cached verdicts.

    A series is screened again only when its window changed (a sample added
    or pruned) since it was last screened; most passes change one series at
    most, so the other keeps its verdict.

    Args:
        window_s: ``T_M``.
        max_samples: ``n_max``.
        settings: Thresholds.
        require_service: Whether the service series takes part.
    """

    def __init__(
        self,
        window_s: float,
        max_samples: int,
        settings: ScreenSettings,
        require_service: bool = True,
    ) -> None:
        self.interarrivals = SampleWindow(window_s, max_samples)
        self.services = SampleWindow(window_s, max_samples)
        self.settings = settings
        self.require_service = require_service
        self._arrival: tuple[int, SeriesVerdict] | None = None
        self._service: tuple[int, SeriesVerdict] | None = None
        self._cached: tuple[tuple[int, int], ScreenResult] | None = None

    def verdict(self, now: float, compiled: bool = False) -> ScreenResult:
        """Prune both windows to ``now`` and screen them (each recomputed only on change).

        ``compiled``: compute with the compiled twin (the same verdicts and floats).
        """
        self.interarrivals.prune(now)
        self.services.prune(now)
        key = (self.interarrivals.version, self.services.version)
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        if self._arrival is None or self._arrival[0] != key[0]:
            self._arrival = (
                key[0],
                screen_series(
                    self.interarrivals.array() if compiled else self.interarrivals.values(),
                    self.settings,
                    name="interarrival",
                    required=True,
                    compiled=compiled,
                ),
            )
        if self._service is None or self._service[0] != key[1]:
            self._service = (
                key[1],
                screen_series(
                    self.services.array() if compiled else self.services.values(),
                    self.settings,
                    name="service",
                    required=self.require_service,
                    compiled=compiled,
                ),
            )
        result = combine(self._arrival[1], self._service[1], self.require_service)
        self._cached = (key, result)
        return result
