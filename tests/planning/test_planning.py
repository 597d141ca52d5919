"""The gap search of EASY's projection: interval sweep against brute force."""

from __future__ import annotations

import numpy as np
import oracle
import pytest
from conftest import DATA, job, tiny_platform
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcpower import Simulation, make_policy
from hpcpower.planning import _numba
from hpcpower.planning.release import ReleaseMap, idle_order
from hpcpower.planning.timelines import TimelineLists, Timelines
from hpcpower.policies.queue.fcfs_easy import FCFSEasy


def _timelines_on(n_nodes: int, segments: list[tuple[int, float, float]]):
    """An idle cluster's timelines at time 0 (no timeout) with ``segments`` added; the cluster."""
    sim = Simulation(
        tiny_platform(n_nodes), [job(0, 0, 1, 1)], make_policy("fcfs-easy"), kernels="numpy"
    )
    cluster = sim.view.cluster
    lines = Timelines(ReleaseMap(cluster, 0.0, None), cluster, 0.0, [])
    for node, start, length in segments:
        lines.add(np.array([node]), start, start + length)
    return lines, cluster


def _timelines(n_nodes: int, segments: list[tuple[int, float, float]]) -> Timelines:
    return _timelines_on(n_nodes, segments)[0]


segment = st.tuples(
    st.integers(0, 5),
    st.integers(0, 40).map(lambda x: x * 25.0),
    st.integers(1, 12).map(lambda x: x * 25.0),
)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 6),
    segs=st.lists(segment, max_size=12),
    r=st.integers(1, 6),
    wall=st.integers(0, 12).map(lambda x: x * 25.0),
    lo=st.integers(0, 20).map(lambda x: x * 25.0),
    span=st.one_of(st.none(), st.integers(1, 40).map(lambda x: x * 25.0)),
)
def test_interval_sweep_equals_brute_force(n, segs, r, wall, lo, span):
    # Segments on one node never overlap in a real projection: keep the first of any overlap.
    kept: list[tuple[int, float, float]] = []
    for node, start, length in segs:
        node %= n
        if all(not (start < s + ln and s < start + length) for m, s, ln in kept if m == node):
            kept.append((node, start, length))
    lines, cluster = _timelines_on(n, kept)
    hi = None if span is None else lo + span
    fast = lines.earliest(r, wall, lo, hi)
    slow = oracle.earliest_by_grid(lines, cluster, None, r, wall, lo, hi)
    if slow is None:
        assert fast is None
    else:
        assert fast is not None
        assert fast[1] == slow[1]
        assert fast[0].tolist() == slow[0].tolist()


def test_a_job_fits_in_the_gap_before_a_reservation():
    """Node 0 busy 100-300; a 50 s job on 1 node fits at 0; a 150 s one also fits on node 1."""
    lines = _timelines(2, [(0, 100.0, 200.0), (1, 0.0, 400.0)])
    nodes, t = lines.earliest(1, 50.0, 0.0)
    assert t == 0.0 and nodes.tolist() == [0]
    nodes, t = lines.earliest(1, 150.0, 0.0)
    assert t == 300.0 and nodes.tolist() == [0]
    assert lines.earliest(2, 50.0, 0.0, 300.0) is None
    nodes, t = lines.earliest(2, 50.0, 0.0)
    assert t == 400.0 and sorted(nodes.tolist()) == [0, 1]


def _intervals_by_sort(lines: Timelines) -> list[tuple[int, float, float]]:
    """Free intervals from the segments by the original sort (reference for the kept arrays)."""
    start, finish = oracle.segment_arrays(lines)
    start = np.concatenate((start, np.full((len(start), 1), np.inf)), axis=1)
    finish = np.concatenate((finish, np.full((len(finish), 1), np.inf)), axis=1)
    order = np.argsort(start, axis=1, kind="stable")
    s = np.take_along_axis(start, order, axis=1)
    f = np.maximum.accumulate(np.take_along_axis(finish, order, axis=1), axis=1)
    a = np.concatenate((np.full((len(s), 1), -np.inf), f[:, :-1]), axis=1)
    ok = s > a
    node = np.broadcast_to(np.arange(len(s))[:, None], s.shape)[ok]
    return sorted(zip(node.tolist(), a[ok].tolist(), s[ok].tolist(), strict=True))


