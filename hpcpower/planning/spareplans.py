"""SNF-ICON's candidate spare plans, compiled: their delays' order statistics, their energies.

:func:`hpcpower.policies.icon.spares._order_statistics` finds, for every
candidate plan and each rank ``r``, the ``r``-th smallest readiness delay
with numpy arrays of (plans x distinct values x ranks).
:func:`plan_order_statistics` is its compiled twin: one walk per plan over
the distinct values and the ranks in increasing order, O(plans x (values +
ranks)) and no temporaries. An order statistic is a selection, not
arithmetic, so both give the same floats.

:func:`add_to_prefixes` is the loop of
:func:`~hpcpower.policies.icon.spares._plan_energies` over many plans that
adds each node's energy term to the leading plans it belongs to: the same
additions, in the same order for every plan, without a numpy call per node.
"""

from __future__ import annotations

import numpy as np

from hpcpower.planning._numba import kernel


@kernel
def _prefix_le(values, grid):
    """``out[i, j]``: how many of ``values[:i]`` are at most ``grid[j]`` (``n + 1`` rows)."""
    out = np.zeros((len(values) + 1, len(grid)), dtype=np.int64)
    for i in range(len(values)):
        v = values[i]
        for j in range(len(grid)):
            out[i + 1, j] = out[i, j] + (1 if v <= grid[j] else 0)
    return out


@kernel
def plan_order_statistics(fixed, k, w, opt_off, wake, asleep, ranks):
    """The ``ranks[q]``-th smallest delay of plan ``x`` in ``out[q, x]`` (``inf`` past the last).

    Plan ``x`` holds the delays ``fixed`` (sorted), ``k[x]`` zeros and
    ``opt_off[k[x]:]``, ``wake[:w[x]]`` and ``asleep[w[x]:]`` (the
    ``_Delays`` of :mod:`hpcpower.policies.icon.spares`); ``ranks`` are
    increasing, from 1.

    The variable delays take few distinct values ``u_1 < ... < u_D``. With
    ``T_j`` the number of all delays ``<= u_j`` (fixed and variable), the
    ``r``-th smallest lies in the first stretch ``(u_{j-1}, u_j]`` where
    ``T_j >= r``: inside it only fixed delays are below ``u_j``, so it is
    the next fixed delay if enough of them fall short of ``u_j``, else
    ``u_j`` itself; past ``u_D`` only fixed delays are left.
    """
    n_x = len(k)
    n_fixed = len(fixed)
    n_opt = len(opt_off)
    n_sleep = len(wake)
    parts = np.empty(n_opt + 2 * n_sleep + (1 if n_opt else 0))
    parts[:n_opt] = opt_off
    parts[n_opt : n_opt + n_sleep] = wake
    parts[n_opt + n_sleep : n_opt + 2 * n_sleep] = asleep
    if n_opt:
        parts[-1] = 0.0
    grid = np.unique(parts)
    n_grid = len(grid)
    fixed_le = np.searchsorted(fixed, grid, side="right")
    fixed_lt = np.searchsorted(fixed, grid, side="left")
    opt_le = _prefix_le(opt_off, grid)
    wake_le = _prefix_le(wake, grid)
    asleep_le = _prefix_le(asleep, grid)
    n_ranks = len(ranks)
    out = np.empty((n_ranks, n_x))
    for x in range(n_x):
        kx = k[x]
        wx = w[x]
        q = 0
        below = 0  # T_{j-1}: delays <= u_{j-1} (none below u_1)
        fixed_below = 0  # fixed delays <= u_{j-1}
        for j in range(n_grid):
            var = 0
            if n_opt:
                var += kx + opt_le[n_opt, j] - opt_le[kx, j]
            if n_sleep:
                var += wake_le[wx, j] + asleep_le[n_sleep, j] - asleep_le[wx, j]
            total = fixed_le[j] + var
            # Fixed delays strictly between u_{j-1} and u_j come first.
            short = fixed_lt[j] - fixed_below
            while q < n_ranks and ranks[q] <= total:
                r = ranks[q]
                if r - below <= short:
                    out[q, x] = fixed[fixed_below + r - below - 1]
                else:
                    out[q, x] = grid[j]
                q += 1
            below = total
            fixed_below = fixed_le[j]
        while q < n_ranks:
            i = fixed_below + ranks[q] - below - 1
            out[q, x] = fixed[i] if i < n_fixed else np.inf
            q += 1
    return out


@kernel
def add_to_prefixes(sums, upto, terms):
    """``sums[:upto[j]] += terms[j]`` for each ``j`` in turn, in place.

    Every plan gets its terms in increasing ``j``, as the numpy form adds
    them, so each sum is the same sequence of additions.
    """
    for j in range(len(terms)):
        e = terms[j]
        for x in range(upto[j]):
            sums[x] += e
