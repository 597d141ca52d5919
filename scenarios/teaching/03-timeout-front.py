"""Lesson 3: run the workday under many idle timeouts and print the wait-energy front.

    python scenarios/teaching/03-timeout-front.py               # the table
    python scenarios/teaching/03-timeout-front.py --plot front.png

Each timeout is one run of ``03-timeout-front.toml`` (a fraction of a second
each). A run is on the front when no other run has both a shorter mean wait
and less wasted energy; the others are "dominated".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hpcpower import Simulation

SCENARIO = Path(__file__).resolve().with_suffix(".toml")
#: Seconds; ``None`` never switches a node off.
TIMEOUTS: tuple[float | None, ...] = (0, 30, 60, 120, 300, 600, 1800, 3600, 14400, None)


def front(timeouts=TIMEOUTS) -> list[dict]:
    """One row per timeout: mean wait (s), wasted and idle energy (kWh), switch-ons, on front."""
    rows = []
    for timeout in timeouts:
        setting = "none" if timeout is None else timeout
        s = Simulation.from_scenario(SCENARIO, **{"policy.timeout_s": setting}).run().summary
        rows.append(
            {
                "timeout_s": timeout,
                "mean_wait_s": s["mean_wait_s"],
                "wasted_kwh": s["wasted_energy_j"] / 3.6e6,
                "idle_kwh": s["energy_j"]["idle"] / 3.6e6,
                "switch_ons": s["switch_ons"],
            }
        )
    for row in rows:
        row["on_front"] = not any(
            other["mean_wait_s"] <= row["mean_wait_s"]
            and other["wasted_kwh"] <= row["wasted_kwh"]
            and (other["mean_wait_s"], other["wasted_kwh"])
            != (row["mean_wait_s"], row["wasted_kwh"])
            for other in rows
        )
    return rows


def label(timeout: float | None) -> str:
    """``none``, ``45 s``, ``10 min`` or ``4 h``."""
    if timeout is None:
        return "none"
    if timeout >= 3600:
        return f"{timeout / 3600:g} h"
    return f"{timeout / 60:g} min" if timeout >= 60 else f"{timeout:g} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", metavar="PNG", help="also draw the front into this file")
    args = parser.parse_args(argv)
    rows = front()
    print(
        f"{'timeout':>8}  {'mean wait':>10}  {'wasted':>9}  {'idle':>9}  {'switch-ons':>10}  front"
    )
    for r in rows:
        print(
            f"{label(r['timeout_s']):>8}  {r['mean_wait_s']:>8.1f} s  {r['wasted_kwh']:>5.2f} kWh"
            f"  {r['idle_kwh']:>5.2f} kWh  {r['switch_ons']:>10}  {'yes' if r['on_front'] else '-'}"
        )
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for r in rows:
            ax.plot(r["wasted_kwh"], r["mean_wait_s"], "o", color="C0" if r["on_front"] else "0.6")
            ax.annotate(
                label(r["timeout_s"]),
                (r["wasted_kwh"], r["mean_wait_s"]),
                textcoords="offset points",
                xytext=(5, 4),
                fontsize=8,
            )
        ax.set_xlabel("wasted energy (kWh)")
        ax.set_ylabel("mean wait (s)")
        ax.set_title("Idle timeout: wait against wasted energy (grey: dominated)")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
