"""The next decision event and the time window it leaves (paper §III-E, Appendix B).

At a spare decision the next arrival and the next completion are modelled as
independent exponential clocks:

* arrival rate ``lambda`` (the EMA estimate);
* completion hazard ``lambda_C = 1 / d``, with ``d`` the smallest predicted
  remaining time among running jobs; when there is none (or it is not
  positive) ``lambda_C = (running jobs) × mu`` — which is 0 in practice,
  because every running job has a positive prediction (the authors'
  ``_optimise_and_apply_spare_target``);
* total rate ``Gamma = lambda + lambda_C`` and ``P(arrival first) = lambda / Gamma``.

The horizon is capped at the earliest *future* idle-timeout expiry among idle
nodes (``H_max`` when none is pending), and the energy horizon is the
discounted ``H = E[min(T, cap)] = (1 - e^(-Gamma cap)) / Gamma``. When
``Gamma`` is (numerically) zero, ``H = cap`` and ``P(arrival) = 0``.

:func:`expected_residual` is Appendix B's lemma: for a transition with ``d``
seconds left and ``T ~ Exp(Gamma)``, the part still unfinished when the next
event comes is ``E[(d - T)+] = d - (1 - e^(-Gamma d)) / Gamma``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

EPS = 1e-9


def expected_residual(duration_s: float, rate: float) -> float:
    """``E[(d - T)+]`` for ``T ~ Exp(rate)`` (rate floored at 1e-9)."""
    d = max(0.0, float(duration_s))
    g = max(EPS, float(rate))
    return max(0.0, d - (1.0 - math.exp(-g * d)) / g)


@dataclass(frozen=True)
class NextEvent:
    """The competing-clocks model at one decision.

    Attributes:
        arrival_rate: ``lambda`` (1/s).
        completion_rate: ``lambda_C`` (1/s).
        total_rate: ``Gamma``.
        next_completion_s: Smallest predicted remaining time (``inf`` if none).
        horizon_cap_s: The cap (earliest future idle timeout, else ``H_max``).
        horizon_s: Discounted horizon ``H`` used for energy.
        p_arrival: Probability that the next event is an arrival.
        residual_rate: Rate used in :func:`expected_residual` (``Gamma``, or
            ``1 / cap`` when ``Gamma`` is zero).
    """

    arrival_rate: float
    completion_rate: float
    total_rate: float
    next_completion_s: float
    horizon_cap_s: float
    horizon_s: float
    p_arrival: float
    residual_rate: float


def horizon_cap(
    now: float,
    idle_expiries: Iterable[float] | np.ndarray,
    max_horizon_s: float,
    timeout_set: bool = True,
) -> float:
    """Time to the earliest idle-timeout expiry after ``now`` (more than 1e-9 s ahead), capped.

    Args:
        now: Current time.
        idle_expiries: Timeout expiry of every idle node.
        max_horizon_s: ``H_max``, used when no expiry is pending or there is no timeout.
        timeout_set: False when the power manager has no idle timeout.
    """
    if not timeout_set:
        return max_horizon_s
    expiries = np.asarray(
        idle_expiries if isinstance(idle_expiries, np.ndarray) else list(idle_expiries),
        dtype=float,
    )
    ahead = expiries[expiries > now + EPS]
    if not len(ahead):
        return max_horizon_s
    # The earliest delay is the earliest expiry minus now: subtracting a
    # constant never reorders floats (rounding is monotonic), so this is the
    # minimum of every ``e - now`` to the bit, without an array of them.
    return min(max_horizon_s, float(ahead.min()) - now)


def next_event(
    arrival_rate: float,
    remaining_s: Iterable[float],
    running_jobs: int,
    service_rate: float,
    cap_s: float,
) -> NextEvent:
    """The competing-clocks model.

    Args:
        arrival_rate: ``lambda``.
        remaining_s: Predicted remaining time of every running job.
        running_jobs: Number of running jobs (for the aggregate fallback hazard).
        service_rate: ``mu`` (for the aggregate fallback hazard).
        cap_s: Horizon cap (see :func:`horizon_cap`).
    """
    finite = [r for r in remaining_s if math.isfinite(r)]
    d = min(finite) if finite else math.inf
    if math.isfinite(d) and d > EPS:
        completion = 1.0 / d
    else:
        completion = running_jobs * service_rate
    total = arrival_rate + completion
    if total <= EPS:
        return NextEvent(
            arrival_rate, completion, total, d, cap_s, cap_s, 0.0, 1.0 / max(EPS, cap_s)
        )
    horizon = -math.expm1(-total * cap_s) / total
    return NextEvent(
        arrival_rate, completion, total, d, cap_s, horizon, arrival_rate / total, total
    )