def _window_free_by_segments(lines: Timelines, nodes, start: float, finish: float) -> bool:
    s, f = oracle.segment_arrays(lines)
    s, f = s[nodes], f[nodes]
    begun = s <= start
    if (begun & (f > start)).any():
        return False
    free_until = np.where(begun, np.inf, s).min(axis=1)
    return bool((finish <= free_until + 1e-9).all())


overlapping = st.tuples(
    st.integers(0, 5),
    st.integers(0, 40).map(lambda x: x * 25.0),
    st.sampled_from([0.0, 1e-10, 5e-10, 25.0, 50.0, 100.0, 300.0, -1e-10]),
)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 6),
    segs=st.lists(overlapping, max_size=14),
    probes=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), max_size=6),
)
def test_kept_free_intervals_equal_a_rebuild_from_segments(n, segs, probes):
    # Segments may overlap (by EPS or more), be empty or touch: the kept intervals
    # must always equal the ones sorted out of the segments, and window_free must
    # answer as a scan of the segments does.
    lines = _timelines(n, [])
    for node, start, length in segs:
        lines.add(np.array([node % n]), start, start + length)
        node_ids, a, b = oracle.free_intervals(lines)
        kept = sorted(zip(node_ids.tolist(), a.tolist(), b.tolist(), strict=True))
        assert kept == _intervals_by_sort(lines)
    for t, length in probes:
        nodes = np.arange(n)
        start = t * 25.0
        assert lines.window_free(nodes, start, start + length * 25.0) == (
            _window_free_by_segments(lines, nodes, start, start + length * 25.0)
        )


def _select_by_four_keys(releases: ReleaseMap, cluster, timeout_s, r: int, min_start: float):
    """ReleaseMap.select as first written: one lexsort on (cost, rank, timeout rank, id).

    ``cluster`` and ``timeout_s`` are those the map was made with (for the tie-break keys).
    """
    ids = releases.ids
    rel = releases.release[ids]
    finite = np.isfinite(rel)
    ids, rel = ids[finite], rel[finite]
    if len(ids) < r:
        return None
    kth = np.partition(rel, r - 1)[r - 1] if r < len(rel) else rel.max()
    start = max(min_start, float(kth))
    ok = rel <= start
    ids, rel = ids[ok], rel[ok]
    gap = np.where(releases.no_gap[ids], 0.0, releases.idle_w[ids] * (start - rel))
    cost = releases.base_j[ids] + gap
    order = np.lexsort(
        (
            ids,
            oracle.timeout_rank(releases, cluster, timeout_s)[ids],
            oracle.rank(releases, cluster)[ids],
            cost,
        )
    )
    return ids[order[:r]], start


@pytest.mark.parametrize(
    "kernels",
    [
        "numpy",
        pytest.param(
            "numba",
            marks=pytest.mark.skipif(not _numba.AVAILABLE, reason="numba is not installed"),
        ),
    ],
)
def test_select_equals_the_four_key_sort_on_real_passes(kernels, monkeypatch):
    """Every node choice of an SDSC-BLUE prefix run (64 and 1152 nodes, with and without timeout).

    Run with either form of the planners: the compiled form's node choice
    (``ReleaseMap(compiled=True).select``) is checked where a policy asks it.
    SNF plans on 64 nodes in lists (checked against this form in
    ``test_the_plan_in_lists_is_the_numpy_plan_on_real_passes``); here it
    plans on the release map, so that its choices are checked too.
    """
    from hpcpower import load_platform, load_workload
    from hpcpower.policies.queue import snf

    monkeypatch.setattr(snf, "LIST_NODES", 0)
    checked = 0
    original_init = ReleaseMap.__init__
    original = ReleaseMap.select

    def recording(self, cluster, now, timeout_s, *args, **kwargs):
        original_init(self, cluster, now, timeout_s, *args, **kwargs)
        # What the tie-break keys are read from (copies of the map share it).
        self.made_from = (cluster, timeout_s)

    def checking(self, r, min_start, candidates=None):
        nonlocal checked
        got = original(self, r, min_start, candidates)
        if candidates is None:
            want = _select_by_four_keys(self, *self.made_from, r, min_start)
            assert (got is None) == (want is None)
            if got is not None:
                assert got[1] == want[1] and got[0].tolist() == want[0].tolist()
            checked += 1
        return got

    monkeypatch.setattr(ReleaseMap, "__init__", recording)
    monkeypatch.setattr(ReleaseMap, "select", checking)
    sdsc = "SDSC-BLUE-2000-4.2-cln-0-3000.json.gz"
    cases = [
        ("aoba-64", sdsc, 300, "fcfs-easy-ipm"),
        ("aoba-64", sdsc, 300, "snf-ipm"),
        ("aoba-1152", sdsc, 400, "snf-ipm"),
        ("aoba-1152", sdsc, 400, "fcfs-easy"),
    ]
    if kernels == "numba":
        # The compiled baselines plan in one call each (checked in the next
        # test); SNF-ICON's planner still selects job by job.
        cases.append(("aoba-64", "generated-markovian-3000.json.gz", 1500, "snf-icon"))
    for platform, data, jobs, policy in cases:
        workload = load_workload(DATA / data)
        workload.jobs = workload.jobs[:jobs]
        sim = Simulation(
            load_platform(platform), workload, make_policy(policy), seed=42, kernels=kernels
        )
        assert sim.kernels == kernels
        sim.run()
    assert checked > 1000


