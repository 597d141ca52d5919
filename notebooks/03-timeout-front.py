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
# # 3. The timeout trade-off
#
# Notebooks 1 and 2 looked at one timeout too short and one too long. Here
# the same workday runs under ten timeouts, from 0 to never, and each run
# becomes one point: mean wait against wasted energy.

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from hpcpower import Simulation

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "scenarios" / "teaching").is_dir())
SCENARIO = ROOT / "scenarios" / "teaching" / "03-timeout-front.toml"
TIMEOUTS = [0, 30, 60, 120, 300, 600, 1800, 3600, 14400, "none"]

# %%
rows = []
for timeout in TIMEOUTS:
    s = Simulation.from_scenario(SCENARIO, **{"policy.timeout_s": timeout}).run().summary
    rows.append(
        {
            "timeout": timeout,
            "mean wait (s)": s["mean_wait_s"],
            "wasted (kWh)": s["wasted_energy_j"] / 3.6e6,
            "switch-ons": s["switch_ons"],
        }
    )
table = pd.DataFrame(rows)

# %% [markdown]
# A run is **dominated** when another run has both a shorter wait and less
# wasted energy: nobody should choose it. The others form the **front**.

# %%
wait, wasted = table["mean wait (s)"], table["wasted (kWh)"]
table["on front"] = [
    not ((wait <= w) & (wasted <= e) & ((wait < w) | (wasted < e))).any()
    for w, e in zip(wait, wasted, strict=True)
]
table.round(2)

# %%
fig, ax = plt.subplots(figsize=(6, 4))
colours = ["C0" if on else "0.6" for on in table["on front"]]
ax.scatter(wasted, wait, c=colours)
for _, row in table.iterrows():
    ax.annotate(str(row["timeout"]), (row["wasted (kWh)"], row["mean wait (s)"]), fontsize=8)
ax.set_xlabel("wasted energy (kWh)")
ax.set_ylabel("mean wait (s)")
ax.set_title("timeouts in seconds; grey: dominated")
fig.tight_layout()

# %% [markdown]
# **Look for:** along the front, each step buys a shorter wait with more
# energy, and the price grows: from 2 to 10 minutes costs 0.9 kWh for 10 s
# of wait, from 4 hours to never 10 kWh for 1 s. The timeouts below the
# 140 s break-even (0, 30, 60 s) are dominated by 120 s: they wait longer
# *and* waste more. Which point is best depends on what a second of wait is
# worth to you in joules; SNF-ICON makes that price explicit (its `alpha`
# and `beta`, notebook 4).
