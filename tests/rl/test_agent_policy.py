"""A trained agent as an ordinary policy: AgentPolicy, agent files and ``rl:PATH`` (numpy only)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA, job, tiny_platform

from hpcpower import Simulation, load_platform, load_workload, make_policy
from hpcpower.errors import InputError
from hpcpower.rl import AgentPolicy, ConstantAgent, MlpAgent, load_agent, save_mlp
from hpcpower.rl.agent import FORMAT

QUICK = DATA / "DAS2-fs1-0-3000.json.gz"


def run(policy, workload, platform="aoba-64", seed=42):
    if isinstance(platform, str):
        platform = load_platform(platform)
    return Simulation(platform, workload, policy, seed=seed, kernels="numpy").run()


@pytest.fixture(scope="module")
def das2_600():
    workload = load_workload(QUICK)
    workload.jobs = workload.jobs[:600]
    return workload


@pytest.mark.parametrize("scheduler", ["snf", "fcfs-easy"])
def test_keeping_every_node_ready_is_the_always_on_policy(scheduler, das2_600):
    """k = all nodes: nothing is ever switched, as the built-in always-on policy."""
    agent = run(AgentPolicy(ConstantAgent(64), scheduler=scheduler), das2_600)
    built_in = run(make_policy(scheduler), das2_600)
    np.testing.assert_array_equal(agent.jobs["start_s"], built_in.jobs["start_s"])
    np.testing.assert_array_equal(agent.energy_by_state_j, built_in.energy_by_state_j)
    assert agent.summary["switch_ons"] == agent.summary["switch_offs"] == 0
    for key in ("mean_wait_s", "wasted_energy_j", "total_energy_j", "decisions"):
        assert agent.summary[key] == built_in.summary[key]


def test_keep_one_ready_by_hand():
    """Four nodes, k = 1; every joule worked out by hand (docs of the manager's rules).

    t=0: job 0 (1 node, 1000 s) starts on node 0; spares 1, 2, 3 -> nodes 1, 2 off.
    t=10: job 1 (2 nodes, 100 s) waits; t=50: nodes 1, 2 asleep; the plan puts
    job 1 on nodes 3 and 1 at 150: node 1 is woken for it (claimed), node 2 as
    the one spare. t=150: job 1 starts on nodes 1, 2 (waited 140 s); node 3 is
    the spare. t=250: job 1 ends; spares 1, 2, 3 -> the two longest idle
    (3, then 1) off. t=1000: job 0 ends, the run ends.
    """
    jobs = [job(0, 0, 1, 1000), job(1, 10, 2, 100)]
    results = run(AgentPolicy(ConstantAgent(1)), jobs, platform=tiny_platform(4), seed=0)
    assert results.jobs["start_s"].tolist() == [0.0, 150.0]
    node_waste = {
        1: 120 * 50 + 150 * 100 + 120 * 50 + 10 * 700,
        2: 120 * 50 + 150 * 100 + 100 * 750,
        3: 100 * 250 + 120 * 50 + 10 * 700,
    }
    waste = results.node_energy_j.copy()
    waste[:, 3] = 0.0
    assert waste.sum(axis=1).tolist() == [0.0, node_waste[1], node_waste[2], node_waste[3]]
    assert results.summary["wasted_energy_j"] == sum(node_waste.values())
    assert results.summary["mean_wait_s"] == 70.0


def test_a_constant_agent_file_runs_as_rl_path(tmp_path, das2_600):
    path = tmp_path / "keep-8.json"
    path.write_text(json.dumps({"format": FORMAT, "constant_action": 8, "action": "target"}))
    policy = make_policy(f"rl:{path}", timeout_s=7200)
    assert policy.name == "rl:keep-8"
    direct = run(AgentPolicy(ConstantAgent(8)), das2_600)
    assert run(policy, das2_600).summary["wasted_energy_j"] == direct.summary["wasted_energy_j"]


def test_an_mlp_agent_survives_its_file(tmp_path):
    rng = np.random.default_rng(1)
    layers = [
        (rng.normal(size=(16, 21)), rng.normal(size=16)),
        (rng.normal(size=(65, 16)), rng.normal(size=65)),
    ]
    agent = MlpAgent(layers, [65], obs_mean=rng.random(21), obs_var=rng.random(21) + 0.5)
    path = save_mlp(tmp_path / "a.npz", agent, {"action": "target", "case": "test"})
    loaded, meta = load_agent(path)
    assert meta["case"] == "test" and meta["action"] == "target"
    for _ in range(20):
        obs = rng.random(21).astype(np.float32)
        # Weights are stored as float32: compare with the same rounding.
        assert loaded(obs) == MlpAgent(
            [(w.astype(np.float32), b.astype(np.float32)) for w, b in layers],
            [65],
            obs_mean=agent.obs_mean,
            obs_var=agent.obs_var,
        )(obs)


def test_mlp_agent_picks_the_arg_max_of_each_dimension():
    eye = np.eye(6)
    agent = MlpAgent([(eye, np.zeros(6))], [3, 3])
    assert agent(np.array([0, 0, 1, 0, 1, 0.0])).tolist() == [2, 1]
    assert MlpAgent([(eye[:3], np.zeros(3))], [3])(np.array([0, 5, 1, 0, 0, 0.0])) == 1


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("rl:nowhere.npz", "no such file"),
        ("rl:{tmp}/bad.json", "not an hpcpower agent file"),
        ("rl:{tmp}/model.zip", "model.json are missing"),
        ("rl:{tmp}/weights.txt", "expected a .npz, .zip or .json"),
    ],
)
def test_bad_agent_files_are_one_line_errors(tmp_path, name, message):
    (tmp_path / "bad.json").write_text("{}")
    (tmp_path / "model.zip").write_bytes(b"")
    (tmp_path / "weights.txt").write_text("")
    with pytest.raises(InputError, match=message):
        make_policy(name.format(tmp=tmp_path))


def test_an_agent_policy_takes_no_foreign_setting(tmp_path):
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"format": FORMAT, "constant_action": 1}))
    with pytest.raises(InputError, match="policy.alpha"):
        make_policy(f"rl:{path}", alpha=3)


def test_a_per_node_agent_fits_one_cluster_size():
    policy = AgentPolicy(ConstantAgent(np.zeros(4, dtype=int)), action="per-node", n_nodes=4)
    with pytest.raises(InputError, match="trained on 4 nodes"):
        run(policy, [job(0, 0, 1, 10)], platform=tiny_platform(2), seed=0)


def test_interval_decisions_come_at_the_multiples():
    times = []

    def agent(observation):
        return 2

    policy = AgentPolicy(agent, decision_interval_s=100.0)
    manager = policy.power
    original = manager.decide

    def spy(observation, info):
        times.append(info["time_s"])
        return original(observation, info)

    manager.decide = spy
    run(policy, [job(0, 0, 1, 450), job(1, 30, 1, 20)], platform=tiny_platform(4), seed=0)
    assert times == [0.0, 100.0, 200.0, 300.0, 400.0]
