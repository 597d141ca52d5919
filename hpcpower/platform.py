"""Power states, their transition table, and platforms loaded from data files.

A platform is a list of nodes, each of a :class:`NodeType` that gives the
power drawn in every :class:`NodeState` and the duration model of the two
timed transitions (switching on, switching off). Presets ship as the paper's
own SPARS platform files in ``hpcpower/platforms/``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from hpcpower.errors import InputError
from hpcpower.states import STATE_LABELS, STATES, TRANSITIONS, NodeState

__all__ = [
    "STATES",
    "STATE_LABELS",
    "TRANSITIONS",
    "Duration",
    "NodeState",
    "NodeType",
    "PRESETS",
    "Platform",
    "load_platform",
    "parse_spars_platform",
]

#: The most nodes a platform may have: 20 times the largest machines of today's
#: lists, and well under what a run's per-node arrays can hold in memory.
MAX_NODES = 1_000_000


@dataclass(frozen=True)
class Duration:
    """Duration of a timed transition: fixed, or normal truncated at zero.

    Attributes:
        mean_s: Mean duration in seconds; planners use this value.
        sd_s: Standard deviation in seconds; 0 gives a fixed duration.
    """

    mean_s: float
    sd_s: float = 0.0

    def sample(self, rng: np.random.Generator) -> float:
        """Draw one duration from ``rng`` (no draw is made when ``sd_s`` is 0)."""
        if self.sd_s <= 0.0:
            return self.mean_s
        return max(0.0, float(rng.normal(self.mean_s, self.sd_s)))


@dataclass(frozen=True)
class NodeType:
    """Power model shared by a group of nodes.

    Attributes:
        name: Name of the node type (``AOBA-A``).
        power_w: Watts drawn in each state, indexed by :class:`NodeState`.
        switch_on: Duration of sleeping → idle (through ``switching_on``).
        switch_off: Duration of idle → sleeping (through ``switching_off``).
        speed: Compute speed of the DVFS profile in use; a job lasts
            runtime / (slowest speed among its nodes).
        dvfs: Name of the DVFS profile in use.
    """

    name: str
    power_w: tuple[float, float, float, float, float]
    switch_on: Duration
    switch_off: Duration
    speed: float = 1.0
    dvfs: str = "base"


@dataclass(frozen=True)
class Platform:
    """A cluster description: one :class:`NodeType` per node.

    Attributes:
        name: Preset name or file stem.
        node_types: The distinct node types.
        type_of_node: Index into ``node_types`` for each node id.
    """

    name: str
    node_types: tuple[NodeType, ...]
    type_of_node: tuple[int, ...]

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return len(self.type_of_node)

    def node_type(self, node: int) -> NodeType:
        """The type of node ``node``."""
        return self.node_types[self.type_of_node[node]]

    def power_matrix(self) -> np.ndarray:
        """Watts per (node, state) as an ``(n_nodes, 5)`` array."""
        table = np.array([t.power_w for t in self.node_types], dtype=float)
        return table[np.asarray(self.type_of_node, dtype=np.intp)]

    def __repr__(self) -> str:
        kinds = ", ".join(t.name for t in self.node_types)
        return f"<Platform {self.name}: {self.n_nodes} nodes ({kinds})>"

    @classmethod
    def uniform(
        cls,
        n_nodes: int,
        *,
        computing_w: float,
        idle_w: float,
        sleeping_w: float,
        switching_on_w: float,
        switching_off_w: float,
        switch_on_s: float | Duration,
        switch_off_s: float | Duration,
        name: str = "custom",
    ) -> Platform:
        """Build a platform of ``n_nodes`` identical nodes (handy in tests and teaching)."""
        if not 1 <= n_nodes <= MAX_NODES:
            raise InputError(
                f"platform {name}: n_nodes must be from 1 to {MAX_NODES:,}, got {n_nodes}"
            )
        on = switch_on_s if isinstance(switch_on_s, Duration) else Duration(float(switch_on_s))
        off = switch_off_s if isinstance(switch_off_s, Duration) else Duration(float(switch_off_s))
        power = (
            float(sleeping_w),
            float(switching_on_w),
            float(idle_w),
            float(computing_w),
            float(switching_off_w),
        )
        node_type = NodeType(name, power, on, off)
        return cls(name, (node_type,), (0,) * n_nodes)


#: The preset names, in the order ``hpcpower platforms`` lists them; each is a
#: file ``<name>.json`` in ``hpcpower/platforms/``. The 8-node models and the toy
#: clusters are small enough to follow node by node in a lesson.
PRESETS: tuple[str, ...] = (
    "aoba-8",
    "aoba-64",
    "aoba-1152",
    "taurus-8",
    "taurus-64",
    "taurus-1152",
    "toy-4",
    "toy-8",
)


def load_platform(name_or_path: str | Path) -> Platform:
    """Load a preset by name (``aoba-64``) or a SPARS platform JSON file by path.

    Raises:
        InputError: unknown preset, missing file, or a malformed field (named).
    """
    text_name = str(name_or_path)
    key = text_name.lower()
    if key in PRESETS:
        source = resources.files("hpcpower") / "platforms" / f"{key}.json"
        return parse_spars_platform(json.loads(source.read_text()), name=key, where=key)
    path = Path(text_name)
    if not path.is_file():
        what = "a folder" if path.is_dir() else "no such file"
        raise InputError(
            f"unknown platform {text_name!r}: not a preset ({', '.join(PRESETS)}) and {what}"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise InputError(f"{path}: not valid JSON (nested too deeply)") from None
    return parse_spars_platform(data, name=path.stem, where=str(path))


def _field(obj: dict, key: str, where: str):
    if not isinstance(obj, dict):
        raise InputError(f"{where}: must be a JSON object, got {_kind(obj)}")
    if key not in obj:
        raise InputError(f"{where}: missing field {key!r}")
    return obj[key]


def _object(obj: dict, key: str, where: str) -> dict:
    value = _field(obj, key, where)
    if not isinstance(value, dict):
        raise InputError(f"{where}.{key}: must be a JSON object, got {_kind(value)}")
    return value


def _kind(value) -> str:
    """How a JSON value reads in an error message: ``a list``, ``the number 3``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    return "a list" if isinstance(value, list) else "an object"


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: expected a number, got {value!r}")
    if value < 0:
        raise InputError(f"{where}: must not be negative, got {value!r}")
    return float(value)


