"""Common random numbers: one seed gives every policy the same workload and the same draws.

A run's transition durations are drawn from ``numpy.random.default_rng(seed)``,
one normal draw per switch-on or switch-off in the order the commands are
applied. Policies issue different commands, so they use different numbers of
draws, but the k-th draw is the same number for every policy with that seed.
A sweep's seed also sets ``workload.seed``, so a generated workload is the
same for every policy with that seed too.
"""

from __future__ import annotations

import numpy as np
import pytest
from sweep_helpers import write_sweep

from hpcpower.experiments.sweepfile import load_plan
from hpcpower.simulation import Simulation


def draws(config: dict) -> tuple[list, np.ndarray]:
    """The run's jobs, and the standard-normal draws behind its transition durations, sorted."""
    sim = Simulation.from_config(config)
    jobs = [(j.submit_s, j.res, j.reqtime_s, j.runtime_s) for j in sim.workload.jobs]
    results = sim.run()
    node_type = sim.platform.node_types[0]
    z = []
    for _, state, start, end, _ in results.node_intervals():
        model = {"switching_on": node_type.switch_on, "switching_off": node_type.switch_off}.get(
            state
        )
        if model is not None and end > start:
            z.append((end - start - model.mean_s) / model.sd_s)
    return jobs, np.sort(np.array(z))


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crn")
    sweep = write_sweep(
        folder,
        """
        [sweep]
        scenario = "QUICKSTART"
        seeds = [7, 8]
        [set]
        platform.name = "taurus-64"
        workload.path = ""
        workload.generator = "markovian"
        workload.n_jobs = 150
        policy.timeout_s = 600
        [grid]
        policy.name = ["fcfs-easy-ipm", "snf-ipm"]
        """,
    )
    return load_plan(sweep)


def test_one_seed_gives_every_policy_the_same_workload_and_draws(plan):
    by = {(r.config["policy"]["name"], r.config["simulation"]["seed"]): r.config for r in plan.runs}
    for seed in (7, 8):
        jobs_a, z_a = draws(by[("fcfs-easy-ipm", seed)])
        jobs_b, z_b = draws(by[("snf-ipm", seed)])
        assert jobs_a == jobs_b
        stream = np.random.default_rng(seed).standard_normal(max(len(z_a), len(z_b)))
        # Each run's draws are the first of one stream (the truncation at zero never binds).
        assert len(z_a) > 20 and len(z_b) > 20
        np.testing.assert_allclose(z_a, np.sort(stream[: len(z_a)]), atol=1e-6)
        np.testing.assert_allclose(z_b, np.sort(stream[: len(z_b)]), atol=1e-6)


def test_another_seed_gives_another_workload(plan):
    by = {(r.config["policy"]["name"], r.config["simulation"]["seed"]): r.config for r in plan.runs}
    jobs_7, _ = draws(by[("snf-ipm", 7)])
    jobs_8, _ = draws(by[("snf-ipm", 8)])
    assert jobs_7 != jobs_8
