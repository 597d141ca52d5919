"""Warm-spare optimisation against a brute force over every target x."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hpcpower.platform import NodeState
from hpcpower.policies.icon.next_event import expected_residual, next_event
from hpcpower.policies.icon.spares import SpareNodes, SpareSettings, optimise

SLEEP, ON, IDLE, COMP, OFF = (
    int(s)
    for s in (
        NodeState.SLEEPING,
        NodeState.SWITCHING_ON,
        NodeState.IDLE,
        NodeState.COMPUTING,
        NodeState.SWITCHING_OFF,
    )
)


def spare_nodes(rng, state, expiry, lead, off, power):
    """SpareNodes for a state vector, with random elapsed times of the transitions in progress."""
    ids = np.arange(len(state))
    son = ids[state == ON]
    soff = ids[state == OFF]
    return SpareNodes(
        ids[state == IDLE],
        expiry,
        son,
        rng.uniform(0, 1200, len(son)),
        ids[state == SLEEP],
        soff,
        rng.uniform(0, 600, len(soff)),
        lead,
        off,
        power,
    )


def random_case(seed, n=12, hetero=False):
    rng = np.random.default_rng(seed)
    state = rng.choice([SLEEP, ON, IDLE, COMP, OFF], size=n)
    ids = np.arange(n)
    now = 10_000.0
    power = np.tile([60.0, 600.0, 600.0, 2100.0, 600.0], (n, 1))
    lead = np.full(n, 1200.0)
    off = np.full(n, 600.0)
    if hetero:
        power[:, IDLE] = rng.choice([91.0, 600.0], n)
        lead = rng.choice([182.0, 1200.0], n)
        off = rng.choice([15.0, 600.0], n)
    idle = ids[state == IDLE]
    expiry = np.full(n, np.inf)
    expiry[idle] = now + rng.choice([-100.0, 0.0, 5e-10, 300.0, 7000.0], len(idle))
    nodes = spare_nodes(rng, state, expiry, lead, off, power)
    sizes = sorted(set(rng.integers(1, n + 3, 4).tolist()))
    p = rng.random(len(sizes))
    pmf = list(zip(sizes, (p / p.sum()).tolist(), strict=True))
    event = next_event(
        rng.uniform(1e-4, 3e-3),
        rng.uniform(10, 9000, 3).tolist(),
        3,
        1e-4,
        float(rng.choice([300.0, 7200.0, 86400.0])),
    )
    return nodes, now, event, pmf


def brute_force(nodes, now, event, pmf, s: SpareSettings):
    """Every target x, one plan at a time, straight from the rules."""
    eps = 1e-9
    rate, h = event.residual_rate, event.horizon_s
    pw, lead, toff = nodes.power_w, nodes.lead_s, nodes.off_s
    idle = nodes.idle.tolist()
    if s.respect_timeout and s.timeout_set:
        expired = [i for i in idle if now + eps >= nodes.idle_expiry_s[i]]
        forced = [i for i in idle if i not in expired]
        optional = []
    else:
        expired, forced, optional = [], [], list(idle)
    optional.sort(key=lambda i: (pw[i, IDLE], -lead[i], i))
    e_wake = {i: pw[i, SLEEP] * 0.0 + pw[i, ON] * lead[i] for i in nodes.sleeping.tolist()}
    ranked = sorted(
        nodes.sleeping.tolist(),
        key=lambda i: (s.alpha * lead[i] + s.beta * e_wake[i], lead[i], e_wake[i], i),
    )
    son, soff = nodes.switching_on.tolist(), nodes.switching_off.tolist()
    rem_on = dict(zip(son, nodes.on_remaining_s.tolist(), strict=True))
    rem_off = dict(zip(soff, nodes.off_remaining_s.tolist(), strict=True))
    forced_warm = len(son) + len(forced)
    realisable = forced_warm + len(optional) + len(ranked)
    lo = max(forced_warm, min(s.min_spares, realisable))
    hi = max(lo, min(s.max_spares, realisable))
    out = []
    for x in range(lo, hi + 1):
        need = max(0, x - forced_warm)
        k = min(need, len(optional))
        keep = forced + optional[:k]
        off_now = expired + optional[k:]
        wake = ranked[: need - k]
        asleep = [i for i in nodes.sleeping.tolist() if i not in wake]
        delays = sorted(
            [0.0] * len(keep)
            + [expected_residual(rem_on[i], rate) for i in son]
            + [expected_residual(lead[i], rate) for i in wake]
            + [lead[i] for i in asleep]
            + [lead[i] + expected_residual(toff[i], rate) for i in off_now]
            + [lead[i] + expected_residual(rem_off[i], rate) for i in soff]
        )
        wait = 0.0
        if delays:
            for r, p in pmf:
                wait += p * delays[max(1, min(r, len(delays))) - 1]
        wait *= event.p_arrival
        # node by node, transition and rest as two terms (the authors' order)
        energy = 0.0
        for i in keep:
            energy += pw[i, IDLE] * h
        for i in son:
            t = min(rem_on[i], h)
            energy += pw[i, ON] * t
            energy += pw[i, IDLE] * max(0.0, h - t)
        for i in wake:
            t = min(lead[i], h)
            energy += pw[i, ON] * t + pw[i, IDLE] * (h - t)
        for i in asleep:
            energy += pw[i, SLEEP] * h
        for i, left in [(i, toff[i]) for i in off_now] + [(i, rem_off[i]) for i in soff]:
            t = min(left, h)
            energy += pw[i, OFF] * t
            energy += pw[i, SLEEP] * max(0.0, h - t)
        out.append((s.alpha * wait + s.beta * energy, wait, energy, x, wake, off_now, keep))
    return out


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("respect", [True, False])
def test_vectorised_optimiser_equals_brute_force(seed, respect):
    nodes, now, event, pmf = random_case(seed, n=14, hetero=seed % 3 == 0)
    n = len(nodes.lead_s)
    s = SpareSettings(
        alpha=[10.0, 5000.0, 20000.0][seed % 3],
        beta=1.0,
        min_spares=seed % 4,
        max_spares=[n, 3, 8][seed % 3],
        respect_timeout=respect,
    )
    if s.max_spares < s.min_spares:
        s = SpareSettings(s.alpha, s.beta, s.min_spares, n, respect)
    plan = optimise(nodes, now, event, pmf, s)
    brute = brute_force(nodes, now, event, pmf, s)
    assert plan.targets.tolist() == [b[3] for b in brute]
    # the wait sums in the same order: the same floats
    assert plan.waits_s.tolist() == [b[1] for b in brute]
    # and so does the energy: plans that differ only by rounding tie-break alike
    assert plan.energies_j.tolist() == [b[2] for b in brute]
    best = min(brute)
    assert plan.target == best[3]
    assert plan.wake == best[4] and plan.switch_off == best[5] and plan.keep_idle == best[6]
    assert plan.cost == best[0]


def test_expired_nodes_always_go_off_and_smin_wakes_one():
    n = 6
    power = np.tile([60.0, 600.0, 600.0, 2100.0, 600.0], (n, 1))
    expiry = np.full(n, np.inf)
    expiry[[0, 1]] = 0.0
    nodes = SpareNodes(
        np.array([0, 1]),
        expiry,
        np.zeros(0, int),
        np.zeros(0),
        np.array([2, 3, 4, 5]),
        np.zeros(0, int),
        np.zeros(0),
        np.full(n, 1200.0),
        np.full(n, 600.0),
        power,
    )
    event = next_event(1e-6, [1e5], 1, 1e-5, 86400.0)  # arrivals very unlikely
    plan = optimise(nodes, 100.0, event, [(1, 1.0)], SpareSettings(5000.0, 1.0, 1, n))
    assert plan.switch_off == [0, 1]
    assert (plan.x_min, plan.target, plan.wake) == (1, 1, [2])  # S_min = 1 forces a wake
    plan0 = optimise(nodes, 100.0, event, [(1, 1.0)], SpareSettings(5000.0, 1.0, 0, n))
    assert plan0.target == 0 and plan0.wake == []


def test_one_optimisation_at_1152_nodes_spans_every_sleeping_node():
    """A full-size platform: the plan's range covers all sleeping nodes at a finite cost.

    (How long it takes is measured by ``benchmarks/bench_icon.py``.)
    """
    rng = np.random.default_rng(5)
    n = 1152
    state = rng.choice([SLEEP, ON, IDLE, COMP, OFF], size=n, p=[0.3, 0.03, 0.15, 0.5, 0.02])
    ids = np.arange(n)
    power = np.tile([60.0, 600.0, 600.0, 2100.0, 600.0], (n, 1))
    idle = ids[state == IDLE]
    expiry = np.full(n, np.inf)
    expiry[idle] = 1e6 + rng.uniform(-3000, 7200, len(idle))
    nodes = spare_nodes(rng, state, expiry, np.full(n, 1200.0), np.full(n, 600.0), power)
    sizes = np.unique(rng.geometric(0.35, 60))
    pmf = list(zip(sizes.tolist(), (np.ones(len(sizes)) / len(sizes)).tolist(), strict=True))
    event = next_event(1 / 800, [3000.0], 1, 1 / 7200, 4000.0)
    settings = SpareSettings(5000.0, 1.0, 1, n)
    plan = optimise(nodes, 1e6, event, pmf, settings)
    assert plan.x_max - plan.x_min == len(nodes.sleeping)
    assert math.isfinite(plan.cost)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("respect", [True, False])
@pytest.mark.parametrize("cells", [1 << 20, 1])
def test_many_plans_summed_with_numpy_give_the_same_floats(seed, respect, cells, monkeypatch):
    """Many plans: waits and energies across plans with numpy, the brute force's floats."""
    from hpcpower.policies.icon import spares

    nodes, now, event, pmf = random_case(100 + seed, n=20, hetero=seed % 2 == 0)
    s = SpareSettings(5000.0, 1.0, seed % 3, 20, respect)
    python = optimise(nodes, now, event, pmf, s)
    monkeypatch.setattr(spares, "_PYTHON_PLANS", 0)
    monkeypatch.setattr(spares, "_CELLS", cells)  # 1: the ranks one slice at a time
    vectorised = optimise(nodes, now, event, pmf, s)
    brute = brute_force(nodes, now, event, pmf, s)
    for plan in (python, vectorised):
        assert plan.waits_s.tolist() == [b[1] for b in brute]
        assert plan.energies_j.tolist() == [b[2] for b in brute]
        assert plan.target == min(brute)[3]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("respect", [True, False])
