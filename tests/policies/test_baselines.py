"""Hand-computed runs of the baseline policies: exact times and joules.

Platform for every case (tests/conftest.py): computing 200 W, idle 100 W,
sleeping 10 W, switching on 150 W (100 s), switching off 120 W (50 s),
fixed durations.
"""

from __future__ import annotations

import pytest
from conftest import job, tiny_platform

from hpcpower import Simulation, make_policy


def run(n_nodes, jobs, policy, **kw):
    sim = Simulation(tiny_platform(n_nodes), jobs, policy, **kw)
    res = sim.run()
    t = res.job_table()
    return res, t["start_s"].tolist(), t["finish_s"].tolist()


def energy(res):
    return dict(
        zip(
            ("sleeping", "switching_on", "idle", "computing", "switching_off"),
            res.energy_by_state_j.tolist(),
            strict=True,
        )
    )


def test_idle_timeout_fires_and_nodes_wake_for_a_queued_job():
    """snf-ipm, timeout 300 s, 2 nodes; J0 (1 node, 100 s) at 0, J1 (2 nodes, 100 s) at 1000.

    node 0: computing 0-100, idle 100-400, off 400-450, asleep 450-1000, on 1000-1100, J1 1100-1200
    node 1: idle 0-300, off 300-350, asleep 350-1000, on 1000-1100, J1 1100-1200
    J1 needs both sleeping nodes: they are woken at 1000 = planned start 1100 - 100 s.
    computing 300 s x 200 W = 60 kJ; idle 600 s x 100 W = 60 kJ; off 100 s x 120 W = 12 kJ;
    asleep 1200 s x 10 W = 12 kJ; on 200 s x 150 W = 30 kJ.
    """
    res, start, finish = run(
        2, [job(0, 0, 1, 100), job(1, 1000, 2, 100)], make_policy("snf-ipm", timeout_s=300)
    )
    assert start == [0.0, 1100.0] and finish == [100.0, 1200.0]
    assert energy(res) == {
        "sleeping": 12000.0,
        "switching_on": 30000.0,
        "idle": 60000.0,
        "computing": 60000.0,
        "switching_off": 12000.0,
    }
    assert res.summary["mean_wait_s"] == 50.0
    assert res.summary["switch_offs"] == 2 and res.summary["switch_ons"] == 2
    assert res.transitions == [
        (1, 4, 300.0, 350.0),
        (0, 4, 400.0, 450.0),
        (0, 1, 1000.0, 1100.0),
        (1, 1, 1000.0, 1100.0),
    ]


def test_easy_backfills_past_the_reservation_without_delaying_it():
    """fcfs-easy, 4 nodes always on.

    J0 (3 nodes, 100 s) starts at 0 on nodes 0-2. At 10: J1 (4 nodes, 50 s) is the head,
    reserved at 100 on all nodes; J2 (1 node, walltime 90 s) ends by 100 on reserved
    node 3, so it backfills at 10; J3 (1 node, walltime 100 s) would end at 110 > 100, so
    it waits. J1 runs 100-150, J3 150-200.
    Energy: 630 node-seconds computing (126 kJ), 170 idle (17 kJ).
    """
    jobs = [job(0, 0, 3, 100), job(1, 10, 4, 50), job(2, 10, 1, 80, 90), job(3, 10, 1, 50, 100)]
    res, start, finish = run(4, jobs, make_policy("fcfs-easy"))
    assert start == [0.0, 100.0, 10.0, 150.0]
    assert finish == [100.0, 150.0, 90.0, 200.0]
    assert res.allocations[2].tolist() == [3]
    assert energy(res)["computing"] == 126000.0 and energy(res)["idle"] == 17000.0
    assert res.summary["mean_wait_s"] == pytest.approx((0 + 90 + 0 + 140) / 4)


def test_fcfs_without_room_keeps_arrival_order_but_snf_starts_the_small_job():
    """3 nodes; J0 (2 nodes, 100 s) at 0; at 10 J1 (2 nodes, 10 s) then J2 (1 node, 10 s).

    SNF orders J2 (1 node) before J1 and starts it at 10 on the free node; J1 waits
    for J0 and starts at 100. Two 1-node jobs with walltimes 30 and 20 arriving at 10
    on one free node: the shorter walltime goes first (SNF's second key).
    """
    jobs = [job(0, 0, 2, 100), job(1, 10, 2, 10), job(2, 10, 1, 10)]
    _, start, _ = run(3, jobs, make_policy("snf"))
    assert start == [0.0, 100.0, 10.0]

    jobs = [job(0, 0, 2, 100), job(1, 10, 1, 30), job(2, 10, 1, 20)]
    _, start, _ = run(3, jobs, make_policy("snf"))
    assert start == [0.0, 30.0, 10.0]


