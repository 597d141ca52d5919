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

Both ``W`` and ``E`` are the same floats as the authors', which matters: on
AOBA idle and switch-off power are equal, so plans that differ only in which
idle nodes stay warm can tie up to rounding, and the tie-break must fall the
same way. Each plan keeps one more optional node or wakes one more sleeping
node than the previous one, so exactly one delay changes from plan to plan.
On a 64-node cluster (a few dozen plans) the plans are swept in order with
Python floats: the sorted delays are updated by one removal and one
insertion, a plan's wait resumes the previous plan's partial sum below the
first order statistic that moved, and energies are folded node by node in
the authors' order (prefix sums where plans share a prefix). Many plans
(large clusters) are evaluated across plans with numpy instead: the r-th
smallest delay of every plan from the sorted fixed delays and the few
distinct values of the delays that change, and each energy term added to a
leading slice of the plans. Either way each plan's sums are the same
additions in the same order.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from hpcpower.planning import spareplans
from hpcpower.policies.icon.next_event import NextEvent, expected_residual

EPS = 1e-9


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
        wake_rank: Optional position of every node in the wake order
            (:func:`wake_ranks`). The order depends only on the power model
            and the weights, so a caller deciding many times can rank once;
            ``None``: sleeping nodes are ranked at each call.
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
    wake_rank: np.ndarray | None = None


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


#: One shared empty array for the (frequent) empty node classes; read-only.
_NONE = np.zeros(0)
_NONE.flags.writeable = False


def _residuals(values: np.ndarray, rate: float) -> np.ndarray:
    """``expected_residual`` of each value, with scalar math (same floats as the authors').

    Computed once per distinct value (there are few: nodes share their means).
    """
    if not len(values):
        return _NONE
    cache: dict[float, float] = {}
    out = []
    for v in values.tolist():
        r = cache.get(v)
        if r is None:
            r = cache[v] = expected_residual(v, rate)
        out.append(r)
    return np.array(out, dtype=float)


#: Up to this many candidate plans, waits and energies are summed plan by plan
#: with Python floats (see :func:`_expected_waits`, :func:`_plan_energies`);
#: above (large clusters), across plans with numpy.
_PYTHON_PLANS = 96
#: Largest (plans x values x ranks) array built at once by :func:`_order_statistics`.
_CELLS = 1 << 20


class _Delays(NamedTuple):
    """The readiness delays of every candidate plan, in one description.

    A plan's delays are the ``fixed`` ones plus a variable part: optional
    idle nodes (the first ``k`` of the plan kept at 0, the others
    ``opt_off``) and sleeping nodes (the first ``w`` of the plan woken,
    ``wake``, the others ``asleep``). ``k`` and ``w`` hold one entry per plan.
    """

    fixed: np.ndarray
    k: np.ndarray
    w: np.ndarray
    opt_off: np.ndarray
    wake: np.ndarray
    asleep: np.ndarray


