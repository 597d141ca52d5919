"""``PowerEnv``: a Gymnasium environment in which an agent decides which nodes are powered.

The queue policy (SNF or FCFS/EASY) starts the jobs; the agent decides power
through :class:`~hpcpower.rl.manager.AgentPowerManager`, at every controller
pass or every ``decision_interval_s`` seconds of simulated time.

How a step runs. A controller pass needs the agent's action while it runs,
and the engine calls the policy from inside its event loop. So the
simulation of an episode runs in a thread of its own, which stops at every
decision pass: the manager hands the observation over and waits for the
action that :meth:`PowerEnv.step` brings. Only one of the two threads runs
at any time, so an episode is as deterministic as a plain run, the agent
acts on the state it observed, and a trained agent sees the same
observations when it runs as a policy (:class:`~hpcpower.rl.AgentPolicy`).
Call :meth:`PowerEnv.close` (or ``reset``) to end an episode early.

Reward: minus the weighted energy spent in non-computing states and the
weighted job waiting, both accumulated over the simulated time the step
covers. Over an episode the rewards add up to minus the weighted
``wasted_energy_j`` and total wait (``mean_wait_s * jobs_completed``) of the
run's summary, to float rounding.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from hpcpower.errors import InputError
from hpcpower.platform import Platform, load_platform
from hpcpower.policies.base import Combined
from hpcpower.results.records import Results
from hpcpower.rl.features import feature_names
from hpcpower.rl.manager import (
    LEAVE,
    SCHEDULERS,
    AgentPowerManager,
    check_settings,
    make_queue_policy,
)
from hpcpower.simulation import Simulation
from hpcpower.workload import load_workload
from hpcpower.workload.job import Job, Workload

#: Joules per kWh and seconds per hour: the reward's units.
J_PER_KWH = 3.6e6
S_PER_HOUR = 3600.0


def _episode_jobs(value: Any) -> int | None:
    """``episode_jobs`` as a whole number of 1 or more (or ``None``: the whole workload)."""
    if value is None:
        return None
    try:
        size = int(value)
    except (TypeError, ValueError):
        size = 0
    if size < 1 or size != value or isinstance(value, bool):
        raise InputError(f"episode_jobs must be a positive whole number, got {value!r}")
    return size


class _Stop(BaseException):
    """Raised in the simulation's thread to end an episode early (never escapes it)."""


_STOP = object()


class _Episode:
    """One simulation running in its own thread, paused at every decision pass."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.results: Results | None = None
        self._to_env: queue.SimpleQueue = queue.SimpleQueue()
        self._to_sim: queue.SimpleQueue = queue.SimpleQueue()
        self._waiting = False
        self._thread = threading.Thread(target=self._run, name="hpcpower-episode", daemon=True)

    def _run(self) -> None:
        try:
            self.results = self.sim.run()
        except _Stop:
            return
        except BaseException as exc:  # handed to the caller of step()
            self._to_env.put(("error", exc))
            return
        self._to_env.put(("done", None))

    def decide(self, observation: np.ndarray, info: dict[str, Any]) -> Any:
        """In the simulation's thread: hand the observation over, wait for the action."""
        self._to_env.put(("decide", (observation, info)))
        action = self._to_sim.get()
        if action is _STOP:
            raise _Stop
        return action

    def _answer(self) -> tuple[str, Any]:
        kind, payload = self._to_env.get()
        self._waiting = kind == "decide"
        return kind, payload

    def start(self) -> tuple[str, Any]:
        """Run to the first decision pass (or the end)."""
        self._thread.start()
        return self._answer()

    def send(self, action: Any) -> tuple[str, Any]:
        """Apply ``action`` at the paused pass; run to the next one (or the end)."""
        self._to_sim.put(action)
        return self._answer()

    def stop(self) -> None:
        """End the episode where it stands."""
        if self._waiting:
            self._waiting = False
            self._to_sim.put(_STOP)
        if self._thread.is_alive():
            self._thread.join()