def _entries_of(starts, flat, ptr) -> list[tuple[float, list[int]]]:
    """A plan held as arrays (``forward_plan``'s) as ``(start, nodes)`` entries."""
    return [(float(starts[j]), flat[ptr[j] : ptr[j + 1]].tolist()) for j in range(len(starts))]


def _first_in(plan, asked: set[int]) -> list[tuple[int, float]]:
    """``(node, start)`` of each asked node's first appearance in ``(start, nodes)`` entries."""
    first: dict[int, float] = {}
    for at, nodes in plan:
        for node in nodes:
            if node in asked:
                first.setdefault(node, at)
    return list(first.items())


def _fake_cluster(state, since, expected_end_s, on_s, off_s, watts):
    """What a release map reads of a cluster; ``watts`` per node: (idle, switching on, off)."""
    from types import SimpleNamespace

    state = np.asarray(state, dtype=np.int8)
    watts = np.asarray(watts, dtype=float)
    return SimpleNamespace(
        state=state,
        since=np.asarray(since, dtype=float),
        expected_end_s=np.asarray(expected_end_s, dtype=float),
        switch_on_mean_s=np.asarray(on_s, dtype=float),
        switch_off_mean_s=np.asarray(off_s, dtype=float),
        idle_w=watts[:, 0].copy(),
        switching_on_w=watts[:, 1].copy(),
        switching_off_w=watts[:, 2].copy(),
        ids=np.arange(len(state)),
        n_nodes=len(state),
        counts=tuple(int((state == s).sum()) for s in range(5)),
        idle=set(np.flatnonzero(state == 2).tolist()),
    )


def test_the_plan_in_lists_is_the_numpy_plan_on_real_passes(monkeypatch):
    """Small machines without the twins plan in lists: the numpy form's map, plan and appearances.

    At every pass of SNF+IPM and SNF-ICON runs on 64 nodes (numpy kernels),
    for both overrun rules: the release map in lists equals
    :class:`ReleaseMap`'s arrays; the plan in lists, whole, equals
    ``plan_forward`` on a ``ReleaseMap`` (starts and nodes, to the bit);
    and read only to the first appearances of the sleeping nodes, it gives
    the numpy plan's first appearances and its first entries.
    """
    from hpcpower import load_platform, load_workload
    from hpcpower.planning import easy, forward, release
    from hpcpower.policies.queue import snf

    compared = 0
    original = snf.SNF.schedule

    def comparing(self, view, timeout_s):
        nonlocal compared
        got = original(self, view, timeout_s)
        if not len(view.queue):
            return got
        # (The list plan whenever jobs are left after dispatch.)
        assert isinstance(got, snf._ForwardSchedule) == (len(view.queue) > len(got.start))
        cluster, now = view.cluster, view.now
        order = release.idle_order(cluster, now, timeout_s)
        jobs = view.queue.snf()
        k = len(got.start)
        started = [(p.nodes, p.job.reqtime_s) for p in got.start]
        res, req = (np.asarray(column)[k:] for column in view.queue.snf_columns())
        asleep = np.array(sorted(cluster.sleeping), dtype=np.int64)
        asleep_set = set(asleep.tolist())
        for rule in ("never", "now"):
            releases = ReleaseMap(cluster, now, timeout_s, overrun_release=rule, idle_nodes=order)
            lists = release.release_lists(
                now, cluster, rule == "never", timeout_s is not None, order
            )
            for name, column in zip(release.LIST_ARRAYS, lists, strict=True):
                assert column == getattr(releases, name).tolist(), (rule, name)
            easy.occupy_started(releases, now, started)
            want = [
                (p.start_s, p.nodes.tolist()) for p in snf.plan_forward(releases, jobs[k:], now)
            ]
            args = (now, cluster, rule == "never", timeout_s, order, started, (res, req))
            starts, flat, ptr, _, _ = forward.forward_plan_lists(*args, asleep[:0], True)
            whole = _entries_of(starts, flat, ptr)
            assert whole == want, rule
            starts, flat, ptr, found, entry = forward.forward_plan_lists(*args, asleep, False)
            first = _first_in(want, asleep_set)
            assert list(zip(found.tolist(), starts[entry].tolist(), strict=True)) == first
            read = len(starts)
            assert whole[:read] == _entries_of(starts, flat, ptr)
            if len(asleep) and len(first) == len(asleep):  # (else the whole plan was read)
                assert whole[read - 1][1] and read == 1 + max(entry.tolist())
        compared += 1
        return got

    monkeypatch.setattr(snf.SNF, "schedule", comparing)
    for data, jobs, policy in (
        ("SDSC-BLUE-2000-4.2-cln-0-3000.json.gz", 300, "snf-ipm"),
        ("DAS2-fs1-0-3000.json.gz", 600, "snf-icon"),
    ):
        workload = load_workload(DATA / data)
        workload.jobs = workload.jobs[:jobs]
        policy = make_policy(policy)
        Simulation(load_platform("aoba-64"), workload, policy, seed=42, kernels="numpy").run()
    assert compared > 1000


