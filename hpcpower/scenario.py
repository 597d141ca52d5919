"""Scenarios: a TOML file naming a platform, a workload and a policy.

A scenario resolves into one plain dictionary (the full configuration, copied
into every result) and gives the arguments of a
:class:`~hpcpower.simulation.Simulation` (:func:`simulation_args`).
Every key is documented in ``docs/reference/scenarios.md``; an unknown key or a
value of the wrong type is an :class:`~hpcpower.errors.InputError` naming it.

Example::

    [platform]
    name = "aoba-64"        # a preset or a SPARS JSON file, or instead a uniform cluster:
    # nodes = 8
    # watts = {sleeping = 10, switching_on = 150, idle = 100, computing = 200, switching_off = 150}
    # switch_on_s = 60
    # switch_off_s = 30

    [workload]
    path = "data/DAS2-fs1-0-3000.json.gz"

    [policy]
    name = "snf-ipm"
    timeout_s = 7200
"""

from __future__ import annotations

import copy
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpcpower.errors import InputError

if TYPE_CHECKING:
    from hpcpower.platform import Platform

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: Every setting a scenario may hold, with its default and type.
DEFAULTS: dict[str, dict[str, Any]] = {
    "simulation": {
        "name": "",
        "seed": 0,
        "initial_state": "idle",
        "kill_at_walltime": False,
        "repeat_pass": True,
        "kernels": "auto",
        "decisions": "full",
        "explain": False,
    },
    "platform": {"name": "aoba-64"},
    "workload": {
        "path": "",
        "generator": "",
        "procs_per_node": 1,
        "first": 0,
        "jobs": "",
        "shift_to_zero": True,
        "on_missing_reqtime": "runtime",
        "n_jobs": 3000,
        "nodes": 64,
        "target_utilization": 0.40,
        "mean_runtime_s": 7200.0,
        "p_geometric": 0.35,
        "mean_reqtime_s": 8640.0,
        "seed": 43,
    },
    "policy": {"name": "snf-ipm", "timeout_s": 7200.0},
}

#: The workload generators ``workload.generator`` may name.
GENERATORS = ("markovian",)

#: Policy parameters beyond ``name`` that some policies accept (e.g. SNF-ICON's);
#: checked by the policy factory, which names the bad key.
OPEN_SECTIONS = {"policy"}

#: The keys of a ``[platform]`` table that describes a uniform cluster
#: directly (``nodes`` and the rest); they are kept in the configuration only
#: when given, so a preset's resolved settings stay ``{"name": ...}``.
UNIFORM_KEYS = (
    "nodes",
    "watts",
    "switch_on_s",
    "switch_off_s",
    "switch_on_std_s",
    "switch_off_std_s",
)
#: The states a uniform cluster's ``watts`` table names, in ``NodeState`` order.
WATTS_KEYS = ("sleeping", "switching_on", "idle", "computing", "switching_off")
#: The label of a uniform cluster whose table gives no ``name``.
UNIFORM_NAME = "uniform"


def _coerce(value: Any, default: Any, key: str) -> Any:
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise InputError(f"setting {key}: expected true or false, got {value!r}")
    if isinstance(value, bool) and isinstance(default, (int, float)):
        raise InputError(f"setting {key}: expected a number, got {str(value).lower()}")
    if isinstance(default, int) and not isinstance(default, bool):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not number.is_integer():
            raise InputError(f"setting {key}: expected a whole number, got {value!r}")
        return int(number)
    if isinstance(default, float):
        if isinstance(value, str) and value.lower() in ("none", "inf"):
            return None if value.lower() == "none" else float("inf")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise InputError(f"setting {key}: expected a number, got {value!r}") from None
    if isinstance(value, (list, dict, bool)):  # (a number may name a file or a run)
        raise InputError(f"setting {key}: expected text, got {value!r}")
    return str(value) if value is not None else value