def _expected_waits(
    delays: _Delays, terms: list[tuple[float, int]], compiled: bool = False
) -> np.ndarray:
    """``sum_r p(r) d_(r)`` of every candidate plan, summed in pmf order from 0 (the authors').

    ``terms`` holds ``(p, i)`` per pmf entry, ``i`` the index of its delay
    in the sorted delays (rank - 1). Order statistics are selections, not
    arithmetic, so however they are found they are the same floats; each
    plan's sum is the same sequence of additions.

    Few plans are swept in Python: from one plan to the next either ``k`` or
    ``w`` grows by one, so exactly one delay changes, and the sorted delays
    are updated in place, or by one removal and one insertion (bisection)
    when the order changes. Sorted positions below the change keep their
    values, so the partial sums of the terms reading only those are the
    previous plan's and the sum resumes from there (when the indices do not
    decrease, as with the pmf by size). Delays are never -0.0 or NaN (all
    come from ``max(0, .)`` and finite means), so equal delays are the same
    floats and their order within the list does not matter. Many plans
    get their order statistics at once from :func:`_order_statistics` (or
    its compiled twin, :func:`~hpcpower.planning.spareplans.plan_order_statistics`,
    when ``compiled``) and are summed one pmf entry at a time across plans.
    """
    fixed, k, w, opt_off, wake, asleep = delays
    if len(k) > _PYTHON_PLANS:
        ranks = sorted({i + 1 for _, i in terms})
        fixed = np.sort(fixed)
        if compiled:
            table = spareplans.plan_order_statistics(
                fixed, k, w, opt_off, wake, asleep, np.array(ranks, dtype=np.int64)
            )
            stats = dict(zip(ranks, table, strict=True))
        else:
            stats = _order_statistics(delays._replace(fixed=fixed), ranks)
        sums = np.zeros(len(k))
        for p, i in terms:
            sums = sums + p * stats[i + 1]
        return sums
    k, w = k.tolist(), w.tolist()
    opt_off, wake, asleep = opt_off.tolist(), wake.tolist(), asleep.tolist()
    k0, w0 = k[0], w[0]
    ordered = fixed.tolist() + [0.0] * k0 + opt_off[k0:] + wake[:w0] + asleep[w0:]
    ordered.sort()
    last = len(ordered) - 1
    # The delay that changes from each plan to the next: (old, new).
    changes = [
        (opt_off[k[i - 1]], 0.0) if k[i] != k[i - 1] else (asleep[w[i - 1]], wake[w[i - 1]])
        for i in range(1, len(k))
    ]
    probs = [p for p, _ in terms]
    picks = [i for _, i in terms]
    n_terms = len(terms)
    resumable = all(a <= b for a, b in zip(picks, picks[1:], strict=False))
    # partial[t]: the sum of the first t terms of the current plan.
    partial = [0.0] * (n_terms + 1)
    acc = 0.0
    for t in range(n_terms):
        acc += probs[t] * ordered[picks[t]]
        partial[t + 1] = acc
    out = [acc]
    for old, new in changes:
        moved = bisect_left(ordered, old)
        if (moved == 0 or ordered[moved - 1] <= new) and (
            moved == last or new <= ordered[moved + 1]
        ):
            ordered[moved] = new  # still sorted (equal delays are the same floats)
        else:
            del ordered[moved]
            inserted = bisect_right(ordered, new)
            ordered.insert(inserted, new)
            moved = min(moved, inserted)
        start = bisect_left(picks, moved) if resumable else 0
        acc = partial[start]
        for t in range(start, n_terms):
            acc += probs[t] * ordered[picks[t]]
            partial[t + 1] = acc
        out.append(acc)
    return np.array(out)