#: Times with many bits (sums and products of them round), and exact ties:
#: with ``now`` 100 s and means of 30 and 12.5 s, transitions due just now.
_TIMES = st.one_of(st.floats(0.0, 5e4), st.sampled_from([0.0, 5.0, 12.5, 70.0, 87.5, 300.0]))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),  # state
            _TIMES,  # since
            # expected end - now: past its walltime, exactly now, ties, unknown
            st.one_of(st.floats(-1e3, 1e6), st.sampled_from([-50.0, 0.0, 20.0, 20.0])),
            st.sampled_from([30.0, 30.0, 61.7]),  # mean switch-on time
            st.sampled_from([12.5, 12.5, 40.3]),  # mean switch-off time
            st.sampled_from([(100.0, 150.0, 120.0), (95.3, 190.1, 101.7)]),  # idle, on, off W
        ),
        min_size=1,
        max_size=40,
    ),
    st.lists(
        st.tuples(st.integers(1, 12), st.one_of(st.floats(0.0, 1e4), st.sampled_from([0.0, 10.0]))),
        max_size=12,
    ),
    st.one_of(st.floats(0.0, 1e5), st.sampled_from([100.0, 300.0])),  # now
    st.sampled_from([None, 0.0, 60.0, 3600.0]),
    st.data(),
)
def test_a_plan_in_lists_is_plan_forward(nodes, queue, now, timeout_s, data):
    """Any states and power models, ties, transitions due now, jobs past their walltime.

    Any queue, jobs starting now, overrun rule, and wanted ids (unsorted,
    repeated, out of range): the lists are the release map's arrays, and
    the plan, whole and read to the first appearances, is ``plan_forward``'s.
    """
    from hpcpower.planning import forward, release
    from hpcpower.policies.queue import snf

    state, since, end, on_s, off_s, watts = zip(*nodes, strict=True)
    n = len(state)
    ends = [now + e if s == 3 else np.nan for s, e in zip(state, end, strict=True)]
    cluster = _fake_cluster(state, since, ends, on_s, off_s, watts)
    order = release.idle_order(cluster, now, timeout_s)
    rule = data.draw(st.sampled_from(["never", "now"]))
    # Some idle nodes start jobs now, in idle order (as SNF's dispatch takes them).
    k = data.draw(st.integers(0, len(order)))
    started = [(order[:k], data.draw(st.sampled_from([0.0, 600.0, 1e4])))] if k else []
    releases = ReleaseMap(cluster, now, timeout_s, overrun_release=rule, idle_nodes=order)
    lists = release.release_lists(now, cluster, rule == "never", timeout_s is not None, order)
    for name, column in zip(release.LIST_ARRAYS, lists, strict=True):
        assert column == getattr(releases, name).tolist(), name
    for nodes_now, walltime in started:
        releases.occupy(nodes_now, now + walltime)
    jobs = [job(j, 0, res, 1.0, reqtime=req) for j, (res, req) in enumerate(queue)]
    want = [(p.start_s, p.nodes.tolist()) for p in snf.plan_forward(releases, jobs, now)]
    columns = (
        np.array([j.res for j in jobs], dtype=np.int64),
        np.array([j.reqtime_s for j in jobs]),
    )
    wanted = np.array(data.draw(st.lists(st.integers(-2, n + 1), max_size=12)), dtype=np.int64)
    args = (now, cluster, rule == "never", timeout_s, order, started, columns, wanted)
    starts, flat, ptr, found, entry = forward.forward_plan_lists(*args, True)
    whole = _entries_of(starts, flat, ptr)
    assert whole == want
    asked = set(wanted.tolist())
    first = _first_in(want, asked)
    assert list(zip(found.tolist(), starts[entry].tolist(), strict=True)) == first
    starts, flat, ptr, found, entry = forward.forward_plan_lists(*args, False)
    assert list(zip(found.tolist(), starts[entry].tolist(), strict=True)) == first
    read = _entries_of(starts, flat, ptr)
    assert read == whole[: len(read)]
    # Read up to the entry of the last wanted node that appears, or to the end.
    wanted_here = {node for node in asked if 0 <= node < n}
    last = max(entry.tolist(), default=-1) + 1
    assert len(read) == (last if len(first) == len(wanted_here) else len(whole))