def parse_value(text: str) -> Any:
    """Read a ``--set`` value as TOML would (numbers, booleans), else as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def read_toml(path: str | Path, kind: str = "scenario file") -> dict[str, Any]:
    """Read a TOML file, or raise an :class:`InputError` saying what is wrong with it.

    Args:
        path: The file.
        kind: What the file should be, for the messages (``sweep file``).
    """
    path = Path(path)
    if not path.is_file():
        if path.is_dir():
            raise InputError(f"{path}: a folder, not a {kind}")
        raise InputError(f"no such {kind}: {path}")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def resolve(
    path: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    *,
    where: str = "--set",
    base: str | Path | None = None,
) -> dict[str, Any]:
    """Merge defaults, a scenario file and ``{"section.key": value}`` overrides.

    Relative file paths (``workload.path``, a ``platform.name`` ending in
    ``.json``, a ``policy.name`` like ``my_policy.py:factory`` or
    ``rl:agents/fs1.npz``) are resolved
    against the scenario file's folder when the file gives them, and against
    ``base`` (default: the current folder) when an override does.

    Args:
        path: The scenario file (``None``: the defaults alone).
        overrides: Settings as ``{"section.key": value}``, applied after the file.
        where: Where the overrides come from, named in errors about them
            (``--set`` on the command line, a sweep file's section).
        base: The folder relative paths among the overrides start from.
    """
    config = copy.deepcopy(DEFAULTS)
    named = False  # whether the file or an override names the platform
    if path is not None:
        path = Path(path)
        data = read_toml(path, "scenario file")
        for section, values in data.items():
            if section not in config or not isinstance(values, dict):
                raise InputError(
                    f"{path}: unknown section [{section}] (known: {', '.join(config)})"
                )
            for key, value in values.items():
                _set(config, f"{section}.{key}", value, where=str(path))
        named = "name" in data.get("platform", {})
        config["simulation"]["name"] = config["simulation"]["name"] or path.stem
        _anchor(config, path.resolve().parent)
    for key, value in (overrides or {}).items():
        if key == "platform.name":
            named = True
            text = str(value).lower()
            if text in _preset_names() or text.endswith(".json"):
                # --platform (or --set platform.name=) picks a preset or a file
                # in place of a uniform cluster the scenario file describes.
                for uniform in UNIFORM_KEYS:
                    config["platform"].pop(uniform, None)
        _set(config, key, value, where=where)
    if "nodes" in config["platform"] and not named:
        config["platform"]["name"] = UNIFORM_NAME
    check_platform(config["platform"])
    # (The file's paths are absolute by now: only overrides are still relative.)
    _anchor(config, Path(base) if base is not None else Path.cwd())
    wl = config["workload"]
    if not wl["path"] and not wl["generator"]:
        raise InputError("workload: give workload.path or workload.generator")
    return config


def _set(config: dict[str, Any], dotted: str, value: Any, *, where: str) -> None:
    section, _, key = dotted.partition(".")
    if section not in config or not key:
        raise InputError(
            f"{where}: unknown setting {dotted!r}; settings look like section.key "
            f"with section one of {', '.join(config)}"
        )
    known = config[section]
    if section == "platform" and key.partition(".")[0] in UNIFORM_KEYS:
        _set_uniform(known, key, value)
        return
    if key in known and known[key] is not None:
        known[key] = _coerce(value, DEFAULTS[section].get(key, known[key]), dotted)
    elif section in OPEN_SECTIONS:
        known[key] = value
    else:
        names = list(known) + [k for k in UNIFORM_KEYS if section == "platform" and k not in known]
        raise InputError(
            f"{where}: unknown setting {dotted!r} (known in [{section}]: {', '.join(names)})"
        )


def _set_uniform(table: dict[str, Any], key: str, value: Any) -> None:
    """Store one uniform-cluster key (``nodes``, ``watts.idle``, ...); checked later."""
    head, _, state = key.partition(".")
    if not state:
        table[head] = copy.deepcopy(value)
        return
    if head != "watts":
        raise InputError(f"setting platform.{key}: platform.{head} has no keys")
    watts = table.get("watts")
    table["watts"] = dict(watts) if isinstance(watts, dict) else {}
    table["watts"][state] = value


def _preset_names() -> tuple[str, ...]:
    # Imported here: the platform module loads numpy, and scenario stays light.
    from hpcpower.platform import PRESETS

    return PRESETS


def _non_negative(value: Any, key: str) -> float:
    """A number >= 0 (not a boolean, not NaN or infinite), as a float."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise InputError(f"{key}: expected a number >= 0, got {value!r}")
    return float(value)


def check_platform(table: dict[str, Any]) -> dict[str, Any]:
    """Check a ``[platform]`` table in place and return it.

    A table with ``nodes`` describes a uniform cluster: it needs ``watts``
    (all five states), ``switch_on_s`` and ``switch_off_s``; the standard
    deviations default to 0 (fixed durations). Numbers become floats, so the
    resolved settings read the same however the file wrote them.

    Raises:
        InputError: one line naming the key, e.g.
            ``platform.watts.idle: expected a number >= 0, got -5``.
    """
    given = [k for k in UNIFORM_KEYS if k in table]
    if not given:
        return table
    if "nodes" not in table:
        raise InputError(
            f"platform.{given[0]}: only with platform.nodes, which makes the table "
            "a uniform cluster (nodes, watts, switch_on_s, switch_off_s)"
        )
    name = str(table.get("name", UNIFORM_NAME))
    if name.lower() in _preset_names() or name.lower().endswith(".json"):
        raise InputError(
            f"platform.name: {name!r} is a preset or a file, but platform.nodes describes "
            "a uniform cluster; drop one of them (with nodes, name is only a label)"
        )
    nodes = table["nodes"]
    if isinstance(nodes, float) and nodes.is_integer():
        nodes = int(nodes)
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise InputError(f"platform.nodes: expected a whole number >= 1, got {nodes!r}")
    from hpcpower.platform import MAX_NODES

    if nodes > MAX_NODES:
        raise InputError(f"platform.nodes: at most {MAX_NODES:,}, got {nodes:,}")
    table["nodes"] = nodes
    for key in ("watts", "switch_on_s", "switch_off_s"):
        if key not in table:
            raise InputError(
                f"platform.{key}: missing; a uniform cluster needs nodes, watts, "
                "switch_on_s and switch_off_s"
            )
    watts = table["watts"]
    if not isinstance(watts, dict):
        raise InputError(
            f"platform.watts: expected a table of {', '.join(WATTS_KEYS)}, got {watts!r}"
        )
    for state in watts:
        if state not in WATTS_KEYS:
            raise InputError(
                f"platform.watts.{state}: not a power state (give {', '.join(WATTS_KEYS)})"
            )
    for state in WATTS_KEYS:
        if state not in watts:
            raise InputError(f"platform.watts.{state}: missing (give {', '.join(WATTS_KEYS)})")
    table["watts"] = {s: _non_negative(watts[s], f"platform.watts.{s}") for s in WATTS_KEYS}
    for key in ("switch_on_s", "switch_off_s", "switch_on_std_s", "switch_off_std_s"):
        table[key] = _non_negative(table.get(key, 0.0), f"platform.{key}")
    return table


def make_platform(table: dict[str, Any]) -> Platform:
    """The :class:`~hpcpower.platform.Platform` a checked ``[platform]`` table describes."""
    from hpcpower.platform import Duration, Platform, load_platform

    if "nodes" not in check_platform(table):
        return load_platform(table["name"])
    return Platform.uniform(
        table["nodes"],
        **{f"{state}_w": table["watts"][state] for state in WATTS_KEYS},
        switch_on_s=Duration(table["switch_on_s"], table["switch_on_std_s"]),
        switch_off_s=Duration(table["switch_off_s"], table["switch_off_std_s"]),
        name=str(table.get("name", UNIFORM_NAME)),
    )


def _anchor(config: dict[str, Any], base: Path) -> None:
    """Make the relative file paths of ``config`` absolute, from ``base``."""
    wl = config["workload"]
    if wl["path"] and not Path(wl["path"]).is_absolute():
        wl["path"] = str((base / wl["path"]).resolve())
    policy = str(config["policy"]["name"])
    file, sep, factory = policy.rpartition(":")
    if sep and file.endswith(".py") and not Path(file).is_absolute():
        config["policy"]["name"] = f"{(base / file).resolve()}:{factory}"
    kind, sep, agent = policy.partition(":")
    if sep and kind == "rl" and agent and not Path(agent).is_absolute():
        # A trained agent's file (--policy rl:PATH), from the same folder rule.
        config["policy"]["name"] = f"rl:{(base / agent).resolve()}"
    name = str(config["platform"]["name"])
    if "nodes" in config["platform"]:
        return  # a uniform cluster: the name is a label, not a file
    if name.lower().endswith(".json") and not Path(name).is_absolute():
        config["platform"]["name"] = str((base / name).resolve())


def simulation_args(config: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """The arguments of the :class:`~hpcpower.simulation.Simulation` a configuration describes.

    Returns ``(args, kwargs)``: the platform, workload and policy, then the
    simulation settings. ``Simulation.from_config`` and
    ``Simulation.from_scenario`` build the simulation from them.
    """
    from hpcpower.policies.registry import make_policy
    from hpcpower.workload import load_workload
    from hpcpower.workload.generate import markovian

    platform = make_platform(dict(config["platform"]))
    wl = config["workload"]
    if wl["path"]:
        options: dict[str, Any] = {"procs_per_node": wl["procs_per_node"]}
        segment = None
        if wl["first"] < 0:
            raise InputError(f"setting workload.first: expected 0 (all) or more, got {wl['first']}")
        if wl["first"] and wl["jobs"]:
            raise InputError(
                "settings workload.first and workload.jobs: give one of them "
                "(first N jobs, or jobs i..j)"
            )
        if wl["jobs"]:
            lo, _, hi = str(wl["jobs"]).partition("..")
            try:
                segment = (int(lo), int(hi))
            except ValueError:
                raise InputError(
                    f"setting workload.jobs: expected 'i..j', got {wl['jobs']!r}"
                ) from None
        if str(wl["path"]).endswith((".swf", ".swf.gz")):
            if wl["first"]:
                options["first"] = wl["first"]
            if segment:
                options["jobs"] = segment
            options["shift_to_zero"] = wl["shift_to_zero"]
            options["on_missing_reqtime"] = wl["on_missing_reqtime"]
            workload = load_workload(wl["path"], **options)
        else:
            workload = load_workload(wl["path"], **options)
            workload = _segment(workload, wl["first"], segment)
    elif wl["generator"] in GENERATORS:
        if wl["seed"] < 0:  # (numpy's own error would not name the setting)
            raise InputError(
                f"setting workload.seed: expected a whole number >= 0, got {wl['seed']}"
            )
        workload = markovian(
            wl["n_jobs"],
            nodes=wl["nodes"],
            target_utilization=wl["target_utilization"],
            mean_runtime_s=wl["mean_runtime_s"],
            p_geometric=wl["p_geometric"],
            mean_reqtime_s=wl["mean_reqtime_s"],
            seed=wl["seed"],
        )
    else:
        raise InputError(f"setting workload.generator: unknown generator {wl['generator']!r}")
    params = {k: v for k, v in config["policy"].items() if k != "name"}
    policy = make_policy(config["policy"]["name"], **params)
    sim = config["simulation"]
    options = {
        "seed": sim["seed"],
        "initial_state": sim["initial_state"],
        "kill_at_walltime": sim["kill_at_walltime"],
        "repeat_pass": sim["repeat_pass"],
        "kernels": sim.get("kernels", "auto"),
        "decisions": sim.get("decisions", "full"),
        "explain": sim.get("explain", False),
        "config": {"scenario": config},
    }
    return (platform, workload, policy), options


def _segment(workload, first: int, segment: tuple[int, int] | None):
    """Keep the first ``first`` jobs or jobs ``i..j`` (1-based, inclusive), renumbered."""
    from dataclasses import replace

    from hpcpower.workload.formats import recount_notes

    jobs = workload.jobs
    n = len(jobs)
    if segment is not None:
        lo, hi = segment
        if not 1 <= lo <= hi <= n:
            raise InputError(
                f"setting workload.jobs: {lo}..{hi} is outside the {n} jobs of {workload.source}"
            )
        jobs = jobs[lo - 1 : hi]
        workload.notes.append(f"kept jobs {lo}..{hi} of {n}")
    if first:
        if first > len(jobs):
            raise InputError(
                f"setting workload.first: {first} is more than the {len(jobs)} jobs available"
            )
        if first < len(jobs):
            workload.notes.append(f"kept jobs 1..{first} of {len(jobs)}")
        jobs = jobs[:first]
    if jobs is not workload.jobs:
        workload.notes = recount_notes(workload, jobs)
        shift = jobs[0].submit_s if segment is not None and jobs else 0.0
        workload.jobs = [replace(j, id=i, submit_s=j.submit_s - shift) for i, j in enumerate(jobs)]
    return workload
