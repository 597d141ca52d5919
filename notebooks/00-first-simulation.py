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
# # 0. A first simulation
#
# A cluster of four nodes, three jobs, and a power manager that switches idle
# nodes off. We run it, stop it half-way to look inside, and check its energy
# by hand.
#
# Every node is always in one of five **power states**: *sleeping*,
# *switching on*, *idle*, *computing*, *switching off*. Each state draws a
# fixed power, so the energy of a run is the time each node spends in each
# state times the state's watts.

# %%
import matplotlib.pyplot as plt
import numpy as np

from hpcpower import Job, Simulation, load_platform, make_policy

# %% [markdown]
# ## The cluster
#
# `toy-4` is a preset with round numbers: four identical nodes, and switching
# takes a fixed time (60 s to switch on, 30 s to switch off).

# %%
platform = load_platform("toy-4")
node = platform.node_types[0]
states = ("sleeping", "switching on", "idle", "computing", "switching off")
print(platform)
for state, watts in zip(states, node.power_w, strict=True):
    print(f"{state:>14}: {watts:g} W")
print("switch on:", node.switch_on.mean_s, "s; switch off:", node.switch_off.mean_s, "s")

# %% [markdown]
# ## The jobs
#
# A job asks for a number of nodes, all at once (a *rigid* parallel job), and
# gives a requested time (its walltime); its real runtime is only known when it
# ends. `Job(id, name, submit_s, nodes, requested_s, runtime_s)`:

# %%
jobs = [
    Job(0, "a", 0.0, 2, 300.0, 200.0),  # 2 nodes, asks for 300 s, runs 200 s
    Job(1, "b", 100.0, 4, 200.0, 150.0),  # the whole cluster
    Job(2, "c", 500.0, 1, 100.0, 100.0),
]

# %% [markdown]
# ## The policy
#
# `snf-ipm` schedules with **Smallest-Need-First** (start the waiting job that
# needs the fewest nodes, if it fits) and manages power with **IPM**: a node
# idle for `timeout_s` seconds is switched off, and sleeping nodes are woken
# in time for the queued jobs that need them.

# %%
sim = Simulation(platform, jobs, make_policy("snf-ipm", timeout_s=60), seed=0)
sim.run(until=120)  # stop after 120 simulated seconds
print(sim)
print(sim.cluster)

# %% [markdown]
# At 120 s job *a* computes on two nodes. The other two were idle for 60 s,
# so IPM switched them off at 60 s (asleep from 90 s). Job *b* arrived at
# 100 s and needs all four nodes: it waits. The next decision of the
# controller:

# %%
print(sim.run_until_decision())

# %% [markdown]
# Job *a* asked for 300 s, so IPM planned to wake the sleeping nodes at
# 240 s, just in time for 300 s. But *a* ended at 200 s, earlier than it
# asked: this decision, at 200 s, wakes them at once, and job *b* starts when
# they are up, at 260 s. Run to the end:

# %%
results = sim.run()
jobs_table = results.to_pandas("jobs")
jobs_table[["name", "submit_s", "res", "start_s", "finish_s", "wait_s"]]

# %% [markdown]
# ## Energy, by hand
#
# `time_in_state_s` holds the seconds each node spent in each state; times
# the watts, summed, it is the energy of the run.

# %%
seconds = results.time_in_state_s
print(seconds)
by_hand = (seconds * np.array(node.power_w)).sum(axis=0)
for state, joules in zip(states, by_hand, strict=True):
    print(f"{state:>14}: {joules:>8.0f} J")
assert np.allclose(by_hand, results.energy_by_state_j)
print("total", results.summary["total_energy_j"], "J; wasted", results.summary["wasted_energy_j"])

# %% [markdown]
# *Wasted* energy is every joule not spent computing. Here switching (54 000
# J) costs more than idling (48 000 J): each off-on cycle is 30 s × 150 W +
# 60 s × 150 W = 13 500 J, as much as 135 s of idling.
#
# ## The nodes over time
#
# `state_counts` says how many nodes are in each state after every change.

# %%
counts = np.array(results.state_counts)
fig, ax = plt.subplots(figsize=(7, 3))
ax.stackplot(
    np.repeat(counts[:, 0], 2)[1:],
    *[np.repeat(counts[:, k], 2)[:-1] for k in range(1, 6)],
    labels=states,
    colors=["#4c72b0", "#dd8452", "#c7c7c7", "#55a868", "#c44e52"],
)
ax.set_xlabel("time (s)")
ax.set_ylabel("nodes")
ax.legend(loc="upper left", bbox_to_anchor=(1, 1))
fig.tight_layout()

# %% [markdown]
# Try: `timeout_s=0` or `timeout_s=None` (never switch off), and compare the
# waits and the energy. The lessons in the next notebooks do this on larger
# workloads.
