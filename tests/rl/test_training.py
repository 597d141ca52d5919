"""Stable-Baselines3 on PowerEnv, and its agents as policies (skipped without the rl extra)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA

pytest.importorskip("stable_baselines3")

from stable_baselines3 import PPO  # noqa: E402

from hpcpower import Simulation, load_platform, load_workload, make_policy  # noqa: E402
from hpcpower.rl import MlpAgent, PowerEnv, load_agent, save_mlp  # noqa: E402
from hpcpower.rl.agent import FORMAT  # noqa: E402


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    workload = load_workload(DATA / "DAS2-fs1-0-3000.json.gz")
    workload.jobs = workload.jobs[:100]
    env = PowerEnv(
        platform="aoba-64",
        workload=workload,
        decision_interval_s=1800.0,
        episode_jobs=30,
        simulation_options={"kernels": "numpy"},
    )
    model = PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(256)
    folder = tmp_path_factory.mktemp("agents")
    model.save(folder / "ppo.zip")
    (folder / "ppo.json").write_text(json.dumps({"format": FORMAT, **env.settings()}))
    save_mlp(folder / "ppo.npz", MlpAgent.from_sb3(model), env.settings())
    return model, env, workload, folder


def test_the_numpy_export_decides_as_the_model(trained):
    model, env, _, folder = trained
    loaded, meta = load_agent(folder / "ppo.npz")
    assert meta["decision_interval_s"] == 1800.0
    for x in np.random.default_rng(0).random((100, env.observation_space.shape[0])):
        x = x.astype(np.float32)
        assert loaded(x) == int(model.predict(x, deterministic=True)[0])


def test_a_saved_model_runs_as_rl_path(trained):
    model, env, workload, folder = trained
    results = []
    for name in (f"rl:{folder / 'ppo.zip'}", f"rl:{folder / 'ppo.npz'}"):
        policy = make_policy(name, timeout_s=7200)
        sim = Simulation(load_platform("aoba-64"), workload, policy, seed=42, kernels="numpy")
        results.append(sim.run().summary)
    # The model and its numpy export (float32 weights) make the same run.
    assert results[0]["wasted_energy_j"] == results[1]["wasted_energy_j"]
    assert results[0]["mean_wait_s"] == results[1]["mean_wait_s"]
