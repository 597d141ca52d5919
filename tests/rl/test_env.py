"""PowerEnv: Gymnasium's checks, reproducibility, exact rewards, masks, vector environments.

Needs gymnasium (the test and rl extras), not torch.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA, job, tiny_platform

gym = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from hpcpower import Simulation, load_platform, load_workload  # noqa: E402
from hpcpower.errors import InputError  # noqa: E402
from hpcpower.rl import AgentPolicy, PowerEnv  # noqa: E402

DAS2 = DATA / "DAS2-fs1-0-3000.json.gz"
SCENARIO = DATA.parent / "paper" / "das2-fs1.toml"


@pytest.fixture(scope="module")
def das2_200():
    workload = load_workload(DAS2)
    workload.jobs = workload.jobs[:200]
    return workload


def small_env(workload, **options):
    options.setdefault("simulation_options", {"kernels": "numpy"})
    return PowerEnv(platform="aoba-64", workload=workload, **options)


def policy_actions(env, seed, n=None):
    """A fixed but varied action sequence for ``env``."""
    rng = np.random.default_rng(seed)
    if env.action == "target":
        return [int(k) for k in rng.integers(0, 12, size=n or 100_000)]
    return None


def play(env, seed, actions=None, per_node_rng=None):
    """One episode under a fixed action sequence; returns every step's output."""
    obs, info = env.reset(seed=seed)
    steps = [(obs, 0.0, False, False, info)]
    k = 0
    while True:
        if env.action == "target":
            action = actions[k % len(actions)]
        else:
            mask = env.action_masks().reshape(env.n_nodes, 3)
            choice = per_node_rng.integers(0, 3, size=env.n_nodes)
            # Mostly leave; the rest legal on/off picks.
            choice[per_node_rng.random(env.n_nodes) < 0.8] = 0
            choice[~mask[np.arange(env.n_nodes), choice]] = 0
            action = choice
        k += 1
        out = env.step(action)
        steps.append(out)
        if out[2] or out[3]:
            return steps


