# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 1. An idle timeout that is too short
#
# IPM switches a node off once it has been idle for `timeout_s` seconds. A
# short timeout saves idle energy, but a node that is asleep when a job
# arrives must switch on first, and the job waits.
#
# The workload: three working days of single-node jobs on `toy-4`, one job
# every 1 to 3 minutes from 8:00 to 16:00, nights empty
# (`scenarios/teaching/data/workday.json`).

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from hpcpower import Simulation

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "scenarios" / "teaching").is_dir())
SCENARIO = ROOT / "scenarios" / "teaching" / "01-timeout-too-short.toml"
print(SCENARIO.read_text())

# %% [markdown]
# Run it with the scenario's timeout (0 s: switch off at once) and with two
# minutes, longer than most gaps between jobs:

# %%
runs = {t: Simulation.from_scenario(SCENARIO, **{"policy.timeout_s": t}).run() for t in (0, 120)}
pd.DataFrame(
    {
        f"timeout {t} s": {
            "mean wait (s)": r.summary["mean_wait_s"],
            "median wait (s)": r.summary["median_wait_s"],
            "switch-ons": r.summary["switch_ons"],
            "idle (kWh)": r.summary["energy_j"]["idle"] / 3.6e6,
            "switching (kWh)": (
                r.summary["energy_j"]["switching_on"] + r.summary["energy_j"]["switching_off"]
            )
            / 3.6e6,
            "wasted (kWh)": r.summary["wasted_energy_j"] / 3.6e6,
        }
        for t, r in runs.items()
    }
).round(2)

# %% [markdown]
# With a zero timeout the **median wait is exactly 60 s**: the switch-on
# time. Most jobs find their node asleep and wait for it.
#
# And the energy is *not* lower. An off-on cycle costs 30 s × 150 W (switch
# off) + 60 s × 150 W (switch on) = 13 500 J, as much as 135 s of idling at
# 100 W. A sleeping node still draws 10 W, so switching off pays only for a
# gap G longer than 140 s (100·G = 13 500 + 10·(G − 90)); before a shorter
# gap it costs more than staying idle.

# %%
waits = {t: r.to_pandas("jobs")["wait_s"] for t, r in runs.items()}
fig, ax = plt.subplots(figsize=(6, 3))
bins = np.arange(0, 150, 10)
for t, w in waits.items():
    ax.hist(w, bins=bins, alpha=0.6, label=f"timeout {t} s")
ax.set_xlabel("wait (s)")
ax.set_ylabel("jobs")
ax.legend()
fig.tight_layout()

# %% [markdown]
# **Look for:** the spike at 60 s with the zero timeout, and the switch-on
# count, three times higher. Try `30` and `60` as timeouts: waits fall as the
# timeout grows past the typical gap between two jobs on a node.
