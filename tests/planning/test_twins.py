"""The compiled twins of the planning algorithms compute exactly what their numpy forms compute.

The twins are plain Python functions until :func:`hpcpower.planning.compiled.load`
puts their numba dispatchers in place, so every test here reaches them
through their module (``select.select_jit``), after loading them.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import DATA, job, tiny_platform
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hpcpower import Simulation, load_platform, load_workload, make_policy
from hpcpower.planning import (
    _numba,
    compiled,
    easy,
    forward,
    gang,
    lognormal,
    markov,
    release,
    select,
    spareplans,
    wakes,
)
from hpcpower.planning.common import EPS, IDLE, SLEEPING, timeout_arg
from hpcpower.planning.release import ReleaseMap, idle_order
from hpcpower.policies.queue.fcfs_easy import FCFSEasy
from hpcpower.policies.queue.snf import plan_forward


@pytest.fixture(scope="module")
def twins():
    """The compiled twins, loaded (skips without numba)."""
    pytest.importorskip("numba")
    compiled.load()
    assert compiled.loaded()


needs_twins = pytest.mark.usefixtures("twins")

floats = st.sampled_from([0.0, 1.0, 2.5, 3.0, 7.0, 1e9, np.inf])


@needs_twins
@settings(max_examples=200, deadline=None)
@given(st.lists(floats, min_size=1, max_size=40), st.lists(floats, min_size=40, max_size=40))
def test_merge_sort_is_numpys_stable_lexsort(primary, secondary):
    a = np.array(primary)
    b = np.array(secondary[: len(a)])
    assert select._argsort2(a, b).tolist() == np.lexsort((b, a)).tolist()


@needs_twins
def test_merge_sort_of_sorted_runs_is_numpys_stable_lexsort():
    """Inputs made of a few sorted runs (as a job's candidate nodes are), ties included."""
    rng = np.random.default_rng(3)
    for size in [0, 1, 2, 3, 64, 65, 500, 1152, 2000] * 10:
        runs = rng.integers(1, 6)
        cut = np.sort(rng.integers(0, size + 1, runs - 1)) if size else []
        parts = np.split(rng.integers(0, 20, size).astype(float), cut)
        a = np.concatenate([np.sort(part) for part in parts]) if size else np.empty(0)
        b = rng.integers(0, 4, size).astype(float)  # pairs equal in both keys stay in order
        if rng.random() < 0.5:
            a = a[::-1].copy()
        assert select._argsort2(a, b).tolist() == np.lexsort((b, a)).tolist()


@needs_twins
@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.lists(floats, min_size=1, max_size=300),
        # Few distinct values, as release times of gangs are.
        st.lists(st.integers(0, 6).map(float), min_size=1, max_size=300),
    ),
    st.data(),
)
def test_selection_is_the_kth_order_statistic(values, data):
    """Any ``k``, with many or few distinct values: numpy's answer."""
    a = np.array(values)
    k = data.draw(st.integers(0, len(a) - 1))
    assert select._kth(a, k) == np.partition(a, k)[k]
    assert a.tolist() == values  # the input is left alone


@needs_twins
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5).map(float), min_size=1, max_size=300), st.data())
def test_cheapest_takes_the_r_smallest_pairs(costs, data):
    """Any ``r``, with many ties in cost: the set numpy's lexsort gives."""
    cost = np.array(costs)
    key = np.random.default_rng(len(costs)).permutation(len(cost)).astype(np.int64)
    r = data.draw(st.integers(1, len(cost)))
    want = np.lexsort((key, cost))[:r]
    got = select._cheapest(r, cost, key)
    assert len(got) == r
    assert sorted(got.tolist()) == sorted(want.tolist())


@needs_twins
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 5).map(float), min_size=1, max_size=300),
    st.integers(1, 40),
)
def test_cheapest_order_matches_numpy_with_and_without_partition(costs, r):
    cost = np.array(costs)
    key = np.random.default_rng(len(costs)).permutation(len(cost)).astype(np.int64)
    r = min(r, len(cost))
    want = select.cheapest_order(r, cost, key)
    assert select.cheapest_order_jit(r, cost, key).tolist() == want.tolist()


@needs_twins
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.integers(1, 4), st.integers(0, 2**31))
def test_key_order_is_numpys_argsort_of_the_keys(n, spread, seed):
    """Distinct keys: a permutation, or spread up to four times the nodes (a release map's)."""
    rng = np.random.default_rng(seed)
    tie_key = rng.choice(spread * n, size=n, replace=False).astype(np.int64)
    assert select.key_order(tie_key).tolist() == np.argsort(tie_key).tolist()


def _release_map_of(rel, base_j, gap_w, tie_key) -> ReleaseMap:
    """A release map (numpy form) holding the given arrays, for its node choice."""
    releases = object.__new__(ReleaseMap)
    releases.compiled = False
    releases.release = rel
    releases.base_j = base_j
    releases.gap_w = gap_w
    releases.tie_key = tie_key
    return releases


