"""Job-specific runtime prediction from actual/requested ratios (paper Appendix A).

The model assumes the ratio ``actual / requested`` runtime of every job
follows one slowly changing log-normal distribution. Each finished job with
a positive duration and request updates EMAs of ``l = ln(ratio)`` and of
``l**2`` (weight ``service_ema_alpha``; the first sample sets both), giving
``mu = E[l]`` and ``sigma = max(floor, sqrt(E[l**2] - mu**2))``.

* A **queued** job is predicted to run its *median*: requested × e^mu
  (requested × 1 before any ratio is known).
* A **running** job that has run ``a`` seconds is predicted to need the
  conditional mean remaining time ``E[T - a | T > a]`` of the log-normal
  ``T = requested × ratio``. It is evaluated in log space with the normal
  log-survival function ``log S(z)``::

      log E[T | T > a] = m + s²/2 + log S(z - s) - log S(z),
      z = (ln a - m) / s,  m = ln(requested) + mu

  At ``a = 0`` it is the log-normal mean ``exp(m + s²/2)``. Before any ratio
  is known a running job needs ``requested - a`` (its request again once it
  has overrun), and a job without a request the EMA service time minus ``a``.

``log S`` uses ``erfc`` below ``z = 8`` and its asymptotic series above, as
the authors' ``_normal_log_survival``; all arithmetic is scalar ``math``, in
their order, so predictions are the same floats.
"""

from __future__ import annotations

import math

import numpy as np

from hpcpower.planning import lognormal

EPS = 1e-9
#: From this many running jobs, :meth:`RuntimeModel.remaining_all` predicts
#: with the compiled twin when asked to (fewer cost less in Python than the call).
_COMPILED_FROM = 16

_SQRT2 = math.sqrt(2.0)


def normal_log_survival(z: float) -> float:
    """``ln P(Z > z)`` for a standard normal ``Z``, accurate far in the tail."""
    if z < 8.0:
        return math.log(max(1e-300, 0.5 * math.erfc(z / _SQRT2)))
    inv2 = 1.0 / (z * z)
    correction = max(EPS, 1.0 - inv2 + 3.0 * inv2 * inv2)
    return -0.5 * z * z - math.log(z) - 0.5 * math.log(2.0 * math.pi) + math.log(correction)


def lognormal_mean_excess(log_mu: float, log_sigma: float, elapsed_s: float) -> float:
    """``E[T - a | T > a]`` for ``ln T ~ N(log_mu, log_sigma²)`` and ``a = elapsed_s``.

    Never less than 1e-9 s.
    """
    a = max(0.0, elapsed_s)
    s = max(EPS, log_sigma)
    if a <= EPS:
        return max(EPS, math.exp(min(700.0, log_mu + 0.5 * s * s)))
    z = (math.log(a) - log_mu) / s
    log_mean = log_mu + 0.5 * s * s + normal_log_survival(z - s) - normal_log_survival(z)
    return max(EPS, math.exp(min(700.0, log_mean)) - a)