def test_snf_stops_at_the_first_job_that_does_not_fit():
    """4 nodes; J0 (3 nodes, 100 s) at 0. At 5: J1 (2 nodes, 10 s) and J2 (2 nodes, 50 s).

    One node is free: SNF takes J1 first (same size, shorter walltime), it does not fit,
    and dispatch stops there. At 100 J1 and J2 both start (2 + 2 nodes).
    """
    jobs = [job(0, 0, 3, 100), job(1, 5, 2, 50), job(2, 5, 2, 10)]
    _, start, finish = run(4, jobs, make_policy("snf"))
    assert start == [0.0, 100.0, 100.0] and finish == [100.0, 150.0, 110.0]


def test_sleeping_node_is_woken_just_in_time_for_its_planned_start():
    """snf-ipm, 2 nodes starting asleep.

    J0 (1 node, 500 s) at 0: node 0 is woken at 0, ready at 100, J0 runs 100-600.
    J1 (2 nodes, 50 s) at 200: planned start 600 (when J0's walltime ends), so node 1
    is woken at 600 - 100 = 500, not at 200, and J1 runs 600-650.
    """
    res, start, finish = run(
        2, [job(0, 0, 1, 500), job(1, 200, 2, 50)], make_policy("snf-ipm"), initial_state="sleeping"
    )
    assert start == [100.0, 600.0] and finish == [600.0, 650.0]
    assert res.transitions == [(0, 1, 0.0, 100.0), (1, 1, 500.0, 600.0)]
    assert energy(res) == {
        "sleeping": 5000.0,
        "switching_on": 30000.0,
        "idle": 0.0,
        "computing": 120000.0,
        "switching_off": 0.0,
    }


def test_expired_node_needed_soon_by_the_plan_stays_on():
    """snf-ipm, timeout 100 s, 2 nodes. J0 (1 node, walltime 200 s, runs 1000 s) at 0;
    J1 (2 nodes, 10 s) at 50 is planned at 200 on both nodes.

    At 100 node 1's timeout expires, but an off-then-on cycle (50 + 100 s) would end at
    250 > 200, so it stays idle. After 200 J0 overruns its walltime: its node is no longer
    plannable, nothing else happens until J0 ends at 1000, and J1 runs 1000-1010.
    """
    res, start, finish = run(
        2, [job(0, 0, 1, 1000, 200), job(1, 50, 2, 10)], make_policy("snf-ipm", timeout_s=100)
    )
    assert start == [0.0, 1000.0] and finish == [1000.0, 1010.0]
    assert res.summary["switch_offs"] == 0
    assert energy(res)["idle"] == 100000.0 and energy(res)["computing"] == 204000.0


def test_expired_node_is_cycled_when_there_is_time_and_overrun_blocks_planning():
    """As above but J0's walltime is 300 s, so J1 is planned at 300.

    node 1: idle 0-100, off 100-150, asleep 150-200, woken at 200 = 300 - 100, idle 300-400
    (at 300 J0 overruns: J1 cannot be planned, the node is not needed), off 400-450,
    asleep 450-1000; J0 ends at 1000, node 1 woken 1000-1100, J1 runs 1100-1110 while
    node 0 waits idle 1000-1100.
    """
    res, start, finish = run(
        2, [job(0, 0, 1, 1000, 300), job(1, 50, 2, 10)], make_policy("snf-ipm", timeout_s=100)
    )
    assert start == [0.0, 1100.0] and finish == [1000.0, 1110.0]
    assert res.transitions == [
        (1, 4, 100.0, 150.0),
        (1, 1, 200.0, 300.0),
        (1, 4, 400.0, 450.0),
        (1, 1, 1000.0, 1100.0),
    ]
    assert energy(res) == {
        "sleeping": 6000.0,
        "switching_on": 30000.0,
        "idle": 30000.0,
        "computing": 204000.0,
        "switching_off": 12000.0,
    }


def test_job_finishing_as_another_arrives_hands_over_its_node_at_that_instant():
    _, start, finish = run(1, [job(0, 0, 1, 10), job(1, 10, 1, 5)], make_policy("fcfs-easy-ipm"))
    assert start == [0.0, 10.0] and finish == [10.0, 15.0]


def test_ipm_reads_no_plan_when_no_job_is_left_waiting(monkeypatch):
    """The case of the idle-timeout test above, every read of a plan recorded: none of an empty one.

    Between 450 and 1000 both nodes sleep and nothing waits; at 1000 J1 waits for
    them. A plan holds only the jobs left waiting after the pass's starts, so IPM
    reads one only when some job is left, and the run is the same.
    """
    from hpcpower.policies.base import Schedule

    empty_reads = []
    real = Schedule.first_appearances

    def spy(self, nodes):
        if not any(True for _ in self.iter_plan()):
            empty_reads.append(len(self.start))
        return real(self, nodes)

    monkeypatch.setattr(Schedule, "first_appearances", spy)
    res, start, finish = run(
        2,
        [job(0, 0, 1, 100), job(1, 1000, 2, 100)],
        make_policy("snf-ipm", timeout_s=300),
        kernels="numpy",
    )
    assert empty_reads == []
    assert start == [0.0, 1100.0] and finish == [100.0, 1200.0]
    assert res.summary["switch_offs"] == 2 and res.summary["switch_ons"] == 2