def test_transitions_due_exactly_now_take_a_full_mean_again_in_lists():
    """Hand-computed: a transition whose planned end is now is planned a whole mean further.

    At t = 100 s a node switching on since 70 s (mean 30 s) is ready at 130 s,
    its wake costing 150 W x 30 s; a node switching off since 87.5 s (mean
    12.5 s) is off at 112.5 s and ready at 142.5 s, costing 120 W x 12.5 s
    + 150 W x 30 s; a job past its walltime never releases its node.
    """
    from hpcpower.planning import release

    cluster = _fake_cluster(
        [1, 4, 3, 2],  # switching on, switching off, computing, idle
        since=[70.0, 87.5, 0.0, 50.0],
        expected_end_s=[np.nan, np.nan, 100.0, np.nan],
        on_s=[30.0] * 4,
        off_s=[12.5] * 4,
        watts=[(100.0, 150.0, 120.0)] * 4,
    )
    lists = release.release_lists(100.0, cluster, True, False, np.array([3]))
    assert lists == (
        [130.0, 142.5, np.inf, 100.0],
        [4500.0, 6000.0, 0.0, 0.0],
        [100.0, 0.0, 100.0, 100.0],
        [8, 13, 6, 3],  # rank x 4 + id: switching on 2, switching off 3, computing 1, idle 0
    )
    made = ReleaseMap(cluster, 100.0, None)
    assert [getattr(made, name).tolist() for name in release.LIST_ARRAYS] == list(lists)
    # Three nodes for a job: the idle one, then the earlier of the other two.
    assert release.select_lists(lists, 3, 100.0) == ([3, 0, 1], 142.5)
    assert release.select_lists(lists, 4, 100.0) is None


@pytest.mark.parametrize(
    "module, policies",
    [
        ("hpcpower.policies.queue.snf", ("snf-icon", "snf-ipm")),
        ("hpcpower.planning.easy", ("fcfs-easy-ipm", "fcfs-easy")),
    ],
)
def test_a_run_plans_the_same_in_lists_as_on_arrays(monkeypatch, module, policies):
    """Whole runs on 64 nodes: every pass the same with the plans in lists or on arrays.

    SNF's forward plan (on a release map in lists) and EASY's projection (on
    timelines in lists), each against its numpy form.
    """
    import importlib

    from hpcpower import load_platform, load_workload
    from hpcpower.planning.release import LIST_NODES

    planner = importlib.import_module(module)

    def run(policy, list_nodes):
        monkeypatch.setattr(planner, "LIST_NODES", list_nodes)
        workload = load_workload(DATA / "DAS2-fs1-0-3000.json.gz")
        workload.jobs = workload.jobs[:400]
        sim = Simulation(
            load_platform("aoba-64"), workload, make_policy(policy), seed=42, kernels="numpy"
        )
        sim.run()
        return sim

    for policy in policies:
        lists, arrays = run(policy, LIST_NODES), run(policy, 0)
        assert lists.passes == arrays.passes > 1000
        assert np.array_equal(lists.start_s, arrays.start_s)
        assert np.array_equal(lists.finish_s, arrays.finish_s)
        assert np.array_equal(lists.cluster.time_in_state_s, arrays.cluster.time_in_state_s)
        # (repr: the notes' NaN fields are equal only as text)
        assert repr(list(lists.decisions)) == repr(list(arrays.decisions))