@needs_twins
@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            # Release times with ties and unknown (inf) ones.
            st.sampled_from([0.0, 10.0, 10.0, 25.0, 100.0, 1e6, np.inf]),
            st.sampled_from([0.0, 0.0, 150.0, 1500.0]),  # pre-start energy
            st.sampled_from([0.0, 100.0, 100.0, 80.0]),  # idle power (0: no gap cost)
        ),
        min_size=1,
        max_size=300,
    ),
    st.data(),
)
def test_select_jit_is_the_release_maps_node_choice(nodes, data):
    """Any ``r`` (even more than the nodes), any barrier: the nodes and start numpy picks."""
    rel, base_j, gap_w = (np.array(column) for column in zip(*nodes, strict=True))
    tie_key = np.random.default_rng(len(nodes)).permutation(len(nodes)).astype(np.int64)
    r = data.draw(st.integers(1, len(nodes) + 1))
    min_start = data.draw(st.sampled_from([0.0, 5.0, 10.0, 50.0, 2e6]))
    want = _release_map_of(rel, base_j, gap_w, tie_key).select(r, min_start)
    got_nodes, got_start = select.select_jit(rel, base_j, gap_w, tie_key, r, min_start)
    if want is None:
        assert len(got_nodes) == 0 and np.isnan(got_start)
    else:
        assert got_nodes.tolist() == want[0].tolist() and got_start == want[1]


@needs_twins
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.0, 10.0, 10.0, 25.0, 1e6, np.inf]),  # releases, tied
            st.sampled_from([0.0, 0.0, 150.0]),  # pre-start energy
            st.sampled_from([0.0, 100.0, 100.0]),  # idle power
        ),
        min_size=1,
        max_size=200,
    ),
    st.integers(1, select.FEW_NODES),
    st.sampled_from([0.0, 10.0, 50.0, 2e6]),
    st.integers(0, 2**31),
)
def test_a_few_nodes_are_chosen_as_a_wide_choice_would_choose_them(nodes, r, min_start, seed):
    """``_select_few`` (r <= FEW_NODES) against the tie-key-order path and numpy's choice.

    Costs and releases tie often, so the tie keys (spread as a release map's)
    decide; every path gives the same nodes in the same order and the same start.
    """
    rel, base_j, gap_w = (np.array(column) for column in zip(*nodes, strict=True))
    n = len(rel)
    tie_key = np.random.default_rng(seed).choice(4 * n, size=n, replace=False).astype(np.int64)
    want = _release_map_of(rel, base_j, gap_w, tie_key).select(r, min_start)
    work = (np.empty(n), np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))
    few = select._select_few(rel, base_j, gap_w, tie_key, r, min_start) if r <= n else None
    by_key = select._select_in(
        rel, base_j, gap_w, tie_key, select.key_order(tie_key), r, min_start, False, work
    )
    if want is None:
        assert few is None or (len(few[0]) == 0 and np.isnan(few[1]))
        assert len(by_key[0]) == 0
        return
    assert few[0].tolist() == want[0].tolist() and few[1] == want[1]
    # (Unordered, the tie-key path gives the same set.)
    assert sorted(by_key[0].tolist()) == sorted(want[0].tolist()) and by_key[1] == want[1]


@needs_twins
@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),  # state
            st.sampled_from([0.0, 5.0, 5.0, 12.5, 300.0]),  # since (ties)
        ),
        min_size=1,
        max_size=80,
    ),
    st.sampled_from([None, 0.0, 60.0, 600.0]),
    st.sampled_from([300.0, 1000.0]),
)
def test_idle_order_jit_is_the_idle_order(nodes, timeout_s, now):
    """Few and many (over 32) idle nodes, ties in idle time, with and without timeout."""
    state = np.array([s for s, _ in nodes], dtype=np.int8)
    since = np.array([t for _, t in nodes])
    cluster = SimpleNamespace(
        state=state, since=since, idle=set(np.flatnonzero(state == IDLE).tolist())
    )
    want = idle_order(cluster, now, timeout_s)
    got = release.idle_order_jit(state, since, timeout_arg(timeout_s), now)
    assert got.tolist() == want.tolist()


#: The arrays of a release map that its compiled twin makes, in its order.
RELEASE_ARRAYS = ("release", "base_j", "no_gap", "gap_w", "tie_key")


def _entries(got) -> list[tuple[int, float, list[int]]]:
    """A compiled projection's arrays ``(index, start, nodes, ptr)`` as entries."""
    index, starts, nodes, ptr = got
    return [
        (int(index[j]), float(starts[j]), nodes[ptr[j] : ptr[j + 1]].tolist())
        for j in range(len(index))
    ]


def _numpy_entries(plan) -> list[tuple[int, float, list[int]]]:
    """The numpy projection's ``(index, start, nodes)`` entries, as :func:`_entries` gives them."""
    return [(int(i), float(s), np.asarray(nodes).tolist()) for i, s, nodes in plan]