def _prefix_le(values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``out[i, j]``: how many of ``values[:i]`` are at most ``grid[j]`` (``n + 1`` rows)."""
    out = np.zeros((len(values) + 1, len(grid)), dtype=np.int64)
    np.cumsum(values[:, None] <= grid[None, :], axis=0, out=out[1:])
    return out


def _order_statistics(delays: _Delays, ranks: list[int]) -> dict[int, np.ndarray]:
    """The r-th smallest readiness delay of every candidate plan, for each rank r.

    For many plans (see :func:`_expected_waits`), with ``delays.fixed``
    sorted. The variable part of the delays takes few distinct values
    ``u_1 < ... < u_D`` on a uniform platform; with ``c_j`` the number of
    variable delays ``<= u_j``, the r-th smallest is the least candidate among
    ``u_j`` (if ``#fixed <= u_j`` + ``c_j >= r``) and, for each stretch
    ``[u_j, u_{j+1})``, the ``(r - c_j)``-th smallest fixed delay if it falls at
    or above ``u_j``. Work is O(plans × D) per rank.
    """
    fixed, k, w, opt_off, wake, asleep = delays
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


def _plan_energies(
    nodes: SpareNodes,
    h: float,
    forced: np.ndarray,
    optional: np.ndarray,
    expired: np.ndarray,
    ranked: np.ndarray,
    k: np.ndarray,
    w: np.ndarray,
    compiled: bool = False,
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
    woken) non-decreasing. Plans with ``w > 0`` keep every optional node, so
    they share the sum up to the woken nodes (sequential prefix sums of the
    wake terms). Few plans are then summed one by one with Python floats;
    many get each remaining term added to a leading slice of a numpy array
    of plans (one compiled loop for the sleeping and optional nodes when
    ``compiled``: :func:`~hpcpower.planning.spareplans.add_to_prefixes`).
    All add the same floats in the same order.
    """
    pw = nodes.power_w
    p_sleep, p_on, p_idle, p_off = pw[:, 0], pw[:, 1], pw[:, 2], pw[:, 4]
    toff = nodes.off_s

    def transition(ids: np.ndarray, p_during, p_after, left: np.ndarray) -> np.ndarray:
        """Per node, two terms: the rest of a transition (capped at ``h``), then what follows."""
        if not len(ids):
            return _NONE
        out = np.empty(2 * len(ids))
        t = np.minimum(left, h)
        out[0::2] = p_during[ids] * t
        out[1::2] = p_after[ids] * np.maximum(0.0, h - t)
        return out

    acc0 = 0.0
    for e in (p_idle[forced] * h).tolist():
        acc0 += e
    keep_e = p_idle[optional] * h if len(optional) else _NONE
    on_terms = transition(nodes.switching_on, p_on, p_idle, nodes.on_remaining_s)
    t_wake = np.minimum(nodes.lead_s[ranked], h)
    wake_e = p_on[ranked] * t_wake + p_idle[ranked] * (h - t_wake)
    sleeping = nodes.sleeping
    sleep_e = p_sleep[sleeping] * h  # by id
    # Switched off in every plan: expired nodes, then (after the optional
    # nodes not kept) nodes already switching off.
    exp_terms = transition(expired, p_off, p_sleep, toff[expired])
    opt_terms = transition(optional, p_off, p_sleep, toff[optional])
    soff_terms = transition(nodes.switching_off, p_off, p_sleep, nodes.off_remaining_s)

    if len(k) > _PYTHON_PLANS:
        kept = np.add.accumulate(np.concatenate(([acc0], keep_e)))
        sums = kept[k]
        for e in on_terms.tolist():
            sums += e
        woke = w > 0
        if woke.any():
            start = sums[int(np.argmax(woke))]
            sums[woke] = np.add.accumulate(np.concatenate(([start], wake_e)))[w[woke]]
        # A sleeping node stays asleep in the plans waking fewer nodes than
        # its rank in the wake order (a leading slice).
        rank_of = np.empty(len(nodes.lead_s), dtype=np.int64)
        rank_of[ranked] = np.arange(len(ranked))
        upto = np.searchsorted(w, rank_of[sleeping], side="right")
        if compiled:
            spareplans.add_to_prefixes(sums, upto, sleep_e)
        else:
            for n_rows, e in zip(upto.tolist(), sleep_e.tolist(), strict=True):
                sums[:n_rows] += e
        for e in exp_terms.tolist():
            sums += e
        # Optional node j is switched off in the plans keeping at most j.
        upto = np.searchsorted(k, np.arange(len(optional)), side="right")
        if compiled:
            spareplans.add_to_prefixes(sums, np.repeat(upto, 2), opt_terms)
        else:
            opt = opt_terms.tolist()
            for j, n_rows in enumerate(upto.tolist()):
                sums[:n_rows] += opt[2 * j]
                sums[:n_rows] += opt[2 * j + 1]
        for e in soff_terms.tolist():
            sums += e
        return sums

    on_terms, exp_terms = on_terms.tolist(), exp_terms.tolist()
    opt_terms, soff_terms = opt_terms.tolist(), soff_terms.tolist()
    keep = [acc0]
    for e in keep_e.tolist():
        acc0 += e
        keep.append(acc0)
    start = keep[-1]
    for e in on_terms:
        start += e
    woken = [start]
    for e in wake_e.tolist():
        start += e
        woken.append(start)
    plan_k, plan_w = k.tolist(), w.tolist()
    out = []
    # Plans waking nobody (they come first) differ in the optional nodes kept.
    n_idle_plans = plan_w.count(0)
    sleep_e = sleep_e.tolist()
    for ki in plan_k[:n_idle_plans]:
        acc = keep[ki]
        for e in on_terms:
            acc += e
        for e in sleep_e:
            acc += e
        for e in exp_terms:
            acc += e
        for e in opt_terms[2 * ki :]:
            acc += e
        for e in soff_terms:
            acc += e
        out.append(acc)
    # The others keep every optional node and wake more nodes, one more each
    # plan: those leave the id-ordered sleeping nodes before a plan is summed.
    tail = exp_terms + soff_terms
    sleeping = sleeping.tolist()
    ranked_ids = ranked.tolist()
    n_woken = 0
    for wi in plan_w[n_idle_plans:]:
        while n_woken < wi:
            j = bisect_left(sleeping, ranked_ids[n_woken])
            del sleeping[j], sleep_e[j]
            n_woken += 1
        acc = woken[wi]
        for e in sleep_e:
            acc += e
        for e in tail:
            acc += e
        out.append(acc)
    return np.array(out)


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
        if nodes.wake_rank is not None:
            sleeping = sleeping[nodes.wake_rank[sleeping].argsort()]
        else:
            sleeping = sleeping[_wake_order(nodes.lead_s, nodes.power_w, sleeping, settings)]
    return expired, forced, optional, sleeping


def _wake_order(
    lead_s: np.ndarray, power_w: np.ndarray, ids: np.ndarray, settings: SpareSettings
) -> np.ndarray:
    """Indices sorting ``ids`` by (α·lead + β·wake energy, lead, wake energy, id).

    The wake energy of a node is switch-on power × lead; the sleeping →
    switching_on hop takes no time on every platform the reader accepts, so
    its sleeping-power term is 0.
    """
    lead = lead_s[ids]
    e_wake = power_w[ids, 0] * 0.0 + power_w[ids, 1] * lead
    score = settings.alpha * lead + settings.beta * e_wake
    return np.lexsort((ids, e_wake, lead, score))


def wake_ranks(lead_s: np.ndarray, power_w: np.ndarray, settings: SpareSettings) -> np.ndarray:
    """Position of every node in the wake order (for :attr:`SpareNodes.wake_rank`).

    The order is total (ids break ties), so sorting any set of sleeping nodes
    by these positions gives the order :func:`classify` would compute.
    """
    ids = np.arange(len(lead_s))
    rank = np.empty(len(ids), dtype=np.int64)
    rank[_wake_order(lead_s, power_w, ids, settings)] = ids
    return rank


def optimise(
    nodes: SpareNodes,
    now: float,
    event: NextEvent,
    pmf: list[tuple[int, float]],
    settings: SpareSettings,
    compiled: bool = False,
) -> SparePlan:
    """Evaluate every feasible target and return the cheapest plan.

    Args:
        nodes: The non-computing nodes and power model.
        now: Current time.
        event: The next-event model (horizon, P(arrival), residual rate).
        pmf: Node-request pmf ``[(r, p), ...]`` in summation order.
        settings: Weights and bounds.
        compiled: Order the delays and sum the energies of many plans with
            the compiled twins (:mod:`hpcpower.planning.spareplans`; the same floats).
    """
    expired, forced, optional, ranked = classify(nodes, now, settings)
    son, soff = nodes.switching_on, nodes.switching_off
    n_forced = len(son) + len(forced)
    n_opt = len(optional)
    realisable = n_forced + n_opt + len(ranked)
    x_min = max(n_forced, min(settings.min_spares, realisable))
    x_max = max(x_min, min(settings.max_spares, realisable))
    targets = np.arange(x_min, x_max + 1)
    # Per plan: optional idle nodes kept (k), then sleeping nodes woken (w).
    need = targets - n_forced
    k = np.minimum(need, n_opt)
    w = need - k

    rate = event.residual_rate
    lead = nodes.lead_s
    toff = nodes.off_s
    h = max(0.0, event.horizon_s)

    # --- readiness delays -------------------------------------------------
    def off_delays(ids: np.ndarray, left: np.ndarray) -> np.ndarray:
        """Lead time plus the residual switch-off of each node (often none)."""
        return lead[ids] + _residuals(left, rate) if len(ids) else _NONE

    d_asleep = lead[ranked]
    d_wake = _residuals(d_asleep, rate)
    d_opt_off = off_delays(optional, toff[optional])
    fixed = np.concatenate(
        (
            np.zeros(len(forced)),
            _residuals(nodes.on_remaining_s, rate),
            off_delays(expired, toff[expired]),
            off_delays(soff, nodes.off_remaining_s),
        )
    )
    n_total = len(fixed) + n_opt + len(ranked)
    if n_total:
        terms = [(float(p), max(1, min(int(r), n_total)) - 1) for r, p in pmf]
        delays = _Delays(fixed, k, w, d_opt_off, d_wake, d_asleep)
        waits = _expected_waits(delays, terms, compiled)
    else:
        waits = np.zeros(len(targets))
    waits = waits * event.p_arrival

    # --- energy over the horizon -----------------------------------------
    energies = _plan_energies(nodes, h, forced, optional, expired, ranked, k, w, compiled)

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