class PowerEnv(gym.Env):
    """A Gymnasium environment: an agent powers nodes on and off while a scheduler starts jobs.

    Args:
        scenario: A scenario file (its platform, workload and simulation
            settings; its policy gives the default scheduler). Or give
            ``platform`` and ``workload``.
        platform: A :class:`~hpcpower.platform.Platform` or a preset name
            (``"aoba-64"``) or platform file.
        workload: A :class:`~hpcpower.workload.job.Workload`, a list of jobs or a trace file.
        overrides: Scenario settings as ``{"section.key": value}``.
        scheduler: ``"snf"`` or ``"fcfs-easy"`` (default: FCFS/EASY when the
            scenario's policy is an FCFS one, else SNF).
        action: ``"target"``: ``Discrete(nodes + 1)``, the number of spare
            ready nodes to keep (idle or switching on, not claimed by the
            queue's plan). ``"per-node"``: ``MultiDiscrete([3] * nodes)``,
            per node 0 leave, 1 switch on, 2 switch off, with
            ``info["action_mask"]`` (and :meth:`action_masks`) saying which
            are legal.
        decision_interval_s: ``None``: act at every controller pass;
            a number: at the first pass at or after each multiple of it.
        energy_weight: Reward weight per kWh of non-computing energy.
        wait_weight: Reward weight per hour of job waiting. The default 5
            per job-hour against 1 per kWh is SNF-ICON's exchange rate
            (``alpha = 5000`` J per job-second).
        features: Global observation features (default all; see
            :data:`hpcpower.rl.features.GLOBAL_FEATURES`). Per-node actions
            add :data:`~hpcpower.rl.features.NODE_FEATURES` for every node.
        episode_jobs: ``None``: an episode is the whole workload. A number:
            each episode is a random window of that many consecutive jobs
            (drawn from the reset's seed), shifted to start at time 0.
        max_steps: Truncate an episode after this many steps (``None``: never).
        wake_planning: Wake planned sleeping nodes and keep planned idle
            nodes on, whatever the agent does (see the manager).
        illegal: An illegal per-node action: ``"noop"`` (ignored, counted in
            ``info["illegal_actions"]``) or ``"raise"``
            (:class:`~hpcpower.errors.InputError` from :meth:`step`).
        sim_seed: Seed of the transition-time draws; ``None``: drawn from the
            reset's seed for every episode.
        simulation_options: Other :class:`~hpcpower.Simulation` arguments
            (``initial_state``, ``kill_at_walltime``, ``repeat_pass``, ``kernels``).

    Attributes:
        feature_names: The name of each entry of the observation.
        n_nodes: Nodes of the platform.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        scenario: str | Path | None = None,
        *,
        platform: Platform | str | Path | None = None,
        workload: Workload | Sequence[Job] | str | Path | None = None,
        overrides: dict[str, Any] | None = None,
        scheduler: str | None = None,
        action: str = "target",
        decision_interval_s: float | None = None,
        energy_weight: float = 1.0,
        wait_weight: float = 5.0,
        features: Sequence[str] | None = None,
        episode_jobs: int | None = None,
        max_steps: int | None = None,
        wake_planning: bool = True,
        illegal: str = "noop",
        sim_seed: int | None = None,
        simulation_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        check_settings(action, decision_interval_s, illegal)
        options: dict[str, Any] = {}
        overrun = "never"
        if scenario is not None:
            from hpcpower.scenario import resolve, simulation_args

            config = resolve(scenario, overrides)
            (scenario_platform, scenario_workload, _), options = simulation_args(config)
            options = {k: v for k, v in options.items() if k not in ("seed", "config", "explain")}
            overrun = config["policy"].get("overrun_release", "never")
            if scheduler is None:
                scheduler = "fcfs-easy" if config["policy"]["name"].startswith("fcfs") else "snf"
            platform = platform if platform is not None else scenario_platform
            workload = workload if workload is not None else scenario_workload
        if platform is None or workload is None:
            raise InputError("PowerEnv: give a scenario file, or a platform and a workload")
        if not isinstance(platform, Platform):
            platform = load_platform(platform)
        if isinstance(workload, (str, Path)):
            workload = load_workload(workload)
        elif not isinstance(workload, Workload):
            workload = Workload(list(workload), source="jobs")
        scheduler = scheduler or "snf"
        if scheduler not in SCHEDULERS:
            raise InputError(f"scheduler must be one of {', '.join(SCHEDULERS)}, got {scheduler!r}")
        episode_jobs = _episode_jobs(episode_jobs)
        self.platform = platform
        self.workload = workload
        self.scheduler = scheduler
        self.overrun_release = overrun
        self.action = action
        self.decision_interval_s = decision_interval_s
        self.energy_weight = float(energy_weight)
        self.wait_weight = float(wait_weight)
        self.episode_jobs = episode_jobs
        self.max_steps = max_steps
        self.wake_planning = bool(wake_planning)
        self.illegal = illegal
        self.sim_seed = sim_seed
        self.simulation_options = {**options, **(simulation_options or {})}
        self.n_nodes = platform.n_nodes
        # A manager made now only to check and name the features.
        probe = AgentPowerManager(lambda o, i: None, action=action, features=features)
        self.features = probe.features
        self.feature_names = feature_names(self.features, action, self.n_nodes)
        self.observation_space = gym.spaces.Box(
            0.0, 1.0, shape=(len(self.feature_names),), dtype=np.float32
        )
        self.action_space: gym.spaces.Space
        if action == "target":
            self.action_space = gym.spaces.Discrete(self.n_nodes + 1)
        else:
            self.action_space = gym.spaces.MultiDiscrete([3] * self.n_nodes)
        self._episode: _Episode | None = None
        self._manager: AgentPowerManager | None = None
        self._observation = np.zeros(self.observation_space.shape, dtype=np.float32)
        self._mask: np.ndarray | None = None
        self._totals = (0.0, 0.0, 0.0)
        self._steps = 0
        self._done = True

    # ------------------------------------------------------------- episodes
    def settings(self) -> dict[str, Any]:
        """What an agent trained here must be run with (see :func:`hpcpower.rl.save_mlp`)."""
        return {
            "action": self.action,
            "decision_interval_s": self.decision_interval_s,
            "features": list(self.features),
            "wake_planning": self.wake_planning,
            "scheduler": self.scheduler,
            "n_nodes": self.n_nodes,
        }

    def _window(self, options: dict[str, Any]) -> Workload:
        """The jobs of this episode: the workload, or a window of it shifted to time 0."""
        size = _episode_jobs(options.get("episode_jobs", self.episode_jobs))
        jobs = self.workload.jobs
        if size is None or size >= len(jobs):
            return self.workload
        first = options.get("first_job")
        if first is None:
            first = int(self.np_random.integers(0, len(jobs) - size + 1))
        if not 0 <= first <= len(jobs) - size:
            raise InputError(f"first_job {first} leaves fewer than {size} jobs")
        chosen = jobs[first : first + size]
        shift = chosen[0].submit_s
        return Workload(
            [replace(j, id=k, submit_s=j.submit_s - shift) for k, j in enumerate(chosen)],
            source=f"{self.workload.source} jobs {first + 1}..{first + size}",
            max_nodes=self.workload.max_nodes,
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode: pick its jobs and seed, run to the first decision.

        Args:
            seed: Seeds the episode's window and transition-time draws.
            options: ``episode_jobs`` (a window size for this episode) and
                ``first_job`` (where the window starts), both optional.

        Raises:
            InputError: A bad ``episode_jobs`` or ``first_job``, or an episode
                none of whose jobs fits the platform (the simulation rejects
                them all, so there would be nothing to decide).
        """
        super().reset(seed=seed)
        self._stop()
        options = dict(options or {})
        workload = self._window(options)
        smallest = min((job.res for job in workload.jobs), default=None)
        if smallest is None or smallest > self.n_nodes:
            asks = "it has no jobs" if smallest is None else f"its smallest asks for {smallest}"
            raise InputError(
                f"PowerEnv.reset: no job of the episode ({workload.source}) fits the "
                f"platform of {self.n_nodes} nodes ({asks})"
            )
        sim_seed = self.sim_seed
        if sim_seed is None:
            sim_seed = int(self.np_random.integers(0, 2**31 - 1))
        manager = AgentPowerManager(
            lambda o, i: None,
            action=self.action,
            decision_interval_s=self.decision_interval_s,
            features=self.features,
            wake_planning=self.wake_planning,
            illegal="noop",
        )
        policy = Combined(
            make_queue_policy(self.scheduler, self.overrun_release),
            manager,
            name=f"{self.scheduler}-agent",
        )
        sim = Simulation(self.platform, workload, policy, seed=sim_seed, **self.simulation_options)
        episode = _Episode(sim)
        manager.decide = episode.decide
        self._episode = episode
        self._manager = manager
        self._totals = (0.0, 0.0, 0.0)
        self._steps = 0
        self._done = False
        kind, payload = episode.start()
        info = self._receive(kind, payload)[3]
        return self._observation, info

    def _receive(self, kind: str, payload: Any) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        """Observation, reward, terminated and info from what the episode's thread sent."""
        episode = self._episode
        manager = self._manager
        assert episode is not None and manager is not None
        if kind == "error":
            self._done = True
            raise payload
        previous_t, previous_e, previous_w = self._totals
        if kind == "decide":
            observation, info = payload
            now = info["time_s"]
            energy, waiting = info["wasted_energy_j"], info["waiting_s"]
            self._observation = observation
            self._mask = info.get("action_mask")
            terminated = False
        else:
            sim = episode.sim
            now = float(sim.end_s if sim.end_s is not None else sim.now)
            energy = manager.wasted_energy_j(sim.view.cluster, now)
            waiting = manager.started_wait_s
            info = {"time_s": now}
            if self._mask is not None:
                info["action_mask"] = self._mask
            terminated = True
            self._done = True
        self._totals = (now, energy, waiting)
        step_energy = energy - previous_e
        step_wait = waiting - previous_w
        reward_energy = -self.energy_weight * step_energy / J_PER_KWH
        reward_wait = -self.wait_weight * step_wait / S_PER_HOUR
        info = {
            **{k: v for k, v in info.items() if k not in ("wasted_energy_j", "waiting_s")},
            "elapsed_s": now - previous_t,
            "wasted_energy_j": step_energy,
            "waiting_s": step_wait,
            "reward_energy": reward_energy,
            "reward_wait": reward_wait,
            "jobs_waiting": len(episode.sim.queue),
            "illegal_actions": manager.illegal_actions,
        }
        if self.action == "target":
            info["target"] = manager.target
        return self._observation, reward_energy + reward_wait, terminated, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply ``action`` at the paused pass and run to the next decision (or the end).

        Returns:
            ``(observation, reward, terminated, truncated, info)``. ``info``
            holds ``time_s`` (simulated time now), ``elapsed_s`` (simulated
            time the step covered), ``wasted_energy_j`` and ``waiting_s``
            (job-seconds) over the step, their weighted parts of the reward
            ``reward_energy`` and ``reward_wait``, ``jobs_waiting``,
            ``illegal_actions`` (so far), ``target`` (action ``"target"``)
            and ``action_mask`` (action ``"per-node"``). At the end of the
            workload ``terminated`` is true and the observation is the last one.

        Raises:
            InputError: an action outside the action space, or an illegal
                per-node action with ``illegal="raise"``.
        """
        if self._done or self._episode is None:
            raise InputError("PowerEnv.step: the episode has ended; call reset()")
        action = self._check(action)
        kind, payload = self._episode.send(action)
        observation, reward, terminated, info = self._receive(kind, payload)
        self._steps += 1
        truncated = not terminated and self.max_steps is not None and self._steps >= self.max_steps
        if truncated:
            self._stop()
            self._done = True
        return observation, reward, terminated, truncated, info

    def _check(self, action: Any) -> Any:
        """The action as the manager takes it; refuses what is outside the action space."""
        if self.action == "target":
            value = np.asarray(action).reshape(-1)
            if value.size != 1 or not 0 <= value[0] <= self.n_nodes or value[0] != int(value[0]):
                raise InputError(
                    f"action: expected a whole number in 0..{self.n_nodes}, got {action!r}"
                )
            return int(value[0])
        values = np.asarray(action).reshape(-1)
        if values.size != self.n_nodes or not np.isin(values, (0, 1, 2)).all():
            raise InputError(
                f"action: expected {self.n_nodes} values, each 0 (leave), 1 (on) or 2 (off)"
            )
        values = values.astype(np.int64)
        if self.illegal == "raise" and self._mask is not None:
            legal = self._mask.reshape(self.n_nodes, 3)[np.arange(self.n_nodes), values]
            if not legal.all():
                node = int(np.flatnonzero(~legal)[0])
                what = "switch on" if values[node] == 1 else "switch off"
                sim = self.simulation
                state = sim.view.cluster.describe_node(node) if sim is not None else ""
                raise InputError(
                    f"illegal action: {what} node {node} ({state}); see info['action_mask']"
                )
        return values

    def action_masks(self) -> np.ndarray:
        """Legal actions now (``"per-node"``: ``nodes * 3`` booleans; ``"target"``: all true)."""
        if self.action == "target":
            return np.ones(self.n_nodes + 1, dtype=bool)
        if self._mask is None:
            mask = np.zeros((self.n_nodes, 3), dtype=bool)
            mask[:, LEAVE] = True
            return mask.reshape(-1)
        return self._mask.copy()

    @property
    def simulation(self) -> Simulation | None:
        """The simulation of the current episode."""
        return None if self._episode is None else self._episode.sim

    def results(self) -> Results:
        """The results of the current episode (complete once it terminated)."""
        if self._episode is None:
            raise InputError("PowerEnv.results: no episode yet; call reset()")
        if self._episode.results is not None:
            return self._episode.results
        return self._episode.sim.results()

    def _stop(self) -> None:
        if self._episode is not None:
            self._episode.stop()

    def close(self) -> None:
        """End the current episode (its thread stops)."""
        self._stop()
        self._done = True

    def __del__(self) -> None:
        # An environment dropped mid-episode must not leave its thread waiting.
        try:
            self._stop()
        except Exception:
            pass
