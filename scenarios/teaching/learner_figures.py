"""Draw the figures of docs/background/snf-icon-for-learners.md.

    python scenarios/teaching/learner_figures.py              # into docs/images/
    python scenarios/teaching/learner_figures.py --out DIR

Three PNG files, from the lessons' scenarios (a few seconds in all):

* ``snf-icon-screen.png``: the three tests of SNF-ICON's workload screen
  (CV, lag-1 autocorrelation, KS distance) on a Markovian and a bursty
  stream of arrivals, with the screen's verdict on each;
* ``snf-icon-modes.png``: when each run is in ICON mode and when it falls
  back to SNF + IPM;
* ``snf-icon-spares.png``: what warm spares buy, mean wait against wasted
  energy, for SNF + IPM under several timeouts and SNF-ICON under several
  values of ``alpha``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from hpcpower import Simulation
from hpcpower.policies.icon.screen import ScreenSettings, screen_series

TEACHING = Path(__file__).resolve().parent
IMAGES = TEACHING.parents[1] / "docs" / "images"
MARKOVIAN = TEACHING / "06-markovian.toml"
BURSTY = TEACHING / "06-bursty.toml"
#: One screen window: the interarrival times of the jobs submitted in these
#: hours: the screen itself looks back 2 hours, which holds too few arrivals to
#: show much in a picture.
WINDOW_H = (0.0, 24.0)


def interarrivals(scenario: Path) -> np.ndarray:
    """Interarrival times (s) of the jobs submitted in ``WINDOW_H``."""
    sim = Simulation.from_scenario(scenario)
    submits = np.array([job.submit_s for job in sim.workload.jobs])
    gaps = np.diff(submits)
    lo, hi = (3600 * h for h in WINDOW_H)
    return gaps[(submits[1:] >= lo) & (submits[1:] < hi)]


def draw_screen(path: Path) -> None:
    """Histogram against the exponential, consecutive pairs, and the KS distance."""
    fig, axes = plt.subplots(2, 3, figsize=(11, 6.2))
    for row, (name, scenario) in enumerate((("Markovian", MARKOVIAN), ("bursty", BURSTY))):
        gaps = interarrivals(scenario)
        verdict = screen_series(list(gaps), ScreenSettings(), name="interarrival", required=True)
        mean = gaps.mean()
        minutes = gaps / 60
        ax = axes[row, 0]
        ax.hist(minutes, bins=20, density=True, color="C0", alpha=0.7)
        x = np.linspace(0, minutes.max(), 200)
        ax.plot(x, np.exp(-x / (mean / 60)) / (mean / 60), "k--", label="exponential, same mean")
        ax.set_title(f"{name}: CV = {verdict.cv:.2f} (accept if |CV - 1| <= 0.45)", fontsize=9)
        ax.set_xlabel("interarrival time (min)")
        ax.legend(fontsize=8)
        ax = axes[row, 1]
        ax.scatter(minutes[:-1], minutes[1:], s=10)
        ax.set_title(f"lag-1 autocorrelation = {verdict.lag1:.2f} (accept if <= 0.65)", fontsize=9)
        ax.set_xlabel("gap i (min)")
        ax.set_ylabel("gap i + 1 (min)")
        ax = axes[row, 2]
        sorted_min = np.sort(minutes)
        steps = np.arange(1, len(sorted_min) + 1) / len(sorted_min)
        ax.step(sorted_min, steps, where="post", label="sample")
        x = np.linspace(0, sorted_min.max(), 200)
        ax.plot(x, 1 - np.exp(-x / (mean / 60)), "k--", label="exponential")
        ax.set_title(
            f"KS distance = {verdict.ks:.2f} (limit {verdict.ks_limit:.2f}, n = {verdict.n})",
            fontsize=9,
        )
        ax.set_xlabel("interarrival time (min)")
        ax.legend(fontsize=8, loc="lower right")
        axes[row, 0].set_ylabel("accepted" if verdict.accepted else f"rejected: {verdict.reason}")
    fig.suptitle(
        f"The screen's three tests on the interarrival times of {WINDOW_H[0]:g} h to "
        f"{WINDOW_H[1]:g} h",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw_modes(path: Path) -> None:
    """ICON mode (1) or fallback (0) over time, with the arrivals as ticks."""
    fig, axes = plt.subplots(2, 1, figsize=(10, 3.8), sharex=True)
    for ax, (name, scenario) in zip(
        axes, (("Markovian", MARKOVIAN), ("bursty", BURSTY)), strict=True
    ):
        results = Simulation.from_scenario(scenario).run()
        times = np.array([note["time_s"] for note in results.decisions]) / 3600
        icon = np.array([note["mode"] == "icon" for note in results.decisions], dtype=float)
        ax.fill_between(times, icon, step="post", color="C2", alpha=0.5, label="ICON mode")
        submits = np.array(
            [job.submit_s for job in Simulation.from_scenario(scenario).workload.jobs]
        )
        ax.plot(submits / 3600, np.full(len(submits), -0.15), "|", color="k", ms=6, label="arrival")
        share = results.summary["icon_time_fraction"]
        ax.set_title(f"{name}: ICON mode {100 * share:.1f} % of the time", fontsize=10)
        ax.set_yticks([0, 1], ["fallback", "ICON"])
        ax.set_ylim(-0.3, 1.1)
    axes[1].set_xlabel("time (h)")
    axes[1].set_xlim(0, 52)
    axes[0].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw_spares(path: Path) -> None:
    """Mean wait against wasted energy: IPM timeouts and SNF-ICON alphas (lesson 4)."""
    scenario = TEACHING / "04-warm-spares.toml"
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    series = (
        ("snf-ipm, timeout", "policy.timeout_s", (300, 600, 1800, 3600, 7200), "snf-ipm", "C0"),
        (
            "snf-icon (timeout 600 s), alpha",
            "policy.alpha",
            (500, 5000, 20000, 80000),
            "snf-icon",
            "C3",
        ),
    )
    for label, key, values, policy, colour in series:
        points = []
        for value in values:
            s = Simulation.from_scenario(scenario, **{"policy.name": policy, key: value}).run()
            points.append((s.summary["wasted_energy_j"] / 3.6e6, s.summary["mean_wait_s"] / 60))
        x, y = zip(*points, strict=True)
        ax.plot(x, y, "o-", color=colour, label=label)
        for value, (px, py) in zip(values, points, strict=True):
            ax.annotate(
                f"{value:g}", (px, py), textcoords="offset points", xytext=(4, 4), fontsize=8
            )
    ax.set_xlabel("wasted energy (kWh)")
    ax.set_ylabel("mean wait (min)")
    ax.set_title("300 Markovian jobs on aoba-8 (switch-on 20 min)", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


FIGURES = {
    "snf-icon-screen.png": draw_screen,
    "snf-icon-modes.png": draw_modes,
    "snf-icon-spares.png": draw_spares,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=IMAGES, help="folder (default docs/images)")
    args = parser.parse_args(argv)
    plt.switch_backend("Agg")  # files only, never a window
    args.out.mkdir(parents=True, exist_ok=True)
    for name, draw in FIGURES.items():
        draw(args.out / name)
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
