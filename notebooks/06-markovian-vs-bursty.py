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
# # 6. Markovian or bursty: SNF-ICON's workload screen
#
# SNF-ICON's spare planning assumes a Markovian workload: Poisson arrivals
# (exponential interarrival times) and exponential service times. At every
# pass it screens the recent samples (the last two hours) of both series:
#
# * **CV** (standard deviation / mean) near 1, as for an exponential;
# * **lag-1 autocorrelation** near 0: one gap says nothing about the next;
# * **KS distance** (the largest gap between the sample's distribution and
#   the fitted exponential) small.
#
# If a series fails (or has too few samples) the pass falls back to SNF + IPM.
# Two workloads with similar jobs: one Markovian, one in bursts.

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from hpcpower import Simulation, load_workload

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "scenarios" / "teaching").is_dir())
TEACHING = ROOT / "scenarios" / "teaching"
runs = {
    name: Simulation.from_scenario(TEACHING / f"06-{name}.toml").run()
    for name in ("markovian", "bursty")
}

# %% [markdown]
# ## The arrivals
#
# For exponential gaps the CV is 1. Bursts make many tiny gaps and a few
# huge ones: the CV is far above 1.

# %%
bursty_gaps = np.diff(
    [job.submit_s for job in load_workload(TEACHING / "data" / "bursty.json").jobs]
)
markovian_gaps = np.diff(runs["markovian"].to_pandas("jobs")["submit_s"].to_numpy())
fig, axes = plt.subplots(1, 2, figsize=(9, 3))
for ax, (name, gaps) in zip(
    axes, (("markovian", markovian_gaps), ("bursty", bursty_gaps)), strict=True
):
    ax.hist(gaps / 60, bins=40)
    ax.set_title(f"{name}: CV = {gaps.std() / gaps.mean():.2f}")
    ax.set_xlabel("interarrival (min)")
fig.tight_layout()

# %% [markdown]
# ## What the screen decided
#
# The decision log has one row per pass: `mode` is `icon` or `fallback`, and
# `arrival_reason` says why the arrival series was rejected.

# %%
pd.DataFrame(
    {
        name: {
            "ICON time share": r.summary["icon_time_fraction"],
            "passes in ICON mode": (r.to_pandas("decisions")["mode"] == "icon").mean(),
            "mean wait (min)": r.summary["mean_wait_s"] / 60,
        }
        for name, r in runs.items()
    }
).round(3)

# %%
log = runs["bursty"].to_pandas("decisions")
log.loc[log["mode"] == "fallback", "arrival_reason"].value_counts().head(6)

# %% [markdown]
# On the bursty workload the window either holds too few arrivals (between
# bursts) or arrivals whose CV is far from 1 (within a burst and around it).
# The screen's view over time, on the Markovian workload:

# %%
log = runs["markovian"].to_pandas("decisions")
fig, ax = plt.subplots(figsize=(8, 3))
ax.plot(log["time_s"] / 3600, log["arrival_cv"], ".", ms=2, label="interarrival CV")
ax.axhspan(1 - 0.45, 1 + 0.45, color="C2", alpha=0.15, label="accepted: |CV - 1| <= 0.45")
ax.set_xlabel("time (h)")
ax.set_ylabel("CV in the window")
ax.legend(loc="upper right")
fig.tight_layout()

# %% [markdown]
# **Look for:** ICON mode most of the time on the Markovian workload, almost
# never on the bursty one, where SNF-ICON runs exactly as SNF + IPM. The
# page `docs/background/snf-icon-for-learners.md` explains the three tests.
