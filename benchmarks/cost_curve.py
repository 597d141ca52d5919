"""Cost curve: time and peak memory of ``Simulation.run()`` against jobs and nodes.

Generates Markovian workloads (``hpcpower.workload.generate.markovian``,
offered load 0.4) for uniform clusters of AOBA nodes (the ``aoba-64``
preset's node type: watts, switch-on and switch-off durations) and runs
each (policy, nodes, jobs) cell in a fresh Python process, so that the
peak memory of one cell never includes another's. Per cell it prints the
CPU and wall seconds of ``run()`` (generating the workload, building the
simulation and loading the planning kernels excluded), the peak resident
memory of the process, controller passes, SimPy events, and the rates per
wall second of ``run()``: passes, events, jobs and simulated seconds.

Job sizes are scaled to the machine (``--sizes scaled``, the default): node
requests are geometric with p = 0.35 * 64 / nodes, capped at the node
count, so a job asks for the same share of the machine at every size and
the arrival rate, queue and number of running jobs stay those of the
paper's 64-node workload (at 64 nodes this is the paper's generator; seed
43 gives the paper's file). ``--sizes paper`` keeps p = 0.35 at every size:
jobs of about 3 nodes, arriving nodes/64 times as often.

Before a cell runs, its time is estimated from the cells already measured
(linear in jobs at the same node count; otherwise a power law in nodes
through the two largest node counts measured at the same job count). A
cell estimated over ``--timeout`` is skipped, and a cell that reaches it is
stopped: both are recorded as such. Run from the project root:

    python benchmarks/cost_curve.py --out cost_curve.json      # the full grid (about 25 min)
    python benchmarks/cost_curve.py --quick                    # a small grid (under a minute)
    python benchmarks/cost_curve.py --no-grid --year           # one simulated year, 10,000 nodes
    python benchmarks/cost_curve.py --profile snf-ipm 1152 3000    # cProfile of one cell
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

POLICIES = ("fcfs-easy", "snf-ipm", "snf-icon")
NODES = (64, 1152, 10000, 50000)
JOBS = (3000, 30000, 300000)
QUICK_NODES = (64, 256)
QUICK_JOBS = (300, 1000)
YEAR_S = 365 * 86400.0
UTILIZATION = 0.4
P_PAPER = 0.35


def p_geometric(nodes: int, sizes: str) -> float:
    """Geometric parameter of the node requests (see the module docstring)."""
    return min(1.0, P_PAPER * 64 / nodes) if sizes == "scaled" else P_PAPER


def rss_now_mb() -> float:
    """Current resident memory of this process in MB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB.

    VmHWM where Linux has it: ru_maxrss carries over exec the size of the
    forked copy of the parent (here the small driver, so the two agree
    within a few MB, but a large parent would show through).
    """
    try:
        with open("/proc/self/status") as f:
            return int(f.read().split("VmHWM:")[1].split()[0]) / 1024
    except (OSError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------- one cell
def build(spec: dict):
    """Platform and workload of a cell: a generated one, or a bundled trace."""
    from hpcpower import load_platform, load_workload
    from hpcpower.platform import Platform
    from hpcpower.workload.generate import markovian

    if "trace" in spec:
        from cases import DATA

        return load_platform(spec["platform"]), load_workload(DATA / spec["trace"])
    nodes = spec["nodes"]
    node_type = load_platform("aoba-64").node_types[0]
    platform = Platform(f"aoba-{nodes}", (node_type,), (0,) * nodes)
    workload = markovian(
        spec["jobs"],
        nodes=nodes,
        target_utilization=UTILIZATION,
        p_geometric=p_geometric(nodes, spec.get("sizes", "scaled")),
        seed=spec.get("seed", 43),
    )
    return platform, workload


def warm_up(policy: str, kernels: str) -> None:
    """Load the planning kernels and run the policy once on a small case before timing."""
    from hpcpower import Simulation, make_policy

    platform, workload = build({"nodes": 64, "jobs": 300})
    Simulation(platform, workload, make_policy(policy), seed=42, kernels=kernels).run()


def run_cell(spec: dict) -> dict:
    """Run one cell in this process and return its measurements."""
    from hpcpower import Simulation, make_policy

    kernels = spec.get("kernels", "auto")
    warm_up(spec["policy"], kernels)
    base_mb = rss_now_mb()
    t0 = time.perf_counter()
    platform, workload = build(spec)
    sim = Simulation(platform, workload, make_policy(spec["policy"]), seed=42, kernels=kernels)
    setup_s = time.perf_counter() - t0
    wall, cpu = time.perf_counter(), time.process_time()
    s = sim.run().summary
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    # Every SimPy event takes the next number of this counter, so it counts
    # the events of the run (the model's and SimPy's own) at no cost.
    events = next(sim.env._eid)
    span = float(s["simulated_span_s"])
    return {
        **spec,
        "nodes": platform.n_nodes,
        "jobs": int(s["jobs_submitted"]),
        "kernels_used": sim.kernels,
        "status": "ok",
        "setup_s": setup_s,
        "run_wall_s": wall,
        "run_cpu_s": cpu,
        "passes": int(s["decisions"]),
        "events": int(events),
        "simulated_s": span,
        "utilization": float(s["utilization"]),
        "mean_wait_min": float(s["mean_wait_min"]),
        "base_mb": base_mb,
        "peak_mb": peak_rss_mb(),
        "passes_per_s": s["decisions"] / wall,
        "events_per_s": events / wall,
        "jobs_per_s": s["jobs_submitted"] / wall,
        "sim_s_per_wall_s": span / wall,
    }


def run_in_child(spec: dict, timeout_s: float) -> dict:
    """Run a cell in a fresh interpreter, stopped after ``timeout_s`` seconds."""
    cmd = [sys.executable, str(HERE / "cost_curve.py"), "--cell", json.dumps(spec)]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=HERE)
    except subprocess.TimeoutExpired:
        return {**spec, "status": "timed out", "elapsed_s": time.perf_counter() - t0}
    elapsed = time.perf_counter() - t0
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("CELL ")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {**spec, "status": f"failed: {tail[0]}", "elapsed_s": elapsed}
    return {**json.loads(lines[-1][5:]), "elapsed_s": elapsed}


# ------------------------------------------------------------- estimating
def estimate_s(cell: dict, done: list[dict]) -> float | None:
    """Estimated seconds of a cell from the measured cells of its policy (None: no basis).

    Linear in jobs from the largest measured job count at the same node
    count; otherwise a power law in nodes through the two largest node counts
    measured at the same job count (one point: linear). The child's start-up
    (interpreter, kernels, warm-up) is added as measured.
    """
    same = [
        c
        for c in done
        if c["status"] == "ok" and c["policy"] == cell["policy"] and c.get("sizes") == cell["sizes"]
    ]
    if not same:
        return None
    startup = min(c["elapsed_s"] - c["run_wall_s"] - c["setup_s"] for c in same)

    def work(c: dict) -> float:
        return c["run_wall_s"] + c["setup_s"]

    row = [c for c in same if c["nodes"] == cell["nodes"] and c["jobs"] < cell["jobs"]]
    if row:
        c = max(row, key=lambda c: c["jobs"])
        return startup + work(c) * cell["jobs"] / c["jobs"]
    col = sorted(
        (c for c in same if c["jobs"] == cell["jobs"] and c["nodes"] < cell["nodes"]),
        key=lambda c: c["nodes"],
    )
    if not col:
        return None
    top = col[-1]
    slope = 1.0
    if len(col) >= 2:
        low = col[-2]
        slope = math.log(work(top) / work(low)) / math.log(top["nodes"] / low["nodes"])
        slope = min(3.0, max(0.0, slope))
    return startup + work(top) * (cell["nodes"] / top["nodes"]) ** slope


def run_grid(
    policies, nodes, jobs, *, sizes: str, kernels: str, timeout_s: float, out: Path | None
) -> list[dict]:
    cells: list[dict] = []
    print(header(), flush=True)
    for policy in policies:
        for n in nodes:
            for j in jobs:
                spec = {"policy": policy, "nodes": n, "jobs": j, "sizes": sizes, "kernels": kernels}
                # A cell at least as large as one that ran out of time would too.
                bigger = any(
                    c["policy"] == policy
                    and c["status"] != "ok"
                    and c["nodes"] <= n
                    and c["jobs"] <= j
                    and (c["status"] == "timed out" or c["status"].startswith("skipped"))
                    for c in cells
                )
                est = estimate_s(spec, cells)
                if bigger:
                    cell = {**spec, "status": "skipped (larger than a stopped cell)"}
                elif est is not None and est > timeout_s:
                    cell = {**spec, "status": f"skipped (estimated {est:.0f} s)", "estimate_s": est}
                else:
                    cell = run_in_child(spec, timeout_s)
                    cell["estimate_s"] = est
                cells.append(cell)
                print(line(cell), flush=True)
                if out is not None:
                    save(out, cells)
    return cells


def save(out: Path, cells: list[dict], **extra) -> None:
    data = json.loads(out.read_text()) if out.exists() else {}
    data.update(extra)
    if cells:
        data["cells"] = cells
    data["machine"] = machine()
    out.write_text(json.dumps(data, indent=1))


def machine() -> dict:
    import platform

    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }


# ---------------------------------------------------------------- reports
def header() -> str:
    return (
        f"{'policy':10s} {'nodes':>6s} {'jobs':>7s} {'run CPU':>8s} {'wall':>8s} {'peak':>7s} "
        f"{'passes':>9s} {'passes/s':>9s} {'events/s':>9s} {'jobs/s':>8s} {'sim-s/s':>9s}"
    )


def line(c: dict) -> str:
    head = f"{c['policy']:10s} {c['nodes']:6d} {c['jobs']:7d}"
    if c["status"] != "ok":
        return f"{head} {c['status']}"
    return (
        f"{head} {c['run_cpu_s']:8.2f} {c['run_wall_s']:8.2f} {c['peak_mb']:5.0f}MB "
        f"{c['passes']:9d} {c['passes_per_s']:9.0f} {c['events_per_s']:9.0f} "
        f"{c['jobs_per_s']:8.0f} {c['sim_s_per_wall_s']:9.0f}"
    )


def markdown_table(cells: list[dict]) -> str:
    """The cells as a Markdown table (skipped and stopped cells marked)."""
    rows = [
        "| case | policy | nodes | jobs | simulated | run CPU s | run wall s | peak MB "
        "| passes | passes/s | events/s | jobs/s | sim-s per wall-s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        case = c.get("trace", "markovian") + (f" on {c['platform']}" if "platform" in c else "")
        head = f"| {case} | {c['policy']} | {c.get('nodes', '')} | {c.get('jobs', '')} |"
        if c["status"] != "ok":
            rows.append(f"{head} {c['status']} | | | | | | | | |")
            continue
        days = c["simulated_s"] / 86400
        rows.append(
            f"{head} {days:.1f} d | {c['run_cpu_s']:.2f} | {c['run_wall_s']:.2f} "
            f"| {c['peak_mb']:.0f} | {c['passes']:,} | {c['passes_per_s']:,.0f} "
            f"| {c['events_per_s']:,.0f} | {c['jobs_per_s']:,.0f} | {c['sim_s_per_wall_s']:,.0f} |"
        )
    return "\n".join(rows)


def fit(cells: list[dict], min_s: float = 0.5) -> dict[str, dict]:
    """Least-squares power law run CPU s = a * jobs^b * nodes^c per policy.

    Cells under ``min_s`` are left out: there the fixed costs of a run, not
    its growth, set the time.
    """
    fits = {}
    for policy in dict.fromkeys(c["policy"] for c in cells):
        ok = [
            c
            for c in cells
            if c["policy"] == policy and c["status"] == "ok" and c["run_cpu_s"] >= min_s
        ]
        if len(ok) < 3:
            continue
        x = np.array([[1.0, math.log(c["jobs"]), math.log(c["nodes"])] for c in ok])
        y = np.log([c["run_cpu_s"] for c in ok])
        coef, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)
        if rank < 3:  # all cells at one node count or one job count: no separate exponents
            continue
        resid = y - x @ coef
        r2 = 1 - float(resid @ resid) / float(((y - y.mean()) ** 2).sum() or 1.0)
        fits[policy] = {
            "a": float(math.exp(coef[0])),
            "b_jobs": float(coef[1]),
            "c_nodes": float(coef[2]),
            "r2": r2,
            "cells": len(ok),
        }
    return fits


def print_fits(fits: dict[str, dict]) -> None:
    print("\nfitted run CPU s = a * jobs^b * nodes^c:")
    if not fits:
        print("  (too few cells long enough to fit)")
    for policy, f in fits.items():
        print(
            f"  {policy:10s} a = {f['a']:.3g}  b (jobs) = {f['b_jobs']:.2f}  "
            f"c (nodes) = {f['c_nodes']:.2f}  R^2 = {f['r2']:.3f}  ({f['cells']} cells)"
        )


# ------------------------------------------------------------- one year
def year_jobs(nodes: int, sizes: str) -> int:
    """Jobs in one simulated year of the generator at this size."""
    from hpcpower.workload.generate import capped_geometric_mean, markovian_mean_interarrival

    p = p_geometric(nodes, sizes)
    mean_ia = markovian_mean_interarrival(
        nodes=nodes,
        target_utilization=UTILIZATION,
        mean_res=capped_geometric_mean(p, nodes),
    )
    return math.ceil(YEAR_S / mean_ia)


def profile(policy: str, nodes: int, jobs: int, sizes: str, kernels: str) -> None:
    """cProfile of ``run()`` of one cell: the top functions by own and by cumulative time."""
    import cProfile
    import pstats

    from hpcpower import Simulation, make_policy

    warm_up(policy, kernels)
    platform, workload = build({"nodes": nodes, "jobs": jobs, "sizes": sizes})
    sim = Simulation(platform, workload, make_policy(policy), seed=42, kernels=kernels)
    prof = cProfile.Profile()
    prof.runcall(sim.run)
    stats = pstats.Stats(prof).strip_dirs()
    print(f"{policy} {nodes} nodes {jobs} jobs: {sim.passes} passes")
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumulative").print_stats(25)


def main() -> None:
    from cases import add_kernels_option

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--nodes", nargs="+", type=int, default=None)
    parser.add_argument("--jobs", nargs="+", type=int, default=None)
    parser.add_argument("--sizes", choices=("scaled", "paper"), default="scaled")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds per cell (default 600)"
    )
    parser.add_argument("--out", type=Path, help="results JSON (written after every cell)")
    parser.add_argument(
        "--quick", action="store_true", help=f"nodes {QUICK_NODES}, jobs {QUICK_JOBS}"
    )
    parser.add_argument("--no-grid", action="store_true", help="skip the grid (with --year)")
    parser.add_argument(
        "--year", action="store_true", help="one simulated year at --year-nodes nodes"
    )
    parser.add_argument("--year-nodes", type=int, default=10000)
    parser.add_argument("--year-policy", default="snf-ipm")
    parser.add_argument("--year-timeout", type=float, default=1800.0)
    parser.add_argument(
        "--profile", nargs=3, metavar=("POLICY", "NODES", "JOBS"), help="cProfile one cell"
    )
    parser.add_argument("--cell", help=argparse.SUPPRESS)  # a child's cell, as JSON
    add_kernels_option(parser)
    args = parser.parse_args()

    if args.cell:
        print("CELL " + json.dumps(run_cell(json.loads(args.cell))), flush=True)
        return
    if args.profile:
        policy, n, j = args.profile
        profile(policy, int(n), int(j), args.sizes, args.kernels)
        return
    nodes = args.nodes or (QUICK_NODES if args.quick else NODES)
    jobs = args.jobs or (QUICK_JOBS if args.quick else JOBS)
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f}; kernels {args.kernels}; sizes {args.sizes}; "
        f"offered load {UTILIZATION}; timeout {args.timeout:.0f} s per cell",
        flush=True,
    )
    if not args.no_grid:
        cells = run_grid(
            args.policies,
            nodes,
            jobs,
            sizes=args.sizes,
            kernels=args.kernels,
            timeout_s=args.timeout,
            out=args.out,
        )
        # (The quick grid's cells are all short: fit them anyway, as a smoke test.)
        fits = fit(cells, min_s=0.05 if args.quick else 0.5)
        print_fits(fits)
        if args.out is not None:
            save(args.out, cells, fits=fits)
    if args.year:
        n = args.year_nodes
        j = year_jobs(n, args.sizes)
        print(f"\none simulated year at {n} nodes under {args.year_policy}: {j} jobs")
        spec = {
            "policy": args.year_policy,
            "nodes": n,
            "jobs": j,
            "sizes": args.sizes,
            "kernels": args.kernels,
        }
        cell = run_in_child(spec, args.year_timeout)
        print(header())
        print(line(cell), flush=True)
        if args.out is not None:
            save(args.out, [], year=cell)


if __name__ == "__main__":
    main()