def _plan_arrays(plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A plan (Planned entries) as ``(nodes, ptr, starts)``.

    Entry ``k`` runs on ``nodes[ptr[k]:ptr[k + 1]]`` from ``starts[k]``.
    """
    gangs = [np.asarray(p.nodes, dtype=np.int64) for p in plan]
    flat = np.concatenate(gangs) if gangs else np.empty(0, dtype=np.int64)
    ptr = np.zeros(len(gangs) + 1, dtype=np.int64)
    np.cumsum([len(g) for g in gangs], out=ptr[1:])
    return flat, ptr, np.array([p.start_s for p in plan], dtype=float)


def _compare_twins_directly(view, timeout_s) -> None:
    """Every public twin of one FCFS/EASY pass, called on this pass, against its numpy form.

    The idle order, the release map (both overrun rules) and the node choice;
    then ``easy_pass`` against dispatch, ``reserve_head`` and ``backfill``;
    ``backfill_jit`` against the last two; ``plan_later`` and ``project_jit``
    against ``reserve_head`` and ``project``.
    """
    cluster = view.cluster
    now = view.now
    n = cluster.n_nodes
    timeout = timeout_arg(timeout_s)
    order = idle_order(cluster, now, timeout_s)
    order64 = np.asarray(order, dtype=np.int64)
    assert release.idle_order_jit(cluster.state, cluster.since, timeout, now).tolist() == (
        order.tolist()
    )
    for overrun in ("never", "now"):
        want = ReleaseMap(cluster, now, timeout_s, overrun_release=overrun, idle_nodes=order)
        got = release.release_map(now, cluster.node_arrays, overrun == "never", timeout, order64)
        for name, array in zip(RELEASE_ARRAYS, got, strict=True):
            assert np.array_equal(array, getattr(want, name)), (overrun, name)
        for r in sorted({1, max(1, n // 2), n}):
            for barrier in (now, now + 3600.0):
                pick = want.select(r, barrier)
                nodes, start = select.select_jit(
                    want.release, want.base_j, want.gap_w, want.tie_key, r, barrier
                )
                if pick is None:
                    assert len(nodes) == 0 and np.isnan(start)
                else:
                    assert nodes.tolist() == pick[0].tolist() and start == pick[1]

    if not len(view.queue):
        return
    for rule in ("never", "now"):
        _compare_easy_twins(view, timeout_s, order, rule)
        _compare_forward_plan(view, timeout_s, order, rule)


def _compare_forward_plan(view, timeout_s, order, rule) -> None:
    """``forward_plan`` after SNF dispatch against ``plan_forward``: whole, and read partly."""
    cluster = view.cluster
    now = view.now
    jobs = view.queue.snf()
    started = []
    used = 0
    for waiting in jobs:  # SNF dispatch on the idle order
        if waiting.res > len(order) - used:
            break
        started.append((order[used : used + waiting.res], waiting.reqtime_s))
        used += waiting.res
    k = len(started)
    releases = ReleaseMap(cluster, now, timeout_s, overrun_release=rule, idle_nodes=order)
    easy.occupy_started(releases, now, started)
    want = [(p.start_s, p.nodes.tolist()) for p in plan_forward(releases, jobs[k:], now)]
    res, req = (np.array(column)[k:] for column in view.queue.snf_columns())
    args = (
        now,
        cluster.node_arrays,
        rule == "never",
        timeout_arg(timeout_s),
        np.asarray(order, dtype=np.int64),
        easy.started_columns(started),
        (res, req),
    )
    starts, flat, ptr, found, entry = forward.forward_plan(*args, np.empty(0, dtype=np.int64), True)
    got = [(float(starts[j]), flat[ptr[j] : ptr[j + 1]].tolist()) for j in range(len(starts))]
    assert got == want
    assert len(found) == 0
    # Read until the sleeping nodes appeared: the plan's first entries, and
    # each node's first entry.
    asleep = np.flatnonzero(cluster.state == SLEEPING)
    _compare_forward_wakes(args, cluster, asleep)
    if not len(asleep):
        return
    starts, flat, ptr, found, entry = forward.forward_plan(*args, asleep[::-1].copy(), False)
    first: dict[int, int] = {}
    for j, (_, nodes) in enumerate(want):
        for node in nodes:
            if cluster.state[node] == SLEEPING:
                first.setdefault(node, j)
    assert list(zip(found.tolist(), entry.tolist(), strict=True)) == list(first.items())
    read = len(want) if len(first) < len(asleep) else max(first.values()) + 1
    assert len(starts) == read
    assert [(float(s), flat[ptr[j] : ptr[j + 1]].tolist()) for j, s in enumerate(starts)] == (
        want[:read]
    )


def _compare_forward_wakes(args, cluster, asleep) -> None:
    """``forward_wakes``: the plan ``forward_plan`` makes for the sleeping nodes, and its wakes.

    The wakes are :func:`~hpcpower.planning.wakes.split_wakes` (the numpy
    form) of that plan's first appearances, with the idle order handed in or
    made by the twin itself.
    """
    now = args[0]
    lead = cluster.switch_on_mean_s
    starts, flat, ptr, found, entry = forward.forward_plan(*args, asleep.copy(), False)
    due, later = wakes.split_wakes(found, starts[entry], cluster.state, lead, now)
    order = args[4]
    for make_idle in (False, True):
        given = (*args[:4], np.empty(0, dtype=np.int64), *args[5:]) if make_idle else args
        got = forward.forward_wakes(*given, lead, make_idle)
        for name, want, array in zip(
            ("starts", "flat", "ptr", "due", "later", "idle"),
            (starts, flat, ptr, due, later, order),
            got,
            strict=True,
        ):
            assert array.tolist() == want.tolist(), (make_idle, name)


def _compare_easy_twins(view, timeout_s, order, rule) -> None:
    """``easy_pass``, ``backfill_jit``, ``plan_later``, ``project_jit`` under one overrun rule."""
    cluster = view.cluster
    now = view.now
    timeout = timeout_arg(timeout_s)
    order64 = np.asarray(order, dtype=np.int64)
    n = cluster.n_nodes
    queue = view.queue
    ids, res, req = (np.array(column) for column in queue.fcfs_columns())
    # FCFS dispatch on the idle order.
    k = used = 0
    dispatched = []
    while k < len(ids) and res[k] <= len(order) - used:
        dispatched.append((order64[used : used + res[k]], float(req[k])))
        used += int(res[k])
        k += 1
    started = easy.started_columns(dispatched)  # (as the twins take them)
    got_k, m, outcome, h, c, head_start, packed = easy.easy_pass(
        now, cluster.node_arrays, timeout, queue.slots(), rule == "never"
    )
    assert (got_k, m) == (k, len(order))
    assert packed[:m].tolist() == order.tolist()
    assert packed[m : m + k].tolist() == ids[:k].tolist()
    if k == len(ids):
        assert outcome == easy.ALL_START
        return
    assert packed[m + k] == ids[k]

    # The head's reservation, and the later jobs backfilled around it.
    idle = order64[used:]
    later = (res[k + 1 :], req[k + 1 :])
    head_res, head_req = int(res[k]), float(req[k])
    base = ReleaseMap(cluster, now, timeout_s, rule, idle_nodes=order)
    pick = easy.reserve_head(base, now, dispatched, head_res)
    positions: list[int] = []
    backfilled: list[np.ndarray] = []
    if pick is not None:
        positions, backfilled = easy.backfill(now, pick[1], pick[0], idle, *later, n)
    n_head, n_backfilled, got_start, core = easy.backfill_jit(
        now, cluster.node_arrays, timeout, order64, started, head_res, idle, *later, rule == "never"
    )
    if pick is None:
        assert (n_head, n_backfilled) == (0, 0) and np.isnan(got_start)
    else:
        assert n_head == len(pick[0]) and got_start == pick[1]
        # (The head's nodes as a set: the projection orders them.)
        assert sorted(core[:n_head].tolist()) == sorted(pick[0].tolist())
        assert core[n_head : n_head + n_backfilled].tolist() == positions
        ptr = core[n_head + n_backfilled : n_head + 2 * n_backfilled + 1]
        flat = core[n_head + 2 * n_backfilled + 1 :]
        assert [flat[ptr[q] : ptr[q + 1]].tolist() for q in range(n_backfilled)] == [
            g.tolist() for g in backfilled
        ]
    if not (later[0] <= len(idle)).any():
        assert outcome == easy.PLAN_LATER
    else:
        assert outcome == easy.BACKFILLED
        assert (h, c) == (n_head, n_backfilled)
        assert np.array_equal(head_start, got_start, equal_nan=True)
        at = m + k + 1
        assert packed[at : at + c].tolist() == ids[k + 1 :][positions].tolist()
        assert packed[at + c :].tolist() == core.tolist()

    # The projection: reserving for the head after the dispatched jobs and
    # projecting every later job (plan_later), and after backfilling (project_jit).
    head = None if pick is None else (pick[0], pick[1], head_req)
    want = [] if head is None else list(easy.project(now, cluster, base, dispatched, head, later))
    got = easy.plan_later(
        now,
        cluster.node_arrays,
        timeout,
        order64,
        started,
        head_res,
        head_req,
        later,
        rule == "never",
    )
    assert _entries(got) == _numpy_entries(want)
    if head is None:
        return
    all_started = dispatched + list(zip(backfilled, later[1][positions].tolist(), strict=True))
    rest = easy.unpicked(later, positions)
    want = list(easy.project(now, cluster, base, all_started, head, rest))
    got = easy.project_jit(
        now,
        (cluster.state, cluster.since, cluster.switch_on_mean_s),
        (base.release, base.base_j, base.gap_w, base.no_gap, base.idle_w, base.tie_key),
        easy.started_columns(all_started),
        # (The head's nodes in any order: the twin orders them as the reservation did.)
        (np.sort(pick[0]).astype(np.int64), float(pick[1]), head_req, k),
        rest,
    )
    assert _entries(got) == _numpy_entries(want)


class _Checking(FCFSEasy):
    """FCFS/EASY that, at every pass, plans the whole queue both ways and compares."""

    def __init__(self) -> None:
        super().__init__()
        self.passes = 0
        self.planned = 0

    def schedule(self, view, timeout_s):
        # The same pass as the numpy form and as the compiled twins see it.
        numpy_view = dataclasses.replace(view, compiled=False)
        twins_view = dataclasses.replace(view, compiled=True)
        slow = FCFSEasy.schedule(self, numpy_view, timeout_s)
        slow_plan = slow.plan
        slow_map = ReleaseMap(view.cluster, view.now, timeout_s)
        fast = FCFSEasy.schedule(self, twins_view, timeout_s)
        fast_plan = fast.plan
        fast_map = ReleaseMap(view.cluster, view.now, timeout_s, compiled=True)
        # What IPM asks: the first appearance of the sleeping nodes (and of
        # every node, which rarely all appear), and how much was read for it.
        flat, ptr, starts = _plan_arrays(slow_plan)
        for wanted in (set(view.cluster.sleeping), set(range(view.cluster.n_nodes))):
            answers = []
            for each in (numpy_view, twins_view):
                schedule = FCFSEasy.schedule(self, each, timeout_s)
                found = schedule.first_appearances(wanted)
                answers.append((list(found.items()), len(schedule.made)))
            assert answers[0] == answers[1]
            if wanted:
                # The twin's own scan, of the numpy plan.
                nodes = np.fromiter(wanted, dtype=np.int64, count=len(wanted))
                found, entry, read = easy.first_appearances(flat, ptr, nodes)
                got = (list(zip(found.tolist(), starts[entry].tolist(), strict=True)), read)
                assert got == answers[0]
        for name in RELEASE_ARRAYS:
            assert np.array_equal(getattr(fast_map, name), getattr(slow_map, name)), name
        assert [(p.job.id, p.nodes.tolist()) for p in fast.start] == [
            (p.job.id, np.asarray(p.nodes).tolist()) for p in slow.start
        ]
        assert [(p.job.id, p.start_s, np.asarray(p.nodes).tolist()) for p in fast_plan] == [
            (p.job.id, p.start_s, np.asarray(p.nodes).tolist()) for p in slow_plan
        ]
        _compare_twins_directly(view, timeout_s)
        self.passes += 1
        self.planned += len(fast_plan)
        # Hand the simulation a fresh schedule (the plans above are spent).
        return FCFSEasy.schedule(self, view, timeout_s)


def _checked_run(platform, jobs, timeout_s=7200.0, seed=42):
    from hpcpower.policies.base import Combined
    from hpcpower.policies.power.ipm import IPM

    queue = _Checking()
    policy = Combined(queue, IPM(timeout_s), name="fcfs-easy-ipm")
    sim = Simulation(platform, jobs, policy, seed=seed, kernels="numba")
    assert sim.view.compiled
    sim.run()
    return queue


@needs_twins
@pytest.mark.parametrize(
    "platform,workload,first",
    [
        ("aoba-64", "DAS2-fs1-0-3000.json.gz", 400),
        ("taurus-64", "DAS2-fs4-0-3000.json.gz", 300),
        ("aoba-1152", "SDSC-BLUE-2000-4.2-cln-0-3000.json.gz", 250),
    ],
)
def test_projection_equals_numpy_on_real_passes(platform, workload, first):
    """Every pass of a prefix run: the same release map, starts and whole plan."""
    wl = load_workload(DATA / workload)
    wl.jobs = wl.jobs[:first]
    checked = _checked_run(load_platform(platform), wl)
    assert checked.passes > first and checked.planned > first


@needs_twins
@pytest.mark.parametrize("policy", ["snf-ipm", "snf-icon"])
def test_the_plan_and_its_wakes_in_one_call_change_no_pass(policy, monkeypatch):
    """SNF's plan and IPM's wakes in one compiled call: every pass as with the plan read first.

    On 1152 nodes, where most passes plan for sleeping nodes. The other way
    reads the plan's first appearances of the sleeping nodes and applies the
    wake rule in Python. Compared at each pass: the starts, switch-offs,
    switch-ons and wake-up times, in order, the part of the plan made, and
    the whole plan read afterwards (made with the arguments kept from the
    one call).
    """
    from hpcpower.policies.base import sleeping_ids
    from hpcpower.policies.power.ipm import IPM
    from hpcpower.policies.queue.snf import _ForwardSchedule

    wl = load_workload(DATA / "SDSC-BLUE-2000-4.2-cln-0-3000.json.gz")
    wl.jobs = wl.jobs[:100]

    def entries(plan) -> list:
        return [(p.job.id, p.start_s, np.asarray(p.nodes).tolist()) for p in plan]

    # Per run: the whole plan read after each of IPM's passes (empty when not read).
    plans_read: list[list] = []

    def passes() -> tuple[list, list]:
        plans_read.append([])
        sim = Simulation(
            load_platform("aoba-1152"), wl, make_policy(policy), seed=42, kernels="numba"
        )
        seen: list = []
        sim.on(
            "decision",
            lambda now, d: seen.append(
                (
                    now,
                    [(j.id, np.asarray(nodes).tolist()) for j, nodes in d.start],
                    list(d.switch_off),
                    list(d.switch_on),
                    [float(at) for at in d.call_at],
                    entries(d.plan),
                )
            ),
        )
        sim.run()
        return seen, plans_read[-1]

    manage = IPM.manage

    def manage_then_read(self, view, schedule, decision):
        manage(self, view, schedule, decision)
        plans_read[-1].append(entries(schedule.plan))

    def first_appearances_then_rule(self, cluster, now):
        nodes, starts = self.first_appearance_arrays(sleeping_ids(cluster))
        lead = cluster.switch_on_mean_s
        due, later = [], []
        for node, start in zip(nodes.tolist(), starts.tolist(), strict=True):
            if cluster.state[node] == SLEEPING:
                wake = start - float(lead[node])
                if wake <= now + EPS:
                    due.append(node)
                elif wake not in later:
                    later.append(wake)
        return np.array(due, dtype=np.int64), np.array(later)

    fused = _ForwardSchedule.sleeping_wakes
    calls = []

    def counted(self, *args):
        calls.append(1)
        return fused(self, *args)

    monkeypatch.setattr(_ForwardSchedule, "sleeping_wakes", counted)
    one_call = passes()
    monkeypatch.setattr(IPM, "manage", manage_then_read)
    one_call_read = passes()
    monkeypatch.setattr(_ForwardSchedule, "sleeping_wakes", first_appearances_then_rule)
    plan_first = passes()
    assert len(calls) > 1000
    assert sum(bool(p[3]) for p in one_call[0]) > 5  # (nodes woken)
    assert sum(len(p[5]) for p in one_call[0]) > 1000  # (plans made)
    # Reading the whole plan changes nothing the pass decided.
    assert [p[:5] for p in one_call_read[0]] == [p[:5] for p in one_call[0]]
    assert one_call_read == plan_first


job_spec = st.tuples(
    st.integers(0, 30).map(lambda x: x * 50.0),  # submit gap
    st.integers(1, 6),  # nodes
    st.integers(0, 12).map(lambda x: x * 100.0),  # runtime
    st.sampled_from([0.5, 1.0, 1.0, 2.0]),  # walltime / runtime (below 1: overruns)
)


@needs_twins
@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 6),
    specs=st.lists(job_spec, min_size=1, max_size=25),
    timeout=st.sampled_from([0.0, 100.0, 600.0]),
    sd=st.sampled_from([0.0, 30.0]),
)
# A job backfilled onto an idle node frees it exactly at the head's start, so
# that node ties with the head's other node in the plan, but not in the
# reservation (made before the backfill, when it was idle): the head's nodes
# keep the reservation's order.
@example(
    n=2,
    specs=[(0.0, 1, 0.0, 0.5), (0.0, 1, 100.0, 0.5), (0.0, 2, 0.0, 0.5), (0.0, 1, 100.0, 0.5)],
    timeout=0.0,
    sd=0.0,
)
def test_projection_equals_numpy_on_random_small_clusters(n, specs, timeout, sd):
    """Overruns, overdue transitions, zero timeouts: the two paths never differ."""
    jobs = []
    t = 0.0
    for i, (gap, res, runtime, ratio) in enumerate(specs):
        t += gap
        jobs.append(job(i, t, min(res, n), runtime, runtime * ratio))
    _checked_run(tiny_platform(n, sd=sd), jobs, timeout_s=timeout, seed=len(specs))


@needs_twins
def test_the_cache_check_sees_the_compiled_twins(monkeypatch):
    """After a run the machine code is on disk; a run on the numpy forms needs none.

    Twins that run has not called (the screen's) need not be compiled yet;
    machine code from other sources does not count.
    """
    wl = load_workload(DATA / "DAS2-fs1-0-3000.json.gz")
    wl.jobs = wl.jobs[:50]
    _checked_run(load_platform("aoba-64"), wl)
    assert compiled.cached()
    with monkeypatch.context() as patch:
        patch.setattr(compiled, "sources_digest", lambda: "other sources")
        assert not compiled.cached()
    sim = Simulation(
        load_platform("aoba-64"), wl, make_policy("fcfs-easy-ipm"), seed=42, kernels="numpy"
    )
    assert sim.kernels == "numpy" and not sim.view.compiled


@needs_twins
@settings(max_examples=100, deadline=None)
@given(st.data())
def test_gang_moves_change_the_cluster_arrays_as_numpy_does(data):
    """Allocate and release random gangs at random times, compiled and numpy: the same bits."""
    import simpy

    from hpcpower.engine.cluster import Cluster

    n = data.draw(st.integers(1, 12))
    clusters = {}
    for twin in (False, True):
        env = simpy.Environment()
        clusters[twin] = (
            env,
            Cluster(env, tiny_platform(n), np.random.default_rng(0), compiled=twin),
        )
    running: dict[int, list[int]] = {}
    now = 0.0
    for job_id in range(data.draw(st.integers(1, 15))):
        now += data.draw(st.sampled_from([0.0, 0.1, 1.0, 3.7, 1e6]))
        free = sorted(clusters[False][1].idle)
        if free and data.draw(st.booleans()):
            members = data.draw(st.permutations(free))[: data.draw(st.integers(1, len(free)))]
            running[job_id] = members
            end = data.draw(st.sampled_from([np.nan, now + 5.0]))
            action = ("allocate", job_id, np.array(members), end)
        elif running:
            done = data.draw(st.sampled_from(sorted(running)))
            action = ("release", done, np.array(running.pop(done)))
        else:
            continue
        for _, (env, cluster) in clusters.items():
            if now > env.now:
                env.run(until=now)
            getattr(cluster, action[0])(*action[1:])
    (_, slow), (_, fast) = clusters[False], clusters[True]
    for name in ("_seconds", "since", "state", "job_on", "expected_end_s"):
        assert np.array_equal(getattr(slow, name), getattr(fast, name), equal_nan=True), name
    assert slow.counts == fast.counts and slow.idle == fast.idle


@needs_twins
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_move_gang_jit_moves_a_gang_as_move_gang_does(data):
    """Gangs of a few nodes and of more than ``SMALL_GANG`` (the numpy form's two ways)."""
    n = data.draw(st.integers(1, 12))
    times = st.sampled_from([0.0, 0.1, 1.0, 3.7, 250.5, 1e6])
    seconds = np.array(data.draw(st.lists(times, min_size=5 * n, max_size=5 * n))).reshape(5, n)
    since = np.array(data.draw(st.lists(times, min_size=n, max_size=n)))
    state = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), np.int8)
    job_on = np.array(data.draw(st.lists(st.integers(-1, 9), min_size=n, max_size=n)), np.int64)
    ends = st.sampled_from([np.nan, 0.0, 99.5, 1e6])
    expected_end = np.array(data.draw(st.lists(ends, min_size=n, max_size=n)))
    members = data.draw(st.permutations(range(n)))[: data.draw(st.integers(1, n))]
    now = data.draw(times)
    move = (data.draw(st.integers(0, 4)), data.draw(st.integers(0, 4)))
    on_job = (data.draw(st.integers(-1, 9)), data.draw(ends))
    arrays = (seconds, since, state, job_on, expected_end)
    slow = tuple(a.copy() for a in arrays)
    fast = tuple(a.copy() for a in arrays)
    gang.move_gang(*slow, np.array(members, dtype=np.intp), list(members), now, move, on_job)
    gang.move_gang_jit(*fast, np.array(members, dtype=np.intp), now, move, on_job)
    names = ("seconds", "since", "state", "job_on", "expected_end")
    for name, a, b in zip(names, slow, fast, strict=True):
        assert np.array_equal(a, b, equal_nan=True), name


@needs_twins
@settings(max_examples=150, deadline=None)
@given(
    st.floats(-3.0, 3.0),  # mu of the log ratio
    st.sampled_from([1e-12, 1e-3, 0.25, 1.0, 2.5]),  # sigma (below the floor too)
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.floats(0.0, 1e7), st.sampled_from([1e-12, 1e-9, 3600.0])),
            st.one_of(
                st.floats(-10.0, 1e6),
                st.sampled_from([0.0, 1e-10, 1e-9, 1e7, 1e12, 1e15, math.nan]),
            ),
        ),
        min_size=16,
        max_size=60,
    ),
)
def test_remaining_times_compiled_are_the_python_ones(mu, sigma, jobs):
    """``lognormal.mean_excess_all`` through ``remaining_all``: the same floats, tails included."""
    from hpcpower.policies.icon.runtime import RuntimeModel

    model = RuntimeModel(0.1, 1e-3, 86400.0)
    model.mean_log, model.mean_log_sq = mu, mu * mu + sigma * sigma
    requested = [r for r, _ in jobs]
    elapsed = [e for _, e in jobs]
    want = model.remaining_all(requested, elapsed, 700.0)
    got = model.remaining_all(requested, elapsed, 700.0, compiled=True)
    assert repr(got) == repr(want)
    # (The twin itself, on the jobs with a request.)
    m, s = model.distribution()
    s = max(1e-9, s)
    asked = [(r, e) for r, e in jobs if r is not None]
    direct = lognormal.mean_excess_all(
        np.array([r for r, _ in asked], dtype=float),
        np.array([e for _, e in asked], dtype=float),
        m,
        s,
        0.5 * s * s,
    )
    assert repr(direct.tolist()) == repr([model.remaining(r, e, 700.0) for r, e in asked])


