"""Speed of SNF-ICON on the paper's cases, and of one warm-spare optimisation.

Prints the wall and CPU time of ``Simulation.run()`` for each 64-node case
and for SDSC Blue on AOBA-1152 (loading and building excluded), and the
median and 95th percentile of the real spare optimisations of the SDSC run
(1152 nodes). Run from the project root:

    python benchmarks/bench_icon.py            # everything (a few minutes)
    python benchmarks/bench_icon.py --quick    # 64-node cases only
    python benchmarks/bench_icon.py --kernels numpy   # the numpy forms (default: numba)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from cases import DATA, PAPER_64, add_kernels_option

import hpcpower.policies.icon.controller as icon_controller
from hpcpower import Simulation, load_platform, load_workload, make_policy

KERNELS = "auto"  # set by --kernels


def run(workload_file: str, platform: str, policy: str = "snf-icon") -> None:
    sim = Simulation(
        load_platform(platform),
        load_workload(DATA / workload_file),
        make_policy(policy),
        seed=42,
        kernels=KERNELS,
    )
    wall, cpu = time.perf_counter(), time.process_time()
    s = sim.run().summary
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{workload_file:38s} {platform:10s} {policy:9s} run {wall:6.2f} s wall, {cpu:6.2f} s CPU  "
        f"wait {s['mean_wait_s'] / 60:6.2f} min  wasted {s['wasted_energy_j'] / 3.6e9:7.3f} MWh  "
        f"ICON {100 * s['icon_time_fraction']:5.1f} %",
        flush=True,
    )


def main() -> None:
    global KERNELS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64-node cases only")
    add_kernels_option(parser)
    args = parser.parse_args()
    KERNELS = args.kernels
    # Load (or compile) the planning kernels first: start-up is not measured.
    workload = load_workload(DATA / PAPER_64[0])
    workload.jobs = workload.jobs[:300]
    Simulation(
        load_platform("aoba-64"), workload, make_policy("snf-icon"), seed=42, kernels=KERNELS
    ).run()
    for name in PAPER_64:
        run(name, "aoba-64")
    if args.quick:
        return
    timings: list[float] = []
    original = icon_controller.optimise

    def timed(*a, **k):
        t0 = time.perf_counter()
        out = original(*a, **k)
        timings.append(time.perf_counter() - t0)
        return out

    icon_controller.optimise = timed
    try:
        run("SDSC-BLUE-2000-4.2-cln-0-3000.json.gz", "aoba-1152")
    finally:
        icon_controller.optimise = original
    ms = np.array(timings) * 1e3
    print(
        f"spare optimisations at 1152 nodes: {len(ms)}, median {np.median(ms):.2f} ms, "
        f"95th percentile {np.percentile(ms, 95):.2f} ms, first {ms[0]:.2f} ms"
    )


if __name__ == "__main__":
    main()