@pytest.mark.skipif(not _numba.AVAILABLE, reason="numba is not installed")
def test_the_compiled_snf_plan_is_the_numpy_plan_on_real_passes(monkeypatch):
    """SNF's compiled forward plan, whole and read to the first appearances, equals the numpy one.

    At every pass of SNF+IPM runs (64 and 1152 nodes) the numpy form plans
    the same pass again (its node choices checked against the four-key
    sort), and both the whole compiled plan and the first appearances of
    the sleeping and expired nodes must be the same.
    """
    import dataclasses

    from hpcpower import load_platform, load_workload
    from hpcpower.policies.queue import snf

    compared = 0
    selects = 0
    original_schedule = snf.SNF.schedule
    original_select = ReleaseMap.select

    def checking_select(self, r, min_start, candidates=None):
        nonlocal selects
        got = original_select(self, r, min_start, candidates)
        want = _select_by_four_keys(self, self.made_from, self.timeout, r, min_start)
        assert (got is None) == (want is None)
        if got is not None:
            assert got[1] == want[1] and got[0].tolist() == want[0].tolist()
        selects += 1
        return got

    def comparing(self, view, timeout_s):
        nonlocal compared
        got = original_schedule(self, view, timeout_s)
        if not isinstance(got, snf._ForwardSchedule):
            return got
        slow = original_schedule(self, dataclasses.replace(view, compiled=False), timeout_s)
        monkeypatch.setattr(ReleaseMap, "select", checking_select)
        try:
            want = [(p.job.id, p.start_s, p.nodes.tolist()) for p in slow.plan]
        finally:
            monkeypatch.setattr(ReleaseMap, "select", original_select)
        twin = original_schedule(self, view, timeout_s)
        assert [(p.job.id, p.start_s, p.nodes.tolist()) for p in twin.plan] == want
        asleep = set(view.cluster.sleeping)
        if asleep:
            first = original_schedule(self, view, timeout_s).first_appearances(asked := asleep)
            wanted = np.array(sorted(asked), dtype=np.int64)
            assert list(first.items()) == list(slow.first_appearances(asked).items())
            assert list(first.items()) == list(twin.first_appearances(wanted).items())
            # The same as arrays, from a fresh compiled plan and from the numpy one.
            for schedule, ask in (
                (original_schedule(self, view, timeout_s), wanted),
                (slow, asked),
            ):
                nodes, starts = schedule.first_appearance_arrays(ask)
                assert list(zip(nodes.tolist(), starts.tolist(), strict=True)) == list(
                    first.items()
                )
        compared += 1
        return got

    original_init = ReleaseMap.__init__

    def recording(self, cluster, now, timeout_s, *args, **kwargs):
        original_init(self, cluster, now, timeout_s, *args, **kwargs)
        self.made_from, self.timeout = cluster, timeout_s

    monkeypatch.setattr(ReleaseMap, "__init__", recording)
    monkeypatch.setattr(snf.SNF, "schedule", comparing)
    for platform, jobs in (("aoba-64", 300), ("aoba-1152", 300)):
        workload = load_workload(DATA / "SDSC-BLUE-2000-4.2-cln-0-3000.json.gz")
        workload.jobs = workload.jobs[:jobs]
        policy = make_policy("snf-ipm")
        Simulation(load_platform(platform), workload, policy, seed=42, kernels="numba").run()
    assert compared > 300 and selects > 1000


@pytest.mark.skipif(not _numba.AVAILABLE, reason="numba is not installed")
def test_a_decisions_plan_reads_back_what_ipm_planned_and_plans_no_more(monkeypatch):
    """The entries IPM had planned are read back as they were, without planning the rest."""
    from hpcpower import load_platform, load_workload
    from hpcpower.planning import forward

    calls = 0
    original = forward.forward_plan

    def counting(*args):
        nonlocal calls
        calls += 1
        return original(*args)

    monkeypatch.setattr(forward, "forward_plan", counting)
    workload = load_workload(DATA / "SDSC-BLUE-2000-4.2-cln-0-3000.json.gz")
    workload.jobs = workload.jobs[:200]
    sim = Simulation(
        load_platform("aoba-1152"), workload, make_policy("snf-ipm"), seed=42, kernels="numba"
    )
    seen = []

    def keep(now, decision):
        if len(decision.plan):
            made = calls
            entries = [(p.job.id, p.start_s, p.nodes.tolist()) for p in decision.plan]
            assert calls == made  # (what IPM read was planned: nothing more is)
            seen.append((decision, entries))

    sim.on("decision", keep)
    sim.run()
    planned = [(d, entries) for d, entries in seen if entries]
    assert len(planned) > 20
    before = calls
    for decision, entries in planned:
        again = [(p.job.id, p.start_s, p.nodes.tolist()) for p in decision.plan]
        assert again == entries
    assert calls == before  # (no whole plan made from the cluster as it is now)