@needs_twins
@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(-40.0, 60.0), st.sampled_from([7.999999999, 8.0, 8.5, 1e3, 1e150])))
def test_normal_log_survival_compiled_is_the_runtime_modules(z):
    from hpcpower.policies.icon import runtime

    assert repr(lognormal.normal_log_survival(z)) == repr(runtime.normal_log_survival(z))


def test_every_twin_is_compared():
    """Each public compiled twin is called, through its module, somewhere in this file.

    So a new public twin without a comparison with its numpy form fails here.
    """
    public = [f for f in _numba._TWINS if not f.__name__.startswith("_")]
    assert public
    source = Path(__file__).read_text()
    missing = []
    for twin in public:
        module = twin.__module__.rpartition(".")[2]
        if not re.search(rf"\b{module}\.{twin.__name__}\(", source):
            missing.append(f"{module}.{twin.__name__}")
    assert not missing, f"public twins compared nowhere in {Path(__file__).name}: {missing}"


#: Screen samples: any floats, whole seconds (as trace times are), and the
#: values the screen drops or that sit on its edges.
_SAMPLES = st.one_of(
    st.floats(0.0, 1e7, allow_nan=False),
    st.integers(0, 5000).map(float),
    st.sampled_from([-1.0, np.nan, np.inf, 0.0, 1e-12]),
)


