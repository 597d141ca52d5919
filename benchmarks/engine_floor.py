"""The engine's own time: a run replayed by a policy that costs (almost) nothing.

A trace runs once under a policy, and every pass's decision is kept
(starts, switch-offs, switch-ons, wake-up times). It then runs again from
the start with a policy that hands the engine the same decisions, pass by
pass, checked to come at the same simulated times; with the same seed the
transitions draw the same durations, so the replay is the same run, and
every job starts and ends at the same second (checked). Its ``run()`` is
the engine alone: SimPy's event loop, the node and job processes, the
state changes and the state rows, without the decision log (the replay
keeps none), so a floor under any policy on this engine, and under the
issue's targets for whole traces::

    python benchmarks/engine_floor.py scenarios/data/DAS2-fs1-2003-1.swf.gz --platform aoba-64
    python benchmarks/engine_floor.py scenarios/data/SDSC-BLUE-2000-4.2-cln.swf.gz \\
        --platform aoba-1152 --jobs 20000

Printed: passes, CPU seconds of ``run()`` under the policy (its decision
log at the level given, ``full`` by default; the recording of its
decisions, a few tuples a pass, is timed with it) and of the replay, and
each per pass.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from hpcpower import Decision, Policy, load_platform, load_workload, make_policy
from hpcpower.engine.simulation import Simulation

#: One pass's commands: (time, starts as (job, nodes), switch-offs, switch-ons, wake-up times).
Kept = tuple[float, list, list[int], list[int], list[float]]


class Replay(Policy):
    """Hands the engine the decisions of a recorded run, pass by pass."""

    name = "replay"

    def __init__(self, kept: list[Kept]) -> None:
        self._kept = kept
        self._next = 0

    def decide(self, view) -> Decision:
        at, start, off, on, calls = self._kept[self._next]
        if at != view.now:
            raise RuntimeError(f"pass {self._next}: recorded at t={at!r}, replayed at {view.now!r}")
        self._next += 1
        return Decision(list(start), list(off), list(on), list(calls))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--platform", default="aoba-64")
    parser.add_argument("--policy", default="snf-icon")
    parser.add_argument("--jobs", type=int, help="only the first JOBS jobs")
    parser.add_argument("--kernels", default="auto", choices=("auto", "numba", "numpy"))
    parser.add_argument("--decisions", default="full", choices=("full", "changes", "off"))
    args = parser.parse_args()

    workload = load_workload(args.trace)
    if args.jobs:
        workload.jobs = workload.jobs[: args.jobs]
    platform = load_platform(args.platform)
    sim = Simulation(
        platform,
        workload,
        make_policy(args.policy),
        seed=42,
        kernels=args.kernels,
        decisions=args.decisions,
    )
    kept: list[Kept] = []

    def keep(now: float, decision: Decision) -> None:
        kept.append(
            (
                now,
                list(decision.start),
                list(decision.switch_off),
                list(decision.switch_on),
                list(decision.call_at),
            )
        )

    sim.on("decision", keep)
    t = time.process_time()
    sim.run()
    policy_s = time.process_time() - t

    replay = Simulation(
        platform, workload, Replay(kept), seed=42, kernels=sim.kernels, decisions="off"
    )
    t = time.process_time()
    replay.run()
    floor_s = time.process_time() - t
    same = (
        replay.passes == sim.passes
        and np.array_equal(replay.start_s, sim.start_s, equal_nan=True)
        and np.array_equal(replay.finish_s, sim.finish_s, equal_nan=True)
        and np.array_equal(replay.cluster.time_in_state_s, sim.cluster.time_in_state_s)
    )
    if not same:
        sys.exit("engine_floor.py: the replay is not the same run")
    passes = sim.passes
    print(
        f"{args.trace.name}, {len(workload.jobs):,} jobs, {args.platform}, {args.policy}, "
        f"{sim.kernels} kernels: {passes:,} passes\n"
        f"run() under the policy (decision log {args.decisions}): {policy_s:.2f} CPU s, "
        f"{policy_s / passes * 1e6:.1f} us a pass\n"
        f"run() of the replay, the engine alone (no log): {floor_s:.2f} CPU s, "
        f"{floor_s / passes * 1e6:.1f} us a pass ({floor_s / policy_s:.0%} of the run)"
    )


if __name__ == "__main__":
    main()