def wide_segments(top: int, lengths: list[float], max_size: int):
    """Lists of segments ``(nodes, start, length)`` on sets of nodes up to ``top``."""
    return st.lists(
        st.tuples(
            st.sets(st.integers(0, top), min_size=1),
            st.integers(0, 40).map(lambda x: x * 25.0),
            st.sampled_from(lengths),
        ),
        max_size=max_size,
    )


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(17, 24),
    segs=wide_segments(23, [0.0, 1e-10, 25.0, 100.0, 300.0, -1e-10], 10),
)
def test_kept_free_intervals_with_many_nodes_per_segment(n, segs):
    # Segments on more than 16 nodes take the array path of Timelines.add.
    lines = _timelines(n, [])
    for nodes, start, length in segs:
        lines.add(np.array(sorted({x % n for x in nodes})), start, start + length)
        node_ids, a, b = oracle.free_intervals(lines)
        kept = sorted(zip(node_ids.tolist(), a.tolist(), b.tolist(), strict=True))
        assert kept == _intervals_by_sort(lines)


# ------------------------------------------- the timelines in lists
def _intervals_of(lines) -> list[tuple[int, float, float]]:
    """Every node's free intervals ``(node, a, b)``, sorted, from either form of the timelines."""
    if isinstance(lines, TimelineLists):
        return sorted(
            (node, a, b)
            for node, (a_list, b_list) in enumerate(zip(lines._a, lines._b, strict=True))
            for a, b in zip(a_list, b_list, strict=True)
        )
    node, a, b = oracle.free_intervals(lines)
    return sorted(zip(node.tolist(), a.tolist(), b.tolist(), strict=True))


def _assert_same_answers(arrays: Timelines, lists: TimelineLists, queries) -> None:
    """The two forms keep the same intervals and answer every query alike, to the bit."""
    assert _intervals_of(lists) == _intervals_of(arrays)
    for r, wall, lo, hi in queries:
        want = arrays.earliest(r, wall, lo, hi)
        got = lists.earliest(r, wall, lo, hi)
        if want is None:
            assert got is None
        else:
            assert got is not None
            assert got[1] == want[1]
            assert got[0].tolist() == want[0].tolist()
        assert lists.earliest_start(r, wall, lo) == arrays.earliest_start(r, wall, lo)
        nodes = np.arange(min(r, lists.n_nodes))
        assert lists.window_free(nodes, lo, lo + wall) == arrays.window_free(nodes, lo, lo + wall)


query = st.tuples(
    st.integers(1, 7),
    st.integers(0, 12).map(lambda x: x * 25.0),
    st.integers(0, 40).map(lambda x: x * 25.0),
    st.one_of(st.none(), st.integers(0, 40).map(lambda x: x * 25.0 + 1e-10)),
)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 12),
    segs=wide_segments(11, [0.0, 1e-10, 5e-10, 25.0, 50.0, 100.0, 300.0, -1e-10], 14),
    queries=st.lists(query, min_size=1, max_size=5),
)
def test_the_timelines_in_lists_answer_as_the_arrays(n, segs, queries):
    # Segments may overlap (by EPS or more), be empty, touch or end before they
    # start (the rebuilds), and hold one node or many (more than 8: the search's
    # index is then made again): after each, the same intervals and answers.
    sim = Simulation(tiny_platform(n), [job(0, 0, 1, 1)], make_policy("fcfs-easy"), kernels="numpy")
    cluster = sim.view.cluster
    releases = ReleaseMap(cluster, 0.0, None)
    arrays = Timelines(releases, cluster, 0.0, [])
    lists = TimelineLists(releases, cluster, 0.0, [])
    _assert_same_answers(arrays, lists, queries)
    for nodes, start, length in segs:
        for lines in (arrays, lists):
            lines.add(np.array(sorted({x % n for x in nodes})), start, start + length)
        _assert_same_answers(arrays, lists, queries)


