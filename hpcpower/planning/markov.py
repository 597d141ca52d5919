"""The workload screen's statistics, compiled (SNF-ICON's screen).

:func:`hpcpower.policies.icon.screen.screen_series` computes, for a window
of fewer than 96 samples, the mean, coefficient of variation, lag-1
autocorrelation and Kolmogorov-Smirnov distance with Python floats, in the
authors' order of operations. :func:`small_stats` is its compiled twin and
gives the same floats to the bit:

* sums are Python's ``sum``: left to right before Python 3.12, Neumaier's
  compensated sum from 3.12 on (``neumaier``), starting as ``0 + first``;
* squares are Python's ``x ** 2``, which is the C library's ``pow(x, 2.0)``
  (not always ``x * x``): the exponent comes in as an argument (``two``), so
  the compiler cannot turn the power into a product;
* ``exp`` and ``sqrt`` are the C library's, as Python's ``math`` module's.

From 96 samples on the screen computes with numpy, summing left to right
(``np.add.accumulate``). :func:`large_stats` and :func:`ks_distance` are the
twins of that form; numpy's vectorised ``exp`` may differ from the C
library's in the last bit, so the exponentials between the two stay numpy's
(the caller applies ``np.exp`` to what :func:`large_stats` leaves in
``scaled``).
"""

from __future__ import annotations

import math

import numpy as np

from hpcpower.planning._numba import kernel

EPS = 1e-9


@kernel
def _sum(values, count, neumaier):
    """Python's ``sum`` of ``values[:count]`` (floats, default start 0)."""
    if count == 0:
        return 0.0
    total = 0.0 + values[0]
    if not neumaier:
        for i in range(1, count):
            total += values[i]
        return total
    compensation = 0.0
    for i in range(1, count):
        x = values[i]
        t = total + x
        if abs(total) >= abs(x):
            compensation += (total - t) + x
        else:
            compensation += (x - t) + total
        total = t
    if compensation != 0.0 and math.isfinite(compensation):
        total += compensation
    return total


@kernel
def _kept(values):
    """The finite non-negative ``values``, in order (the samples the screen reads)."""
    v = np.empty(len(values))
    n = 0
    for x in values:
        if math.isfinite(x) and x >= 0.0:
            v[n] = x
            n += 1
    return v[:n]


@kernel
def _deviations(v, left_mean, right_mean):
    """``v[:-1] - left_mean`` and ``v[1:] - right_mean`` (the lag-1 pairs' deviations)."""
    m = len(v) - 1
    left = np.empty(m)
    right = np.empty(m)
    for i in range(m):
        left[i] = v[i] - left_mean
        right[i] = v[i + 1] - right_mean
    return left, right


@kernel
def small_stats(values, two, neumaier, largest):
    """``(n, mean, cv, lag1, ks)`` of the finite non-negative ``values``, as the Python form.

    Args:
        values: The window's samples, oldest first.
        two: ``2.0`` (see the module docstring).
        neumaier: Python's ``sum`` is compensated (Python 3.12 and later).
        largest: Compute only for fewer samples than this (else nan statistics).

    Returns:
        The number ``n`` of samples kept and their statistics; nan statistics
        when ``n < 3`` or ``n >= largest``, and nan ``cv``, ``lag1`` and ``ks``
        when the mean is not positive.
    """
    nan = np.nan
    v = _kept(values)
    n = len(v)
    if n < 3 or n >= largest:
        return n, nan, nan, nan, nan
    mean = _sum(v, n, neumaier) / n
    if mean <= EPS:
        return n, mean, nan, nan, nan
    work = np.empty(n)
    for i in range(n):
        work[i] = math.pow(v[i] - mean, two)
    variance = _sum(work, n, neumaier) / n
    cv = math.sqrt(max(0.0, variance)) / mean
    m = n - 1
    ml = _sum(v, m, neumaier) / m
    mr = _sum(v[1:], m, neumaier) / m
    dl, dr = _deviations(v, ml, mr)
    for i in range(m):
        work[i] = dl[i] * dr[i]
    num = _sum(work, m, neumaier)
    for i in range(m):
        work[i] = math.pow(dl[i], two)
    left = _sum(work, m, neumaier)
    for i in range(m):
        work[i] = math.pow(dr[i], two)
    den = math.sqrt(left * _sum(work, m, neumaier))
    rho = num / den if den > EPS else 1.0
    ordered = np.sort(v)
    for i in range(n):  # (the C library's exp, as Python's math.exp)
        work[i] = math.exp(-ordered[i] / mean)
    return n, mean, cv, rho, ks_distance(work)


@kernel
def _accumulated(values, count):
    """``np.add.accumulate(values[:count])[-1]``: left to right from the first value."""
    if count == 0:
        return 0.0
    total = values[0]
    for i in range(1, count):
        total += values[i]
    return total


@kernel
def large_stats(values, scaled):
    """``(n, mean, cv, lag1)`` of the finite non-negative ``values``, as the numpy form.

    Also writes ``-x / mean`` for the kept samples in increasing order into
    ``scaled[:n]`` (the argument of the KS term's exponential), unless the mean
    is not positive (then ``cv`` and ``lag1`` are nan and ``scaled`` is left
    alone). For ``n >= 2``.
    """
    nan = np.nan
    v = _kept(values)
    n = len(v)
    mean = _accumulated(v, n) / n
    if mean <= EPS:
        return n, mean, nan, nan
    work = np.empty(n)
    for i in range(n):
        d = v[i] - mean
        work[i] = d * d
    cv = math.sqrt(max(0.0, _accumulated(work, n) / n)) / mean
    m = n - 1
    ml = _accumulated(v, m) / m
    mr = _accumulated(v[1:], m) / m
    dl, dr = _deviations(v, ml, mr)
    for i in range(m):
        work[i] = dl[i] * dr[i]
    num = _accumulated(work, m)
    for i in range(m):
        work[i] = dl[i] * dl[i]
    left = _accumulated(work, m)
    for i in range(m):
        work[i] = dr[i] * dr[i]
    den = math.sqrt(left * _accumulated(work, m))
    rho = num / den if den > EPS else 1.0
    ordered = np.sort(v)
    for i in range(n):
        scaled[i] = -ordered[i] / mean
    return n, mean, cv, rho


@kernel
def ks_distance(exp_scaled):
    """KS distance to the exponential from ``exp(-x / mean)`` of the sorted samples.

    The largest gap between the exponential cdf at the i-th smallest sample
    and the empirical steps ``i / n`` and ``(i + 1) / n``. Both forms of the
    screen end here; they differ in whose ``exp`` made the argument.
    """
    n = len(exp_scaled)
    ks = 0.0
    for i in range(n):
        cdf = 1.0 - exp_scaled[i]
        gap = abs(i / n - cdf)
        if gap > ks:
            ks = gap
        gap = abs((i + 1) / n - cdf)
        if gap > ks:
            ks = gap
    return ks
