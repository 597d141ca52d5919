"""Where a run's time goes, part by part, and which controller passes act.

Runs one trace once, with a wall-clock timer (``time.perf_counter``) around
each part of a pass that the policy has (the parts of SNF-ICON and of a
queue policy plus a power manager; a part the policy lacks is left out),
and counts the passes by what triggered them and whether they started a
job or switched a node. Printed: CPU and wall seconds of ``run()``, then
per part its seconds, calls, microseconds a call and share of the wall
time (parts nest: the indented ones are inside the one above, and "the
engine" is what the policy's ``decide`` leaves), then the census of passes.

Each timer adds about 0.2 µs to a call (a timed no-op against a bare
one), so the shares are a little above those of an untimed run; the census is exact. Run from the
project root:

    python benchmarks/pass_split.py scenarios/data/DAS2-fs1-2003-1.swf.gz --platform aoba-64
    python benchmarks/pass_split.py scenarios/data/SDSC-BLUE-2000-4.2-cln.swf.gz \\
        --platform aoba-1152 --jobs 20000          # the first 20,000 jobs
"""

from __future__ import annotations

import argparse
import collections
import functools
import time
from pathlib import Path

from cases import add_kernels_option


def _attr(*names):
    """The object at a chain of attributes of the simulation (``None`` if a link is missing)."""

    def get(sim):
        obj = sim
        for name in names:
            obj = getattr(obj, name, None)
        return obj

    return get


def _forward_kernel(sim):
    """The compiled forward plan's module (the numpy form plans job by job in Python)."""
    from hpcpower.planning import forward

    return forward if sim.kernels == "numba" else None


#: The parts timed: (label, depth, the object holding the part, its attribute).
#: The wrapper is set on that object (an instance, or a module for a kernel);
#: a part whose object is ``None`` or lacks the attribute is left out.
PARTS = [
    ("policy: decide", 0, _attr("policy"), "decide"),
    ("workload screen", 1, _attr("policy", "screen"), "verdict"),
    ("the note", 1, _attr("policy"), "_note"),
    ("ICON pass", 1, _attr("policy"), "_icon"),
    ("queue policy: schedule", 1, _attr("policy", "fallback", "queue_policy"), "schedule"),
    ("queue policy: schedule", 1, _attr("policy", "queue_policy"), "schedule"),
    ("power manager: manage", 1, _attr("policy", "fallback", "power"), "manage"),
    ("power manager: manage", 1, _attr("policy", "power"), "manage"),
    ("forward plan (kernel)", 2, _forward_kernel, "forward_plan"),
    ("forward plan and its wakes (kernel)", 2, _forward_kernel, "forward_wakes"),
    ("decision log", 1, _attr("decisions"), "append"),
]


#: The parts that make a forward plan (the census counts the passes that call either).
_PLAN_LABELS = ("forward plan (kernel)", "forward plan and its wakes (kernel)")


def _timed(function, totals: list[float]):
    """``function`` with its calls counted and its wall seconds added to ``totals``."""
    clock = time.perf_counter

    @functools.wraps(function)
    def timed(*args, **kwargs):
        start = clock()
        try:
            return function(*args, **kwargs)
        finally:
            totals[0] += clock() - start
            totals[1] += 1

    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--platform", default="aoba-64")
    parser.add_argument("--policy", default="snf-icon")
    parser.add_argument("--jobs", type=int, default=0, help="only the first JOBS jobs (0: all)")
    add_kernels_option(parser)
    args = parser.parse_args()

    from hpcpower import Simulation, load_platform, load_workload, make_policy
    from hpcpower.planning import compiled

    workload = load_workload(args.trace)
    if args.jobs:
        workload.jobs = workload.jobs[: args.jobs]
    sim = Simulation(
        load_platform(args.platform),
        workload,
        make_policy(args.policy),
        seed=42,
        kernels=args.kernels,
    )
    if sim.kernels == "numba":
        compiled.load()  # (before the wrappers: they wrap the compiled kernels)
    rows = []
    for label, depth, holder, attribute in PARTS:
        owner = holder(sim)
        if owner is None or not hasattr(owner, attribute):
            continue
        totals = [0.0, 0]
        setattr(owner, attribute, _timed(getattr(owner, attribute), totals))
        rows.append((label, depth, totals))

    census: collections.Counter = collections.Counter()  # (triggers, acted) -> passes
    planned: collections.Counter = collections.Counter()  # triggers -> passes that planned
    idle: collections.Counter = collections.Counter()  # of those, passes with nothing new
    # The plan is made by either kernel (forward_wakes when only the wakes are read).
    kernels = [totals for label, _, totals in rows if label in _PLAN_LABELS]
    seen = [0]  # forward plans made before this pass
    asked: set[float] = set()  # wake-up times asked for and still ahead (as the engine keeps)

    def count(now, decision) -> None:
        triggers = "+".join(sorted(sim.last_triggers))
        acted = bool(decision.start or decision.switch_on or decision.switch_off)
        census[triggers, acted] += 1
        later = {float(t) for t in decision.call_at if t > now}
        fresh = not later <= asked
        asked.difference_update([t for t in asked if t <= now])
        asked.update(later)
        made = sum(totals[1] for totals in kernels)
        if made > seen[0]:
            seen[0] = made
            planned[triggers] += 1
            if not (acted or fresh):
                idle[triggers] += 1

    sim.on("decision", count)
    cpu, wall = time.process_time(), time.perf_counter()
    sim.run()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    passes = sim.passes
    print(
        f"{args.trace.name}{f' (first {args.jobs} jobs)' if args.jobs else ''}, {args.platform}, "
        f"{args.policy}, {sim.kernels} kernels: run() {cpu:.2f} CPU s, {wall:.2f} wall s, "
        f"{passes:,} passes, {wall / passes * 1e6:.1f} us a pass\n"
    )
    print("| part | seconds | calls | us a call | share of run() |")
    print("|---|---:|---:|---:|---:|")
    decide = next((totals[0] for label, _, totals in rows if label == "policy: decide"), None)
    for label, depth, (seconds, calls) in rows:
        if label == "decision log" and decide is not None:
            # The engine's row (what the policy's decide leaves), then its parts.
            rest = wall - decide
            print(
                f"| the engine (all but the policy's decide) | {rest:.2f} | {passes:,} passes | "
                f"{rest / passes * 1e6:.1f} a pass | {rest / wall:.1%} |"
            )
        name = "&nbsp;&nbsp;" * 2 * depth + label
        per_call = seconds / calls * 1e6 if calls else 0.0
        print(f"| {name} | {seconds:.2f} | {calls:,} | {per_call:.1f} | {seconds / wall:.1%} |")
    extra = "| forward plans | of which gave nothing new " if kernels else ""
    print(f"\n| triggers | passes | of which acted | share of passes {extra}|")
    print("|---|---:|---:|---:" + ("|---:|---:" if kernels else "") + "|")
    triggers = collections.Counter()
    for (names, _), k in census.items():
        triggers[names] += k
    for names, k in triggers.most_common():
        row = f"| {names} | {k:,} | {census[names, True]:,} | {k / passes:.1%} |"
        if kernels:
            row += f" {planned[names]:,} | {idle[names]:,} |"
        print(row)
    if kernels:
        made, same = planned.total(), idle.total()
        print(
            f"\n{made:,} passes made a forward plan; {same:,} ({same / max(made, 1):.1%}) "
            "of them decided nothing new"
        )


if __name__ == "__main__":
    main()
