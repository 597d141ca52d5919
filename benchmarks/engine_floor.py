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
    python benchmarks/engine_floor.py scenarios/data/DAS2-fs1-2003-1.swf.gz --files

Printed: passes, CPU seconds of ``run()`` under the policy (its decision
log at the level given, ``full`` by default; the recording of its
decisions, a few tuples a pass, is timed with it) and of the replay, and
each per pass. Unless the level is ``off``, a second replay hands the
engine the policy's own notes as well, so that it logs them at that level,
and ``decisions.csv`` is written from that log: the floor of a run that
keeps its log, with no policy work. ``--files`` writes every output file
of ``hpcpower run`` from that replay's results instead (the same run, so
the same files but the summary's policy name) and adds up the floor of a
whole ``hpcpower run`` with a policy that costs nothing: reading the trace,
the replay and the files. ``--numba-floor`` adds what the
compiled twins cost a fresh process before any simulation (numba's import
and its first call of a cached twin, in time and peak memory).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from hpcpower import Decision, Policy, load_platform, load_workload, make_policy
from hpcpower.engine.simulation import Simulation
from hpcpower.results.export import write_all, write_decisions_csv
from hpcpower.results.records import Results

#: One pass's commands: (time, starts as (job, nodes), switch-offs, switch-ons, wake-up
#: times, the policy's note).
Kept = tuple[float, list, list[int], list[int], list[float], dict | None]


class Replay(Policy):
    """Hands the engine the decisions of a recorded run, pass by pass."""

    name = "replay"

    def __init__(self, kept: list[Kept], notes: bool = False) -> None:
        self._kept = kept
        self._next = 0
        self._notes = notes

    def decide(self, view) -> Decision:
        at, start, off, on, calls, note = self._kept[self._next]
        if at != view.now:
            raise RuntimeError(f"pass {self._next}: recorded at t={at!r}, replayed at {view.now!r}")
        self._next += 1
        decision = Decision(list(start), list(off), list(on), list(calls))
        if self._notes:
            decision.note = note
        return decision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--platform", default="aoba-64")
    parser.add_argument("--policy", default="snf-icon")
    parser.add_argument("--jobs", type=int, help="only the first JOBS jobs")
    parser.add_argument("--kernels", default="auto", choices=("auto", "numba", "numpy"))
    parser.add_argument("--decisions", default="full", choices=("full", "changes", "off"))
    parser.add_argument(
        "--files",
        action="store_true",
        help="write every output file from the replay (the floor of a whole hpcpower run)",
    )
    parser.add_argument(
        "--numba-floor", action="store_true", help="also measure numba's fixed cost"
    )
    args = parser.parse_args()

    t = time.process_time()
    workload = load_workload(args.trace)
    load_s = time.process_time() - t
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
                decision.note,
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
    floor_record = replay.run()
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
    logged = ""
    # (With --files: reading the trace, the replay that keeps the log, and its files.)
    whole_s = None
    if args.decisions == "off" and args.files:
        # (No log to replay with: the files of the replay itself, without decisions.csv.)
        files_s = _write_files(floor_record)
        logged = f"\nwriting every output file: {files_s:.2f} CPU s"
        whole_s = load_s + floor_s + files_s
    if args.decisions != "off":
        # The engine again, now logging the policy's own notes at the same
        # level, then writing decisions.csv: the floor of a run that keeps
        # its decision log, with no policy work at all.
        with_log = Simulation(
            platform,
            workload,
            Replay(kept, notes=True),
            seed=42,
            kernels=sim.kernels,
            decisions=args.decisions,
        )
        t = time.process_time()
        record = with_log.run()
        log_s = time.process_time() - t
        if args.files:
            csv_s = _write_files(record)
        else:
            with tempfile.TemporaryDirectory() as folder:
                t = time.process_time()
                write_decisions_csv(
                    SimpleNamespace(decisions=with_log.decisions), Path(folder) / "decisions.csv"
                )
                csv_s = time.process_time() - t
        written = (
            "every output file"
            if args.files
            else f"decisions.csv ({len(with_log.decisions):,} rows)"
        )
        logged = (
            f"\nrun() of the replay with the policy's notes logged ({args.decisions}): "
            f"{log_s:.2f} CPU s, {log_s / passes * 1e6:.1f} us a pass; writing "
            f"{written}: {csv_s:.2f} CPU s; together {log_s + csv_s:.2f} s"
        )
        if args.files:
            whole_s = load_s + log_s + csv_s
    if whole_s is not None:
        logged += (
            f"\na whole run with a policy that costs nothing: reading the trace "
            f"{load_s:.2f} s + the replay + the files = {whole_s:.2f} CPU s"
        )
    print(
        f"{args.trace.name}, {len(workload.jobs):,} jobs, {args.platform}, {args.policy}, "
        f"{sim.kernels} kernels: {passes:,} passes\n"
        f"run() under the policy (decision log {args.decisions}): {policy_s:.2f} CPU s, "
        f"{policy_s / passes * 1e6:.1f} us a pass\n"
        f"run() of the replay, the engine alone (no log): {floor_s:.2f} CPU s, "
        f"{floor_s / passes * 1e6:.1f} us a pass ({floor_s / policy_s:.0%} of the run)" + logged
    )
    if args.numba_floor:
        print(numba_floor())


def _write_files(record) -> float:
    """CPU seconds to write every output file of ``hpcpower run`` from a run's record."""
    with tempfile.TemporaryDirectory() as folder:
        t = time.process_time()
        write_all(Results.from_record(record), Path(folder) / "out")
        return time.process_time() - t


#: A fresh interpreter loading the twins and calling one: the fixed cost of numba.
NUMBA_FLOOR = """
import json, resource, time
t0 = time.process_time()
import numpy as np
t1 = time.process_time()
from hpcpower.planning import compiled
compiled.load()
t2 = time.process_time()
from hpcpower.planning import markov
markov.small_stats(np.ones(8), 2.0, False, 96)
t3 = time.process_time()
print(json.dumps([t1 - t0, t2 - t1, t3 - t2, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss]))
"""


def numba_floor() -> str:
    """What the compiled twins cost before any work: numba's import and first call."""
    out = subprocess.run(
        [sys.executable, "-c", NUMBA_FLOOR], check=True, capture_output=True, text=True
    )
    numpy_s, import_s, first_s, peak_kb = json.loads(out.stdout)
    return (
        f"numba's fixed cost in a fresh process: numpy {numpy_s:.2f} s, then importing numba "
        f"and the twins {import_s:.2f} s, then the first call of a cached twin {first_s:.2f} s; "
        f"peak {peak_kb / 1024:.0f} MB before any simulation"
    )


if __name__ == "__main__":
    main()
