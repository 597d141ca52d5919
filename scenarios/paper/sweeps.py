"""The paper's parameter sweeps on the Markovian workload (AOBA-64), as tables.

    python scenarios/paper/sweeps.py --tm 1 2 4 8 12 24 --alpha 10 500 5000 20000

Each value is one ``snf-icon`` run of ``markovian.toml`` (seed 42) with
``policy.markov_window_s`` (T_M, hours) or ``policy.alpha`` changed.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from hpcpower import Simulation

SCENARIO = Path(__file__).resolve().parent / "markovian.toml"


def run(setting: str, value: float, policy: str) -> tuple[str, float, dict]:
    """One run with ``policy.<setting> = value``."""
    sim = Simulation.from_scenario(
        SCENARIO, policy__name=policy, simulation__seed=42, **{f"policy__{setting}": value}
    )
    return setting, value, sim.run().summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tm", nargs="*", type=float, default=[1, 2, 4, 8, 12, 24], help="hours")
    parser.add_argument("--alpha", nargs="*", type=float, default=[10, 500, 5000, 20000])
    parser.add_argument("--policy", default="snf-icon")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    tasks = [("markov_window_s", h * 3600.0) for h in args.tm]
    tasks += [("alpha", a) for a in args.alpha]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(run, *zip(*tasks, strict=True), [args.policy] * len(tasks)))
    print(f"| setting | value | mean wait (min) | wasted (MWh) | ICON time |  ({args.policy})")
    print("|---|---:|---:|---:|---:|")
    for setting, value, s in rows:
        shown = f"{value / 3600:g} h" if setting == "markov_window_s" else f"{value:g}"
        name = "T_M" if setting == "markov_window_s" else "alpha"
        print(
            f"| {name} | {shown} | {s['mean_wait_s'] / 60:.2f} | "
            f"{s['wasted_energy_j'] / 3.6e9:.3f} | {100 * s['icon_time_fraction']:.1f} % |"
        )


if __name__ == "__main__":
    main()
