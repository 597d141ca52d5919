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
# # 2. An idle timeout that is too long
#
# The opposite mistake: a node that is idle waits `timeout_s` seconds before
# it switches off. Every one of those seconds draws idle power (100 W on
# `toy-4`, ten times the sleeping power). After the last job of the day, a
# 4-hour timeout keeps every node idle for four hours.

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from hpcpower import Simulation

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "scenarios" / "teaching").is_dir())
SCENARIO = ROOT / "scenarios" / "teaching" / "02-timeout-too-long.toml"

# %%
runs = {
    t: Simulation.from_scenario(SCENARIO, **{"policy.timeout_s": t}).run() for t in (600, 14400)
}
pd.DataFrame(
    {
        f"timeout {t / 60:g} min": {
            "mean wait (s)": r.summary["mean_wait_s"],
            "idle (kWh)": r.summary["energy_j"]["idle"] / 3.6e6,
            "sleeping (kWh)": r.summary["energy_j"]["sleeping"] / 3.6e6,
            "wasted (kWh)": r.summary["wasted_energy_j"] / 3.6e6,
        }
        for t, r in runs.items()
    }
).round(2)

# %% [markdown]
# The 4-hour timeout triples the idle energy and doubles the wasted energy;
# the mean wait drops by 2.5 s. Where does the idle energy go?
# Count the idle nodes over time:

# %%
fig, ax = plt.subplots(figsize=(8, 3))
for t, r in runs.items():
    counts = np.array(r.state_counts)
    ax.step(counts[:, 0] / 3600, counts[:, 3], where="post", label=f"timeout {t / 60:g} min")
ax.set_xlabel("time (h)")
ax.set_ylabel("idle nodes")
ax.set_xlim(0, 72)
ax.legend()
fig.tight_layout()

# %% [markdown]
# **Look for:** after 16:00 each day, the long timeout keeps all four nodes
# idle until 20:00; both timeouts end the night with every node asleep, the
# long one four hours later. The seconds of wait it saves come from the day:
# the few gaps longer than 10 minutes, after which a node is asleep under
# the shorter timeout and the next job waits for its switch-on.
