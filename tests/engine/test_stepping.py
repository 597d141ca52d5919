"""Stepping through a run: peek, one event, one pass, a predicate, and subscriptions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import job, tiny_platform

from hpcpower import Simulation, make_policy
from hpcpower.errors import InputError
from hpcpower.policies.registry import POLICIES
from hpcpower.states import NodeState


def quick(policy: str, **options) -> Simulation:
    return Simulation.from_scenario(
        "scenarios/quickstart.toml", policy__name=policy, workload__first=60, **options
    )


def same_results(a, b) -> None:
    ta, tb = a.job_table(), b.job_table()
    for column in ("start_s", "finish_s"):
        assert np.array_equal(ta[column], tb[column], equal_nan=True)
    assert [None if g is None else g.tolist() for g in a.allocations] == [
        None if g is None else g.tolist() for g in b.allocations
    ]
    assert a.transitions == b.transitions
    assert a.state_counts == b.state_counts
    assert np.array_equal(a.time_in_state_s, b.time_in_state_s)
    assert a.decisions == b.decisions or all(
        x.keys() == y.keys() for x, y in zip(a.decisions, b.decisions, strict=True)
    )
    assert a.summary["total_energy_j"] == b.summary["total_energy_j"]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_stepping_event_by_event_to_the_end_is_run_to_the_bit(policy):
    stepped = quick(policy)
    kinds = set()
    while (happened := stepped.step()) is not None:
        kinds.add(happened.kind)
        assert happened.time_s == stepped.now
    assert stepped.finished and stepped.peek() == math.inf
    assert {"arrival", "job_end", "controller_pass"} <= kinds
    same_results(stepped.results(), quick(policy).run())


@pytest.mark.parametrize("policy", ["snf-ipm", "fcfs-easy-ipm", "snf-icon"])
def test_pass_by_pass_and_with_explanations_are_run_to_the_bit(policy):
    by_pass = quick(policy)
    while by_pass.run_until_decision() is not None:
        pass
    plain = quick(policy).run()
    same_results(by_pass.results(), plain)
    explained = quick(policy, simulation__explain=True)
    same_results(explained.run(), plain)
    assert len(explained.passes_trace) == explained.passes


def test_peek_step_and_run_until_decision_on_a_hand_built_run():
    """Job "1" (1 node, 10 s) at t=0, job "2" at t=50 on a 2-node always-on cluster."""
    sim = Simulation(tiny_platform(2), [job(0, 0, 1, 10), job(1, 50, 1, 10)], make_policy("snf"))
    assert sim.peek() == 0.0
    first = sim.step()
    assert first.time_s == 0.0 and first.kind == "arrival"
    decision = sim.run_until_decision()
    assert decision.time_s == 0.0 and [j.name for j, _ in decision.start] == ["1"]
    assert "t=0 s: start job 1 on [" in repr(decision)
    assert sim.run_until(lambda s: s.started("2"))
    assert sim.now == 50.0 and sim.last_decision.start[0][0].name == "2"
    assert sim.run_until(lambda s: False, limit_s=55.0) is False and sim.now <= 55.0
    sim.run()
    assert sim.run_until_decision() is None and sim.step() is None


def test_run_until_a_time_in_the_past_is_an_error():
    sim = Simulation(tiny_platform(1), [job(0, 0, 1, 10)], make_policy("snf"))
    sim.run(until=5.0)
    with pytest.raises(InputError, match=r"run\(until=2.0\): the simulation is already at t=5.0"):
        sim.run(until=2.0)
    sim.run(until=5.0)  # the same time is no step back


def test_subscriptions_see_every_start_end_state_change_and_decision():
    sim = Simulation(
        tiny_platform(2, on_s=10.0, off_s=5.0),
        [job(0, 0, 1, 20), job(1, 100, 2, 10)],
        make_policy("snf-ipm", timeout_s=30),
    )
    seen: dict[str, list] = {"job_start": [], "job_end": [], "node_state": [], "decision": []}
    for kind, rows in seen.items():
        sim.on(kind, lambda *args, rows=rows: rows.append(args))
    res = sim.run()
    assert [(t, j.name, sorted(n.tolist())) for t, j, n in seen["job_start"]] == [
        (0.0, "1", [0]),
        (110.0, "2", [0, 1]),
    ]
    assert [(t, j.name) for t, j, _ in seen["job_end"]] == [(20.0, "1"), (120.0, "2")]
    assert len(seen["decision"]) == sim.passes
    assert all(d.time_s == t for t, d in seen["decision"])
    # By hand: node 1 times out at 30 (off 5 s), node 0 at 20 + 30; both wake at 100 (on 10 s).
    s, on, idle, busy, off = NodeState
    assert sorted(seen["node_state"]) == sorted(
        [
            (0.0, 0, idle, busy),
            (20.0, 0, busy, idle),
            (30.0, 1, idle, off),
            (35.0, 1, off, s),
            (50.0, 0, idle, off),
            (55.0, 0, off, s),
            *[(100.0, n, s, on) for n in (0, 1)],
            *[(110.0, n, on, idle) for n in (0, 1)],
            *[(110.0, n, idle, busy) for n in (0, 1)],
            *[(120.0, n, busy, idle) for n in (0, 1)],
        ]
    )
    assert res.summary["switch_offs"] == 2
    assert str(NodeState.SWITCHING_OFF) == "switching_off"


def test_unsubscribing_and_unknown_kinds():
    sim = Simulation(tiny_platform(1), [job(0, 0, 1, 10)], make_policy("snf"))
    calls = []
    callback = sim.on("node_state", lambda *a: calls.append(a))
    sim.off("node_state", callback)
    sim.run()
    assert calls == []
    with pytest.raises(InputError, match="unknown event kind 'start': use job_start, job_end"):
        sim.on("start", print)


def test_run_until_infinity_runs_to_the_end_and_until_nan_is_refused():
    from conftest import Scripted

    from hpcpower.errors import PolicyError

    jobs = [job(0, 0, 1, 10), job(1, 5, 1, 20)]
    whole = Simulation(tiny_platform(2), jobs, make_policy("snf-ipm")).run().summary
    sim = Simulation(tiny_platform(2), jobs, make_policy("snf-ipm"))
    with pytest.raises(InputError, match=r"^run\(until=nan\): give a time in seconds$"):
        sim.run(until=math.nan)
    assert sim.run(until=math.inf) is None and sim.finished
    assert sim.results().summary == whole
    # A run that cannot go on stops as without until, its clock where it stalled.
    stalled = Simulation(tiny_platform(2), jobs[:1], Scripted({0.0: {}}))
    with pytest.raises(PolicyError, match="stalled at t=0 s"):
        stalled.run(until=math.inf)
    assert stalled.now == 0.0
