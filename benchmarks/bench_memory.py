"""Peak memory of one whole run, and what holds it.

Runs a trace on a platform under a policy in a fresh interpreter and prints
the CPU seconds of reading the trace and of ``Simulation.run()``, and the
process's peak resident memory (VmHWM: ``ru_maxrss`` of a child carries over
the parent's size on Linux). With ``--attribute`` it runs once more under
``tracemalloc`` (several times slower) and prints the Python allocations
alive at the end of the run and at the end of the results, by source line,
per job and per controller pass. With ``--write`` it also writes the run's
files (``write_all``, as ``hpcpower run`` does once the simulation is let
go) and prints the CPU seconds of writing, the memory resident before it
and the peak while writing (VmHWM reset by ``/proc/self/clear_refs``).
Run from the project root:

    python benchmarks/bench_memory.py                                  # SDSC Blue, FCFS/EASY
    python benchmarks/bench_memory.py DAS2-fs1-2003-1.swf.gz aoba-64 snf-icon
    python benchmarks/bench_memory.py --kernels numpy --attribute
    python benchmarks/bench_memory.py SDSC-BLUE-2000-4.2-cln.swf.gz aoba-1152 snf-icon --write

numba's compiled kernels bring their own memory (about 125 MB with LLVM,
measured on a 3000-job run), the same for every trace; ``--kernels numpy``
leaves it out.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cases import DATA

HERE = Path(__file__).resolve().parent


def peak_mb(key: str = "VmHWM") -> float:
    """This process's peak resident memory so far (MB); ``key="VmRSS"``: the resident now."""
    with open("/proc/self/status") as fh:
        line = next(ln for ln in fh if ln.startswith(key + ":"))
    return int(line.split()[1]) / 1024


def measure(trace: str, platform: str, policy: str, kernels: str, write: bool = False) -> dict:
    """One run in this process: CPU seconds of reading and running, peak memory.

    ``write``: then write its files, and add the CPU seconds of writing, the
    resident memory before it, the peak while writing and the whole peak.
    """
    from hpcpower import Simulation, load_platform, load_workload, make_policy
    from hpcpower.results.export import write_all

    t0 = time.process_time()
    workload = load_workload(DATA / trace)
    t1 = time.process_time()
    sim = Simulation(
        load_platform(platform), workload, make_policy(policy), seed=42, kernels=kernels
    )
    t2 = time.process_time()
    results = sim.run()
    t3 = time.process_time()
    out = {
        "jobs": results.summary["jobs_submitted"],
        "passes": results.summary["decisions"],
        "load_cpu_s": t1 - t0,
        "run_cpu_s": t3 - t2,
        "peak_mb": peak_mb(),
        "kernels": sim.kernels,
    }
    if write:
        del sim, workload  # (as hpcpower run lets the simulation go before writing)
        gc.collect()
        out["before_write_mb"] = peak_mb("VmRSS")
        with open("/proc/self/clear_refs", "w") as fh:  # (VmHWM from here on)
            fh.write("5")
        with tempfile.TemporaryDirectory() as folder:
            t4 = time.process_time()
            write_all(results, Path(folder) / "run")
            out["write_cpu_s"] = time.process_time() - t4
        out["write_peak_mb"] = peak_mb()
    return out


def attribute(trace: str, platform: str, policy: str, kernels: str, top: int) -> None:
    """Print the Python allocations alive after the run and after the results, by line."""
    import tracemalloc

    from hpcpower import Simulation, load_platform, load_workload, make_policy
    from hpcpower.engine import _simpy
    from hpcpower.results.records import Results

    tracemalloc.start()
    workload = load_workload(DATA / trace)
    n_jobs = len(workload.jobs)
    loaded, load_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    sim = Simulation(
        load_platform(platform), workload, make_policy(policy), seed=42, kernels=kernels
    )
    _simpy.process(sim.env, float("inf"), sim)
    ran, run_peak = tracemalloc.get_traced_memory()
    after_run = tracemalloc.take_snapshot()
    tracemalloc.reset_peak()
    results = Results.from_record(sim.record())
    done, results_peak = tracemalloc.get_traced_memory()
    after_results = tracemalloc.take_snapshot()
    mb = 2**20
    print(f"{n_jobs} jobs, {sim.passes} passes, {len(results.state_counts)} state rows")
    print(
        f"traced: workload {loaded / mb:.1f} MB (peak while reading {load_peak / mb:.1f}), "
        f"after the run {ran / mb:.1f} (peak {run_peak / mb:.1f}), "
        f"after the results {done / mb:.1f} (peak {results_peak / mb:.1f})"
    )
    for title, snapshot in (("after the run", after_run), ("after the results", after_results)):
        print(f"\nlargest holders {title}:")
        for stat in snapshot.statistics("lineno")[:top]:
            frame = stat.traceback[0]
            print(
                f"  {stat.size / mb:7.1f} MB  {stat.size / n_jobs:6.0f} B/job  "
                f"{stat.size / max(sim.passes, 1):6.1f} B/pass  {frame.filename}:{frame.lineno}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", nargs="?", default="SDSC-BLUE-2000-4.2-cln.swf.gz")
    parser.add_argument("platform", nargs="?", default="aoba-1152")
    parser.add_argument("policy", nargs="?", default="fcfs-easy")
    parser.add_argument("--kernels", choices=("auto", "numba", "numpy"), default="auto")
    parser.add_argument("--attribute", action="store_true", help="also attribute with tracemalloc")
    parser.add_argument("--top", type=int, default=12, help="source lines to list")
    parser.add_argument("--write", action="store_true", help="also write the run's files")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    case = (args.trace, args.platform, args.policy, args.kernels)
    if args.child:
        print("RESULT " + json.dumps(measure(*case, write=args.write)))
        return
    cmd = [sys.executable, str(HERE / "bench_memory.py"), *case[:3], "--kernels", args.kernels]
    cmd += ["--write"] if args.write else []
    done = subprocess.run([*cmd, "--child"], capture_output=True, text=True, cwd=HERE)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        sys.exit(done.stderr or done.stdout)
    r = json.loads(lines[-1][7:])
    print(
        f"{args.trace} on {args.platform} under {args.policy} ({r['kernels']} kernels): "
        f"{r['jobs']} jobs, {r['passes']} passes; read {r['load_cpu_s']:.2f} s CPU, "
        f"run {r['run_cpu_s']:.2f} s CPU, peak {r['peak_mb']:.0f} MB "
        f"({r['peak_mb'] * 2**20 / r['jobs']:.0f} B/job)"
    )
    if args.write:
        print(
            f"files: {r['write_cpu_s']:.2f} s CPU, resident before {r['before_write_mb']:.0f} MB, "
            f"peak while writing {r['write_peak_mb']:.0f} MB; whole peak "
            f"{max(r['peak_mb'], r['write_peak_mb']):.0f} MB"
        )
    if args.attribute:
        attribute(*case, top=args.top)


if __name__ == "__main__":
    main()