@needs_twins
@settings(max_examples=300, deadline=None)
@given(st.lists(_SAMPLES, max_size=120))
def test_small_stats_are_the_screens_python_floats(values):
    """Mean, CV, lag-1 and KS of a short series: the Python form's floats, to the bit.

    Python's ``x ** 2`` (the C library's ``pow``) and ``x * x`` differ for
    about one value in a thousand, and ``sum`` is compensated from Python
    3.12 on: random floats exercise both.
    """
    from hpcpower.policies.icon import screen

    v = [x for x in values if math.isfinite(x) and x >= 0.0]
    n, *got = markov.small_stats(np.array(values, dtype=float), 2.0, screen._NEUMAIER, 96)
    assert n == len(v)
    if n < 3 or n >= 96:
        assert all(math.isnan(x) for x in got)
        return
    want = screen._stats_small(v)
    assert [x.hex() for x in got] == [float(x).hex() for x in want]


@needs_twins
def test_small_stats_match_on_random_doubles():
    """Many long series of full-precision doubles, where ``pow`` and ``x * x`` part ways."""
    from hpcpower.policies.icon import screen

    rng = np.random.default_rng(7)
    # Short series: a square's last bit then often reaches the sum.
    for size in [3] * 20000 + [4] * 5000 + [95] * 200:
        values = rng.exponential(1000.0, size) * rng.random(size)
        n, *got = markov.small_stats(values, 2.0, screen._NEUMAIER, 96)
        want = screen._stats_small(values.tolist())
        assert [x.hex() for x in got] == [float(x).hex() for x in want]


