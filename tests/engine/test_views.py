"""A policy cannot change the system through its view; SimPy is what the run loop expects."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import job, tiny_platform

from hpcpower import Simulation
from hpcpower.engine import _simpy
from hpcpower.engine.contract import Decision, Policy, SystemView

#: The cluster arrays a policy sees, each of which must refuse writes.
ARRAYS = (
    "state",
    "since",
    "job_on",
    "expected_end_s",
    "transition_end_s",
    "power_w",
    "idle_w",
    "switch_on_mean_s",
    "speed",
    "ids",
)
SETS = ("idle", "sleeping", "switching_on", "switching_off")


class Vandal(Policy):
    """Tries every way of changing the system through its view; records what was refused."""

    name = "vandal"

    def __init__(self) -> None:
        self.refused: dict[str, type] = {}

    def attempt(self, what: str, action) -> None:
        try:
            action()
        except (ValueError, TypeError, AttributeError) as exc:
            self.refused[what] = type(exc)

    def decide(self, view: SystemView) -> Decision:
        cluster = view.cluster
        queue = view.queue
        for name in ARRAYS:
            array = getattr(cluster, name)
            self.attempt(f"cluster.{name}", lambda a=array: a.__setitem__(0, a[0]))
        for k, array in enumerate(cluster.node_arrays):
            self.attempt(f"node_arrays[{k}]", lambda a=array: a.__setitem__(0, a[0]))
        self.attempt("cluster.time_in_state_s", lambda: cluster.time_in_state_s.__setitem__(0, 0))
        for name in SETS:
            members = getattr(cluster, name)
            self.attempt(f"cluster.{name}.add", lambda m=members: m.add(0))
            self.attempt(f"cluster.{name}.discard", lambda m=members: m.discard(0))
        self.attempt("cluster.counts", lambda: cluster.counts.__setitem__(0, 5))
        self.attempt("cluster.idle_since", lambda: cluster.idle_since.__setitem__(0, 0.0))
        ids, res, req = queue.fcfs_columns()
        for name, array in (("ids", ids), ("res", res), ("reqtime_s", req)):
            self.attempt(f"queue column {name}", lambda a=array: a.__setitem__(0, 1))
        for k, array in enumerate(queue.slots()[:4]):
            self.attempt(f"queue slot {k}", lambda a=array: a.__setitem__(0, 1))
        self.attempt("queue.push", lambda: queue.push(next(iter(queue))))
        self.attempt("queue.remove", lambda: queue.remove(next(iter(queue))))
        self.attempt("running", lambda: view.running.__setitem__(99, None))
        self.attempt("triggers", lambda: view.triggers.add("start"))
        self.attempt("arrived", lambda: view.arrived.append(None))
        self.attempt("cluster.since rebound", lambda: setattr(cluster, "since", None))
        return Decision()


def test_a_policy_cannot_change_the_cluster_or_queue_through_its_view():
    vandal = Vandal()
    sim = Simulation(tiny_platform(3), [job(0, 0, 2, 10), job(1, 0, 3, 10)], vandal)
    sim.run_until_decision()
    expected = {
        *(f"cluster.{name}" for name in ARRAYS),
        "cluster.time_in_state_s",
        "cluster.counts",
        "cluster.idle_since",
        *(f"node_arrays[{k}]" for k in range(8)),
        *(f"cluster.{name}.{op}" for name in SETS for op in ("add", "discard")),
        *(f"queue column {name}" for name in ("ids", "res", "reqtime_s")),
        *(f"queue slot {k}" for k in range(4)),
        *("queue.push", "queue.remove", "running", "triggers", "arrived"),
        "cluster.since rebound",
    }
    assert set(vandal.refused) == expected
    # Writing to an array raises numpy's own error for read-only arrays.
    assert vandal.refused["cluster.state"] is ValueError
    # Nothing changed: both jobs still wait, every node is idle.
    assert len(sim.queue) == 2
    assert sim.cluster.counts == [0, 0, 3, 0, 0]


def test_views_follow_the_live_state():
    """The read-only arrays and sets are views: they show every change the engine makes."""
    seen = []

    class Watcher(Policy):
        name = "watcher"

        def decide(self, view: SystemView) -> Decision:
            seen.append((view.now, view.cluster.state.copy(), sorted(view.cluster.idle)))
            d = Decision()
            if view.now == 0.0 and len(view.queue):
                d.start = [(view.queue.job(0), [1])]
            return d

    Simulation(tiny_platform(2), [job(0, 0, 1, 5)], Watcher()).run()
    assert seen[0][0] == 0.0 and seen[0][1].tolist() == [2, 2] and seen[0][2] == [0, 1]
    after = [s for s in seen if s[0] == 0.0][-1]  # the repeat pass after the start
    assert after[1].tolist() == [2, 3] and after[2] == [0]


def test_a_started_gang_is_read_only():
    sim = Simulation(tiny_platform(2), [job(0, 0, 2, 5)], _StartAll())
    sim.run()
    gang = sim.gangs[0]
    with pytest.raises(ValueError, match="read-only"):
        gang[0] = 1


class _StartAll(Policy):
    name = "start-all"

    def decide(self, view: SystemView) -> Decision:
        d = Decision()
        free = sorted(view.cluster.idle)
        for queued in view.queue.fcfs():
            if queued.res <= len(free):
                d.start.append((queued, np.array(free[: queued.res])))
                free = free[queued.res :]
        return d


def test_a_field_a_policy_rebinds_lasts_only_its_own_pass():
    seen = []

    class Rebinder(Policy):
        name = "rebinder"

        def decide(self, view: SystemView) -> Decision:
            seen.append((view.cluster.n_nodes, len(view.queue)))
            view.cluster = None
            view.queue = ()
            d = Decision()
            if view.now == 0.0:
                d.call_at = [5.0]
            return d

    Simulation(tiny_platform(2), [job(0, 0, 1, 5), job(1, 10, 1, 5)], Rebinder()).run(until=6)
    assert seen == [(2, 1), (2, 1)]  # t=0 and the wake-up at t=5 both saw the real ones


def test_a_running_job_seen_by_a_policy_is_frozen():
    seen = []

    class Poker(Policy):
        name = "poker"

        def decide(self, view: SystemView) -> Decision:
            for record in view.running.values():
                try:
                    record.start_s = 0.0
                except AttributeError as exc:
                    seen.append(type(exc).__name__)
            d = Decision()
            if view.now == 0.0 and len(view.queue):
                d.start = [(view.queue.job(0), [0])]
            return d

    sim = Simulation(tiny_platform(2), [job(0, 0, 1, 5)], Poker())
    results = sim.run()
    assert seen == ["FrozenInstanceError"]  # the repeat pass at t=0 saw the job running
    assert results.jobs["start_s"].tolist() == [0.0]
    assert results.jobs["finish_s"].tolist() == [5.0]


def test_simpy_internals_are_what_the_run_loop_relies_on():
    """Fails loudly, naming what changed, if a SimPy release changes the internals used."""
    _simpy.check()


def test_the_simpy_check_names_what_changed(monkeypatch):
    import simpy

    original = simpy.Environment.__init__

    def without_eid(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self._eid = iter(range(10**9))

    monkeypatch.setattr(simpy.Environment, "__init__", without_eid)
    with pytest.raises(RuntimeError, match=r"Environment\._eid.*simpy>=4\.1,<5"):
        _simpy.check()


def test_the_snf_columns_follow_the_queue_from_the_first_time_they_are_read():
    """Kept in step through pushes and removals once asked for (made then from the queue)."""
    from hpcpower.engine.queue import JobQueue

    rng = np.random.default_rng(3)
    queue = JobQueue()
    jobs = [job(i, 0.0, int(rng.integers(1, 6)), float(rng.integers(1, 4))) for i in range(300)]
    waiting = []
    for step, new in enumerate(jobs):
        queue.push(new)
        waiting.append(new)
        if step % 3 == 2:
            gone = waiting.pop(int(rng.integers(len(waiting))))
            queue.remove(gone)
        if step >= 100 and step % 7 == 0:  # (not read before step 100)
            res, req = queue.snf_columns()
            assert res.tolist() == [j.res for j in queue.snf()]
            assert req.tolist() == [j.reqtime_s for j in queue.snf()]
            assert not res.flags.writeable and not req.flags.writeable
