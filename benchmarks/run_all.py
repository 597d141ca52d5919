"""Regenerate the figures of benchmarks/RESULTS.md in one command.

Runs ``bench_baselines.py``, ``bench_icon.py`` and ``cost_curve.py`` and
prints their output, then measures every case of the first two (the
bundled traces, on their AOBA presets) once more in a fresh process each,
as ``cost_curve.py`` does its cells, for what those scripts do not print:
controller passes and SimPy events per second, jobs per second, simulated
seconds per wall second and the peak memory of one run. Last comes one
Markdown table of every case, traces and cost-curve cells, with the
commands that produced it. Run from the project root:

    python benchmarks/run_all.py                 # everything (about 40 minutes on 2 cores)
    python benchmarks/run_all.py --quick         # a smoke run (about a minute)
    python benchmarks/run_all.py --out figures.md    # also write the Markdown (and figures.json)
    python benchmarks/run_all.py --cost-curve cost_curve.json   # reuse a measured grid
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from cases import PAPER_64, add_kernels_option
from cost_curve import fit, markdown_table, run_in_child

HERE = Path(__file__).resolve().parent

PAPER = ("fcfs-easy-ipm", "snf-ipm", "snf-icon")
#: The cases of bench_baselines.py and bench_icon.py: (trace, platform, policies).
TRACE_CASES = [
    *[(name, "aoba-64", PAPER) for name in PAPER_64],
    ("DAS2-fs1-2003-1.swf.gz", "aoba-64", ("fcfs-easy", "fcfs-easy-ipm", "snf-icon")),
    ("SDSC-BLUE-2000-4.2-cln-0-3000.json.gz", "aoba-1152", PAPER),
    ("SDSC-BLUE-2000-4.2-cln.swf.gz", "aoba-1152", ("fcfs-easy", "snf-icon")),
]
QUICK_TRACE_CASES = [(PAPER_64[0], "aoba-64", PAPER)]


def script(args: list[str]) -> tuple[str, str, float]:
    """Run a benchmark script; returns its command line, output and wall seconds."""
    cmd = [sys.executable, *args]
    shown = "python benchmarks/" + " ".join(args)
    print(f"\n$ {shown}", flush=True)
    t0 = time.perf_counter()
    # Its lines are shown as they come (a full run takes minutes) and kept.
    proc = subprocess.Popen(cmd, cwd=HERE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out = []
    for row in proc.stdout:
        print(row, end="", flush=True)
        out.append(row)
    if proc.wait() != 0:
        out.append(f"(exit status {proc.returncode})\n")
    return shown, "".join(out), time.perf_counter() - t0


def trace_cells(cases, kernels: str, timeout_s: float) -> list[dict]:
    cells = []
    for trace, platform, policies in cases:
        for policy in policies:
            spec = {"policy": policy, "trace": trace, "platform": platform, "kernels": kernels}
            cell = run_in_child(spec, timeout_s)
            cells.append(cell)
            state = (
                f"{cell['run_cpu_s']:.2f} s CPU, {cell['peak_mb']:.0f} MB"
                if cell["status"] == "ok"
                else cell["status"]
            )
            print(f"{trace:38s} {platform:10s} {policy:14s} {state}", flush=True)
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of about a minute")
    parser.add_argument("--out", type=Path, help="write the Markdown here (and its .json beside)")
    parser.add_argument(
        "--cost-curve", type=Path, help="results JSON of cost_curve.py --out to reuse"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds per cost-curve cell (default 300, which keeps the full run near 40 min)",
    )
    add_kernels_option(parser)
    args = parser.parse_args()
    t_start = time.perf_counter()
    quick = ["--quick"] if args.quick else []
    kernels = ["--kernels", args.kernels]
    outputs = [
        script(["bench_baselines.py", *quick, *kernels]),
        script(["bench_icon.py", *quick, *kernels]),
    ]

    print("\nthe same cases, one fresh process each: passes, events, rates, peak memory")
    traces = trace_cells(QUICK_TRACE_CASES if args.quick else TRACE_CASES, args.kernels, 600.0)

    if args.cost_curve is not None:
        grid_json = args.cost_curve
        grid_cmd = f"(reused: {grid_json})"
    else:
        grid_json = (
            args.out.with_suffix(".cost_curve.json")
            if args.out
            else Path(os.environ.get("TMPDIR", "/tmp")) / f"cost_curve_{os.getpid()}.json"
        )
        grid_json.unlink(missing_ok=True)
        grid_args = ["cost_curve.py", *quick, *kernels, "--timeout", f"{args.timeout:g}"]
        grid_cmd, text, seconds = script([*grid_args, "--out", str(grid_json.resolve())])
        outputs.append((grid_cmd, text, seconds))
    grid = json.loads(grid_json.read_text()) if grid_json.exists() else {}
    cells = grid.get("cells", [])

    load = os.getloadavg()
    lines = [
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, kernels {args.kernels}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}; load average at the end {load[0]:.2f} "
        f"(1 min), {load[2]:.2f} (15 min); all of it took "
        f"{(time.perf_counter() - t_start) / 60:.1f} min.",
        "",
        "Rates are per wall second of `run()`; on a shared machine compare the CPU column.",
        "",
        "### Bundled traces (the cases of bench_baselines.py and bench_icon.py)",
        "",
        markdown_table(traces),
        "",
        f"### Cost curve: Markovian workloads, offered load 0.4 (`{grid_cmd}`)",
        "",
        markdown_table(cells),
    ]
    fits = grid.get("fits") or fit(cells)
    if fits:
        lines += ["", "Fitted run CPU s = a · jobs^b · nodes^c:", ""]
        lines += [
            f"- {p}: a = {f['a']:.3g}, b = {f['b_jobs']:.2f}, c = {f['c_nodes']:.2f} "
            f"(R² = {f['r2']:.3f}, {f['cells']} cells)"
            for p, f in fits.items()
        ]
    lines += ["", "### Commands and their output", ""]
    for cmd, text, seconds in outputs:
        lines += [f"`{cmd}` ({seconds:.0f} s):", "", "```text", text.rstrip(), "```", ""]
    markdown = "\n".join(lines)
    print("\n" + markdown)
    if args.out is not None:
        args.out.write_text(markdown + "\n")
        args.out.with_suffix(".json").write_text(
            json.dumps({"traces": traces, "cost_curve": grid}, indent=1)
        )
        print(f"wrote {args.out} and {args.out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
