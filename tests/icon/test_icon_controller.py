"""Behaviour of the SNF-ICON controller on small scenarios."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import job, tiny_platform

from hpcpower import Simulation, load_platform, make_policy
from hpcpower.workload.generate import markovian
from hpcpower.workload.job import Job


def run(platform, jobs, policy, **params):
    sim = Simulation(platform, jobs, make_policy(policy, **params), seed=42)
    res = sim.run()
    return sim, res


@pytest.fixture(scope="module")
def poisson():
    return run(load_platform("aoba-64"), markovian(400, seed=1), "snf-icon")


def test_poisson_workload_mostly_runs_in_icon_mode(poisson):
    sim, res = poisson
    notes = sim.decisions
    accepted = np.mean([n["screen_accepted"] for n in notes])
    assert accepted > 0.6
    assert res.summary["icon_time_fraction"] > 0.5
    assert res.summary["jobs_completed"] == 400
    # spare planning happened, with a target inside the feasible range
    done = [n for n in notes if n.get("spare") == "done"]
    assert done and all(n["x_min"] <= n["target"] <= n["x_max"] for n in done)
    assert all(n["mode"] == "icon" for n in done)


def test_every_pass_leaves_a_complete_note(poisson):
    sim, _ = poisson
    keys = {
        "time_s",
        "triggers",
        "mode",
        "decision_event",
        "screen_accepted",
        "screen_reason",
        "arrival_n",
        "arrival_cv",
        "arrival_lag1",
        "arrival_ks",
        "arrival_ks_limit",
        "service_n",
        "service_cv",
        "service_lag1",
        "service_ks",
        "gate_enabled",
        "gate_open",
        "gate_reason",
        "spare",
        "spare_reason",
        "started",
        "waiting",
        "wakes",
        "switch_offs",
    }
    assert len(sim.decisions) == sim.passes
    for n in sim.decisions:
        assert keys <= n.keys()
        assert n["mode"] in ("icon", "fallback")
        assert (n["mode"] == "fallback") == (not n["screen_accepted"])
    done = next(n for n in sim.decisions if n.get("spare") == "done")
    for k in ("x_min", "x_max", "target", "expected_wait_s", "expected_energy_j", "cost"):
        assert k in done


#: A note's first keys, in order: what the pass saw (the decision log's columns
#: come in the order keys first appear).
SEEN = [
    "time_s",
    "triggers",
    "decision_event",
    "mode",
    "screen_accepted",
    "screen_reason",
    *(
        f"{series}_{key}"
        for series in ("arrival", "service")
        for key in ("n", "accepted", "reason", "cv", "lag1", "ks", "ks_limit")
    ),
    "gate_enabled",
    "gate_open",
    "gate_reason",
    "arrival_age_s",
    "arrival_rate",
    "service_rate",
]


def test_notes_keep_their_key_order_and_are_each_their_own_dict():
    """Fallback notes have one key order; ICON notes start with the same keys.

    Notes under one verdict are made from one kept note: each is a copy, so
    a listener that writes into a note changes no later note.
    """
    jobs = markovian(400, seed=1)  # (both modes: ICON mostly, fallback at first)
    sim = Simulation(load_platform("aoba-64"), jobs, make_policy("snf-icon"), seed=42)
    seen = []

    def scribble(now, decision):
        seen.append(dict(decision.note))
        decision.note["scribbled"] = now

    sim.on("decision", scribble)
    sim.run()
    modes = {note["mode"] for note in seen}
    assert modes == {"icon", "fallback"}
    fallback = SEEN + ["spare", "spare_reason", "started", "waiting", "wakes", "switch_offs"]
    for note in seen:
        assert "scribbled" not in note
        if note["mode"] == "fallback":
            assert list(note) == fallback
            assert note["spare"] == "skipped"
            assert note["spare_reason"] == "recent_workload_not_well_markovian"
        else:
            assert list(note)[: len(SEEN)] == SEEN
            assert list(note)[len(SEEN) : len(SEEN) + 3] == ["started", "waiting", "spare"]
    # The pass's own values, not the kept note's: each note has its pass's time.
    assert [note["time_s"] for note in seen] == [row["time_s"] for row in sim.decisions]
    assert len({note["time_s"] for note in seen}) > 1


def bursty_jobs(n_bursts=12):
    """Bursts of 10 near-simultaneous jobs every 3 hours, heavy-tailed runtimes."""
    rng = np.random.default_rng(3)
    jobs = []
    for b in range(n_bursts):
        for k in range(10):
            rt = float((rng.pareto(1.1) + 1) * 60)
            jobs.append((b * 10800.0 + k * 2.0, int(rng.integers(1, 5)), rt))
    return [job(i, s, r, rt, reqtime=3600.0) for i, (s, r, rt) in enumerate(jobs)]


def test_bursty_heavy_tailed_workload_falls_back():
    sim, res = run(load_platform("aoba-64"), bursty_jobs(), "snf-icon")
    assert res.summary["icon_time_fraction"] < 0.05
    assert sum(n["mode"] == "fallback" for n in sim.decisions) > 0.9 * len(sim.decisions)
    # NF keeps ICON mode at every pass, whatever the screen says
    sim, res = run(load_platform("aoba-64"), bursty_jobs(), "snf-icon-nf")
    assert all(n["mode"] == "icon" for n in sim.decisions)
    assert res.summary["icon_time_fraction"] == 1.0
    assert any(not n["screen_accepted"] for n in sim.decisions)


def gap_jobs():
    # two long jobs, then nothing for more than the 12 h gate window
    return [job(0, 10.0, 1, 50_000.0), job(1, 20.0, 1, 60_000.0), job(2, 100_000.0, 1, 10.0)]


def test_closed_gate_skips_spares_and_switches_freed_nodes_off():
    sim, res = run(tiny_platform(4), gap_jobs(), "snf-icon-nf")
    closed = [n for n in sim.decisions if not n["gate_open"]]
    assert closed and all(n["spare"] != "done" for n in closed)
    at = [n for n in sim.decisions if n["time_s"] == 50_010.0 and n["decision_event"]]
    assert at[0]["spare_reason"] == "no_recent_job_arrival"
    assert at[0]["gate_reason"] == "arrival_window_expired"
    assert at[0]["completion_switch_offs"] == 1
    node = int(res.allocations[0][0])
    log = [r for r in sim.cluster.transition_log if r[0] == node]
    assert any(r[2] == 50_010.0 for r in log)  # switched off as soon as freed


def test_no_gate_variant_never_skips_for_the_gate():
    sim, _ = run(tiny_platform(4), gap_jobs(), "snf-icon-ngnf")
    assert all(n["gate_reason"] == "disabled" and n["gate_open"] for n in sim.decisions)
    assert not any(n.get("spare_reason") == "no_recent_job_arrival" for n in sim.decisions)
    at = [n for n in sim.decisions if n["time_s"] == 50_010.0 and n["decision_event"]]
    assert at[0]["spare"] == "done"


def test_fallback_passes_decide_exactly_as_snf_ipm():
    """With a screen that can never accept, SNF-ICON is SNF+IPM job for job."""
    jobs = markovian(150, seed=5).jobs
    a = run(
        load_platform("aoba-64"), jobs, "snf-icon", markov_min_samples=2000, markov_max_samples=2000
    )[1]
    b = run(load_platform("aoba-64"), jobs, "snf-ipm")[1]
    assert a.summary["icon_time_fraction"] == 0.0
    assert a.job_table()["start_s"].tolist() == b.job_table()["start_s"].tolist()
    assert a.summary["wasted_energy_j"] == pytest.approx(b.summary["wasted_energy_j"], rel=1e-12)


def test_settings_reach_the_controller_and_results():
    sim, res = run(tiny_platform(4), gap_jobs(), "snf-icon", alpha=2500, timeout_s=600)
    assert res.config["policy"]["alpha"] == 2500.0
    assert res.config["policy"]["name"] == "snf-icon"
    assert sim.policy.settings.timeout_s == 600.0
    assert "SnfIcon" in repr(sim.policy)


def test_zero_request_jobs_do_not_stop_the_run():
    jobs = [Job(i, str(i), 100.0 * i, 1, 0.0, 50.0) for i in range(8)]
    _, res = run(tiny_platform(2), jobs, "snf-icon-nf")
    assert res.summary["jobs_completed"] == 8


def test_a_zero_length_job_keeps_the_idle_timers_of_its_nodes():
    """As in the authors' controller: an ICON pass with jobs still waiting applies no
    timeout, so the timers of the nodes a zero-length job ran on are not restarted.

    Nodes 0 and 1 become idle at 250 and 280. J4 (all 4 nodes) waits behind J3.
    J5 (2 nodes, runtime 0) runs at 300 on both. At 400, J6 (1 node) takes the idle
    node with the most remaining timeout: node 1 (timer from 280), not node 0 (a
    timer restarted at 300 would tie and go to the lowest id).
    (Checked against the authors' simulator on a 4-node AOBA platform.)
    """
    jobs = [
        job(0, 10.0, 1, 240.0, 300.0),
        job(1, 20.0, 1, 260.0, 300.0),
        job(2, 30.0, 2, 20_000.0, 30_000.0),
        job(3, 200.0, 4, 1000.0),
        job(4, 300.0, 2, 0.0, 100.0),
        job(5, 400.0, 1, 500.0),
    ]
    _, res = run(tiny_platform(4), jobs, "snf-icon-nf")
    assert sorted(res.allocations[4].tolist()) == [0, 1]
    assert res.allocations[5].tolist() == [1]
    assert res.job_table()["start_s"].tolist() == [10.0, 20.0, 30.0, 20_030.0, 300.0, 400.0]


def test_timeouts_switch_off_the_expired_by_idle_time_and_ask_for_the_next():
    """Hand case at t = 10,000 s with a 7200 s timeout.

    Nodes 1, 3, 4 and 6 are idle, idle since 2000, 500, 2000 and 9000 s (2
    and 5 left for the spare's switch-off and node 0 computing). 3, 1 and 4
    expired (at 7700, 9200 and 9200 s): off in the order they became idle,
    the tie by id; node 6 expires at 16,200 s, the time asked for.
    """
    from types import SimpleNamespace

    from hpcpower.engine.contract import Decision

    policy = make_policy("snf-icon", timeout_s=7200.0)
    since = np.array([0.0, 2000.0, 100.0, 500.0, 2000.0, 50.0, 9000.0])
    view = SimpleNamespace(now=10_000.0, cluster=SimpleNamespace(since=since))
    decision = Decision(switch_off=[2, 5])
    idle_after = np.array([1, 2, 3, 4, 5, 6])
    assert policy._timeouts(view, idle_after, decision) == [3, 1, 4]
    assert decision.call_at == [16_200.0]
    assert type(decision.call_at[0]) is float

    # None expired: the earliest expiry is asked for, nothing is switched off.
    view.now = 7000.0
    decision = Decision(switch_off=[2, 5])
    assert policy._timeouts(view, idle_after, decision) == []
    assert decision.call_at == [7700.0]
    # All expired: nothing left to ask for.
    view.now = 20_000.0
    decision = Decision()
    assert policy._timeouts(view, np.array([1, 3]), decision) == [3, 1]
    assert decision.call_at == []


def test_plan_wakes_wakes_each_sleeping_node_at_its_first_appearance():
    """Hand case at t = 1000 s, a lead of 300 s (node 4: 500 s).

    Nodes 2, 4 and 5 sleep. The plan puts job a (nodes 0, 2) at 1200 s, b
    (4, 1) at 1300 s, c (2, 5) at 2000 s and d (5) at 2500 s. Node 2 first
    appears at 1200 s: wake at 900 s, due now (its later appearance does not
    count); node 4 at 1300 - 500 = 800 s, due; node 5 at 1700 s, later. The
    reading stops at c, where the last sleeping node appeared.
    """
    from hpcpower.engine.contract import Planned
    from hpcpower.policies.icon.planner import plan_wakes
    from hpcpower.states import COMPUTING, SLEEPING

    state = np.full(6, COMPUTING, dtype=np.int8)
    state[[2, 4, 5]] = SLEEPING
    lead = np.full(6, 300.0)
    lead[4] = 500.0
    read = []

    def plan():
        for i, (name, start, nodes) in enumerate(
            [
                ("a", 1200.0, [0, 2]),
                ("b", 1300.0, [4, 1]),
                ("c", 2000.0, [2, 5]),
                ("d", 2500.0, [5]),
            ]
        ):
            read.append(name)
            yield Planned(job(i, 0, len(nodes), 100), start, np.array(nodes))

    wakes = plan_wakes(plan(), state, lead, 1000.0)
    assert wakes.now == [2, 4]
    assert wakes.later == [1700.0]
    assert wakes.earliest == {2: 900.0, 4: 800.0, 5: 1700.0}
    assert wakes.planned_jobs == 3 and read == ["a", "b", "c"]
    assert (state == SLEEPING).sum() == 3  # (the state is not changed)
    # Nobody asleep: the plan is not read.
    assert plan_wakes(plan(), np.full(6, COMPUTING), lead, 1000.0).planned_jobs == 0