@needs_twins
@settings(max_examples=200, deadline=None)
@given(st.lists(_SAMPLES, min_size=96, max_size=400))
def test_large_stats_are_the_screens_numpy_floats(values):
    """From 96 samples on: the numpy form's mean, CV, lag-1 and KS, to the bit."""
    from hpcpower.policies.icon import screen

    values = np.array(values, dtype=float)
    kept = values[np.isfinite(values) & (values >= 0.0)]
    if len(kept) < 2:
        return
    got = screen._stats_compiled(values)
    want = screen._stats_numpy(kept)
    assert [float(x).hex() for x in got] == [float(x).hex() for x in want]


@needs_twins
def test_large_stats_match_on_random_doubles():
    """Long windows of full-precision doubles, where a changed summing order shows."""
    from hpcpower.policies.icon import screen

    rng = np.random.default_rng(11)
    for size in [96] * 300 + [97, 128, 255, 256, 257, 999, 1000] * 40:
        values = rng.exponential(1000.0, size) * rng.random(size)
        scaled = np.empty(size)
        n, mean, cv, rho = markov.large_stats(values, scaled)
        ks = markov.ks_distance(np.exp(scaled))
        want = screen._stats_numpy(values)
        assert n == size
        assert [float(x).hex() for x in (mean, cv, rho, ks)] == [float(x).hex() for x in want]


