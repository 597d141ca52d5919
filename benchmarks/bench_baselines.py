"""Speed of the baseline policies on the paper's cases and on full traces.

Prints one line per run: simulated jobs, wall and CPU time of
``Simulation.run()`` (loading the trace, shown apart as setup, and building
the simulation are excluded), and peak memory of the process. The planning
kernels (``pip install -e ".[fast]"``) are loaded, or compiled, before the
first timed run; ``--kernels numpy`` times the numpy forms instead. On a
busy machine the CPU time is the fairer figure. Run from the project root:

    python benchmarks/bench_baselines.py            # everything (a few minutes)
    python benchmarks/bench_baselines.py --quick    # the 64-node paper cases only
    python benchmarks/bench_baselines.py --repeat 3 # fastest of 3 runs per case (noisy machines)
"""

from __future__ import annotations

import argparse
import gc
import platform
import resource
import sys
import time

from cases import DATA, PAPER_64, add_kernels_option

from hpcpower import Simulation, load_platform, load_workload, make_policy


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


REPEAT = 1  # runs per case; the fastest is reported (--repeat)
KERNELS = "auto"  # set by --kernels


def bench(workload_file: str, platform_name: str, policy: str, **load_opts) -> dict:
    t0 = time.perf_counter()
    workload = load_workload(DATA / workload_file, **load_opts)
    t1 = time.perf_counter()
    wall = cpu = float("inf")
    for _ in range(REPEAT):
        sim = Simulation(
            load_platform(platform_name), workload, make_policy(policy), seed=42, kernels=KERNELS
        )
        w0 = time.perf_counter()
        c0 = time.process_time()
        s = sim.run().summary
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
        del sim  # free this run before the next: peak memory is that of one run
        gc.collect()
    row = {
        "workload": workload_file,
        "platform": platform_name,
        "policy": policy,
        "jobs": s["jobs_submitted"],
        "setup_s": t1 - t0,
        "run_s": wall,
        "cpu_s": cpu,
        "mean_wait_min": s["mean_wait_s"] / 60,
        "wasted_mwh": s["wasted_energy_j"] / 3.6e9,
        "peak_mb": peak_rss_mb(),
    }
    print(
        f"{workload_file:34s} {platform_name:10s} {policy:14s} {row['jobs']:>7d} jobs  "
        f"run {row['run_s']:7.2f} s wall {row['cpu_s']:7.2f} s CPU  "
        f"(setup {row['setup_s']:5.2f} s)  "
        f"wait {row['mean_wait_min']:8.2f} min  wasted {row['wasted_mwh']:8.3f} MWh  "
        f"peak {row['peak_mb']:7.0f} MB",
        flush=True,
    )
    return row


def warm_up() -> None:
    """Load (or compile) the planning kernels before timing: start-up is not measured."""
    workload = load_workload(DATA / PAPER_64[0])
    workload.jobs = workload.jobs[:300]
    for plat in ("aoba-64", "aoba-1152"):
        for policy in ("fcfs-easy-ipm", "fcfs-easy", "snf-ipm"):
            Simulation(
                load_platform(plat), workload, make_policy(policy), seed=42, kernels=KERNELS
            ).run()


def main() -> None:
    global REPEAT, KERNELS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64-node paper cases only")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per case, the fastest reported (default 1)"
    )
    add_kernels_option(parser)
    args = parser.parse_args()
    REPEAT = max(1, args.repeat)
    KERNELS = args.kernels
    print(f"python {sys.version.split()[0]} on {platform.machine()}, {platform.processor() or ''}")
    print(f"planning kernels: {KERNELS}")
    warm_up()
    for name in PAPER_64:
        for policy in ("fcfs-easy-ipm", "snf-ipm"):
            bench(name, "aoba-64", policy)
    if args.quick:
        return
    bench("DAS2-fs1-2003-1.swf.gz", "aoba-64", "fcfs-easy")
    bench("DAS2-fs1-2003-1.swf.gz", "aoba-64", "fcfs-easy-ipm")
    bench("SDSC-BLUE-2000-4.2-cln-0-3000.json.gz", "aoba-1152", "fcfs-easy-ipm")
    bench("SDSC-BLUE-2000-4.2-cln-0-3000.json.gz", "aoba-1152", "snf-ipm")
    bench("SDSC-BLUE-2000-4.2-cln.swf.gz", "aoba-1152", "fcfs-easy")


if __name__ == "__main__":
    main()
