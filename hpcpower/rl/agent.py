"""A trained agent as an ordinary policy, and the files agents are kept in.

:class:`AgentPolicy` combines a queue policy (SNF or FCFS/EASY) with the
:class:`~hpcpower.rl.manager.AgentPowerManager`, asking the agent at every
decision pass, so a trained agent runs like any other policy: in
``Simulation``, ``hpcpower run --policy rl:PATH`` and sweeps
(``policy.name = "rl:agents/das2-fs1.npz"``).

Agent files (``rl:PATH``):

* ``.npz``: a small multilayer perceptron in plain numpy (:class:`MlpAgent`,
  written by :func:`save_mlp`, e.g. from a Stable-Baselines3 PPO policy):
  weights, observation normalisation and the settings it was trained with.
  Running it needs numpy only.
* ``.zip``: a Stable-Baselines3 model (needs ``pip install "hpcpower[rl]"``),
  with its settings in a ``.json`` file of the same name beside it.
* ``.json``: settings only, with ``"constant_action"``: an agent that always
  gives the same action (a fixed "keep k nodes ready" policy).

The settings are those of :class:`~hpcpower.rl.PowerEnv`: ``action``,
``decision_interval_s``, ``features``, ``wake_planning``, ``scheduler``
(and ``n_nodes`` for per-node agents, which fit one cluster size only).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hpcpower.errors import InputError, MissingExtra
from hpcpower.policies.base import Combined
from hpcpower.rl.manager import AgentPowerManager, make_queue_policy

#: Written into every agent file; a reader refuses another format.
FORMAT = "hpcpower-agent"
#: The settings an agent file may hold, with their defaults.
SETTINGS: dict[str, Any] = {
    "action": "target",
    "decision_interval_s": None,
    "features": None,
    "wake_planning": True,
    "scheduler": "snf",
    "n_nodes": None,
}


def act(agent: Any, observation: np.ndarray) -> Any:
    """The agent's action for ``observation``.

    ``agent`` is a callable (observation -> action) or an object with
    Stable-Baselines3's ``predict(observation, deterministic=True)``.
    """
    predict = getattr(agent, "predict", None)
    if predict is not None:
        action, _ = predict(observation, deterministic=True)
        return action
    return agent(observation)


class AgentPolicy(Combined):
    """An agent deciding power, with SNF or FCFS/EASY starting the jobs.

    Args:
        agent: A callable from observation to action, or a model with
            ``predict(observation, deterministic=True)`` (Stable-Baselines3).
        scheduler: ``"snf"`` or ``"fcfs-easy"``.
        action: ``"target"`` or ``"per-node"``, as the agent was trained.
        decision_interval_s: As the agent was trained (``None``: every pass).
        features: As the agent was trained (``None``: all global features).
        wake_planning: As the agent was trained.
        illegal: ``"noop"`` or ``"raise"`` for an illegal per-node action.
        overrun_release: The queue policy's rule for jobs past their requested time.
        n_nodes: The cluster size a per-node agent was trained on (checked
            at the start of a run), or ``None``.
        name: The policy's name in results (default ``"<scheduler>-rl"``).
    """

    def __init__(
        self,
        agent: Any,
        *,
        scheduler: str = "snf",
        action: str = "target",
        decision_interval_s: float | None = None,
        features: Sequence[str] | None = None,
        wake_planning: bool = True,
        illegal: str = "noop",
        overrun_release: str = "never",
        n_nodes: int | None = None,
        name: str | None = None,
    ) -> None:
        self.agent = agent
        self.n_nodes = n_nodes
        manager = AgentPowerManager(
            lambda observation, info: act(self.agent, observation),
            action=action,
            decision_interval_s=decision_interval_s,
            features=features,
            wake_planning=wake_planning,
            illegal=illegal,
        )
        super().__init__(
            make_queue_policy(scheduler, overrun_release), manager, name or f"{scheduler}-rl"
        )
        self.scheduler = scheduler

    def reset(self, cluster) -> None:
        """Check the cluster size of a per-node agent, then reset the manager."""
        if self.n_nodes is not None and self.power.action == "per-node":  # type: ignore[attr-defined]
            if cluster.n_nodes != self.n_nodes:
                raise InputError(
                    f"{self.name}: a per-node agent trained on {self.n_nodes} nodes cannot run "
                    f"on {cluster.n_nodes}"
                )
        super().reset(cluster)


# ---------------------------------------------------------------- agents


class ConstantAgent:
    """Always the same action (for a fixed "keep k nodes ready" baseline)."""

    def __init__(self, action: Any) -> None:
        self.action = action

    def __call__(self, observation: np.ndarray) -> Any:
        """The constant action."""
        return self.action


class MlpAgent:
    """A multilayer perceptron policy in numpy: the deterministic action of a trained net.

    Args:
        layers: ``(weight, bias)`` per layer, weight shaped ``(out, in)``;
            every layer but the last is followed by ``activation``.
        nvec: Choices per action dimension: ``[n + 1]`` for ``"target"``,
            ``[3] * n`` for ``"per-node"``. The action is the arg-max of each
            dimension's slice of the output.
        activation: ``"tanh"`` or ``"relu"``.
        obs_mean, obs_var, clip, epsilon: Observation normalisation applied
            first, ``clip((obs - mean) / sqrt(var + epsilon), -clip, clip)``
            (Stable-Baselines3's ``VecNormalize``); ``None``: none.
    """

    def __init__(
        self,
        layers: Sequence[tuple[np.ndarray, np.ndarray]],
        nvec: Sequence[int],
        *,
        activation: str = "tanh",
        obs_mean: np.ndarray | None = None,
        obs_var: np.ndarray | None = None,
        clip: float = 10.0,
        epsilon: float = 1e-8,
    ) -> None:
        if activation not in ("tanh", "relu"):
            raise InputError(f"activation must be 'tanh' or 'relu', got {activation!r}")
        self.layers = [(np.asarray(w, dtype=float), np.asarray(b, dtype=float)) for w, b in layers]
        self.nvec = [int(k) for k in nvec]
        if self.layers[-1][0].shape[0] != sum(self.nvec):
            raise InputError(
                f"the last layer gives {self.layers[-1][0].shape[0]} outputs, "
                f"the actions need {sum(self.nvec)}"
            )
        self.activation = activation
        self.obs_mean = None if obs_mean is None else np.asarray(obs_mean, dtype=float)
        self.obs_var = None if obs_var is None else np.asarray(obs_var, dtype=float)
        self.clip = float(clip)
        self.epsilon = float(epsilon)

    @classmethod
    def from_sb3(cls, model: Any, vec_normalize: Any = None) -> MlpAgent:
        """The deterministic policy of a Stable-Baselines3 PPO/A2C ``MlpPolicy`` as numpy.

        Args:
            model: The model, with a flat Box observation and a Discrete or
                MultiDiscrete action space; its actor network (the policy
                half of ``mlp_extractor`` and ``action_net``) is copied.
            vec_normalize: The ``VecNormalize`` wrapper it was trained in, if
                it normalised observations.
        """
        policy = model.policy
        linear: list[Any] = [m for m in policy.mlp_extractor.policy_net if hasattr(m, "weight")]
        acts = {type(m).__name__ for m in policy.mlp_extractor.policy_net} - {"Linear"}
        if acts - {"Tanh", "ReLU"} or len(acts) > 1:
            raise InputError(f"only tanh or relu networks can be exported, found {sorted(acts)}")
        linear.append(policy.action_net)
        layers = [(m.weight.detach().cpu().numpy(), m.bias.detach().cpu().numpy()) for m in linear]
        space = model.action_space
        nvec = [int(space.n)] if hasattr(space, "n") else [int(k) for k in space.nvec]
        mean = var = None
        clip, epsilon = 10.0, 1e-8
        if vec_normalize is not None and vec_normalize.norm_obs:
            mean, var = vec_normalize.obs_rms.mean, vec_normalize.obs_rms.var
            clip, epsilon = vec_normalize.clip_obs, vec_normalize.epsilon
        return cls(
            layers,
            nvec,
            activation="relu" if acts == {"ReLU"} else "tanh",
            obs_mean=mean,
            obs_var=var,
            clip=clip,
            epsilon=epsilon,
        )

    def __call__(self, observation: np.ndarray) -> Any:
        """The action: an int for one dimension, else an int array."""
        x = np.asarray(observation, dtype=float)
        if self.obs_mean is not None and self.obs_var is not None:
            x = np.clip(
                (x - self.obs_mean) / np.sqrt(self.obs_var + self.epsilon), -self.clip, self.clip
            )
        last = len(self.layers) - 1
        for k, (w, b) in enumerate(self.layers):
            x = w @ x + b
            if k < last:
                x = np.tanh(x) if self.activation == "tanh" else np.maximum(x, 0.0)
        picks = []
        at = 0
        for size in self.nvec:
            picks.append(int(np.argmax(x[at : at + size])))
            at += size
        return picks[0] if len(picks) == 1 else np.array(picks, dtype=np.int64)


def save_mlp(path: str | Path, agent: MlpAgent, settings: Mapping[str, Any]) -> Path:
    """Write ``agent`` and the settings it was trained with to an ``.npz`` file.

    Args:
        path: The file (``.npz``).
        agent: The network.
        settings: The environment settings (:data:`SETTINGS` keys) and
            anything worth keeping (case, timesteps, training time).
    """
    path = Path(path)
    meta = {
        "format": FORMAT,
        "version": 1,
        **{k: settings.get(k, v) for k, v in SETTINGS.items()},
        **{k: v for k, v in settings.items() if k not in SETTINGS},
        "nvec": agent.nvec,
        "activation": agent.activation,
        "clip": agent.clip,
        "epsilon": agent.epsilon,
    }
    arrays: dict[str, np.ndarray] = {"meta": np.array(json.dumps(meta))}
    for k, (w, b) in enumerate(agent.layers):
        arrays[f"w{k}"] = w.astype(np.float32)
        arrays[f"b{k}"] = b.astype(np.float32)
    if agent.obs_mean is not None and agent.obs_var is not None:
        arrays["obs_mean"] = agent.obs_mean
        arrays["obs_var"] = agent.obs_var
    path.parent.mkdir(parents=True, exist_ok=True)
    # (numpy's stubs take the named arrays as keywords of one type.)
    save: Any = np.savez_compressed
    with path.open("wb") as out:
        save(out, **arrays)
    return path


def load_agent(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """The agent in ``path`` and its settings (see the module for the formats).

    Raises:
        InputError: a missing file, another format, or a ``.zip`` without its ``.json``.
        MissingExtra: a ``.zip`` without Stable-Baselines3 installed.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"agent {str(path)!r}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as data:
            meta = _meta(json.loads(str(data["meta"])), path)
            layers: list[tuple[np.ndarray, np.ndarray]] = []
            while f"w{len(layers)}" in data:
                k = len(layers)
                layers.append((data[f"w{k}"], data[f"b{k}"]))
            mean = data["obs_mean"] if "obs_mean" in data else None
            var = data["obs_var"] if "obs_var" in data else None
        agent: Any = MlpAgent(
            layers,
            meta["nvec"],
            activation=meta.get("activation", "tanh"),
            obs_mean=mean,
            obs_var=var,
            clip=meta.get("clip", 10.0),
            epsilon=meta.get("epsilon", 1e-8),
        )
        return agent, meta
    if suffix == ".json":
        meta = _meta(json.loads(path.read_text()), path)
        if "constant_action" not in meta:
            raise InputError(f"agent {str(path)!r}: a settings file needs 'constant_action'")
        return ConstantAgent(meta["constant_action"]), meta
    if suffix == ".zip":
        beside = path.with_suffix(".json")
        if not beside.is_file():
            raise InputError(
                f"agent {str(path)!r}: its settings {beside.name} are missing "
                "(action, features, ... as trained)"
            )
        meta = _meta(json.loads(beside.read_text()), beside)
        try:
            from stable_baselines3 import PPO
        except ImportError as exc:
            raise MissingExtra(
                f"agent {str(path)!r} is a Stable-Baselines3 model, which needs "
                'stable-baselines3: pip install "hpcpower[rl]"'
            ) from exc
        return PPO.load(str(path), device="cpu"), meta
    raise InputError(f"agent {str(path)!r}: expected a .npz, .zip or .json file")


def _meta(meta: Any, path: Path) -> dict[str, Any]:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputError(f"agent {str(path)!r}: not an hpcpower agent file (format {FORMAT!r})")
    return meta


def load_agent_policy(path: str | Path, **params: Any) -> AgentPolicy:
    """``rl:PATH`` as a policy: the agent in ``path`` with the settings it was trained with.

    Args:
        path: An agent file (``.npz``, ``.zip`` with its ``.json``, or ``.json``).
        **params: ``timeout_s`` (every scenario has one) is ignored; ``name``,
            ``illegal`` and ``overrun_release`` may be given.

    Raises:
        InputError: see :func:`load_agent`, or another parameter.
    """
    if not str(path).strip():
        raise InputError("policy 'rl:': give the agent file after rl: (rl:PATH)")
    params = {k: v for k, v in params.items() if k != "timeout_s"}
    unknown = sorted(set(params) - {"name", "illegal", "overrun_release"})
    if unknown:
        raise InputError(
            f"policy 'rl:{path}' takes no setting {', '.join('policy.' + k for k in unknown)} "
            "(its settings come from the agent file; it takes policy.name, policy.illegal "
            "and policy.overrun_release)"
        )
    agent, meta = load_agent(path)
    settings = {k: meta.get(k, v) for k, v in SETTINGS.items()}
    return AgentPolicy(
        agent,
        scheduler=settings["scheduler"],
        action=settings["action"],
        decision_interval_s=settings["decision_interval_s"],
        features=settings["features"],
        wake_planning=settings["wake_planning"],
        n_nodes=settings["n_nodes"],
        name=params.get("name") or f"rl:{Path(path).stem}",
        illegal=params.get("illegal", "noop"),
        overrun_release=params.get("overrun_release", "never"),
    )
