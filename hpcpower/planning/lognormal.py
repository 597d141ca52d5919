"""SNF-ICON's predicted remaining times of running jobs, compiled.

:meth:`hpcpower.policies.icon.runtime.RuntimeModel.remaining_all` predicts,
at every spare decision, the remaining time of every running job: the mean
excess ``E[T - a | T > a]`` of a log-normal runtime, in log space with the
normal log-survival function. On a large machine that is thousands of jobs
a decision. :func:`mean_excess_all` is the twin of its loop and gives the
same floats to the bit: the same operations in the same order, with
``log``, ``exp`` and ``erfc`` the C library's, as Python's ``math``
module's; ``max`` and ``min`` against a constant are written as the same
conditionals.
"""

from __future__ import annotations

import math

import numpy as np

from hpcpower.planning._numba import kernel

EPS = 1e-9
_SQRT2 = math.sqrt(2.0)
#: ``0.5 * ln(2 pi)``, as :func:`~hpcpower.policies.icon.runtime.normal_log_survival` computes it.
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@kernel
def normal_log_survival(z):
    """``ln P(Z > z)`` for a standard normal ``Z`` (the runtime module's, to the bit)."""
    if z < 8.0:
        x = 0.5 * math.erfc(z / _SQRT2)
        return math.log(x if x > 1e-300 else 1e-300)
    inv2 = 1.0 / (z * z)
    c = 1.0 - inv2 + 3.0 * inv2 * inv2
    correction = c if c > EPS else EPS
    return -0.5 * z * z - math.log(z) - _HALF_LOG_2PI + math.log(correction)


@kernel
def mean_excess_all(requested, elapsed, mu, s, half_s2):
    """Each job's ``E[T - a | T > a]`` (at least 1e-9 s), ``ln T ~ N(ln requested + mu, s²)``.

    ``s`` is the model's sigma (at least 1e-9) and ``half_s2`` is ``0.5 * s * s``,
    both as the caller computes them; ``a`` is the elapsed time (0 when
    negative). A ``requested`` time that is NaN gives a number the caller
    replaces (a job without a request).
    """
    out = np.empty(len(requested))
    for i in range(len(requested)):
        req = requested[i]
        log_mu = math.log(req if req > EPS else EPS) + mu
        a = elapsed[i]
        if not a > 0.0:
            a = 0.0
        if a <= EPS:
            x = log_mu + half_s2
            x = math.exp(x if x < 700.0 else 700.0)
            out[i] = x if x > EPS else EPS
            continue
        z = (math.log(a) - log_mu) / s
        upper = normal_log_survival(z - s)
        lower = normal_log_survival(z)
        x = log_mu + half_s2 + upper - lower
        x = math.exp(x if x < 700.0 else 700.0) - a
        out[i] = x if x > EPS else EPS
    return out
