"""Asking why: a job's wait split by cause and a node's history with its reasons, by hand."""

from __future__ import annotations

import pytest
from conftest import job, tiny_platform

from hpcpower import Simulation, make_policy
from hpcpower.errors import InputError


def explained(platform, jobs, policy, **options) -> Simulation:
    sim = Simulation(platform, jobs, policy, explain=True, **options)
    sim.run()
    return sim


def test_a_job_that_waited_for_a_switch_on():
    """One sleeping node that takes 60 s to wake: the job waits exactly 60 s for it."""
    sim = explained(
        tiny_platform(1, on_s=60.0, off_s=30.0),
        [job(0, 0, 1, 10)],
        make_policy("snf-ipm", timeout_s=100),
        initial_state="sleeping",
    )
    e = sim.explain(job="1")
    assert e.title == (
        "Job 1 (1 node, requests 10 s) arrived at t=0 s and started at t=60 s on nodes [0]: "
        "waited 60 s"
    )
    totals = e.to_pandas().groupby("waiting_for")["seconds"].sum().to_dict()
    assert totals == {"switch_on": 60.0, "started": 0.0}
    assert e.rows[0]["planned_start_s"] == 60.0 and e.rows[0]["planned_nodes"] == [0]


def test_a_job_that_waited_behind_the_order_then_for_busy_nodes():
    """FCFS/EASY on 2 nodes: job 1 runs 0-100 on one node, job 2 (2 nodes) arrives at 1 and
    is reserved for 100; job 3 (1 node, 500 s) arrives at 2 and may not backfill on the idle
    node (it would delay job 2): it waits behind the order until 100, then for job 2's nodes
    until 150."""
    sim = explained(
        tiny_platform(2),
        [job(0, 0, 1, 100), job(1, 1, 2, 50), job(2, 2, 1, 500)],
        make_policy("fcfs-easy-ipm", timeout_s=1000),
    )
    rows = sim.explain(job="3").rows
    assert [(r["time_s"], r["waiting_for"], r["seconds"]) for r in rows] == [
        (2.0, "order", 98.0),
        (100.0, "busy_nodes", 0.0),  # the pass before the repeat pass at the same instant
        (100.0, "busy_nodes", 50.0),
        (150.0, "started", 0.0),
    ]
    text = str(sim.explain(job="2"))
    assert "waiting for busy nodes:              99 s" in text
    assert "position 1 of 2" in text


def test_a_node_switched_off_by_timeout_and_one_kept_by_the_plan():
    """2 nodes, 20 s timeout, 30 s transitions. Node 1 expires at 20 but job 2 (2 nodes) is
    planned on it at 50, sooner than an off-and-on cycle (60 s): kept. Both nodes time out
    at 80 after job 2; node 0 wakes at 1000 for job 3."""
    sim = explained(
        tiny_platform(2, on_s=30.0, off_s=30.0),
        [job(0, 0, 1, 50), job(1, 10, 2, 10), job(2, 1000, 1, 10)],
        make_policy("snf-ipm", timeout_s=20),
    )
    node1 = sim.explain(node=1).rows
    assert [(r["state"], r["start_s"], r["end_s"]) for r in node1] == [
        ("idle", 0.0, 50.0),
        ("computing", 50.0, 60.0),
        ("idle", 60.0, 80.0),
        ("switching_off", 80.0, 110.0),
        ("sleeping", 110.0, 1040.0),
    ]
    assert node1[0]["because"] == (
        "kept on by the plan at 1 pass (timeout expired, but job 2 is planned on it at t=50 s, "
        "before an off-and-on cycle (60 s) would end)"
    )
    assert node1[3]["because"] == (
        "switched off by snf-ipm at t=80 s: idle since t=60 s: 20 s >= timeout 20 s"
    )
    node0 = sim.explain(node=0).rows
    woken = next(r for r in node0 if r["state"] == "switching_on")
    assert woken["because"] == (
        "woken by snf-ipm at t=1000 s: job 3 is planned on it at t=1030 s and waking takes "
        "30 s on average"
    )
    assert node0[-1]["job"] == "3" and node0[-1]["because"].startswith("running job 3")


def test_explanations_need_the_trace_and_a_known_job_or_node():
    sim = Simulation(tiny_platform(1), [job(0, 0, 1, 10)], make_policy("snf"))
    sim.run()
    with pytest.raises(InputError, match="build the simulation with explain=True"):
        sim.explain(job="1")
    sim = explained(tiny_platform(1), [job(0, 0, 1, 10)], make_policy("snf"))
    with pytest.raises(InputError, match="no job '9' in the workload"):
        sim.explain(job="9")
    with pytest.raises(InputError, match=r"no node 3: the platform has nodes 0..0"):
        sim.explain(node=3)
    with pytest.raises(InputError, match="give job=<id> or node=<id>, one of them"):
        sim.explain()


def test_snf_icon_says_which_mode_each_pass_ran_in():
    sim = Simulation.from_scenario(
        "scenarios/paper/markovian.toml",
        policy__name="snf-icon",
        workload__first=200,
        simulation__explain=True,
    )
    sim.run()
    modes = {r["mode"] for p in sim.passes_trace for r in p.why if r["action"] == "mode"}
    assert modes == {"icon", "fallback"}
    icon = next(r for p in sim.passes_trace for r in p.why if r.get("mode") == "icon")
    assert icon["because"].startswith("workload screen accepted: ICON mode")
