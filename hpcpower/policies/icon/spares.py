"""Warm-spare optimisation: how many nodes to keep ready for future jobs (paper §III-F, §III-H).

At a qualifying decision (ICON mode, empty queue after dispatch, an arrival,
a completion or the first pass, gate open) the controller chooses a target
``x``: the number of non-computing nodes that should be warm (idle, or on
their way up). Node classes, after dispatch (the authors'
``_optimise_and_apply_spare_target``, ``_build_spare_plan``):

* **expired**: idle nodes whose idle timeout has run out (with
  ``respect_timeout``); they are switched off in every plan;
* **forced warm**: idle nodes that may not be switched off yet (timeout still
  running) and nodes already switching on;
* **optional**: other idle nodes (only when timeouts are not respected),
  kept in order of (idle power, −wake lead, id), the rest switched off;
* **sleeping** nodes, woken in order of (α·lead + β·wake energy, lead, wake
  energy, id) when ``x`` needs more than the warm ones.

Feasible targets run from ``max(forced, min(S_min, realisable))`` to
``max(that, min(S_max, realisable))``, realisable = forced + optional +
sleeping. For each ``x``:

* readiness delay per non-computing node, ``R(d) = E[(d - T)+]``: kept idle
  0; switching on R(remaining); woken now R(lead); left asleep lead;
  switched off now lead + R(switch-off time); already switching off
  lead + R(remaining);
* expected power-induced wait ``W = P(arrival) Σ_r p(r) d_(r)``, ``d_(r)`` the
  r-th smallest delay (r capped at the number of non-computing nodes);
* expected non-compute energy over the discounted horizon ``H``: idle power
  while idle, transition power for the rest of a transition (capped at
  ``H``), then idle (waking) or sleeping power (switching off);
* cost ``α W + β E``; the chosen ``x`` minimises ``(cost, W, E, x)``.

All targets are evaluated at once with numpy: the r-th smallest delay of
every plan comes from the sorted fixed delays and the few distinct values of
the delays that change with ``x``; energies are folded node by node in the
authors' order (prefix sums where plans share a prefix, in-place additions
to leading slices of plans elsewhere). Both ``W`` and ``E`` are therefore the
same floats as the authors', which matters: on AOBA idle and switch-off
power are equal, so plans that differ only in which idle nodes stay warm can
tie up to rounding, and the tie-break must fall the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hpcpower.policies.icon.next_event import NextEvent, expected_residual

EPS = 1e-9
#: Largest (plans x values x ranks) array built at once by the order statistics.
_CELLS = 1 << 20


@dataclass
class SpareNodes:
    """Non-computing nodes at a spare decision, and their power model.

    All per-node arrays are indexed by node id (length = cluster size).

    Attributes:
        idle: Idle node ids after dispatch, increasing.
        idle_expiry_s: Timeout expiry of each idle node (``inf`` without a timeout).
        switching_on: Ids of nodes switching on, increasing.
        on_remaining_s: Planned remaining switch-on time of those nodes.
        sleeping: Ids of sleeping nodes, increasing.
        switching_off: Ids of nodes switching off, increasing.
        off_remaining_s: Planned remaining switch-off time of those nodes.
        lead_s: Mean wake time (sleeping → idle) per node.
        off_s: Mean switch-off time per node.
        power_w: ``(nodes, 5)`` watts per :class:`~hpcpower.platform.NodeState`.
    """

    idle: np.ndarray
    idle_expiry_s: np.ndarray
    switching_on: np.ndarray
    on_remaining_s: np.ndarray
    sleeping: np.ndarray
    switching_off: np.ndarray
    off_remaining_s: np.ndarray
    lead_s: np.ndarray
    off_s: np.ndarray
    power_w: np.ndarray


@dataclass
class SparePlan:
    """The chosen target and what it takes, plus every candidate's terms.

    Attributes:
        target: Chosen ``x``.
        wake: Sleeping nodes to wake now (in wake order).
        switch_off: Idle nodes to switch off now (expired first).
        keep_idle: Idle nodes kept warm.
        expected_wait_s: ``W`` of the chosen target.
        expected_energy_j: ``E`` of the chosen target.
        cost: ``alpha W + beta E`` of the chosen target.
        x_min: Smallest feasible target.
        x_max: Largest feasible target.
        targets: Every candidate ``x``.
        waits_s: ``W`` per candidate.
        energies_j: ``E`` per candidate.
        costs: Cost per candidate.
    """

    target: int
    wake: list[int]
    switch_off: list[int]
    keep_idle: list[int]
    expected_wait_s: float
    expected_energy_j: float
    cost: float
    x_min: int
    x_max: int
    targets: np.ndarray = field(repr=False)
    waits_s: np.ndarray = field(repr=False)
    energies_j: np.ndarray = field(repr=False)
    costs: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class SpareSettings:
    """What the optimiser needs from the configuration.

    Attributes:
        alpha: Weight of the wait.
        beta: Weight of the energy.
        min_spares: ``S_min`` (already clipped to the cluster size).
        max_spares: ``S_max`` (already clipped; the cluster size when unset).
        respect_timeout: Idle nodes go off only once their timeout expired.
        timeout_set: Whether the power manager has an idle timeout at all.
    """

    alpha: float
    beta: float
    min_spares: int
    max_spares: int
    respect_timeout: bool = True
    timeout_set: bool = True


def _residuals(values: np.ndarray, rate: float) -> np.ndarray:
    """``expected_residual`` of each value, with scalar math (same floats as the authors')."""
    cache: dict[float, float] = {}
    out = np.empty(len(values))
    for i, v in enumerate(values.tolist()):
        r = cache.get(v)
        if r is None:
            r = cache[v] = expected_residual(v, rate)
        out[i] = r
    return out


def _prefix_le(values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``out[i, j]``: how many of ``values[:i]`` are at most ``grid[j]`` (``n + 1`` rows)."""
    out = np.zeros((len(values) + 1, len(grid)), dtype=np.int64)
    np.cumsum(values[:, None] <= grid[None, :], axis=0, out=out[1:])
    return out


def _order_statistics(
    fixed: np.ndarray,
    k: np.ndarray,
    w: np.ndarray,
    opt_off: np.ndarray,
    wake: np.ndarray,
    asleep: np.ndarray,
    ranks: list[int],
) -> dict[int, np.ndarray]:
    """The r-th smallest readiness delay of every candidate plan, for each rank r.

    A plan's delays are the fixed ones (sorted ``fixed``) plus a *variable*
    part: optional idle nodes (the first ``k`` kept at 0, the others
    ``opt_off``) and sleeping nodes (the first ``w`` woken, ``wake``, the
    others ``asleep``). The variable part takes few distinct values
    ``u_1 < ... < u_D`` on a uniform platform; with ``c_j`` the number of
    variable delays ``<= u_j``, the r-th smallest is the least candidate among
    ``u_j`` (if ``#fixed <= u_j`` + ``c_j >= r``) and, for each stretch
    ``[u_j, u_{j+1})``, the ``(r - c_j)``-th smallest fixed delay if it falls at
    or above ``u_j``. Work is O(plans × D) per rank.
    """
    n_x = len(k)
    parts = [wake, asleep, opt_off]
    if len(opt_off):
        parts.append(np.zeros(1))
    grid = np.unique(np.concatenate(parts))
    var = np.zeros((n_x, len(grid)), dtype=np.int64)
    if len(opt_off):
        le = _prefix_le(opt_off, grid)
        var += k[:, None] + (le[-1][None, :] - le[k])
    if len(wake):
        woken = _prefix_le(wake, grid)
        left = _prefix_le(asleep, grid)
        var += woken[w] + (left[-1][None, :] - left[w])
    n_fixed = len(fixed)
    fixed_le = np.searchsorted(fixed, grid, side="right")
    # Stretches below u_1 (no variable delay) and from each u_j on.
    var_below = np.hstack((np.zeros((n_x, 1), dtype=np.int64), var))
    floor = np.concatenate(([-np.inf], grid))
    padded = np.concatenate((fixed, [np.inf]))
    ranks_a = np.asarray(ranks, dtype=np.int64)
    # All ranks at once, in slices that keep the (plans, D, ranks) arrays small.
    step = max(1, _CELLS // max(1, n_x * (len(grid) + 1)))
    out: dict[int, np.ndarray] = {}
    for lo in range(0, len(ranks_a), step):
        r = ranks_a[lo : lo + step][None, None, :]
        if len(grid):
            hit = (fixed_le[None, :, None] + var[:, :, None]) >= r
            best = np.where(hit, grid[None, :, None], np.inf).min(axis=1)
        else:
            best = np.full((n_x, r.shape[2]), np.inf)
        if n_fixed:
            idx = r - var_below[:, :, None] - 1
            ok = (idx >= 0) & (idx < n_fixed)
            cand = padded[np.minimum(np.maximum(idx, 0), n_fixed)]
            cand = np.where(ok & (cand >= floor[None, :, None]), cand, np.inf)
            best = np.minimum(best, cand.min(axis=1))
        for j, rank in enumerate(ranks_a[lo : lo + step].tolist()):
            out[rank] = best[:, j]
    return out


def _pairs(acc: np.ndarray, first: np.ndarray, second: np.ndarray) -> None:
    """Add ``first[i]`` then ``second[i]`` to every row, node by node (in place)."""
    for a, b in zip(first.tolist(), second.tolist(), strict=True):
        acc += a
        acc += b


def _plan_energies(
    nodes: SpareNodes,
    h: float,
    forced: np.ndarray,
    optional: np.ndarray,
    expired: np.ndarray,
    ranked: np.ndarray,
    k: np.ndarray,
    w: np.ndarray,
) -> np.ndarray:
    """Expected non-compute energy of every candidate plan, summed in the authors' order.

    The authors add node by node: kept idle nodes (forced, then the kept
    optional ones), switching-on nodes, woken nodes, nodes left asleep (by
    id), nodes switched off (expired, then the optional ones not kept) and
    nodes already switching off, a transition and what follows it as two
    terms. On platforms where idle and switch-off power are equal (AOBA:
    600 W) keeping or switching off an idle node costs the same over a
    horizon shorter than the switch-off, and the choice between such plans
    falls to rounding; summing in the same order makes it the same choice.

    Rows (candidate plans) keep ``k`` (optional nodes kept) and ``w`` (nodes
    woken) non-decreasing, so each term goes to a leading slice of rows.
    """
    pw = nodes.power_w
    p_sleep, p_on, p_idle, p_off = pw[:, 0], pw[:, 1], pw[:, 2], pw[:, 4]
    acc0 = 0.0
    for e in (p_idle[forced] * h).tolist():
        acc0 += e
    # Kept optional nodes: a prefix of the optional order; sequential prefix sums.
    keep = np.add.accumulate(np.concatenate(([acc0], p_idle[optional] * h)))
    acc = keep[k].astype(float)
    t_on = np.minimum(nodes.on_remaining_s, h)
    son = nodes.switching_on
    _pairs(acc, p_on[son] * t_on, p_idle[son] * np.maximum(0.0, h - t_on))
    if len(ranked):
        # Plans that wake nodes keep every optional node: they share the sum so far.
        woke = w > 0
        if woke.any():
            t_wake = np.minimum(nodes.lead_s[ranked], h)
            wake = p_on[ranked] * t_wake + p_idle[ranked] * (h - t_wake)
            start = acc[int(np.argmax(woke))]
            acc[woke] = np.add.accumulate(np.concatenate(([start], wake)))[w[woke]]
        # Sleeping nodes in id order; node j sleeps in the plans waking fewer
        # than its rank, i.e. a leading slice of rows.
        sleeping = nodes.sleeping
        position = np.empty(len(nodes.lead_s), dtype=np.int64)
        position[ranked] = np.arange(len(ranked))
        upto = np.searchsorted(w, position[sleeping], side="right")
        for n_rows, e in zip(upto.tolist(), (p_sleep[sleeping] * h).tolist(), strict=True):
            acc[:n_rows] += e
    toff = nodes.off_s

    def down(ids: np.ndarray, left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = np.minimum(left, h)
        return p_off[ids] * t, p_sleep[ids] * np.maximum(0.0, h - t)

    _pairs(acc, *down(expired, toff[expired]))
    if len(optional):
        first, second = down(optional, toff[optional])
        upto = np.searchsorted(k, np.arange(len(optional)), side="right")
        for n_rows, a, b in zip(upto.tolist(), first.tolist(), second.tolist(), strict=True):
            acc[:n_rows] += a
            acc[:n_rows] += b
    _pairs(acc, *down(nodes.switching_off, nodes.off_remaining_s))
    return acc


def classify(nodes: SpareNodes, now: float, settings: SpareSettings):
    """Split idle nodes into expired, forced-warm and optional; rank sleeping nodes.

    Returns:
        ``(expired, forced, optional, ranked_sleeping)`` as id arrays, each in
        the order the plan uses them.
    """
    idle = nodes.idle
    if settings.respect_timeout and settings.timeout_set:
        expired_mask = now + EPS >= nodes.idle_expiry_s[idle]
        expired = idle[expired_mask]
        # Without an expired timeout an idle node may not go off: forced warm.
        forced = idle[~expired_mask]
        optional = idle[:0]
    else:
        expired = idle[:0]
        forced = idle[:0]
        optional = idle
    if len(optional) > 1:
        p_idle = nodes.power_w[optional, 2]
        optional = optional[np.lexsort((optional, -nodes.lead_s[optional], p_idle))]
    sleeping = nodes.sleeping
    if len(sleeping) > 1:
        lead = nodes.lead_s[sleeping]
        e_wake = wake_energy(nodes, sleeping)
        score = settings.alpha * lead + settings.beta * e_wake
        sleeping = sleeping[np.lexsort((sleeping, e_wake, lead, score))]
    return expired, forced, optional, sleeping


def wake_energy(nodes: SpareNodes, ids: np.ndarray) -> np.ndarray:
    """Energy of one full wake (sleeping → idle) per node: switch-on power × lead.

    The sleeping → switching_on hop takes no time on every platform the
    reader accepts, so its sleeping-power term is 0.
    """
    return nodes.power_w[ids, 0] * 0.0 + nodes.power_w[ids, 1] * nodes.lead_s[ids]


def optimise(
    nodes: SpareNodes,
    now: float,
    event: NextEvent,
    pmf: list[tuple[int, float]],
    settings: SpareSettings,
) -> SparePlan:
    """Evaluate every feasible target and return the cheapest plan.

    Args:
        nodes: The non-computing nodes and power model.
        now: Current time.
        event: The next-event model (horizon, P(arrival), residual rate).
        pmf: Node-request pmf ``[(r, p), ...]`` in summation order.
        settings: Weights and bounds.
    """
    expired, forced, optional, ranked = classify(nodes, now, settings)
    son, soff = nodes.switching_on, nodes.switching_off
    n_forced = len(son) + len(forced)
    realisable = n_forced + len(optional) + len(ranked)
    x_min = max(n_forced, min(settings.min_spares, realisable))
    x_max = max(x_min, min(settings.max_spares, realisable))
    targets = np.arange(x_min, x_max + 1)
    need = targets - n_forced
    k = np.minimum(need, len(optional))
    w = need - k

    rate = event.residual_rate
    lead = nodes.lead_s
    toff = nodes.off_s
    h = max(0.0, event.horizon_s)

    # --- readiness delays -------------------------------------------------
    d_son = _residuals(nodes.on_remaining_s, rate)
    d_exp = lead[expired] + _residuals(toff[expired], rate)
    d_soff = lead[soff] + _residuals(nodes.off_remaining_s, rate)
    d_opt_off = lead[optional] + _residuals(toff[optional], rate)
    d_wake = _residuals(lead[ranked], rate)
    d_asleep = lead[ranked]
    fixed = np.sort(np.concatenate((np.zeros(len(forced)), d_son, d_exp, d_soff)))
    n_total = len(fixed) + len(optional) + len(ranked)
    waits = np.zeros(len(targets))
    if n_total:
        ranks = [max(1, min(int(r), n_total)) for r, _ in pmf]
        stats = _order_statistics(fixed, k, w, d_opt_off, d_wake, d_asleep, sorted(set(ranks)))
        for rank, (_, p) in zip(ranks, pmf, strict=True):
            waits = waits + float(p) * stats[rank]
    waits = waits * event.p_arrival

    # --- energy over the horizon -----------------------------------------
    energies = _plan_energies(nodes, h, forced, optional, expired, ranked, k, w)

    costs = settings.alpha * waits + settings.beta * energies
    best = int(np.lexsort((targets, energies, waits, costs))[0])
    kb, wb = int(k[best]), int(w[best])
    return SparePlan(
        target=int(targets[best]),
        wake=ranked[:wb].tolist(),
        switch_off=expired.tolist() + optional[kb:].tolist(),
        keep_idle=forced.tolist() + optional[:kb].tolist(),
        expected_wait_s=float(waits[best]),
        expected_energy_j=float(energies[best]),
        cost=float(costs[best]),
        x_min=x_min,
        x_max=x_max,
        targets=targets,
        waits_s=waits,
        energies_j=energies,
        costs=costs,
    )
