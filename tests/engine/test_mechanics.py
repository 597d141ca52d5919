"""Hand-computed mechanics: exact times and joules under scripted decisions."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from conftest import Scripted, job, tiny_platform

from hpcpower import Decision, Planned, Policy, Simulation, make_policy
from hpcpower.errors import IllegalTransition, InputError, PolicyError


def test_switch_cycle_and_job_energy_by_hand():
    """2 nodes (200/100/10/150/120 W; on 100 s, off 50 s).

    t=0: job 0 (1 node, 300 s) starts on node 0; node 1 switched off (50 s).
    t=50: node 1 asleep. t=200: node 1 switched on, idle at t=300.
    t=300: job 0 ends; that is the last job, so the run ends at 300 s.
    node 0: computing 300 s -> 60 000 J.
    node 1: switching_off 50 s (6 000 J), sleeping 150 s (1 500 J),
            switching_on 100 s (15 000 J).
    """
    sim = Simulation(
        tiny_platform(2),
        [job(0, 0, 1, 300)],
        Scripted({0.0: {"start": [(0, [0])], "off": [1]}, 200.0: {"on": [1]}}),
    )
    res = sim.run()
    e = res.summary["energy_j"]
    assert res.summary["simulated_span_s"] == 300.0
    assert e == {
        "sleeping": 1500.0,
        "switching_on": 15000.0,
        "idle": 0.0,
        "computing": 60000.0,
        "switching_off": 6000.0,
    }
    assert res.summary["total_energy_j"] == 82500.0
    assert res.summary["wasted_energy_j"] == 22500.0
    assert res.summary["switch_ons"] == 1 and res.summary["switch_offs"] == 1
    assert res.transitions == [(1, 4, 0.0, 50.0), (1, 1, 200.0, 300.0)]
    assert res.summary["utilization"] == pytest.approx(0.5)


def test_a_stalled_run_is_reported():
    sim = Simulation(
        tiny_platform(3),
        [job(0, 0, 2, 120), job(1, 10, 1, 40)],
        Scripted({0.0: {"start": [(0, [0, 1])], "off": [2]}, 10.0: {}, 60.0: {"on": [2]}}),
    )
    with pytest.raises(PolicyError):
        # job 1 is never started by the script: the run stalls loudly.
        sim.run()


def test_job_waits_for_wakeup_exact_times():
    """1 node starting asleep; job (1 node, 60 s) arrives at t=10; node woken at 10.

    Ready at 110, job runs 110..170. Wait = 100 s.
    Energy: sleeping 10 s (100 J), switching_on 100 s (15 000 J), computing 60 s (12 000 J).
    """
    script = {0.0: {}, 10.0: {"on": [0]}, 110.0: {"start": [(0, [0])]}}
    sim = Simulation(
        tiny_platform(1), [job(0, 10, 1, 60)], Scripted(script), initial_state="sleeping"
    )
    res = sim.run()
    t = res.job_table()
    assert t["start_s"][0] == 110.0 and t["finish_s"][0] == 170.0 and t["wait_s"][0] == 100.0
    assert res.energy_by_state_j.tolist() == [100.0, 15000.0, 0.0, 12000.0, 0.0]


def test_illegal_requests_name_node_state_and_time():
    sim = Simulation(
        tiny_platform(2), [job(0, 0, 1, 10)], Scripted({0.0: {"start": [(0, [0])], "off": [0]}})
    )
    with pytest.raises(IllegalTransition, match=r"node 0.*computing.*t=0"):
        sim.run()
    sim = Simulation(
        tiny_platform(1),
        [job(0, 0, 1, 10)],
        Scripted({0.0: {"start": [(0, [0])]}}),
        initial_state="sleeping",
    )
    with pytest.raises(IllegalTransition, match=r"job 0 cannot start on node 0: it is sleeping"):
        sim.run()


def test_job_larger_than_platform_is_rejected_and_counted():
    sim = Simulation(
        tiny_platform(2),
        [job(0, 0, 3, 10), job(1, 5, 1, 10)],
        Scripted({5.0: {"start": [(1, [1])]}}),
    )
    res = sim.run()
    assert res.summary["jobs_rejected"] == 1 and res.summary["jobs_completed"] == 1
    assert "requests 3 nodes, the platform has 2" in res.rejected[0]
    assert res.job_table()["state"].tolist() == ["rejected", "completed"]


def test_controller_runs_once_after_same_instant_events():
    """Job 0 ends at t=10 and job 1 arrives at t=10: one pass sees both.

    With ``repeat_pass`` (the authors' behaviour) a pass that issued commands
    is followed by one more pass at the same instant, triggered by "commands".
    """
    for repeat, expected in ((False, 1), (True, 2)):
        policy = Scripted({0.0: {"start": [(0, [0])]}, 10.0: {"start": [(1, [0])]}})
        sim = Simulation(
            tiny_platform(1), [job(0, 0, 1, 10), job(1, 10, 1, 5)], policy, repeat_pass=repeat
        )
        res = sim.run()
        at_ten = [s for s in policy.seen if s[0] == 10.0]
        assert len(at_ten) == expected
        assert at_ten[0][1] == {"arrival", "completion", "wakeup"}
        if repeat:
            assert at_ten[1][1] == {"commands"} and at_ten[1][2] == 0
        assert res.job_table()["start_s"].tolist() == [0.0, 10.0]


def test_zero_runtime_job_starts_and_ends_at_one_instant():
    sim = Simulation(tiny_platform(1), [job(0, 5, 1, 0)], Scripted({5.0: {"start": [(0, [0])]}}))
    res = sim.run()
    t = res.job_table()
    assert t["start_s"][0] == 5.0 and t["finish_s"][0] == 5.0
    assert res.summary["simulated_span_s"] == 5.0
    assert res.energy_by_state_j.tolist() == [0.0, 0.0, 500.0, 0.0, 0.0]


def test_step_and_run_until():
    policy = Scripted({0.0: {"start": [(0, [0])]}, 50.0: {"start": [(1, [1])]}})
    sim = Simulation(tiny_platform(2), [job(0, 0, 1, 100), job(1, 50, 1, 10)], policy)
    decision = sim.run_until_decision()
    assert sim.now == 0.0 and [j.id for j, _ in decision.start] == [0]
    sim.run(until=30)
    assert sim.now == 30 and len(sim.running) == 1 and "1 running" in repr(sim)
    res = sim.run()
    assert res.summary["jobs_completed"] == 2 and sim.now == 100.0


@pytest.mark.parametrize(
    "gang,message",
    [
        ([], r"job 0: cannot start on an empty set of nodes"),
        ([0, 7], r"job 0 cannot start on node 7: no such node"),
        ([1, -1], r"job 0 cannot start on node -1: no such node"),
        ([0, 0], r"job 0: node list has duplicates: \[0, 0\]"),
        ([1, 2], r"job 0 cannot start on node 2: it is computing, not idle, at t=0 s"),
    ],
)
def test_a_bad_gang_is_refused_and_leaves_the_cluster_as_it_was(gang, message):
    import numpy as np
    import simpy

    from hpcpower.engine.cluster import Cluster

    env = simpy.Environment()
    cluster = Cluster(env, tiny_platform(4), np.random.default_rng(0))
    cluster.allocate(9, [2, 3], 10.0)
    with pytest.raises(IllegalTransition, match=message):
        cluster.allocate(0, np.array(gang, dtype=np.intp))
    assert cluster.idle == {0, 1}
    assert list(cluster.idle_since) == [0, 1]
    assert cluster.state.tolist() == [2, 2, 3, 3]
    assert cluster.counts == [0, 0, 2, 2, 0]


@pytest.mark.parametrize("gang", [[0.9, 1.9], [0.0, 1.0], [True, False], (n / 1 for n in (0, 1))])
def test_node_ids_that_are_not_whole_numbers_are_refused_not_cut(gang):
    """A policy's float ids are a bug to name, not nodes to guess (0.9 is not node 0)."""
    import numpy as np
    import simpy

    from hpcpower.engine.cluster import Cluster

    cluster = Cluster(simpy.Environment(), tiny_platform(4), np.random.default_rng(0))
    with pytest.raises(IllegalTransition, match=r"job 0: node ids must be integers"):
        cluster.allocate(0, gang)
    assert cluster.idle == {0, 1, 2, 3}
    assert cluster.allocate(1, {2, 0}).tolist() == [0, 2]  # (a set of ints is fine)


def test_a_gang_given_as_a_view_is_kept_as_its_own_copy():
    """The run keeps every job's gang to the end; a view would keep the policy's whole array.

    (Planners hand out gangs as slices of one array per pass; kept as views,
    a long trace held every pass's array: gigabytes for SDSC Blue.)
    """
    import numpy as np
    import simpy

    from hpcpower.engine.cluster import Cluster

    cluster = Cluster(simpy.Environment(), tiny_platform(4), np.random.default_rng(0))
    pass_array = np.array([3, 1, 0, 2])
    gang = cluster.allocate(7, pass_array[1:3], 10.0)
    assert gang.tolist() == [1, 0]
    assert gang.base is None
    # An array of the policy's own is copied too: the policy may write to
    # it later, and the gang it started must not change.
    own = np.array([3])
    kept = cluster.allocate(8, own, 10.0)
    own[0] = 2
    assert kept.tolist() == [3] and not kept.flags.writeable


def test_an_empty_workload_is_an_error_not_a_nan_summary():
    from hpcpower.workload.job import Workload

    with pytest.raises(InputError, match=r"^empty.swf: no jobs to simulate$"):
        Simulation(tiny_platform(2), Workload([], source="empty.swf"), make_policy("snf-ipm"))


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3"])
def test_a_seed_must_be_a_whole_number(seed):
    with pytest.raises(InputError, match=r"seed must be a whole number >= 0"):
        Simulation(tiny_platform(2), [job(0, 0, 1, 5)], make_policy("snf-ipm"), seed=seed)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("submit_s", math.nan),
        ("submit_s", -5.0),
        ("submit_s", math.inf),
        ("runtime_s", math.inf),
        ("runtime_s", -1.0),
        ("reqtime_s", math.nan),
        ("res", 2.0),
        ("res", 0),
        ("res", True),
    ],
)
def test_a_job_with_an_impossible_field_is_refused_naming_it(field, value):
    bad = replace(job(0, 0, 1, 10), **{field: value})
    with pytest.raises(InputError, match=rf"job '1' \(id 0\) needs .*{field}={value!r}"):
        Simulation(tiny_platform(2), [bad], make_policy("snf-ipm"))


class _Returns(Policy):
    name = "returns"

    def __init__(self, value) -> None:
        self.value = value

    def decide(self, view):
        return self.value(view)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (lambda view: None, r"returns: decide\(\) returned NoneType at t=0 s; return a Decision"),
        (lambda view: 42, r"returns: decide\(\) returned int at t=0 s"),
        (
            lambda view: Decision(start=[Planned(view.queue.fcfs()[0], 0.0, [0])]),
            r"returns: Decision.start holds Planned\(.*\) at t=0 s; give \(job, nodes\) pairs",
        ),
    ],
)
def test_what_decide_returns_is_checked_with_an_error_naming_the_policy(value, message):
    sim = Simulation(tiny_platform(2), [job(0, 0, 1, 10)], _Returns(value))
    with pytest.raises(PolicyError, match=message):
        sim.run()