def _id_ranges(spec, where: str) -> list[int]:
    ids: list[int] = []
    items = spec if isinstance(spec, list) else [spec]
    for k, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            raise InputError(f'{where}[{k}]: expected a node id or a range like "0-63"')
        text = str(item)
        try:
            if "-" in text:
                lo, hi = (int(x) for x in text.split("-", 1))
            else:
                lo = hi = int(text)
        except ValueError:
            raise InputError(f"{where}[{k}]: bad node id range {item!r}") from None
        if lo < 0 or hi < lo:
            raise InputError(f"{where}[{k}]: node id range {item!r} holds no node")
        if hi - lo + 1 + len(ids) > MAX_NODES:
            raise InputError(f"{where}[{k}]: range {item!r} makes more than {MAX_NODES:,} nodes")
        ids.extend(range(lo, hi + 1))
    if not ids:
        raise InputError(f"{where}: no node ids")
    return ids


def _transition(states: dict, src: str, dst: str, where: str) -> Duration:
    state = _field(states, src, f"{where}.states")
    listed = _field(state, "transitions", f"{where}.states.{src}")
    if not isinstance(listed, list):
        raise InputError(f"{where}.states.{src}.transitions: must be a list, got {_kind(listed)}")
    for k, tr in enumerate(listed):
        here = f"{where}.states.{src}.transitions[{k}]"
        if not isinstance(tr, dict):
            raise InputError(f"{here}: must be a JSON object, got {_kind(tr)}")
        if tr.get("state") == dst:
            mean = _number(_field(tr, "transition_time", here), f"{here}.transition_time")
            return Duration(mean, _number(tr.get("std", 0.0), f"{here}.std"))
    raise InputError(f"{where}.states.{src}: no transition to {dst!r}")


def _state_power(states: dict, name: str, profile: dict, where: str) -> float:
    here = f"{where}.states.{name}.power"
    power = _field(_field(states, name, f"{where}.states"), "power", f"{where}.states.{name}")
    if power == "from_dvfs":  # (the profile's power_idle, named as such)
        return _number(_field(profile, "power_idle", here), f"{here} from_dvfs: power_idle")
    return _number(power, here)


def parse_spars_platform(data: dict, *, name: str, where: str) -> Platform:
    """Read the SPARS platform format (``machines`` with id ranges, DVFS, states).

    SPARS calls the powered-on state ``active``; it draws the DVFS profile's
    ``power_idle`` when no job runs and ``power_compute`` when one does.
    """
    if not isinstance(data, dict):
        raise InputError(f"{where}: a platform file holds a JSON object, not {type(data).__name__}")
    machines = _field(data, "machines", where)
    if not isinstance(machines, list) or not machines:
        raise InputError(f"{where}: 'machines' must be a non-empty list")
    types: list[NodeType] = []
    owner: dict[int, int] = {}
    for m, machine in enumerate(machines):
        here = f"{where}: machines[{m}]"
        profiles = _object(machine, "dvfs_profiles", here)
        mode = machine.get("dvfs_mode", "base")
        if not isinstance(mode, str) or mode not in profiles:
            raise InputError(f"{here}.dvfs_mode: profile {mode!r} not in dvfs_profiles")
        profile = profiles[mode]
        states = _object(machine, "states", here)
        in_profile = f"{here}.dvfs_profiles.{mode}"
        idle_w = _number(_field(profile, "power_idle", in_profile), f"{in_profile}.power_idle")
        compute_w = _number(
            _field(profile, "power_compute", f"{here}.dvfs_profiles.{mode}"),
            f"{here}.dvfs_profiles.{mode}.power_compute",
        )
        power = (
            _state_power(states, "sleeping", profile, here),
            _state_power(states, "switching_on", profile, here),
            idle_w,
            compute_w,
            _state_power(states, "switching_off", profile, here),
        )
        speed = _number(profile.get("compute_speed", 1.0), f"{in_profile}.compute_speed")
        if speed <= 0:
            raise InputError(f"{here}.dvfs_profiles.{mode}.compute_speed must be positive")
        types.append(
            NodeType(
                name=str(machine.get("node_name", f"type{m}")),
                power_w=power,
                switch_on=_transition(states, "switching_on", "active", here),
                switch_off=_transition(states, "switching_off", "sleeping", here),
                speed=speed,
                dvfs=mode,
            )
        )
        for node in _id_ranges(_field(machine, "id", here), f"{here}.id"):
            if node in owner:
                raise InputError(
                    f"{here}.id: node {node} already belongs to machines[{owner[node]}]"
                )
            owner[node] = m
    n = len(owner)
    if sorted(owner) != list(range(n)):
        raise InputError(f"{where}: node ids must cover 0..{n - 1} without gaps")
    return Platform(name, tuple(types), tuple(owner[i] for i in range(n)))
