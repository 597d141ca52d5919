"""Read JSON workloads: the SNF-ICON paper's format and Batsim's.

Both formats are a JSON object with ``nb_res`` (machine size) and a list
``jobs``; files may be plain or gzip-compressed (``.json`` or ``.json.gz``;
gzip is recognised by its magic bytes).

**Paper (SPARS) format**, as in the authors' ``workloads/`` folder: each job has
``job_id``, ``res``, ``subtime``, ``reqtime``, ``runtime`` and optionally
``profile`` and ``user_id``. ``res`` and ``nb_res`` count *processors*; jobs get
ceil(res / ``procs_per_node``) nodes (1 processor = 1 node by default, exactly as
the paper ran them). ``id`` is accepted when ``job_id`` is absent (some SPARS
files use it).

**Batsim format**: each job has ``id``, ``subtime``, ``res``, ``profile`` and
usually ``walltime``; the top-level ``profiles`` object maps profile names to
profiles. The runtime is the profile's ``delay`` (Batsim ``delay`` profiles).
A profile without a ``delay`` (e.g. ``parallel_homogeneous``, whose duration
depends on the platform) gets the job's walltime as runtime, and the notes say
how many jobs that affected. A missing walltime, or walltime ``-1`` (Batsim's
"none"), is filled with the runtime, also noted.

Times are used as they are (no shift, no rounding); jobs are sorted by
(submit time, position in the file) and ``Job.id`` is the sorted position.
Anything missing or invalid raises :class:`~hpcpower.errors.InputError` naming
the file and the field, e.g. ``w.json: jobs[12].runtime: must be >= 0, got -1``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any

from hpcpower.errors import InputError
from hpcpower.workload._io import ceil_div, check_procs_per_node, make_jobs, read_source
from hpcpower.workload.job import Job, Workload

__all__ = ["read_batsim_json", "read_spars_json"]


def read_spars_json(path: str | os.PathLike[str], *, procs_per_node: int = 1) -> Workload:
    """Read a workload in the SNF-ICON paper's JSON format.

    Args:
        path: A ``.json`` or ``.json.gz`` file with ``nb_res`` and ``jobs``
            (``job_id``, ``res``, ``subtime``, ``reqtime``, ``runtime``).
        procs_per_node: Processors per node; ``res`` and ``nb_res`` count
            processors, so a job gets ceil(res / procs_per_node) nodes.

    Returns:
        The workload; ``max_nodes`` is ceil(nb_res / procs_per_node).

    Raises:
        InputError: Missing file, invalid JSON, or a missing/invalid field
            (the message names the file and ``jobs[i].field``).
    """
    data, where = read_source(path)
    return parse_spars(load_json(data, where), where, procs_per_node=procs_per_node)


def read_batsim_json(path: str | os.PathLike[str], *, procs_per_node: int = 1) -> Workload:
    """Read a Batsim workload JSON file.

    Args:
        path: A ``.json`` or ``.json.gz`` file with ``nb_res``, ``jobs``
            (``id``, ``subtime``, ``res``, ``walltime``, ``profile``) and
            ``profiles``.
        procs_per_node: Resources per node; a job gets
            ceil(res / procs_per_node) nodes.

    Returns:
        The workload; runtimes come from the profiles' ``delay`` (see the
        module docstring for profiles without one).

    Raises:
        InputError: Missing file, invalid JSON, or a missing/invalid field
            (the message names the file and ``jobs[i].field``).
    """
    data, where = read_source(path)
    return parse_batsim(load_json(data, where), where, procs_per_node=procs_per_node)


def load_json(data: bytes, where: str) -> Any:
    """Decode JSON bytes read from ``where``, raising InputError with the line on failure."""
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not a JSON text file: {exc}") from exc
    except RecursionError:
        raise InputError(f"{where}: invalid JSON: nested too deeply") from None


def parse_spars(obj: Any, where: str, *, procs_per_node: int = 1) -> Workload:
    """Build a workload from an already decoded paper-format JSON object."""
    ppn = check_procs_per_node(procs_per_node)
    nb_res, jobs = _top(obj, where)
    names: list[str] = []
    cols: dict[str, list[Any]] = {"subtime": [], "res": [], "reqtime": [], "runtime": []}
    users: list[int] = []
    profiles: list[str] = []
    for i, job in enumerate(jobs):
        f = _Fields(job, where, i)
        names.append(f.ident("job_id", "id"))
        cols["subtime"].append(f.number("subtime"))
        cols["res"].append(f.integer("res", minimum=1))
        cols["reqtime"].append(f.number("reqtime"))
        cols["runtime"].append(f.number("runtime"))
        users.append(f.user_id())
        profiles.append(f.ident("profile") if "profile" in job else "")
    _check_unique(names, where, "job_id")
    notes = [f"res counts processors (nb_res = {nb_res})"]
    return _build(where, ppn, nb_res, names, cols, users, notes, profiles)


def parse_batsim(obj: Any, where: str, *, procs_per_node: int = 1) -> Workload:
    """Build a workload from an already decoded Batsim JSON object."""
    ppn = check_procs_per_node(procs_per_node)
    nb_res, jobs = _top(obj, where)
    profiles = obj.get("profiles", {})
    if not isinstance(profiles, dict):
        raise InputError(f"{where}: profiles: must be an object, got {_kind(profiles)}")
    names: list[str] = []
    cols: dict[str, list[Any]] = {"subtime": [], "res": [], "reqtime": [], "runtime": []}
    users: list[int] = []
    pnames: list[str] = []
    no_delay: dict[str, int] = {}
    filled_wall = 0
    for i, job in enumerate(jobs):
        f = _Fields(job, where, i)
        names.append(f.ident("id"))
        cols["subtime"].append(f.number("subtime"))
        cols["res"].append(f.integer("res", minimum=1))
        walltime = f.number("walltime", required=False, missing_marker=True)
        pname = f.ident("profile")
        pnames.append(pname)
        profile = profiles.get(pname)
        if profile is not None and not isinstance(profile, dict):
            raise InputError(
                f"{where}: profiles[{pname!r}]: must be an object, got {_kind(profile)}"
            )
        if not isinstance(profile, dict):
            raise InputError(
                f"{where}: jobs[{i}].profile: no profile {pname!r} in the top-level profiles"
            )
        delay = profile.get("delay")
        if delay is not None:
            runtime = _check_number(delay, f"{where}: profiles[{pname!r}].delay")
        elif walltime is not None:
            runtime = walltime
            ptype = str(profile.get("type", "untyped"))
            no_delay[ptype] = no_delay.get(ptype, 0) + 1
        else:
            raise InputError(
                f"{where}: jobs[{i}].walltime: needed as the runtime, because profile "
                f"{pname!r} has no delay"
            )
        if walltime is None:
            walltime = runtime
            filled_wall += 1
        cols["reqtime"].append(walltime)
        cols["runtime"].append(runtime)
        users.append(f.user_id())
    _check_unique(names, where, "id")
    notes = []
    if no_delay:
        types = ", ".join(f"{n} x {t}" for t, n in no_delay.items())
        notes.append(
            f"runtime = walltime for {sum(no_delay.values())} jobs whose profile has "
            f"no delay ({types})"
        )
    if filled_wall:
        notes.append(f"walltime missing or -1: filled with the runtime for {filled_wall} jobs")
    return _build(where, ppn, nb_res, names, cols, users, notes, pnames, batsim=True)


def _top(obj: Any, where: str) -> tuple[int, list[Any]]:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object with nb_res and jobs, got {_kind(obj)}")
    if "nb_res" not in obj:
        raise InputError(f"{where}: nb_res: missing")
    nb_res = obj["nb_res"]
    if isinstance(nb_res, bool) or not isinstance(nb_res, int) or nb_res < 1:
        raise InputError(f"{where}: nb_res: must be a positive integer, got {nb_res!r}")
    if "jobs" not in obj:
        raise InputError(f"{where}: jobs: missing")
    jobs = obj["jobs"]
    if not isinstance(jobs, list):
        raise InputError(f"{where}: jobs: must be a list, got {_kind(jobs)}")
    return nb_res, jobs


def _build(
    where: str,
    ppn: int,
    nb_res: int,
    names: list[str],
    cols: dict[str, list[Any]],
    users: list[int],
    notes: list[str],
    profiles: list[str],
    batsim: bool = False,
) -> Workload:
    n = len(names)
    order = sorted(range(n), key=cols["subtime"].__getitem__)  # stable: ties keep file order
    if order != list(range(n)):
        moved = sum(1 for k, o in enumerate(order) if k != o)
        notes.append(f"file is not in submit order: {moved} jobs moved when sorting")
    procs = cols["res"]
    nodes = [ceil_div(p, ppn) for p in procs]
    max_nodes = ceil_div(nb_res, ppn)
    if ppn > 1:
        rounded = sum(1 for p in procs if p % ppn)
        notes.append(
            f"nodes = ceil(res / {ppn}); {rounded} jobs rounded up; "
            f"max_nodes = ceil({nb_res} / {ppn}) = {max_nodes}"
        )
    jobs = make_jobs(
        [names[k] for k in order],
        [float(cols["subtime"][k]) for k in order],
        [nodes[k] for k in order],
        [float(cols["reqtime"][k]) for k in order],
        [float(cols["runtime"][k]) for k in order],
        [users[k] for k in order],
        [profiles[k] for k in order],
    )
    notes.extend(job_notes(jobs, max_nodes, batsim))
    return Workload(jobs=jobs, source=where, max_nodes=max_nodes, notes=notes)


#: What a Batsim user is told when jobs run past their walltime.
KILL_HINT = (
    "Batsim itself kills a job at its walltime: set simulation.kill_at_walltime "
    "= true to do the same (hpcpower lets jobs run their whole runtime by default)"
)


def job_notes(jobs: Sequence[Job], max_nodes: int, batsim: bool = False) -> list[str]:
    """The notes of a JSON workload that count its jobs (too wide, runtime 0, past walltime)."""
    notes = []
    big = sum(1 for job in jobs if job.res > max_nodes)
    if big:
        notes.append(f"{big} jobs request more than max_nodes = {max_nodes} nodes")
    zero = sum(1 for job in jobs if job.runtime_s == 0)
    if zero:
        notes.append(f"{zero} jobs with runtime 0 (they start and end at one instant)")
    over = sum(1 for job in jobs if job.runtime_s > job.reqtime_s)
    if over:
        notes.append(f"{over} jobs run longer than their requested time")
        if batsim:
            notes.append(KILL_HINT)
    return notes


def recount_notes(workload: Workload, jobs: Sequence[Job]) -> list[str]:
    """``workload.notes`` with the notes that count its jobs counted over ``jobs`` instead.

    For a JSON workload cut to some of its jobs, so that its notes speak of
    the jobs that run (the SWF reader cuts before it counts).
    """
    batsim = KILL_HINT in workload.notes
    counted = job_notes(workload.jobs, workload.max_nodes or 0, batsim)
    kept = [note for note in workload.notes if note not in counted]
    return kept + job_notes(jobs, workload.max_nodes or 0, batsim)


class _Fields:
    """Typed access to one job object's fields, with errors naming ``jobs[i].field``."""

    def __init__(self, job: Any, where: str, i: int) -> None:
        if not isinstance(job, dict):
            raise InputError(f"{where}: jobs[{i}]: must be an object, got {_kind(job)}")
        self.job = job
        self.where = where
        self.i = i

    def _at(self, key: str) -> str:
        return f"{self.where}: jobs[{self.i}].{key}"

    def ident(self, *keys: str) -> str:
        for key in keys:
            if key in self.job:
                v = self.job[key]
                if isinstance(v, bool) or not isinstance(v, (str, int)):
                    raise InputError(f"{self._at(key)}: must be a string or an integer, got {v!r}")
                return str(v)
        raise InputError(f"{self._at(keys[0])}: missing")

    def number(
        self, key: str, *, required: bool = True, missing_marker: bool = False
    ) -> float | None:
        """A finite number >= 0; with ``missing_marker``, -1 reads as absent."""
        if key not in self.job:
            if required:
                raise InputError(f"{self._at(key)}: missing")
            return None
        v = self.job[key]
        if missing_marker and v == -1 and not isinstance(v, bool):
            return None
        return _check_number(v, self._at(key))

    def integer(self, key: str, *, minimum: int) -> int:
        if key not in self.job:
            raise InputError(f"{self._at(key)}: missing")
        v = self.job[key]
        ok = not isinstance(v, bool) and (
            isinstance(v, int) or (isinstance(v, float) and v.is_integer())
        )
        if not ok:
            raise InputError(f"{self._at(key)}: must be an integer, got {v!r}")
        if v < minimum:
            raise InputError(f"{self._at(key)}: must be >= {minimum}, got {v!r}")
        if abs(v) >= _EXACT:
            raise InputError(f"{self._at(key)}: {v!r} is 2**53 or beyond, too large to hold")
        return int(v)

    def user_id(self) -> int:
        v = self.job.get("user_id", -1)
        if isinstance(v, bool) or not isinstance(v, int):
            raise InputError(f"{self._at('user_id')}: must be an integer, got {v!r}")
        if abs(v) >= _EXACT:
            raise InputError(f"{self._at('user_id')}: {v!r} is 2**53 or beyond, too large to hold")
        return v


def _check_number(v: Any, at: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(f"{at}: must be a number, got {v!r}")
    if isinstance(v, int) and abs(v) >= _EXACT:  # (before isfinite, which overflows)
        raise InputError(f"{at}: {v!r} is 2**53 or beyond, which a float cannot hold exactly")
    if not math.isfinite(v):
        raise InputError(f"{at}: must be finite, got {v!r}")
    if v < 0:
        raise InputError(f"{at}: must be >= 0, got {v!r}")
    if v >= _EXACT:
        raise InputError(f"{at}: {v!r} is 2**53 or beyond, which a float cannot hold exactly")
    return v


#: Beyond this, float64 (which every time is held as) skips integers.
_EXACT = 2**53


def _check_unique(names: list[str], where: str, key: str) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise InputError(
                f"{where}: jobs[{i}].{key}: {name!r} already used by jobs[{seen[name]}]"
            )
        seen[name] = i


_KINDS: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}


def _kind(v: Any) -> str:
    return _KINDS.get(type(v), repr(v))
