"""Where a whole ``hpcpower run`` process spends its CPU time, phase by phase.

Each repeat is a fresh interpreter (the python given, so that hpcpower can
run from an environment of its own, as in ``peers.py``) doing what
``hpcpower run TRACE --policy P --platform X`` does, with a CPU clock
(``time.process_time``) between the steps: the imports (after sizing the
numeric libraries' thread pools as the command does), reading the
workload and making the simulation, ``run()``, letting the simulation go
(``gc.collect``), and writing the files (``write_all``). The process's own
user + system CPU time, read by the parent (``resource.getrusage``), gives
the rest: the interpreter's start and exit. Printed: the median (min-max)
of each phase over the repeats and its share of the whole. Run from the
project root::

    python benchmarks/process_split.py scenarios/data/DAS2-fs1-0-3000.json.gz \\
        --policy snf-icon --platform aoba-64 --repeat 5 --python ../peers/hpcpower-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: The child: the CLI's steps (hpcpower.cli.main and _cmd_run), timed; prints its times as JSON.
CHILD = """
import time
t0 = time.process_time()
from hpcpower.cli import one_thread_pools
one_thread_pools()  # (as the command does, before numpy is imported)
import gc, json, shutil, sys
from pathlib import Path
from hpcpower.results.export import write_all
from hpcpower.scenario import resolve
from hpcpower.simulation import Simulation
t1 = time.process_time()
trace, policy, platform, out = sys.argv[1:5]
config = resolve(None, {"workload.path": trace, "policy.name": policy,
                        "platform.name": platform, "simulation.name": "split"})
sim = Simulation.from_config(config)
t2 = time.process_time()
results = sim.run()
t3 = time.process_time()
del sim
gc.collect()
t4 = time.process_time()
write_all(results, Path(out))
t5 = time.process_time()
print(json.dumps({"imports": t1 - t0, "load": t2 - t1, "run()": t3 - t2,
                  "let go": t4 - t3, "write": t5 - t4}))
"""

PHASES = ("imports", "load", "run()", "let go", "write", "start and exit")


def measure(python: str, trace: Path, policy: str, platform: str) -> dict[str, float]:
    """One fresh process's phases, in CPU seconds."""
    with tempfile.TemporaryDirectory() as scratch:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(
            [python, "-c", CHILD, str(trace), policy, platform, os.path.join(scratch, "out")],
            capture_output=True,
            text=True,
            cwd=scratch,  # (not this checkout's package, unless it is the installed one)
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        last = done.stderr.strip().splitlines()[-1:] or ["no message"]
        print(f"process_split.py: the run failed: {last[0]}", file=sys.stderr)
        sys.exit(2)
    phases = json.loads(done.stdout)
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    phases["start and exit"] = total - sum(phases.values())
    phases["whole process"] = total
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--policy", default="snf-icon")
    parser.add_argument("--platform", default="aoba-64")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if not args.trace.is_file():
        parser.error(f"{args.trace}: no such workload file")
    if shutil.which(args.python) is None:
        parser.error(f"--python {args.python}: no such interpreter")
    runs = [
        measure(args.python, args.trace.resolve(), args.policy, args.platform)
        for _ in range(args.repeat)
    ]
    whole = statistics.median(r["whole process"] for r in runs)
    print(
        f"{args.trace.name}, {args.platform}, {args.policy}: CPU seconds, "
        f"median (min-max) of {args.repeat} fresh processes\n"
    )
    print("| phase | CPU s | share |")
    print("|---|---:|---:|")
    for phase in (*PHASES, "whole process"):
        values = [r[phase] for r in runs]
        median = statistics.median(values)
        print(
            f"| {phase} | {median:.3f} ({min(values):.3f}-{max(values):.3f}) "
            f"| {100 * median / whole:.1f}% |"
        )


if __name__ == "__main__":
    main()
