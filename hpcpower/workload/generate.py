"""Generate synthetic Markovian workloads like the SNF-ICON paper's.

The paper's ``generated-markovian-3000.json`` has Poisson arrivals, exponential
runtimes (mean 7200 s), node requests geometric(p = 0.35) on {1, 2, ...} capped
at the node count (``min(G, nodes)``), and requested times exponential with
mean 8640 s drawn independently of the runtime. The arrival rate is set from a
target utilisation::

    mean interarrival = E[res] * mean runtime / (nodes * target utilisation)

with E[res] = E[min(G, nodes)] = (1 - (1 - p)**nodes) / p, which gives
803.57 s for the paper's 64 nodes, p = 0.35, 40 % and 7200 s.

Choices (checked against the paper's file):

- **No rounding.** The paper's file stores submit, run and requested times as
  unrounded floats (its shortest runtime is 0.053 s), so times are left as
  drawn; they are positive with probability 1.
- **Submit times** are cumulative sums of the interarrivals, so the first job
  arrives after one interarrival, not at 0 (the paper's first is at 216 s).
- **Draw order** is sizes, interarrivals, runtimes, requested times, each
  drawn as one vector from a :class:`numpy.random.Generator` (never the global
  NumPy state). With this order, ``seed=43`` reproduces the paper's file: the
  same sizes, runtimes and requested times, and submit times equal to about
  1e-11 relative (the file's mean interarrival differs in its last digits).
- **Users**: every job has ``user_id`` 0, as in the paper's file.

Besides the paper's geometric sizes, an explicit pmf over 1..k nodes can be
given (``res_pmf``), since the model only needs a size distribution.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hpcpower.errors import InputError
from hpcpower.workload._io import make_jobs
from hpcpower.workload.job import Workload

__all__ = ["capped_geometric_mean", "markovian", "markovian_mean_interarrival"]


def capped_geometric_mean(p: float, cap: int) -> float:
    """Return E[min(G, cap)] for G geometric with success probability ``p`` on {1, 2, ...}.

    Args:
        p: Success probability, 0 < p <= 1.
        cap: Largest value (the node count), >= 1.

    Returns:
        (1 - (1 - p)**cap) / p.
    """
    _check_p(p)
    _check_positive_int(cap, "cap")
    return (1.0 - (1.0 - p) ** cap) / p


def markovian_mean_interarrival(
    *,
    nodes: int = 64,
    target_utilization: float = 0.40,
    mean_runtime_s: float = 7200.0,
    mean_res: float | None = None,
    p_geometric: float = 0.35,
) -> float:
    """Mean interarrival time that offers ``target_utilization`` of the machine.

    Args:
        nodes: Node count of the machine.
        target_utilization: Offered load, 0 < u <= 1.
        mean_runtime_s: Mean job runtime in seconds.
        mean_res: Mean nodes per job; by default the capped geometric mean
            for ``p_geometric``.
        p_geometric: Geometric parameter used when ``mean_res`` is not given.

    Returns:
        mean_res * mean_runtime_s / (nodes * target_utilization), in seconds
        (803.57 s for the paper's defaults).
    """
    _check_positive_int(nodes, "nodes")
    _check_unit(target_utilization, "target_utilization")
    _check_positive(mean_runtime_s, "mean_runtime_s")
    if mean_res is None:
        mean_res = capped_geometric_mean(p_geometric, nodes)
    return mean_res * mean_runtime_s / (nodes * target_utilization)


def markovian(
    n_jobs: int,
    *,
    nodes: int = 64,
    target_utilization: float = 0.40,
    mean_runtime_s: float = 7200.0,
    p_geometric: float = 0.35,
    mean_reqtime_s: float = 8640.0,
    res_pmf: Sequence[float] | None = None,
    seed: int | np.random.Generator | None = 43,
) -> Workload:
    """Generate a Markovian workload (the paper's generator by default).

    Args:
        n_jobs: Number of jobs, >= 1.
        nodes: Node count of the machine; node requests are capped at it.
        target_utilization: Offered load that sets the arrival rate.
        mean_runtime_s: Mean of the exponential runtimes.
        p_geometric: Parameter of the geometric node requests on {1, 2, ...}.
        mean_reqtime_s: Mean of the exponential requested times (drawn
            independently of the runtimes).
        res_pmf: Optional probabilities of requesting 1, 2, ..., k nodes
            (k <= nodes), used instead of the geometric; normalised if it
            does not sum to 1.
        seed: An integer seed, a :class:`numpy.random.Generator` (used and
            advanced as is), or ``None`` for fresh OS entropy.

    Returns:
        The workload, ``max_nodes == nodes``; the notes record the parameters
        and the mean interarrival used.

    Raises:
        InputError: A parameter is out of range.
    """
    _check_positive_int(n_jobs, "n_jobs")
    _check_positive_int(nodes, "nodes")
    _check_unit(target_utilization, "target_utilization")
    _check_positive(mean_runtime_s, "mean_runtime_s")
    _check_positive(mean_reqtime_s, "mean_reqtime_s")
    if isinstance(seed, np.random.Generator):
        rng = seed
        seed_text = "a caller's Generator"
    elif seed is None or (
        isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0
    ):
        rng = np.random.default_rng(seed)
        seed_text = repr(None if seed is None else int(seed))
    else:
        raise InputError(
            f"seed must be a whole number >= 0, a numpy Generator or None, got {seed!r}"
        )

    if res_pmf is None:
        _check_p(p_geometric)
        mean_res = capped_geometric_mean(p_geometric, nodes)
        res = np.minimum(rng.geometric(p_geometric, size=n_jobs), nodes)
        size_text = f"geometric(p={p_geometric:g}) capped at {nodes}"
    else:
        pmf = _check_pmf(res_pmf, nodes)
        mean_res = float(np.dot(np.arange(1, pmf.size + 1), pmf))
        res = rng.choice(np.arange(1, pmf.size + 1), size=n_jobs, p=pmf)
        size_text = f"pmf over 1..{pmf.size} nodes"
    mean_ia = markovian_mean_interarrival(
        nodes=nodes,
        target_utilization=target_utilization,
        mean_runtime_s=mean_runtime_s,
        mean_res=mean_res,
    )
    submit = np.cumsum(rng.exponential(mean_ia, size=n_jobs))
    runtime = rng.exponential(mean_runtime_s, size=n_jobs)
    reqtime = rng.exponential(mean_reqtime_s, size=n_jobs)

    jobs = make_jobs(
        [str(k + 1) for k in range(n_jobs)],
        submit.tolist(),
        res.astype(np.int64).tolist(),
        reqtime.tolist(),
        runtime.tolist(),
        [0] * n_jobs,
    )
    source = (
        f"markovian(n_jobs={n_jobs}, nodes={nodes}, target_utilization={target_utilization:g}, "
        f"mean_runtime_s={mean_runtime_s:g}, "
        + ("" if res_pmf is not None else f"p_geometric={p_geometric:g}, ")
        + f"mean_reqtime_s={mean_reqtime_s:g}, seed={seed_text})"
    )
    notes = [
        f"node requests: {size_text}; E[res] = {mean_res:.6g}",
        f"Poisson arrivals, mean interarrival = {mean_ia:.6g} s "
        f"(= E[res] x {mean_runtime_s:g} s / ({nodes} nodes x {target_utilization:g}))",
        f"runtime exponential, mean {mean_runtime_s:g} s; requested time exponential, "
        f"mean {mean_reqtime_s:g} s, independent of the runtime; times not rounded",
    ]
    return Workload(jobs=jobs, source=source, max_nodes=nodes, notes=notes)


def _check_positive_int(v: object, name: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise InputError(f"{name} must be a positive integer, got {v!r}")


def _check_positive(v: object, name: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < float("inf")):
        raise InputError(f"{name} must be a positive finite number, got {v!r}")


def _check_unit(v: object, name: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v <= 1):
        raise InputError(f"{name} must be in (0, 1], got {v!r}")


def _check_p(p: object) -> None:
    _check_unit(p, "p_geometric")


def _check_pmf(pmf: Sequence[float], nodes: int) -> np.ndarray:
    try:
        arr = np.asarray(pmf, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"res_pmf must be a sequence of probabilities, got {pmf!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise InputError("res_pmf must be a non-empty list of probabilities for 1, 2, ... nodes")
    if arr.size > nodes:
        raise InputError(f"res_pmf gives {arr.size} sizes, more than nodes = {nodes}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or arr.sum() <= 0:
        raise InputError("res_pmf must hold finite probabilities >= 0 with a positive sum")
    return arr / arr.sum()
