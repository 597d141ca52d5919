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
# # 5. Smallest-Need-First can starve a large job
#
# SNF starts the waiting job that needs the fewest nodes, whenever it fits.
# That gives short mean waits, but a job that needs the whole cluster only
# fits when every node is free at once.
#
# The workload: a 1-node job (100 s) arrives every 25 s for two hours, so
# about four of the eight `toy-8` nodes are always busy; one 8-node job
# arrives at 300 s. No power management here (`snf` and `fcfs-easy` keep
# every node on), to see the scheduling alone.

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from hpcpower import Simulation

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "scenarios" / "teaching").is_dir())
SCENARIO = ROOT / "scenarios" / "teaching" / "05-snf-starvation.toml"

# %%
tables = {
    policy: Simulation.from_scenario(SCENARIO, **{"policy.name": policy}).run().to_pandas("jobs")
    for policy in ("snf", "fcfs-easy")
}
pd.DataFrame(
    {
        policy: {
            "mean wait (s)": jobs["wait_s"].mean(),
            "8-node job's wait (s)": jobs.loc[jobs["res"] == 8, "wait_s"].item(),
        }
        for policy, jobs in tables.items()
    }
)

# %% [markdown]
# Under SNF the large job waits almost two hours: until the stream of small
# jobs stops. FCFS with EASY backfilling puts it at the head of the queue and
# *reserves* nodes for it: small jobs may jump ahead (backfill) only if they
# do not delay it, so it starts after 100 s, when the running jobs end.
#
# Yet SNF's **mean** wait is lower: the average hides the one starved job.

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 3), sharey=True)
for ax, (policy, jobs) in zip(axes, tables.items(), strict=True):
    small = jobs[jobs["res"] == 1]
    large = jobs[jobs["res"] == 8]
    ax.scatter(small["submit_s"] / 60, small["wait_s"], s=6, label="1-node jobs")
    ax.scatter(large["submit_s"] / 60, large["wait_s"], s=60, c="C3", label="8-node job")
    ax.set_title(policy)
    ax.set_xlabel("submitted at (min)")
axes[0].set_ylabel("wait (s)")
axes[0].legend()
fig.tight_layout()

# %% [markdown]
# **Look for:** the red point. The paper behind SNF-ICON notes the same: SNF
# gives lower mean waits, without a guarantee against starvation.