def _wake_rule(nodes, starts, state, lead, now):
    """IPM's wake rule written plainly: due nodes, and every later wake once, in order."""
    due, later = [], []
    for node, start in zip(nodes.tolist(), starts.tolist(), strict=True):
        if state[node] == SLEEPING:
            wake = start - lead[node]
            if wake <= now + EPS:
                due.append(node)
            else:
                later.append(wake)
    return due, list(dict.fromkeys(later))


@needs_twins
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_split_wakes_jit_splits_the_wakes_as_split_wakes_does(data):
    """Plans of a few starts shared by many nodes (repeats), leads of 0 and more, any states."""
    n = data.draw(st.integers(1, 40))
    state = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=np.int8)
    lead = np.array(
        data.draw(st.lists(st.sampled_from([0.0, 1.0, 30.0, 0.1]), min_size=n, max_size=n))
    )
    nodes = np.array(data.draw(st.permutations(range(n))), dtype=np.int64)
    nodes = nodes[: data.draw(st.integers(0, n))]
    steps = data.draw(
        st.lists(st.sampled_from([0.0, 0.0, 0.0, 1e-10, 0.5, 29.9, 100.0]), min_size=len(nodes))
    )
    now = data.draw(st.sampled_from([0.0, 10.0, 1e6]))
    starts = now + np.cumsum(np.array(steps[: len(nodes)], dtype=float))
    due, later = wakes.split_wakes(nodes, starts, state, lead, now)
    due_jit, later_jit = wakes.split_wakes_jit(nodes, starts, state, lead, now)
    assert due.tolist() == due_jit.tolist()
    assert later.tolist() == later_jit.tolist()
    plain_due, plain_later = _wake_rule(nodes, starts, state, lead, now)
    assert due.tolist() == plain_due
    # Repeats that follow their equal are gone; the first of every distinct time stays, in order.
    assert list(dict.fromkeys(later.tolist())) == plain_later