class _BothTimelines(FCFSEasy):
    """FCFS/EASY that, at every pass, builds both forms of the timelines and compares them.

    From the pass's state (sleeping, waking, computing, switching-off nodes),
    with the first waiting jobs starting now where they fit: the intervals,
    and the earliest start of each waiting job from now and from an hour on,
    with and without an upper bound, before and after it is placed.
    """

    checked = 0

    def schedule(self, view, timeout_s):
        queue = view.queue
        if len(queue):
            cluster = view.cluster
            now = view.now
            idle = idle_order(cluster, now, timeout_s)
            started = []
            used = 0
            for waiting in queue:
                if waiting.res > len(idle) - used:
                    break
                started.append((idle[used : used + waiting.res], waiting.reqtime_s))
                used += waiting.res
            releases = ReleaseMap(cluster, now, timeout_s, idle_nodes=idle)
            arrays = Timelines(releases, cluster, now, started)
            lists = TimelineLists(releases, cluster, now, started)
            for waiting in list(queue)[len(started) : len(started) + 6]:
                r, wall = waiting.res, waiting.reqtime_s
                queries = [(r, wall, now, None), (r, wall, now + 3600.0, now + 7200.0)]
                _assert_same_answers(arrays, lists, queries)
                placed = arrays.earliest(r, wall, now)
                if placed is not None:
                    for lines in (arrays, lists):
                        lines.add(placed[0], placed[1], placed[1] + wall)
                self.checked += 1
            _assert_same_answers(arrays, lists, [])
        return super().schedule(view, timeout_s)


def test_the_timelines_in_lists_answer_as_the_arrays_on_real_passes():
    """DAS2-fs1 on 64 nodes under FCFS/B+IPM: every pass's timelines alike in both forms."""
    from hpcpower import load_platform, load_workload
    from hpcpower.policies.base import Combined
    from hpcpower.policies.power.ipm import IPM

    workload = load_workload(DATA / "DAS2-fs1-0-3000.json.gz")
    workload.jobs = workload.jobs[:300]
    queue = _BothTimelines()
    policy = Combined(queue, IPM(3600.0), name="fcfs-easy-ipm")
    sim = Simulation(load_platform("aoba-64"), workload, policy, seed=42, kernels="numpy")
    sim.run()
    assert queue.checked > 1000
    states = set(np.flatnonzero(sim.cluster.time_in_state_s.sum(axis=0)).tolist())
    assert states == {0, 1, 2, 3, 4}  # every state was met


def test_the_timelines_in_lists_rebuild_from_a_pass_as_the_arrays():
    """A segment across every node's block at a pass: both forms rebuild alike.

    A projection places jobs in free intervals, so its rebuilds rarely
    start from the blocks a pass begins with (a transition, a running job,
    a job starting now); here every busy node is rebuilt from them.
    """
    from hpcpower import load_platform, load_workload

    workload = load_workload(DATA / "DAS2-fs1-0-3000.json.gz")
    workload.jobs = workload.jobs[:400]

    def simulation():
        return Simulation(
            load_platform("aoba-64"),
            workload,
            make_policy("fcfs-easy-ipm"),
            seed=42,
            kernels="numpy",
        )

    # Just after the first passes that switched nodes off or on (transitions
    # under way), and at instants across the run.
    switched: list[float] = []

    def keep(now: float, decision) -> None:
        if decision.switch_off or decision.switch_on:
            switched.append(now)

    sim = simulation()
    sim.on("decision", keep)
    sim.run()
    instants = sorted({*switched[:6], *np.linspace(2e5, 2.4e6, 8).tolist()})
    sim = simulation()
    seen: set[int] = set()
    for until in instants:
        sim.run(until=until + 1.0)
        cluster = sim.view.cluster
        now = sim.now
        seen.update(np.flatnonzero(cluster.counts).tolist())
        idle = idle_order(cluster, now, 7200.0)
        started = [(idle[:2], 900.0)] if len(idle) >= 2 else []
        releases = ReleaseMap(cluster, now, 7200.0, idle_nodes=idle)
        arrays = Timelines(releases, cluster, now, started)
        lists = TimelineLists(releases, cluster, now, started)
        for lines in (arrays, lists):
            lines.add(np.arange(cluster.n_nodes), now - 100.0, now + 100.0)
        _assert_same_answers(arrays, lists, [(r, 3600.0, now, None) for r in (1, 8, 64)])
    assert seen == {0, 1, 2, 3, 4}  # every state was met at some pass
