"""Workloads: jobs read from traces and JSON files, or generated.

- :func:`read_swf`: Standard Workload Format traces (Parallel Workloads Archive).
- :func:`read_spars_json`: the SNF-ICON paper's workload JSON.
- :func:`read_batsim_json`: Batsim workload JSON.
- :func:`markovian`: synthetic Markovian workloads like the paper's.
- :func:`load_workload`: pick the reader from the file name (or content).
- :func:`trace_info`: summary of a workload file (``hpcpower trace info FILE``).

Every reader returns a :class:`Workload`: jobs in submit order plus the records
it dropped and the adjustments it made, each with a reason.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hpcpower.errors import InputError
from hpcpower.workload._io import read_source
from hpcpower.workload.formats import (
    load_json,
    parse_batsim,
    parse_spars,
    read_batsim_json,
    read_spars_json,
)
from hpcpower.workload.generate import (
    capped_geometric_mean,
    markovian,
    markovian_mean_interarrival,
)
from hpcpower.workload.job import Dropped, Job, Workload
from hpcpower.workload.swf import parse_swf, read_swf

__all__ = [
    "Dropped",
    "Job",
    "Workload",
    "capped_geometric_mean",
    "load_workload",
    "markovian",
    "markovian_mean_interarrival",
    "read_batsim_json",
    "read_spars_json",
    "read_swf",
    "trace_info",
]

_SWF_OPTIONS = frozenset({"first", "jobs", "shift_to_zero", "on_missing_reqtime"})


def load_workload(path: str | os.PathLike[str], **opts: Any) -> Workload:
    """Read a workload file with the reader its name (or content) calls for.

    ``.swf`` / ``.swf.gz`` go to :func:`read_swf`. ``.json`` / ``.json.gz`` go
    to :func:`read_spars_json` when the jobs have ``reqtime`` (the paper's
    format) and to :func:`read_batsim_json` when they have ``walltime`` (or
    only a ``profile`` and the file has ``profiles``). Other names are
    recognised by content: JSON starts with ``{``, SWF with ``;`` or a digit.

    Args:
        path: The workload file (plain or gzipped).
        **opts: Reader options: ``procs_per_node`` for every format; ``first``,
            ``jobs``, ``shift_to_zero`` and ``on_missing_reqtime`` for SWF only.

    Returns:
        The workload.

    Raises:
        InputError: Missing file (``"no such workload file: ..."``), unknown
            format, an option the format does not take, or a reader error.
    """
    workload, _, _ = _load(path, opts)
    return workload


def trace_info(path: str | os.PathLike[str], **opts: Any) -> dict[str, Any]:
    """Summarise a workload file: what was kept, what was dropped and why.

    Args:
        path: The workload file.
        **opts: As for :func:`load_workload`.

    Returns:
        A dict with keys ``source``, ``format`` (``"swf"``, ``"spars-json"``
        or ``"batsim-json"``), ``records`` (job records read: kept + dropped),
        ``jobs`` (kept), ``max_nodes`` (machine size in nodes, or None),
        ``max_procs`` (SWF ``MaxProcs`` or JSON ``nb_res``, or None),
        ``header_max_nodes`` (SWF ``MaxNodes``, else None),
        ``largest_request`` (most nodes one job asks for),
        ``first_submit_s`` / ``last_submit_s``, ``submit_span_s`` (last minus
        first submit), ``span_s`` (first submit to the last job's end if every
        job started on arrival), ``offered_utilization`` (node-seconds of
        work / (max_nodes x submit span), or None), ``dropped`` (count per
        reason), ``dropped_total`` and ``notes``.

    Raises:
        InputError: As for :func:`load_workload`.
    """
    w, fmt, meta = _load(path, opts)
    jobs = w.jobs
    first = jobs[0].submit_s if jobs else 0.0
    last = jobs[-1].submit_s if jobs else 0.0
    end = max((j.submit_s + j.runtime_s for j in jobs), default=0.0)
    work = sum(j.res * j.runtime_s for j in jobs)
    span = last - first
    by_reason: dict[str, int] = {}
    for d in w.dropped:
        by_reason[d.reason] = by_reason.get(d.reason, 0) + 1
    return {
        "source": w.source,
        "format": fmt,
        "records": meta.get("records", len(jobs)),
        "jobs": len(jobs),
        "max_nodes": w.max_nodes,
        "max_procs": meta.get("max_procs"),
        "header_max_nodes": meta.get("header_max_nodes"),
        "largest_request": max((j.res for j in jobs), default=0),
        "first_submit_s": first,
        "last_submit_s": last,
        "submit_span_s": span,
        "span_s": end - first if jobs else 0.0,
        "offered_utilization": (work / (w.max_nodes * span) if w.max_nodes and span > 0 else None),
        "dropped": by_reason,
        "dropped_total": len(w.dropped),
        "notes": list(w.notes),
    }


def _load(path: str | os.PathLike[str], opts: dict[str, Any]) -> tuple[Workload, str, dict]:
    """Read ``path``; return the workload, its format name and extra facts."""
    data, where = read_source(path)
    name = Path(where).name.lower()
    if name.endswith((".swf", ".swf.gz")):
        kind = "swf"
    elif name.endswith((".json", ".json.gz")):
        kind = "json"
    else:
        head = data[:4096].lstrip()[:1]
        if head == b"{":
            kind = "json"
        elif head == b";" or head.isdigit():
            kind = "swf"
        else:
            raise InputError(
                f"{where}: unknown workload format (expected .swf, .swf.gz, .json or .json.gz)"
            )
    unknown = set(opts) - _SWF_OPTIONS - {"procs_per_node"}
    if unknown:
        raise InputError(f"unknown workload option(s): {', '.join(sorted(unknown))}")
    if kind == "swf":
        w, head_meta = parse_swf(data, where, **opts)
        meta = {
            "records": head_meta["records"],
            "max_procs": head_meta["max_procs_header"],
            "header_max_nodes": head_meta["max_nodes_header"],
        }
        return w, "swf", meta
    swf_only = set(opts) & _SWF_OPTIONS
    if swf_only:
        raise InputError(
            f"{where}: option(s) {', '.join(sorted(swf_only))} apply to SWF files only"
        )
    obj = load_json(data, where)
    fmt = _json_flavour(obj, where)
    parse = parse_spars if fmt == "spars-json" else parse_batsim
    w = parse(obj, where, **opts)
    return w, fmt, {"max_procs": obj["nb_res"]}


def _json_flavour(obj: Any, where: str) -> str:
    """Tell the paper's JSON (jobs have reqtime) from Batsim's (jobs have walltime)."""
    jobs = obj.get("jobs") if isinstance(obj, dict) else None
    if not isinstance(jobs, list):
        # Let the reader produce its precise message about the top level.
        return "spars-json"
    if not jobs:
        return "spars-json"
    job = jobs[0]
    if not isinstance(job, dict):
        # (The reader's own message: "jobs[0]: must be an object, got ...".)
        return "spars-json"
    if "reqtime" in job:
        return "spars-json"
    if "walltime" in job or ("profile" in job and "runtime" not in job and "profiles" in obj):
        return "batsim-json"
    raise InputError(
        f"{where}: jobs[0] has neither reqtime (paper JSON) nor walltime (Batsim JSON)"
    )
