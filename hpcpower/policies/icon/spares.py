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
every plan comes from counts of delays at or below each distinct value, and
energies from prefix sums over the optional and sleeping orders. The wait
sums over ``r`` in the authors' order, so ``W`` is the same float; the energy
is a sum in another order, equal to the authors' up to rounding (about
1e-16 relative), which cannot change the choice short of an exact tie.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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
    pw = nodes.power_w
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
    parts = [fixed, d_opt_off, d_wake, d_asleep]
    if len(optional):
        parts.append(np.zeros(1))
    values = np.unique(np.concatenate(parts)) if n_total else np.zeros(0)

    waits = np.zeros(len(targets))
    if n_total:
        # counts[x, u]: delays of plan x at or below values[u].
        counts = np.searchsorted(fixed, values, side="right")[None, :] + np.zeros(
            (len(targets), 1), dtype=np.int64
        )
        if len(optional):
            le = np.vstack(
                (np.zeros((1, len(values)), dtype=np.int64), np.cumsum(d_opt_off[:, None] <= values, 0))
            )
            counts += k[:, None] + (le[-1][None, :] - le[k])
        if len(ranked):
            woken = np.vstack(
                (np.zeros((1, len(values)), dtype=np.int64), np.cumsum(d_wake[:, None] <= values, 0))
            )
            asleep = np.vstack(
                (np.zeros((1, len(values)), dtype=np.int64), np.cumsum(d_asleep[:, None] <= values, 0))
            )
            counts += woken[w] + (asleep[-1][None, :] - asleep[w])
        for r, p in pmf:
            rank = max(1, min(int(r), n_total))
            waits = waits + float(p) * values[(counts < rank).sum(axis=1)]
    waits = waits * event.p_arrival

    # --- energy over the horizon -----------------------------------------
    p_sleep, p_on, p_idle, p_off = pw[:, 0], pw[:, 1], pw[:, 2], pw[:, 4]

    def down(ids: np.ndarray, left: np.ndarray) -> np.ndarray:
        t = np.minimum(left, h)
        return p_off[ids] * t + p_sleep[ids] * np.maximum(0.0, h - t)

    t_on = np.minimum(nodes.on_remaining_s, h)
    e_fixed = (
        float(np.sum(p_idle[forced] * h))
        + float(np.sum(p_on[son] * t_on + p_idle[son] * np.maximum(0.0, h - t_on)))
        + float(np.sum(down(expired, toff[expired])))
        + float(np.sum(down(soff, nodes.off_remaining_s)))
    )
    e_keep = np.concatenate(([0.0], np.cumsum(p_idle[optional] * h)))
    e_off = np.concatenate(([0.0], np.cumsum(down(optional, toff[optional]))))
    t_wake = np.minimum(lead[ranked], h)
    e_woken = np.concatenate(
        ([0.0], np.cumsum(p_on[ranked] * t_wake + p_idle[ranked] * (h - t_wake)))
    )
    e_asleep = np.concatenate(([0.0], np.cumsum(p_sleep[ranked] * h)))
    energies = (
        e_fixed + e_keep[k] + (e_off[-1] - e_off[k]) + e_woken[w] + (e_asleep[-1] - e_asleep[w])
    )

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