def test_many_plans_with_the_compiled_order_statistics_give_the_same_floats(
    seed, respect, monkeypatch
):
    """Many plans, their delays ordered by the compiled twin: the brute force's floats."""
    pytest.importorskip("numba")
    from hpcpower.planning import compiled
    from hpcpower.policies.icon import spares

    compiled.load()
    nodes, now, event, pmf = random_case(100 + seed, n=20, hetero=seed % 2 == 0)
    s = SpareSettings(5000.0, 1.0, seed % 3, 20, respect)
    monkeypatch.setattr(spares, "_PYTHON_PLANS", 0)
    plan = optimise(nodes, now, event, pmf, s, compiled=True)
    brute = brute_force(nodes, now, event, pmf, s)
    assert plan.waits_s.tolist() == [b[1] for b in brute]
    assert plan.energies_j.tolist() == [b[2] for b in brute]
    assert plan.target == min(brute)[3]


@pytest.mark.parametrize("seed", range(8))
def test_precomputed_wake_ranks_give_the_same_order(seed):
    from dataclasses import replace

    from hpcpower.policies.icon.spares import classify, wake_ranks

    nodes, now, _, _ = random_case(200 + seed, n=30, hetero=True)
    s = SpareSettings([10.0, 5000.0][seed % 2], 1.0, 1, 30)
    ranked = replace(nodes, wake_rank=wake_ranks(nodes.lead_s, nodes.power_w, s))
    assert [a.tolist() for a in classify(ranked, now, s)] == [
        a.tolist() for a in classify(nodes, now, s)
    ]


@pytest.mark.parametrize("seed", range(10))
def test_unsorted_pmf_and_forced_wakes_match_the_brute_force(seed):
    """Waits resume partial sums only for a pmf by size; S_min may force several wakes."""
    nodes, now, event, pmf = random_case(300 + seed, n=16, hetero=seed % 2 == 1)
    rng = np.random.default_rng(seed)
    shuffled = [pmf[i] for i in rng.permutation(len(pmf))]
    s = SpareSettings(5000.0, 1.0, 6 + seed % 5, 16, seed % 3 != 0)
    for p in (pmf, shuffled):
        plan = optimise(nodes, now, event, p, s)
        brute = brute_force(nodes, now, event, p, s)
        assert plan.waits_s.tolist() == [b[1] for b in brute]
        assert plan.energies_j.tolist() == [b[2] for b in brute]
        assert plan.target == min(brute)[3]
