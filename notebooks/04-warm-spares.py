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
# # 4. Warm spares
#
# On the AOBA node model (`aoba-8`) a switch-on takes **20 minutes**. With a
# 10-minute idle timeout, SNF + IPM lets idle nodes sleep, and a job that
# arrives to find too few warm nodes waits for a switch-on.
#
# SNF-ICON adds a decision: how many idle nodes to keep warm for jobs that
# have not arrived yet (**warm spares**). It weighs the expected wait a spare
# saves against the energy it costs, `alpha * wait + beta * energy`, using a
# model of the next arrival that assumes Poisson arrivals. The workload here
# is Markovian (generated: Poisson arrivals, exponential runtimes), so the
# model fits.

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from hpcpower import Simulation

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "scenarios" / "teaching").is_dir())
SCENARIO = ROOT / "scenarios" / "teaching" / "04-warm-spares.toml"

# %%
runs = {
    "snf-ipm": Simulation.from_scenario(SCENARIO, **{"policy.name": "snf-ipm"}).run(),
    "snf-icon": Simulation.from_scenario(SCENARIO).run(),
    "snf-icon, alpha 20000": Simulation.from_scenario(SCENARIO, **{"policy.alpha": 20000}).run(),
}
pd.DataFrame(
    {
        name: {
            "mean wait (min)": r.summary["mean_wait_s"] / 60,
            "wasted (kWh)": r.summary["wasted_energy_j"] / 3.6e6,
            "switch-ons": r.summary["switch_ons"],
            "ICON time share": r.summary.get("icon_time_fraction"),
        }
        for name, r in runs.items()
    }
).round(3)

# %% [markdown]
# SNF-ICON cuts the mean wait by about a quarter, for about 10 % more wasted
# energy; a larger `alpha` (a second of wait weighs more) keeps more spares.
#
# The decision log says what SNF-ICON decided at each pass. When it planned
# spares (`spare == "done"`), `target` is the number of warm nodes it chose,
# between `x_min` and `x_max`, with the expected wait and energy of that
# choice; `wakes` is how many sleeping nodes it woke for it.

# %%
log = runs["snf-icon"].to_pandas("decisions")
planned = log[log["spare"] == "done"]
print(len(log), "passes;", len(planned), "planned warm spares")
print(log["spare_reason"].replace("", "(planned)").value_counts())
columns = ["time_s", "x_min", "x_max", "target", "expected_wait_s", "expected_energy_j", "wakes"]
planned[columns].head(8).round(1)

# %%
waits = {name: r.to_pandas("jobs")["wait_s"] / 60 for name, r in runs.items()}
fig, ax = plt.subplots(figsize=(6, 3))
ax.boxplot(list(waits.values()), showfliers=False)
ax.set_xticks(range(1, len(waits) + 1), list(waits))
ax.set_ylabel("wait (min)")
fig.tight_layout()

# %% [markdown]
# **Look for:** the waits that are a switch-on long (20 min and more) become
# rarer with spares. Try `policy.beta` larger (energy weighs more) or
# `policy.min_spare_nodes = 0`.