class RuntimeModel:
    """Log-normal model of the ratio actual / requested runtime.

    Args:
        weight: EMA weight of the newest log ratio (``service_ema_alpha``).
        sigma_floor: Least ``sigma`` of the log ratio.
        max_horizon_s: Total runtime assumed for a running job with no request
            and no service estimate (``H_max``).
    """

    def __init__(self, weight: float, sigma_floor: float, max_horizon_s: float) -> None:
        self.weight = weight
        self.sigma_floor = sigma_floor
        self.max_horizon_s = max_horizon_s
        self.mean_log: float | None = None
        self.mean_log_sq: float | None = None
        self.samples = 0

    def observe(self, duration_s: float, requested_s: float | None) -> None:
        """Record a finished job's duration against its requested duration."""
        if requested_s is None or requested_s <= EPS:
            return
        ratio = duration_s / requested_s
        if ratio <= EPS or not math.isfinite(ratio):
            return
        x = math.log(ratio)
        w = self.weight
        self.mean_log = x if self.mean_log is None else w * x + (1.0 - w) * self.mean_log
        sq = max(0.0, x * x)
        self.mean_log_sq = sq if self.mean_log_sq is None else w * sq + (1.0 - w) * self.mean_log_sq
        self.samples += 1

    def median_ratio(self) -> float:
        """``e^mu``, or 1 before any sample."""
        if self.mean_log is None:
            return 1.0
        return max(EPS, math.exp(min(700.0, self.mean_log)))

    def distribution(self) -> tuple[float, float] | None:
        """``(mu, sigma)`` of the log ratio, or ``None`` before any sample."""
        if self.mean_log is None or self.mean_log_sq is None:
            return None
        mu = self.mean_log
        sigma = max(self.sigma_floor, math.sqrt(max(0.0, self.mean_log_sq - mu * mu)))
        return mu, sigma

    def queued_duration(self, requested_s: float | None, service_ema_s: float | None) -> float:
        """Predicted duration of a queued job: its request times the median ratio.

        A job without a positive request gets the EMA service time, or
        ``max_horizon_s`` before any completion (where the authors' code stops
        with an error).
        """
        if requested_s is None:
            return max(EPS, service_ema_s if service_ema_s is not None else self.max_horizon_s)
        return max(EPS, requested_s * self.median_ratio())

    def remaining(
        self, requested_s: float | None, elapsed_s: float, service_ema_s: float | None
    ) -> float:
        """Predicted remaining time of a job that has run ``elapsed_s`` seconds."""
        if requested_s is None:
            total = service_ema_s if service_ema_s is not None else self.max_horizon_s
            return max(EPS, total - elapsed_s)
        dist = self.distribution()
        if dist is None:
            if elapsed_s >= requested_s:
                return max(EPS, requested_s)
            return max(EPS, requested_s - elapsed_s)
        mu, sigma = dist
        return lognormal_mean_excess(math.log(max(EPS, requested_s)) + mu, sigma, elapsed_s)

    def remaining_all(
        self,
        requested_s: list[float | None],
        elapsed_s: list[float],
        service_ema_s: float | None,
        compiled: bool = False,
    ) -> list[float]:
        """:meth:`remaining` for many jobs at once (same numbers, one model lookup).

        ``compiled``: with many jobs, predict with the compiled twin
        (:func:`hpcpower.planning.lognormal.mean_excess_all`; the same floats).
        """
        dist = self.distribution()
        if dist is None:
            return [
                self.remaining(r, e, service_ema_s)
                for r, e in zip(requested_s, elapsed_s, strict=True)
            ]
        mu, sigma = dist
        s = max(EPS, sigma)
        half_s2 = 0.5 * s * s
        if compiled and len(requested_s) >= _COMPILED_FROM:
            out = lognormal.mean_excess_all(
                np.array([math.nan if r is None else r for r in requested_s], dtype=float),
                np.array(elapsed_s, dtype=float),
                mu,
                s,
                half_s2,
            ).tolist()
            for i, r in enumerate(requested_s):
                if r is None:  # (no request: the service estimate, in Python)
                    out[i] = self.remaining(None, elapsed_s[i], service_ema_s)
            return out
        # lognormal_mean_excess and normal_log_survival inlined (this runs for
        # every running job at every spare decision): the same operations in
        # the same order, with the per-model terms computed once and
        # ``max(c, x)`` / ``min(c, x)`` written as conditionals (the same
        # result for every x, NaN included: the constant).
        log, exp, erfc = math.log, math.exp, math.erfc
        out = []
        for req, elapsed in zip(requested_s, elapsed_s, strict=True):
            if req is None:
                out.append(self.remaining(req, elapsed, service_ema_s))
                continue
            log_mu = log(req if req > EPS else EPS) + mu
            a = elapsed if elapsed > 0.0 else 0.0
            if a <= EPS:
                x = log_mu + half_s2
                x = exp(x if x < 700.0 else 700.0)
                out.append(x if x > EPS else EPS)
                continue
            z = (log(a) - log_mu) / s
            zs = z - s
            if zs < 8.0:
                x = 0.5 * erfc(zs / _SQRT2)
                upper = log(x if x > 1e-300 else 1e-300)
            else:
                upper = normal_log_survival(zs)
            if z < 8.0:
                x = 0.5 * erfc(z / _SQRT2)
                lower = log(x if x > 1e-300 else 1e-300)
            else:
                lower = normal_log_survival(z)
            x = log_mu + half_s2 + upper - lower
            x = exp(x if x < 700.0 else 700.0) - a
            out.append(x if x > EPS else EPS)
        return out

    def __repr__(self) -> str:
        dist = self.distribution()
        text = "no sample" if dist is None else f"mu {dist[0]:.3g}, sigma {dist[1]:.3g}"
        return f"<RuntimeModel {text}, {self.samples} samples>"


def requested_duration(reqtime_s: float, speed: float) -> float | None:
    """Requested run duration on nodes of ``speed``, or ``None`` when not positive."""
    if not reqtime_s > EPS or not math.isfinite(reqtime_s):
        return None
    if speed <= EPS:
        speed = 1.0
    d = reqtime_s / speed
    return d if d > EPS and math.isfinite(d) else None