def test_split_wakes_keeps_times_that_come_back_after_another():
    """Only a repeat that follows its equal is dropped: 5, 7, 5 keeps all three."""
    state = np.full(3, SLEEPING, dtype=np.int8)
    nodes = np.arange(3)
    # (Starts never decrease along a plan; a longer lead brings a wake back.)
    starts = np.array([15.0, 17.0, 17.0])
    lead = np.array([10.0, 10.0, 12.0])
    due, later = wakes.split_wakes(nodes, starts, state, lead, 0.0)
    assert due.tolist() == [] and later.tolist() == [5.0, 7.0, 5.0]
    due, later = wakes.split_wakes(
        nodes, np.array([10.0, 15.0, 15.0]), state, np.full(3, 10.0), 0.0
    )
    assert due.tolist() == [0] and later.tolist() == [5.0]


_DELAYS = st.lists(st.sampled_from([0.0, 0.5, 300.0, 1200.0, 1200.0, 1800.0, 1e9]), max_size=12)


@needs_twins
@settings(max_examples=300, deadline=None)
@given(
    _DELAYS,
    _DELAYS,
    st.lists(st.tuples(st.sampled_from([0.0, 30.0, 1200.0]), st.sampled_from([1200.0, 1260.0]))),
    st.data(),
)
def test_plan_order_statistics_are_the_numpy_forms_and_the_sorted_delays(
    fixed, opt_off, sleepers, data
):
    """Every candidate plan's r-th smallest delay: the numpy form's and a sort's, to the bit."""
    from hpcpower.policies.icon import spares

    fixed = np.sort(np.array(fixed, dtype=float))
    opt_off = np.array(opt_off, dtype=float)
    wake = np.array([a for a, _ in sleepers], dtype=float)
    asleep = np.array([b for _, b in sleepers], dtype=float)
    n_opt, n_sleep = len(opt_off), len(wake)
    first = data.draw(st.integers(0, n_opt + n_sleep))
    need = np.arange(first, data.draw(st.integers(first, n_opt + n_sleep)) + 1)
    k = np.minimum(need, n_opt)
    w = need - k
    n_total = len(fixed) + n_opt + n_sleep
    if not n_total:
        return
    ranks = sorted(data.draw(st.sets(st.integers(1, n_total), min_size=1)))
    table = spareplans.plan_order_statistics(
        fixed, k, w, opt_off, wake, asleep, np.array(ranks, dtype=np.int64)
    )
    want = spares._order_statistics(spares._Delays(fixed, k, w, opt_off, wake, asleep), ranks)
    for q, rank in enumerate(ranks):
        assert table[q].tolist() == want[rank].tolist()
    for x in range(len(k)):
        delays = np.sort(
            np.concatenate((fixed, np.zeros(k[x]), opt_off[k[x] :], wake[: w[x]], asleep[w[x] :]))
        )
        assert table[:, x].tolist() == [delays[r - 1] for r in ranks]


@needs_twins
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.data())
def test_add_to_prefixes_adds_as_numpy_slices_do(n_plans, data):
    """Each term to its leading plans, in turn: numpy's slice additions, to the bit."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n_terms = data.draw(st.integers(0, 30))
    sums = rng.exponential(1e6, n_plans)
    terms = rng.exponential(1e5, n_terms) * rng.random(n_terms)
    upto = rng.integers(0, n_plans + 1, n_terms)
    want = sums.copy()
    for n_rows, e in zip(upto.tolist(), terms.tolist(), strict=True):
        want[:n_rows] += e
    spareplans.add_to_prefixes(sums, upto, terms)
    assert [x.hex() for x in sums.tolist()] == [x.hex() for x in want.tolist()]
