"""Run the paper's six cases under the given policies and print a Markdown table.

    python scenarios/paper/table.py                         # the two baselines
    python scenarios/paper/table.py --policies snf-ipm snf-icon --jobs 2
    python scenarios/paper/table.py --cases das2-fs2 markovian --platform taurus-64

Each run uses the case's scenario file in this folder with ``seed = 42`` (the
seed of the authors' simulator). Runs go to a process pool; the table lists
mean wait (minutes), wasted energy (MWh), utilisation and, for ICON
controllers, the share of time in ICON mode.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from hpcpower import Simulation

HERE = Path(__file__).resolve().parent
CASES = ("das2-fs1", "das2-fs2", "das2-fs3", "das2-fs4", "markovian", "sdsc-blue")


def run_case(case: str, policy: str, platform: str | None = None) -> dict:
    """Run one case under one policy (optionally on another platform); return its figures."""
    t0 = time.perf_counter()
    overrides = {"policy__name": policy, "simulation__seed": 42}
    if platform:
        overrides["platform__name"] = platform
    sim = Simulation.from_scenario(HERE / f"{case}.toml", **overrides)
    s = sim.run().summary
    return {
        "case": case,
        "platform": s["config"]["platform"],
        "policy": policy,
        "mean_wait_min": s["mean_wait_s"] / 60,
        "wasted_mwh": s["wasted_energy_j"] / 3.6e9,
        "utilization": s["utilization"],
        "icon": s.get("icon_time_fraction"),
        "wall_s": time.perf_counter() - t0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the paper's six cases.")
    parser.add_argument("--policies", nargs="+", default=["fcfs-easy-ipm", "snf-ipm"])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--platform", help="run on this platform instead (cross-platform cases)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel processes")
    args = parser.parse_args()
    tasks = [(c, p) for c in args.cases for p in args.policies]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        platforms = [args.platform] * len(tasks)
        rows = list(pool.map(run_case, *zip(*tasks, strict=True), platforms))
    print("| case | platform | policy | mean wait (min) | wasted (MWh) | utilisation | ICON time |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        icon = "" if r["icon"] is None else f"{100 * r['icon']:.1f} %"
        print(
            f"| {r['case']} | {r['platform']} | {r['policy']} | {r['mean_wait_min']:.2f} | "
            f"{r['wasted_mwh']:.3f} | {100 * r['utilization']:.1f} % | {icon} |"
        )
    print()
    print(
        "wall time per run: "
        + ", ".join(f"{r['case']}/{r['policy']} {r['wall_s']:.1f} s" for r in rows)
    )


if __name__ == "__main__":
    main()
