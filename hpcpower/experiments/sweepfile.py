"""Sweep files: a base scenario, a grid or a list of cases, seeds; checked, then expanded.

A sweep file is TOML (``docs/reference/sweep-files.md`` lists every key)::

    [sweep]
    name = "smoke"
    scenario = "../quickstart.toml"     # the base scenario
    seeds = [0, 1, 2]                   # replications

    [set]                               # settings of every run
    workload.first = 100

    [grid]                              # every combination of these values
    policy.name = ["fcfs-easy-ipm", "snf-ipm", "snf-icon"]

    [[case]]                            # a list: each case runs the whole grid
    name = "fs1-taurus"
    platform.name = "taurus-64"

    [report]
    reference = ["fcfs-easy-ipm"]       # paired differences against these

``include = ["other.toml", ...]`` in ``[sweep]`` adds the studies of other
sweep files, so one file can name a whole evaluation.

:func:`load_plan` resolves every run through :func:`hpcpower.scenario.resolve`
and builds its policy and platform, so an unknown key or a bad value is an
:class:`~hpcpower.errors.InputError` naming it before any run starts. Runs
with the same canonical configuration (:mod:`hpcpower.experiments.identity`)
are one run, listed under each study and case that asked for it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hpcpower.errors import InputError
from hpcpower.experiments.identity import canonical, run_id
from hpcpower.scenario import GENERATORS, read_toml, resolve

#: The tables a sweep file may hold.
TABLES = ("sweep", "set", "grid", "case", "report")
#: The keys of ``[sweep]``.
SWEEP_KEYS = ("name", "description", "scenario", "seeds", "seed_keys", "include")
#: The keys of ``[report]``.
REPORT_KEYS = ("reference",)
#: What a seed sets by default: the transition-time draws and, for a generated
#: workload, the workload itself (a file workload ignores ``workload.seed``).
SEED_KEYS = ("simulation.seed", "workload.seed")


@dataclass(frozen=True)
class Label:
    """Where a run stands in a study.

    Attributes:
        study: The study (sweep file) that asked for the run.
        case: Its case (a ``[[case]]`` name, or the base scenario's name).
        seed: Its replication seed (``simulation.seed``).
        axes: The grid values of the run, seeds left out, as ``{"section.key": value}``.
        position: The run's place in its study, in the order the study lists
            its runs (a run shared with an earlier study keeps its place here).
    """

    study: str
    case: str
    seed: int
    axes: dict[str, Any]
    position: int = 0


@dataclass
class PlannedRun:
    """One run of a sweep: what it runs and who asked for it.

    Attributes:
        run_id: The stable id of the run (:func:`hpcpower.experiments.identity.run_id`).
        config: The resolved scenario configuration the run is built from.
        identity: The canonical configuration ``run_id`` is derived from.
        labels: Every (study, case, seed, grid values) that asked for this run.
    """

    run_id: str
    config: dict[str, Any]
    identity: dict[str, Any]
    labels: list[Label] = field(default_factory=list)


@dataclass
class Study:
    """One sweep file's part of a plan.

    Attributes:
        name: The study's name (``[sweep] name``, default the file's name).
        description: Free text shown in the report.
        source: The sweep file (or ``"<dict>"``).
        axes: The grid keys that vary, seeds left out.
        seeds: The replication seeds (empty: the scenario's own seed).
        cases: The case names, in order.
        reference: Policies the report takes paired differences against.
    """

    name: str
    description: str
    source: str
    axes: list[str]
    seeds: list[int]
    cases: list[str]
    reference: list[str]


@dataclass
class Plan:
    """A checked, expanded sweep: its studies and its distinct runs, in order."""

    name: str
    studies: list[Study]
    runs: list[PlannedRun]

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain data (``sweep.json`` in a sweep's folder)."""
        return {
            "name": self.name,
            "studies": [asdict(s) for s in self.studies],
            "runs": [asdict(r) for r in self.runs],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        """The plan written by :meth:`to_dict`."""
        runs = [
            PlannedRun(
                run_id=r["run_id"],
                config=r["config"],
                identity=r["identity"],
                labels=[Label(**label) for label in r["labels"]],
            )
            for r in data["runs"]
        ]
        return cls(data["name"], [Study(**s) for s in data["studies"]], runs)


def load_plan(source: str | Path | Mapping[str, Any]) -> Plan:
    """Read, check and expand a sweep file (or the same content as a dict).

    Args:
        source: A sweep TOML file, or its content as a dict (relative paths
            then start from the current folder).

    Raises:
        InputError: Naming the file, the key and what is wrong, for the first
            problem found; no run has started.
    """
    planner = _Planner()
    if isinstance(source, Mapping):
        name = planner.study(dict(source), "<dict>", Path.cwd(), default_name="sweep")
    else:
        name = planner.file(Path(source), chain=())
    if not planner.runs:
        raise InputError(f"{source if not isinstance(source, Mapping) else 'sweep'}: no runs")
    return Plan(name, planner.studies, list(planner.runs.values()))


class _Planner:
    """Collects the studies and the distinct runs of a sweep file and its includes."""

    def __init__(self) -> None:
        self.studies: list[Study] = []
        self.runs: dict[str, PlannedRun] = {}
        self._policies: dict[str, dict[str, Any]] = {}
        self._platforms: set[str] = set()

    def file(self, path: Path, chain: tuple[Path, ...]) -> str:
        # Errors name the file as it was given; circles are found on the real path.
        real = path.resolve()
        if real in chain:
            raise InputError(f"{path}: includes itself (through {' -> '.join(map(str, chain))})")
        data = read_toml(path, "sweep file")
        return self.study(
            data, str(path), real.parent, default_name=path.stem, chain=chain + (real,)
        )

    def study(
        self,
        data: dict[str, Any],
        where: str,
        folder: Path,
        *,
        default_name: str,
        chain: tuple[Path, ...] = (),
    ) -> str:
        unknown = [t for t in data if t not in TABLES]
        if unknown:
            raise InputError(
                f"{where}: unknown table or key {unknown[0]!r} (a sweep file holds "
                f"{', '.join(f'[{t}]' for t in TABLES[:-2])}, [[case]] and [report])"
            )
        head = _table(data, "sweep", where)
        _known(head, SWEEP_KEYS, f"{where} [sweep]")
        name = str(head.get("name") or default_name)
        includes = head.get("include", [])
        if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
            raise InputError(f"{where} [sweep] include: expected a list of sweep files")
        for include in includes:
            self.file(folder / include, chain)
        own = any(k in data for k in ("grid", "case")) or "scenario" in head
        if own:
            self._expand(data, head, name, where, folder)
        elif not includes:
            raise InputError(f"{where}: give [sweep] scenario (and a [grid] or [[case]] list)")
        return name

    def _expand(
        self, data: dict[str, Any], head: dict[str, Any], name: str, where: str, folder: Path
    ) -> None:
        if any(s.name == name for s in self.studies):
            raise InputError(f"{where}: a study named {name!r} is already in this sweep")
        fixed = _settings(_table(data, "set", where), f"{where} [set]")
        grid = _settings(_table(data, "grid", where), f"{where} [grid]")
        for key, values in grid.items():
            if not isinstance(values, list) or not values:
                raise InputError(f"{where} [grid] {key}: expected a non-empty list of values")
        seeds = _seeds(head, where)
        seed_keys = head.get("seed_keys", list(SEED_KEYS))
        if not isinstance(seed_keys, list) or not all(isinstance(k, str) for k in seed_keys):
            raise InputError(f"{where} [sweep] seed_keys: expected a list of setting names")
        if seeds:
            for key in seed_keys:
                if key in grid or key in fixed:
                    raise InputError(
                        f"{where}: {key} is set by [sweep] seeds; leave it out of [set] and [grid]"
                    )
        report = _table(data, "report", where)
        _known(report, REPORT_KEYS, f"{where} [report]")
        cases = data.get("case", [{}])
        if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
            raise InputError(f"{where}: [[case]] entries must be tables")
        case_names: list[str] = []
        position = 0
        for number, raw in enumerate(cases, 1):
            raw = dict(raw)
            label = raw.pop("name", None)
            scenario = raw.pop("scenario", head.get("scenario"))
            here = f"{where} [[case]] {label or number}" if "case" in data else where
            if not scenario:
                raise InputError(f"{here}: no scenario; give [sweep] scenario or case.scenario")
            scenario = folder / str(scenario)
            settings = _settings(raw, here)
            for key in settings:
                if key in grid or key in fixed:
                    raise InputError(
                        f"{here}: {key} is also given in [set] or [grid]; give it once"
                    )
            for key in grid:
                if key in fixed:
                    raise InputError(f"{where}: {key} is in both [set] and [grid]; give it once")
            case = str(label) if label else (f"case-{number}" if "case" in data else "")
            for combo in itertools.product(*grid.values()):
                axes = dict(zip(grid, combo, strict=True))
                for seed in seeds or (None,):
                    overrides = {**fixed, **settings, **axes}
                    if seed is not None:
                        overrides.update(dict.fromkeys(seed_keys, seed))
                    config = self._resolve(scenario, overrides, here, folder)
                    case = case or config["simulation"]["name"]
                    kept = {k: v for k, v in axes.items() if k not in seed_keys}
                    kept.pop("simulation.seed", None)
                    seed_used = config["simulation"]["seed"]
                    self._add(config, Label(name, case, seed_used, kept, position))
                    position += 1
            if case in case_names:
                raise InputError(f"{here}: a case named {case!r} is already in this study")
            case_names.append(case)
        swept = [k for k in grid if k not in seed_keys and k != "simulation.seed"]
        reference = report.get("reference")
        if reference is None:
            reference = grid.get("policy.name", [])[:1]
        if isinstance(reference, str):
            reference = [reference]
        if not isinstance(reference, list) or not all(isinstance(r, str) for r in reference):
            raise InputError(f"{where} [report] reference: expected a list of policy names")
        # The report pairs runs on the grid's policy.name, so only those can be references.
        policies = [str(p) for p in grid.get("policy.name", [])]
        for ref in reference:
            if ref not in policies:
                known = (
                    f"its policies: {', '.join(policies)}"
                    if policies
                    else "its [grid] has no policy.name"
                )
                raise InputError(
                    f"{where} [report] reference: {ref!r} is not a policy of this sweep ({known})"
                )
        self.studies.append(
            Study(
                name=name,
                description=str(head.get("description", "")),
                source=where,
                axes=swept,
                seeds=seeds,
                cases=case_names,
                reference=list(reference),
            )
        )

    def _resolve(
        self, scenario: Path, overrides: dict[str, Any], where: str, folder: Path
    ) -> dict[str, Any]:
        """Resolve one run's configuration and check its policy, platform and workload."""
        try:
            config = resolve(scenario, overrides, where=where, base=folder)
            self._check(config)
        except InputError as exc:
            message = str(exc)
            raise InputError(
                message if message.startswith(where) else f"{where}: {message}"
            ) from None
        return config

    def _check(self, config: dict[str, Any]) -> None:
        from hpcpower.platform import load_platform
        from hpcpower.policies.registry import make_policy

        platform = str(config["platform"]["name"])
        if platform not in self._platforms:
            load_platform(platform)
            self._platforms.add(platform)
        wl = config["workload"]
        if wl["path"] and not Path(wl["path"]).is_file():
            raise InputError(f"setting workload.path: no such file {wl['path']}")
        if not wl["path"] and wl["generator"] not in GENERATORS:
            raise InputError(
                f"setting workload.generator: unknown generator {wl['generator']!r} "
                f"(known: {', '.join(GENERATORS)})"
            )
        policy = config["policy"]
        params = {k: v for k, v in policy.items() if k != "name"}
        key = repr(sorted(policy.items()))
        if key not in self._policies:
            self._policies[key] = make_policy(policy["name"], **params).config()

    def _add(self, config: dict[str, Any], label: Label) -> None:
        settings = self._policies[repr(sorted(config["policy"].items()))]
        identity = canonical(config, settings)
        rid = run_id(identity)
        run = self.runs.setdefault(rid, PlannedRun(rid, config, identity))
        if label not in run.labels:
            run.labels.append(label)


def _table(data: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise InputError(f"{where}: [{name}] must be a table")
    return table


def _known(table: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    unknown = [k for k in table if k not in keys]
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(keys)})")


def _settings(table: dict[str, Any], where: str) -> dict[str, Any]:
    """``{"policy": {"name": x}}`` or ``{"policy.name": x}`` as ``{"policy.name": x}``."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if "." in key:
            out[key] = value
        elif isinstance(value, dict):
            for sub, inner in value.items():
                out[f"{key}.{sub}"] = inner
        else:
            raise InputError(
                f"{where}: {key!r} is not a setting; settings look like section.key, "
                "e.g. policy.name"
            )
    return out


def _seeds(head: dict[str, Any], where: str) -> list[int]:
    seeds = head.get("seeds", [])
    ok = isinstance(seeds, list) and all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds
    )
    if not ok:
        raise InputError(f"{where} [sweep] seeds: expected a list of whole numbers >= 0")
    if len(set(seeds)) != len(seeds):
        raise InputError(f"{where} [sweep] seeds: a seed is listed twice")
    return list(seeds)
