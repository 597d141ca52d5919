"""Property tests: invariants every run must keep, over random small workloads and platforms.

Each test draws a small platform (1-6 nodes from ``tiny_platform``, switch-on/off
durations 0..300 s, fixed or normally distributed), a small workload (1-25 jobs,
integer submit times with ties, some jobs too large for the platform, zero
runtimes, walltimes both generous and overrun), an initial node state and one
of the registered policies with a small idle timeout, runs it, and checks one
invariant from the results alone (job table, allocations, transition log,
node intervals, state counts, summary).
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pytest
from conftest import job, tiny_platform
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpcpower import Simulation
from hpcpower.platform import STATE_LABELS, NodeState, Platform
from hpcpower.policies.registry import POLICIES, make_policy
from hpcpower.workload.job import Job

POLICY_NAMES = sorted(POLICIES)
ALWAYS_ON = sorted(
    name for name in POLICIES if make_policy(name).config().get("power") == "always-on"
)

MAX_PASSES = 20_000

#: Examples per property; raise it for a long hunt, e.g. HPCPOWER_PROPERTY_EXAMPLES=2000.
EXAMPLES = int(os.environ.get("HPCPOWER_PROPERTY_EXAMPLES", "40"))

PROPS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@dataclass(frozen=True)
class Case:
    """One drawn simulation setup; ``build()`` makes a fresh, identical simulation."""

    n_nodes: int
    on_s: float
    off_s: float
    sd: float
    initial_state: str
    policy: str
    timeout_s: float
    seed: int
    jobs: tuple[Job, ...]
    kill_at_walltime: bool = False

    def platform(self) -> Platform:
        return tiny_platform(self.n_nodes, self.on_s, self.off_s, self.sd)

    def build(self, seed: int | None = None) -> Simulation:
        sim = Simulation(
            self.platform(),
            list(self.jobs),
            make_policy(self.policy, timeout_s=self.timeout_s),
            seed=self.seed if seed is None else seed,
            initial_state=self.initial_state,
            kill_at_walltime=self.kill_at_walltime,
        )
        return _guard(sim)

    def run(self, seed: int | None = None):
        return self.build(seed).run()


def _guard(sim: Simulation) -> Simulation:
    """Fail (instead of hanging) if a policy livelocks: no small case needs this many passes."""
    decide = sim.policy.decide

    def guarded(view):
        if sim.passes > MAX_PASSES:
            raise AssertionError(
                f"more than {MAX_PASSES} controller passes: livelock at t={view.now}"
            )
        return decide(view)

    sim.policy.decide = guarded
    return sim


@st.composite
def cases(draw, policies=tuple(POLICY_NAMES), sd=None, initial_state=None, kill=False):
    n_nodes = draw(st.integers(1, 6))
    on_s = float(draw(st.integers(0, 300)))
    off_s = float(draw(st.integers(0, 300)))
    if sd is None:
        sd = draw(st.one_of(st.just(0.0), st.floats(0.5, 60.0)))
    if initial_state is None:
        initial_state = draw(st.sampled_from(["idle", "sleeping"]))
    policy = draw(st.sampled_from(list(policies)))
    timeout_s = float(draw(st.integers(0, 2000)))
    seed = draw(st.integers(0, 2**32 - 1))
    n_jobs = draw(st.integers(1, 25))
    # A small spread gives many same-instant submissions; a large one spreads them out.
    spread = draw(st.one_of(st.sampled_from([0, 10, 300]), st.integers(0, 5000)))
    submits = sorted(draw(st.lists(st.integers(0, spread), min_size=n_jobs, max_size=n_jobs)))
    jobs = []
    for i, submit in enumerate(submits):
        res = draw(st.integers(1, n_nodes + 1))
        runtime = draw(st.one_of(st.just(0), st.integers(0, 3000)))
        if runtime > 0 and draw(st.booleans()):
            reqtime = draw(st.integers(0, runtime - 1))  # the job overruns its walltime
        else:
            reqtime = runtime + draw(st.integers(0, 3000))
        jobs.append(job(i, submit, res, runtime, reqtime))
    return Case(
        n_nodes,
        on_s,
        off_s,
        sd,
        initial_state,
        policy,
        timeout_s,
        seed,
        tuple(jobs),
        kill,
    )


# ------------------------------------------------------------------ helpers
def _close(a: float, b: float, scale: float = 1.0) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9 * max(1.0, scale))


def _completed(res) -> np.ndarray:
    return np.flatnonzero(res.jobs["state"] == "completed")


def _powered_periods(case: Case, res) -> dict[int, list[tuple[float, float]]]:
    """Per node, the closed periods during which it is powered (idle or computing).

    Rebuilt from the transition log and the initial state only (not from
    ``node_intervals``): a node is powered from time 0 if it starts idle, from the
    end of each switch-on, and until the start of the next switch-off (or the end).
    """
    per_node: dict[int, list[tuple[int, float, float]]] = defaultdict(list)
    for node, kind, start, end in res.transitions:
        per_node[node].append((kind, start, end))
    periods: dict[int, list[tuple[float, float]]] = {}
    for node in range(case.n_nodes):
        out = []
        on_since = 0.0 if case.initial_state == "idle" else None
        for kind, start, end in per_node[node]:  # the log is in chronological order
            if kind == int(NodeState.SWITCHING_OFF):
                assert on_since is not None, f"node {node} switched off while not powered"
                out.append((on_since, start))
                on_since = None
            else:
                assert kind == int(NodeState.SWITCHING_ON)
                assert on_since is None, f"node {node} switched on while powered"
                on_since = end
        if on_since is not None and on_since <= res.end_s:
            out.append((on_since, res.end_s))
        periods[node] = out
    return periods


def _rows_by_node(res) -> dict[int, list[tuple[str, float, float, int]]]:
    rows: dict[int, list[tuple[str, float, float, int]]] = defaultdict(list)
    for node, state, start, end, job_id in res.node_intervals():
        rows[node].append((state, float(start), float(end), int(job_id)))
    return rows


def _freeze(value):
    """A NaN-safe, hashable, exact image of a results structure (for equality)."""
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return ("obj", tuple(_freeze(v) for v in value.tolist()))
        return (str(value.dtype), value.shape, value.tobytes())
    if isinstance(value, (float, np.floating)):
        return ("nan",) if math.isnan(value) else ("f", float(value).hex())
    if isinstance(value, np.integer):
        return int(value)
    return value


def _image(res):
    return (
        _freeze(res.summary),
        _freeze(res.job_table()),
        _freeze(res.allocations),
        _freeze(res.transitions),
        _freeze(res.state_counts),
        _freeze(res.node_intervals()),
        _freeze(res.time_in_state_s),
    )


# -------------------------------------------------------------- properties
@PROPS
@given(cases())
def test_jobs_run_on_distinct_powered_nodes_and_never_share_one(case):
    res = case.run()
    t = res.job_table()
    periods = _powered_periods(case, res)
    busy: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
    for i in _completed(res):
        gang = res.allocations[i]
        assert gang is not None, f"completed job {i} has no allocation"
        ids = [int(x) for x in gang.tolist()]
        assert len(ids) == t["res"][i], f"job {i}: {len(ids)} nodes for res {t['res'][i]}"
        assert len(set(ids)) == len(ids), f"job {i}: duplicate nodes {ids}"
        assert all(0 <= n < case.n_nodes for n in ids), f"job {i}: nodes {ids}"
        assert t["nodes"][i] == " ".join(map(str, ids))
        start, finish = float(t["start_s"][i]), float(t["finish_s"][i])
        for n in ids:
            # Idle (powered, not switching) at its start and all along its run.
            assert any(a <= start and finish <= b for a, b in periods[n]), (
                f"job {i} ran {start}..{finish} on node {n}, powered only {periods[n]}"
            )
            busy[n].append((start, finish, i))
    for n, spans in busy.items():
        spans.sort()
        for (s0, f0, j0), (s1, f1, j1) in pairwise(spans):
            assert s1 >= f0, f"node {n}: job {j0} ({s0}..{f0}) overlaps job {j1} ({s1}..{f1})"
    for i in np.flatnonzero(res.jobs["state"] != "completed"):
        assert res.allocations[i] is None


@PROPS
@given(cases())
def test_node_intervals_tile_the_run_and_match_allocations(case):
    res = case.run()
    end = res.end_s
    rows = _rows_by_node(res)
    assert set(rows) == set(range(case.n_nodes)) or end == 0.0
    for node in range(case.n_nodes):
        clock = 0.0
        for state, start, stop, job_id in rows[node]:
            assert state in STATE_LABELS
            assert start == clock, f"node {node}: gap or overlap at {clock} -> {start}"
            assert stop >= start
            assert stop > start or state == "computing", f"node {node}: empty {state} row"
            assert (job_id >= 0) == (state == "computing")
            clock = stop
        assert clock == end or (end == 0.0 and not rows[node]), f"node {node} ends at {clock}"
    # Computing rows are exactly the job allocations.
    computing = Counter(
        (node, start, stop, job_id)
        for node, spans in rows.items()
        for state, start, stop, job_id in spans
        if state == "computing"
    )
    expected = Counter()
    for i in _completed(res):
        for n in res.allocations[i].tolist():
            expected[
                (n, float(res.jobs["start_s"][i]), float(res.jobs["finish_s"][i]), int(i))
            ] += 1
    assert computing == expected
    # Switching rows are exactly the (non-empty) transitions of the log.
    switching = Counter(
        (node, state, start, stop)
        for node, spans in rows.items()
        for state, start, stop, _ in spans
        if state.startswith("switching")
    )
    logged = Counter(
        (n, STATE_LABELS[k], float(s), float(min(e, end)))
        for n, k, s, e in res.transitions
        if min(e, end) > s
    )
    assert switching == logged
    # At the middle of every job's run, each of its nodes is computing that job.
    for i in _completed(res):
        s, f = float(res.jobs["start_s"][i]), float(res.jobs["finish_s"][i])
        if f <= s:
            continue
        mid = (s + f) / 2
        for n in res.allocations[i].tolist():
            here = [r for r in rows[n] if r[1] <= mid < r[2]]
            assert len(here) == 1 and here[0][0] == "computing" and here[0][3] == i, (n, here)
    # machine_states rows agree with the intervals at every change before the end.
    for time_s, *counts in res.state_counts:
        assert sum(counts) == case.n_nodes
        if time_s >= end:
            continue
        seen = Counter(
            state
            for spans in rows.values()
            for state, start, stop, _ in spans
            if start <= time_s < stop
        )
        assert [seen[label] for label in STATE_LABELS] == counts, (time_s, seen, counts)


@PROPS
@given(cases())
def test_every_job_is_completed_or_rejected_exactly_once(case):
    res = case.run()
    s = res.summary
    too_big = {j.id for j in case.jobs if j.res > case.n_nodes}
    assert s["jobs_submitted"] == len(case.jobs)
    assert s["jobs_completed"] + s["jobs_rejected"] == s["jobs_submitted"]
    assert s["jobs_unfinished"] == 0
    assert set(res.rejected) == too_big
    assert all(str(case.n_nodes) in reason for reason in res.rejected.values())
    state = res.jobs["state"]
    assert set(np.flatnonzero(state == "rejected").tolist()) == too_big
    assert (
        set(np.flatnonzero(state == "completed").tolist()) == set(range(len(case.jobs))) - too_big
    )
    done = state == "completed"
    assert not np.isnan(res.jobs["start_s"][done]).any()
    assert not np.isnan(res.jobs["finish_s"][done]).any()
    assert np.isnan(res.jobs["start_s"][~done]).all()
    assert np.isnan(res.jobs["finish_s"][~done]).all()
    # The run ends when the last job finishes or is rejected.
    last = max(
        float(res.jobs["finish_s"][j.id]) if j.id not in too_big else j.submit_s for j in case.jobs
    )
    assert res.end_s == last


@PROPS
@given(cases())
def test_time_and_energy_balance(case):
    res = case.run()
    end = res.end_s
    platform = case.platform()
    power = platform.power_matrix()
    tis = res.time_in_state_s
    assert (tis >= 0).all()
    for node in range(case.n_nodes):
        assert math.isclose(tis[node].sum(), end, rel_tol=1e-6, abs_tol=1e-9), (node, tis[node])
    total = float(res.energy_by_state_j.sum())
    assert math.isclose(res.summary["total_energy_j"], total, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(
        sum(res.summary["energy_j"].values()),
        res.summary["total_energy_j"],
        rel_tol=1e-9,
        abs_tol=1e-9,
    )
    assert math.isclose(
        res.summary["wasted_energy_j"],
        total - res.summary["energy_j"]["computing"],
        rel_tol=1e-9,
        abs_tol=1e-6,
    )
    # Recompute seconds and joules per (node, state) from the intervals and the power table.
    seconds = np.zeros((case.n_nodes, 5))
    joules = np.zeros(5)
    for node, state, start, stop, _ in res.node_intervals():
        k = int(NodeState[state.upper()])
        seconds[node, k] += stop - start
        joules[k] += (stop - start) * platform.node_type(node).power_w[k]
    scale = max(1.0, end)
    np.testing.assert_allclose(seconds, tis, rtol=1e-6, atol=1e-6 * scale)
    np.testing.assert_allclose(
        joules, res.energy_by_state_j, rtol=1e-6, atol=1e-6 * scale * power.max()
    )
    for k, label in enumerate(STATE_LABELS):
        assert math.isclose(
            res.summary["energy_j"][label], joules[k], rel_tol=1e-6, abs_tol=1e-6 * scale
        )
    # Computing time is exactly the work done: sum of res x runtime.
    work = sum(j.res * j.runtime_s for j in case.jobs if j.res <= case.n_nodes)
    assert math.isclose(tis[:, int(NodeState.COMPUTING)].sum(), work, rel_tol=1e-9, abs_tol=1e-6)
    if end > 0:
        assert math.isclose(
            res.summary["utilization"], work / (case.n_nodes * end), rel_tol=1e-9, abs_tol=1e-12
        )


@PROPS
@given(cases(), st.data())
def test_energy_never_decreases_while_stepping_and_stepping_changes_nothing(case, data):
    reference = case.run()
    end = reference.end_s
    fractions = data.draw(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6))
    # Stops inside the run, at its end, and one past it (which must change nothing).
    stops = sorted({f * end for f in fractions} | {end / 2, end, 2 * end + 1000.0})
    sim = case.build()
    previous_energy = 0.0
    previous_time = np.zeros((case.n_nodes, 5))
    for t in stops:
        sim.run(until=t)
        res = sim.results()
        energy = res.summary["total_energy_j"]
        assert energy >= previous_energy - 1e-9 * max(1.0, energy), (t, energy, previous_energy)
        assert (res.time_in_state_s.sum(axis=1) >= previous_time.sum(axis=1) - 1e-9).all()
        assert energy <= reference.summary["total_energy_j"] * (1 + 1e-9) + 1e-9
        if not sim.finished:
            np.testing.assert_allclose(res.time_in_state_s.sum(axis=1), sim.now, rtol=1e-9)
        previous_energy, previous_time = energy, res.time_in_state_s
    final = sim.run()
    assert final.summary["total_energy_j"] >= previous_energy - 1e-9 * max(1.0, previous_energy)
    # Stopping and resuming gives exactly the result of an uninterrupted run.
    assert _image(final) == _image(reference)


@PROPS
@given(cases(), st.integers(0, 12))
def test_node_sets_and_idle_order_agree_with_the_state_array_at_every_pass(case, first_look):
    """The per-state sets and ``idle_since`` are kept beside the arrays: they never drift.

    ``idle_since`` is made when first read (here after ``first_look``
    passes, unless the policy reads it earlier) and kept up to date from then on.
    """
    from hpcpower.platform import NodeState

    sim = case.build()
    passes = 0
    while True:
        ended = sim.run_until_decision() is None
        passes += 1
        cluster = sim.cluster
        for state, members in (
            (NodeState.IDLE, cluster.idle),
            (NodeState.SLEEPING, cluster.sleeping),
            (NodeState.SWITCHING_ON, cluster.switching_on),
            (NodeState.SWITCHING_OFF, cluster.switching_off),
        ):
            assert members == set(np.flatnonzero(cluster.state == int(state)).tolist())
        if passes < first_look and not ended:
            continue
        assert set(cluster.idle_since) == cluster.idle
        since = list(cluster.idle_since.values())
        assert since == [float(cluster.since[n]) for n in cluster.idle_since]
        assert since == sorted(since)  # oldest idle first
        if ended:
            break


@PROPS
@given(cases())
def test_same_seed_gives_identical_results(case):
    first = case.run()
    second = case.run()
    assert _image(first) == _image(second)
    assert first.summary["config"]["seed"] == case.seed


@PROPS
@given(cases(sd=0.0), st.integers(0, 2**32 - 1))
def test_fixed_transition_durations_make_the_seed_irrelevant(case, other_seed):
    a = case.run()
    b = case.run(seed=other_seed)
    assert _image(a)[1:] == _image(b)[1:]  # everything but the summary's config.seed
    sa, sb = dict(a.summary), dict(b.summary)
    sa.pop("config"), sb.pop("config")
    assert _freeze(sa) == _freeze(sb)


@PROPS
@given(cases())
def test_waits_are_non_negative_and_jobs_run_exactly_their_runtime(case):
    res = case.run()
    t = res.job_table()
    for i in _completed(res):
        start, finish, submit = t["start_s"][i], t["finish_s"][i], t["submit_s"][i]
        assert start >= submit, f"job {i} started at {start} before its submission at {submit}"
        assert t["wait_s"][i] >= 0
        assert _close(finish - start, t["runtime_s"][i], finish), (i, start, finish)
        assert t["bounded_slowdown"][i] >= 1.0
    s = res.summary
    if s["jobs_completed"]:
        # Order statistics, up to the last bit of numpy's percentile interpolation.
        slack = 1e-9 * max(1.0, s["max_wait_s"])
        assert 0 <= s["mean_wait_s"] <= s["max_wait_s"] + slack
        assert 0 <= s["median_wait_s"] <= s["p95_wait_s"] + slack
        assert s["p95_wait_s"] <= s["max_wait_s"] + slack
        assert s["mean_bounded_slowdown"] >= 1.0
        assert s["makespan_s"] >= 0


@PROPS
@given(cases(kill=True))
def test_kill_at_walltime_ends_jobs_at_their_walltime(case):
    res = case.run()
    t = res.job_table()
    assert res.summary["jobs_completed"] + res.summary["jobs_rejected"] == len(case.jobs)
    for i in _completed(res):
        expected = min(t["runtime_s"][i], t["reqtime_s"][i])
        assert _close(t["finish_s"][i] - t["start_s"][i], expected, t["finish_s"][i])


@pytest.mark.parametrize("name", ["fcfs-easy", "snf"])
def test_always_on_variants_are_registered(name):
    assert name in ALWAYS_ON


@PROPS
@given(cases(policies=tuple(ALWAYS_ON), initial_state="idle"))
def test_always_on_policies_never_switch_from_idle(case):
    res = case.run()
    assert res.summary["switch_ons"] == 0
    assert res.summary["switch_offs"] == 0
    assert res.transitions == []
    assert res.summary["energy_j"]["sleeping"] == 0.0


@PROPS
@given(cases(policies=tuple(ALWAYS_ON), initial_state="sleeping"))
def test_always_on_policies_never_switch_off(case):
    res = case.run()
    assert res.summary["switch_offs"] == 0
    assert res.summary["switch_ons"] <= case.n_nodes


# ------------------------------------------------------------ regressions
def test_run_until_past_the_end_does_not_change_the_results():
    def build() -> Simulation:
        # Job 0 ends at 10 s; its node switches off for 500 s (until 510 s);
        # the run ends at 110 s, when job 1 ends, with that switch-off in flight.
        return Simulation(
            tiny_platform(2, on_s=100.0, off_s=500.0),
            [job(0, 0, 1, 10), job(1, 5, 1, 100)],
            make_policy("snf-ipm", timeout_s=0),
        )

    reference = build().run()
    assert reference.end_s == 110.0
    np.testing.assert_allclose(reference.time_in_state_s.sum(axis=1), 110.0)
    sim = build()
    sim.run(until=1000.0)
    stepped = sim.results()
    np.testing.assert_allclose(stepped.time_in_state_s.sum(axis=1), stepped.end_s)
    assert stepped.summary["total_energy_j"] == reference.summary["total_energy_j"]
