"""Train a power-management agent with Stable-Baselines3 PPO on one of the paper's cases.

    pip install -e ".[rl]"
    python scenarios/rl/train.py das2-fs1 --timesteps 300000 --out scenarios/rl/agents

The agent sets the number of spare ready nodes (action "target") every
decision interval while SNF starts the jobs; it is trained on windows of the
case's trace, short ones first (the curriculum), and written as a numpy
agent (``<case>.npz``, runnable with ``--policy rl:PATH`` without torch)
beside the Stable-Baselines3 model (``<case>.zip`` and ``<case>.json``,
kept only with ``--keep-zip``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from hpcpower.rl import MlpAgent, PowerEnv, save_mlp

HERE = Path(__file__).resolve().parent
PAPER = HERE.parent / "paper"
CASES = ("das2-fs1", "das2-fs2", "das2-fs3", "das2-fs4", "markovian")
#: (jobs per episode, share of the timesteps); None: the whole workload.
CURRICULUM = ((150, 0.2), (500, 0.3), (1500, 0.3), (None, 0.2))


def make_env(case: str, interval_s: float, scheduler: str, seed: int):
    def build():
        env = PowerEnv(
            PAPER / f"{case}.toml",
            scheduler=scheduler,
            decision_interval_s=interval_s,
            episode_jobs=CURRICULUM[0][0],
            simulation_options={"kernels": "numpy"},
        )
        env.reset(seed=seed)
        return env

    return build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=CASES)
    parser.add_argument("--timesteps", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE / "agents")
    parser.add_argument("--interval", type=float, default=600.0, help="decision interval (s)")
    parser.add_argument("--scheduler", default="snf", choices=("snf", "fcfs-easy"))
    parser.add_argument("--envs", type=int, default=4, help="environments stepped together")
    parser.add_argument(
        "--ent-coef",
        type=float,
        default=0.0,
        help="entropy bonus (0: none; a bonus keeps the target flipping between values)",
    )
    parser.add_argument("--keep-zip", action="store_true", help="also keep the SB3 model")
    args = parser.parse_args(argv)

    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    torch.set_num_threads(1)
    started = time.perf_counter()
    builders = [
        make_env(args.case, args.interval, args.scheduler, args.seed + k) for k in range(args.envs)
    ]
    envs = DummyVecEnv(builders)
    # Observations are already in [0, 1]; rewards vary by orders of magnitude
    # between quiet and busy hours, so only they are scaled for learning.
    envs = VecNormalize(envs, norm_obs=False, norm_reward=True, gamma=0.99)
    envs.seed(args.seed)
    model = PPO(
        "MlpPolicy",
        envs,
        n_steps=1024,
        batch_size=256,
        n_epochs=5,
        gamma=0.99,
        learning_rate=3e-4,
        ent_coef=args.ent_coef,
        policy_kwargs={"net_arch": {"pi": [64, 64], "vf": [64, 64]}},
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    done = 0
    for jobs, share in CURRICULUM:
        envs.set_attr("episode_jobs", jobs)
        steps = int(args.timesteps * share)
        model.learn(steps, reset_num_timesteps=done == 0)
        done += steps
        print(
            f"{args.case}: windows of {jobs or 'all'} jobs, {done} steps, "
            f"{time.perf_counter() - started:.0f} s",
            flush=True,
        )
    seconds = time.perf_counter() - started
    env = envs.get_attr("settings")[0]()
    settings = {
        **env,
        "case": args.case,
        "timesteps": done,
        "seed": args.seed,
        "training_s": round(seconds, 1),
        "curriculum": [[j, s] for j, s in CURRICULUM],
        "trainer": "stable-baselines3 PPO",
    }
    agent = MlpAgent.from_sb3(model)
    path = save_mlp(args.out / f"{args.case}.npz", agent, settings)
    # The export decides as the trained model does.
    probe = np.random.default_rng(0).random((200, model.observation_space.shape[0]))
    probe = probe.astype(np.float32)
    same = all(int(model.predict(x, deterministic=True)[0]) == agent(x) for x in probe)
    if args.keep_zip:
        model.save(args.out / f"{args.case}.zip")
        (args.out / f"{args.case}.json").write_text(
            json.dumps({"format": "hpcpower-agent", **settings}, indent=2)
        )
    print(f"wrote {path} ({path.stat().st_size} bytes) in {seconds:.0f} s; export matches: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