@pytest.mark.parametrize("action", ["target", "per-node"])
def test_gymnasium_check_env_passes(action, das2_200):
    env = small_env(das2_200, action=action, episode_jobs=30)
    check_env(env, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("interval", [None, 900.0])
def test_the_rewards_add_up_to_the_summary(interval, das2_200):
    env = small_env(das2_200, decision_interval_s=interval, energy_weight=2.0, wait_weight=3.0)
    steps = play(env, 7, actions=policy_actions(env, 3))
    assert steps[-1][2]  # terminated at the end of the workload
    summary = env.results().summary
    assert summary["jobs_completed"] == 200
    waited = summary["mean_wait_s"] * summary["jobs_completed"]
    expected = -(2.0 * summary["wasted_energy_j"] / 3.6e6 + 3.0 * waited / 3600)
    total = sum(s[1] for s in steps)
    assert total == pytest.approx(expected, rel=1e-9, abs=1e-9)
    # The parts, too.
    energy = sum(s[4]["wasted_energy_j"] for s in steps)
    wait = sum(s[4]["waiting_s"] for s in steps)
    assert energy == pytest.approx(summary["wasted_energy_j"], rel=1e-12)
    assert wait == pytest.approx(waited, rel=1e-12)
    assert sum(s[4]["elapsed_s"] for s in steps) == pytest.approx(summary["simulated_span_s"])
    env.close()


def test_per_node_rewards_add_up_too(das2_200):
    # (Random switching makes a pass every few minutes: a short workload.)
    env = small_env(das2_200, action="per-node", episode_jobs=40)
    steps = play(env, 1, per_node_rng=np.random.default_rng(5))
    summary = env.results().summary
    waited = summary["mean_wait_s"] * summary["jobs_completed"]
    expected = -(summary["wasted_energy_j"] / 3.6e6 + 5.0 * waited / 3600)
    assert sum(s[1] for s in steps) == pytest.approx(expected, rel=1e-9)
    assert summary["switch_offs"] > 0 and summary["jobs_completed"] == 40
    env.close()


@pytest.mark.parametrize("action", ["target", "per-node"])
def test_the_same_seed_gives_the_same_episode(action, das2_200):
    env = small_env(das2_200, action=action, episode_jobs=80, decision_interval_s=600.0)
    actions = policy_actions(env, 11)
    first = play(env, 123, actions, per_node_rng=np.random.default_rng(9))
    second = play(env, 123, actions, per_node_rng=np.random.default_rng(9))
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
        assert a[4].keys() == b[4].keys()
    other = play(env, 124, actions, per_node_rng=np.random.default_rng(9))
    assert [s[1] for s in other] != [s[1] for s in first]
    env.close()


def test_the_environment_and_the_agent_policy_make_the_same_run(das2_200):
    """An agent meets the same observations in training and as a policy."""
    env = small_env(das2_200, sim_seed=42)
    actions = policy_actions(env, 4)
    steps = play(env, 0, actions)
    trained = env.results()
    seen = []

    def replay(observation):
        seen.append(observation)
        return actions[(len(seen) - 1) % len(actions)]

    results = Simulation(
        load_platform("aoba-64"), das2_200, AgentPolicy(replay), seed=42, kernels="numpy"
    ).run()
    np.testing.assert_array_equal(results.jobs["start_s"], trained.jobs["start_s"])
    assert results.summary["wasted_energy_j"] == trained.summary["wasted_energy_j"]
    assert len(seen) == len(steps) - 1
    for observation, step in zip(seen, steps[:-1], strict=True):
        np.testing.assert_array_equal(observation, step[0])


def test_illegal_per_node_actions_are_masked_and_ignored_or_refused():
    jobs = [job(0, 0, 1, 500), job(1, 100, 1, 50)]
    env = PowerEnv(platform=tiny_platform(3), workload=jobs, action="per-node", sim_seed=0)
    obs, info = env.reset(seed=0)
    mask = info.get("action_mask", env.action_masks()).reshape(3, 3)
    # t=0: job 0 starts on node 0; nodes 1, 2 idle: off is legal for them only, on for none.
    assert mask.tolist() == [[True, False, False], [True, False, True], [True, False, True]]
    # Switching node 0 off (it starts a job) and node 1 on (it is idle) do nothing.
    obs, reward, *_, info = env.step([2, 1, 2])
    assert info["illegal_actions"] == 2
    sim = env.simulation
    assert sim.cluster.counts_by_state()["computing"] == 1
    assert sim.results().summary["switch_offs"] == 1
    env.close()

    strict = PowerEnv(
        platform=tiny_platform(3), workload=jobs, action="per-node", illegal="raise", sim_seed=0
    )
    strict.reset(seed=0)
    with pytest.raises(InputError, match="illegal action: switch off node 0"):
        strict.step([2, 0, 0])
    # The refused action changed nothing: the episode goes on.
    strict.step([0, 2, 0])
    assert strict.simulation.results().summary["switch_offs"] == 1
    strict.close()


def test_actions_outside_the_space_are_refused(das2_200):
    env = small_env(das2_200, episode_jobs=10)
    env.reset(seed=0)
    with pytest.raises(InputError, match="0..64"):
        env.step(65)
    with pytest.raises(InputError, match="call reset"):
        PowerEnv(platform="aoba-64", workload=das2_200).step(0)
    env.close()


def test_interval_steps_cover_the_interval(das2_200):
    env = small_env(das2_200, decision_interval_s=3600.0, episode_jobs=50)
    env.reset(seed=3)
    times = []
    for _ in range(20):
        *_, terminated, truncated, info = env.step(4)
        times.append(info["time_s"])
        if terminated:
            break
        assert info["time_s"] % 3600.0 == 0.0
        assert info["elapsed_s"] == 3600.0
    env.close()


def test_windows_and_truncation(das2_200):
    env = small_env(das2_200, episode_jobs=20, max_steps=5)
    env.reset(seed=0, options={"first_job": 10})
    assert env.simulation.workload.jobs[0].name == das2_200.jobs[10].name
    assert env.simulation.workload.jobs[0].submit_s == 0.0
    outs = [env.step(1) for _ in range(5)]
    assert [o[3] for o in outs] == [False] * 4 + [True]
    env.close()


def test_feature_names_and_a_chosen_subset(das2_200):
    env = small_env(das2_200, action="per-node")
    assert env.feature_names[0] == "queue_jobs"
    assert env.feature_names[-1] == "node63.in_transition_for"
    assert env.observation_space.shape == (len(env.feature_names),)
    chosen = small_env(das2_200, features=["queue_jobs", "idle"])
    assert chosen.feature_names == ["queue_jobs", "idle"]
    with pytest.raises(InputError, match="unknown observation feature"):
        small_env(das2_200, features=["queue_length"])


def test_a_scenario_file_gives_platform_workload_and_scheduler():
    env = PowerEnv(SCENARIO, overrides={"policy.name": "fcfs-easy-ipm"}, episode_jobs=5)
    assert env.scheduler == "fcfs-easy" and env.n_nodes == 64
    assert len(env.workload.jobs) == 3000
    env.reset(seed=0)
    env.close()


def test_vector_environments_step_and_reset_on_their_own(das2_200):
    envs = gym.vector.SyncVectorEnv(
        [lambda: small_env(das2_200, episode_jobs=5, decision_interval_s=1800.0)] * 2
    )
    obs, _ = envs.reset(seed=[1, 2])
    assert obs.shape == (2, 21)
    ended = 0
    for _ in range(200):
        obs, rewards, terminated, truncated, _ = envs.step(np.array([3, 10]))
        ended += int(terminated.sum())
        assert (rewards <= 0).all()
    assert ended >= 2
    envs.close()


@pytest.mark.parametrize("size", [0, -3, 2.5])
def test_a_bad_episode_jobs_at_reset_is_the_constructors_error(size, das2_200):
    env = small_env(das2_200)
    with pytest.raises(InputError, match=f"a positive whole number, got {size}"):
        env.reset(seed=1, options={"episode_jobs": size})
    with pytest.raises(InputError, match="episode_jobs must be a positive whole number"):
        small_env(das2_200, episode_jobs=size)


def test_an_episode_whose_jobs_all_are_too_wide_is_refused_at_reset():
    env = PowerEnv(platform="toy-4", workload=[job(0, 0.0, 9, 10.0)])
    with pytest.raises(InputError, match="no job of the episode .* fits the platform of 4 nodes"):
        env.reset(seed=0)
    # A window with a job that fits runs as usual.
    env = PowerEnv(platform="toy-4", workload=[job(0, 0.0, 9, 10.0), job(1, 5.0, 2, 10.0)])
    with pytest.raises(InputError, match="its smallest asks for 9"):
        env.reset(seed=0, options={"episode_jobs": 1, "first_job": 0})
    env.reset(seed=0, options={"episode_jobs": 1, "first_job": 1})
    while not env.step(4)[2]:
        pass
    assert env.results().summary["jobs_completed"] == 1
    env.close()
