"""The compiled planning kernels compute exactly what the numpy planners compute."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hpcpower import Simulation, load_platform, load_workload
from hpcpower.policies import kernels
from hpcpower.policies.planning import ReleaseMap
from hpcpower.policies.queue.fcfs_easy import FCFSEasy
from tests.conftest import DATA, job, tiny_platform

pytestmark = pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")

floats = st.sampled_from([0.0, 1.0, 2.5, 3.0, 7.0, 1e9, np.inf])


@settings(max_examples=200, deadline=None)
@given(st.lists(floats, min_size=1, max_size=40), st.lists(floats, min_size=40, max_size=40))
def test_merge_sort_is_numpys_stable_lexsort(primary, secondary):
    a = np.array(primary)
    b = np.array(secondary[: len(a)])
    assert kernels._argsort2(a, b).tolist() == np.lexsort((b, a)).tolist()


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
    assert kernels._kth(a, k) == np.partition(a, k)[k]
    assert a.tolist() == values  # the input is left alone


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5).map(float), min_size=1, max_size=300), st.data())
def test_cheapest_takes_the_r_smallest_pairs(costs, data):
    """Any ``r``, with many ties in cost: the set numpy's lexsort gives."""
    cost = np.array(costs)
    key = np.random.default_rng(len(costs)).permutation(len(cost)).astype(np.int64)
    r = data.draw(st.integers(1, len(cost)))
    want = np.lexsort((key, cost))[:r]
    got = kernels._cheapest(r, cost, key)
    assert len(got) == r
    assert sorted(got.tolist()) == sorted(want.tolist())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 5).map(float), min_size=1, max_size=300),
    st.integers(1, 40),
)
def test_cheapest_order_matches_numpy_with_and_without_partition(costs, r):
    from hpcpower.policies.planning import _cheapest_order

    cost = np.array(costs)
    key = np.random.default_rng(len(costs)).permutation(len(cost)).astype(np.int64)
    r = min(r, len(cost))
    want = _cheapest_order(r, cost, key)
    assert kernels._cheapest_order(r, cost, key).tolist() == want.tolist()


class _Checking(FCFSEasy):
    """FCFS/EASY that, at every pass, plans the whole queue both ways and compares."""

    def __init__(self) -> None:
        self.passes = 0
        self.planned = 0

    def schedule(self, view, timeout_s):
        # What IPM asks: the first appearance of the sleeping nodes (and of
        # every node, which rarely all appear), and how much was read for it.
        for wanted in (set(view.cluster.sleeping), set(range(view.cluster.n_nodes))):
            answers = []
            for compiled in (False, True):
                with kernels.use(compiled):
                    schedule = FCFSEasy.schedule(self, view, timeout_s)
                    found = schedule.first_appearances(wanted)
                    answers.append((list(found.items()), len(schedule.made)))
            assert answers[0] == answers[1]
        with kernels.use(False):
            slow = FCFSEasy.schedule(self, view, timeout_s)
            slow_plan = slow.plan
            slow_map = ReleaseMap(view, timeout_s)
        with kernels.use(True):
            fast = FCFSEasy.schedule(self, view, timeout_s)
            fast_plan = fast.plan
            fast_map = ReleaseMap(view, timeout_s)
        for name in ("release", "base_j", "gap_w", "no_gap", "tie_key"):
            assert np.array_equal(getattr(fast_map, name), getattr(slow_map, name)), name
        assert [(p.job.id, p.nodes.tolist()) for p in fast.start] == [
            (p.job.id, np.asarray(p.nodes).tolist()) for p in slow.start
        ]
        assert [(p.job.id, p.start_s, np.asarray(p.nodes).tolist()) for p in fast_plan] == [
            (p.job.id, p.start_s, np.asarray(p.nodes).tolist()) for p in slow_plan
        ]
        self.passes += 1
        self.planned += len(fast_plan)
        # Hand the simulation a fresh schedule (the plans above are spent).
        return FCFSEasy.schedule(self, view, timeout_s)


def _checked_run(platform, jobs, timeout_s=7200.0, seed=42):
    from hpcpower.policies.base import Combined
    from hpcpower.policies.power.ipm import IPM

    queue = _Checking()
    policy = Combined(queue, IPM(timeout_s), name="fcfs-easy-ipm")
    Simulation(platform, jobs, policy, seed=seed).run()
    return queue


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


job_spec = st.tuples(
    st.integers(0, 30).map(lambda x: x * 50.0),  # submit gap
    st.integers(1, 6),  # nodes
    st.integers(0, 12).map(lambda x: x * 100.0),  # runtime
    st.sampled_from([0.5, 1.0, 1.0, 2.0]),  # walltime / runtime (below 1: overruns)
)


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


def test_the_cache_check_sees_the_compiled_kernels():
    """After a run the machine code is on disk; with the kernels off nothing is pending."""
    wl = load_workload(DATA / "DAS2-fs1-0-3000.json.gz")
    wl.jobs = wl.jobs[:50]
    _checked_run(load_platform("aoba-64"), wl)
    assert kernels.cached()
    with kernels.use(False):
        assert kernels.cached()


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_gang_moves_change_the_cluster_arrays_as_numpy_does(data):
    """Allocate and release random gangs at random times, compiled and numpy: the same bits."""
    import simpy

    from hpcpower.engine.cluster import Cluster

    n = data.draw(st.integers(1, 12))
    clusters = {}
    for compiled in (False, True):
        env = simpy.Environment()
        clusters[compiled] = (env, Cluster(env, tiny_platform(n), np.random.default_rng(0)))
    running: dict[int, list[int]] = {}
    now = 0.0
    for job_id in range(data.draw(st.integers(1, 15))):
        now += data.draw(st.sampled_from([0.0, 0.1, 1.0, 3.7, 1e6]))
        free = sorted(clusters[False][1].idle)
        if free and data.draw(st.booleans()):
            gang = data.draw(st.permutations(free))[: data.draw(st.integers(1, len(free)))]
            running[job_id] = gang
            end = data.draw(st.sampled_from([np.nan, now + 5.0]))
            action = ("allocate", job_id, np.array(gang), end)
        elif running:
            done = data.draw(st.sampled_from(sorted(running)))
            action = ("release", done, np.array(running.pop(done)))
        else:
            continue
        for compiled, (env, cluster) in clusters.items():
            env._now = now
            with kernels.use(compiled):
                getattr(cluster, action[0])(*action[1:])
    (_, slow), (_, fast) = clusters[False], clusters[True]
    for name in ("_seconds", "since", "state", "job_on", "expected_end_s"):
        assert np.array_equal(getattr(slow, name), getattr(fast, name), equal_nan=True), name
    assert slow.counts == fast.counts and slow.idle == fast.idle
