"""Speed of hpcpower beside two peer simulators: SPARS-ICON and AccaSim.

Each case is run by the peer and by hpcpower on the same workload, each in a
fresh process under ``/usr/bin/time`` (whole process: interpreter start,
imports, reading the input, simulating and writing the outputs), the peer
first and then hpcpower, ``--repeat`` times over. Printed per case: the
median and the range of user + system CPU seconds of each, their ratio
(peer / hpcpower, medians) and the peak resident memory of each. Every run
is checked to have finished every job of its workload. Both sides run with
their modules byte-compiled first, as an installed package has them (this
script compiles hpcpower's and SPARS-ICON's sources before timing, and
lets the processes keep bytecode even where ``PYTHONDONTWRITEBYTECODE`` is
set), so that no run spends its time compiling Python source.

The cases (hpcpower seed 42; SPARS-ICON's transitions draw from its own
``default_rng(42)``):

- ``das2-snf-icon``: DAS2-fs1, first 3000 jobs, AOBA-64, SNF-ICON with the
  paper's settings (SPARS-ICON ``snf_icon``, hpcpower ``snf-icon``).
- ``das2-fcfs-easy-ipm``: the same, FCFS with EASY backfilling and a 2 h idle
  timeout, the paper's FCFS/B+IPM (SPARS-ICON ``easy_psas``, hpcpower
  ``fcfs-easy-ipm``).
- ``sdsc-snf-icon``: SDSC Blue, first 3000 jobs, AOBA-1152, SNF-ICON. About
  25 CPU minutes per SPARS-ICON run, so it runs only when named in
  ``--cases`` (or ``--cases all``).
- ``sdsc-full-fcfs-easy``: the full SDSC Blue log (232,562 jobs once the
  10,744 cancelled records without a runtime are dropped) on 1152 nodes,
  AccaSim's ``EASYBackfilling`` with its ``FirstFit`` allocator against
  hpcpower ``fcfs-easy`` on ``aoba-1152``. AccaSim gets the jobs as hpcpower
  reads them (allocated processors, one node each), written here as a plain
  SWF before timing, and a system of 1152 one-core nodes, so that every job
  takes whole nodes and no node runs two jobs. AccaSim has no power states:
  this case times scheduling only (hpcpower's nodes stay on as well).

The peers are not part of hpcpower; install each in its own environment and
point this script at them. SPARS-ICON (github.com/RakaSP/SPARS-ICON) wants
Python 3.11 and its ``requirements-linux.txt`` plus ``torch`` (CPU build);
AccaSim (``pip install accasim``, 1.1.3) imports ``collections.Mapping`` and
so wants Python 3.9 or older. hpcpower runs with this script's python
unless ``--hpcpower-python`` names another: give it an environment of its
own too (``python -m venv ../peers/hpcpower-venv`` and ``pip install .``
there), so that both sides start an interpreter whose site-packages hold
only their own packages (a machine's global site-packages may carry
``.pth`` start-up hooks, such as an editable install's finder, that the
peers' environments do not run). Run from the project root:

    python benchmarks/peers.py --spars ../peers/spars \\
        --spars-python ../peers/spars-venv/bin/python \\
        --accasim-python ../peers/accasim-venv/bin/python      # 3 short cases, 3 repeats
    python benchmarks/peers.py ... --repeat 1                  # a check (about 15 min)
    python benchmarks/peers.py ... --cases sdsc-snf-icon --repeat 1   # the long case
    python benchmarks/peers.py ... --hpcpower-python ../peers/hpcpower-venv/bin/python \\
        --hpcpower-runs 3                                      # hpcpower in its own venv
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "scenarios" / "data"
TIME = "/usr/bin/time"

#: SPARS-ICON's ``snf_icon`` settings of the paper (its ``BASE_CONFIG``):
#: the values hpcpower's ``snf-icon`` defaults to.
SNF_ICON_SETTINGS = {
    "alpha": 5000.0,
    "beta": 1.0,
    "arrival_rate": None,
    "service_rate": None,
    "resource_pmf": None,
    "min_spare_nodes": 1,
    "max_spare_nodes": None,
    "initial_arrival_rate": 1.0 / 3600.0,
    "arrival_ema_alpha": 0.2,
    "service_ema_alpha": 0.1,
    "resource_ema_alpha": 0.1,
    "runtime_log_sigma_floor": 0.25,
    "max_decision_horizon": 24.0 * 3600.0,
    "spare_arrival_window": 12.0 * 3600.0,
    "immediate_shutdown_on_stale_completion": True,
    "respect_timeout": True,
    "markov_fallback_enabled": True,
    "markov_window_seconds": 2.0 * 3600.0,
    "markov_min_samples": 3,
    "markov_max_samples": 1000,
    "markov_cv_tolerance": 0.45,
    "markov_max_lag1_autocorrelation": 0.65,
    "markov_ks_multiplier": 1.25,
    "markov_require_service_samples": True,
    "markov_ks_param": 3.0,
    "decision_log_enabled": True,  # as in the paper's runs (hpcpower writes decisions.csv too)
    "timeout": 7200,
}

#: The AccaSim run: a few lines on its public API (written to a file, run by
#: ``--accasim-python``). Prints the jobs read and, from the dispatching plan
#: (one line per finished job), the jobs finished.
ACCASIM_DRIVER = """\
import os, sys
from accasim.base.allocator_class import FirstFit
from accasim.base.scheduler_class import EASYBackfilling
from accasim.base.simulator_class import Simulator

swf, system, out = sys.argv[1:4]
sim = Simulator(swf, system, EASYBackfilling(FirstFit()), RESULTS_FOLDER_PATH=out,
                show_statistics=False)
sim.start_simulation()
plan = [f for f in os.listdir(out) if f.startswith("sched-")]
with open(os.path.join(out, plan[0])) as f:
    finished = sum(1 for _ in f)
print("RESULT", sim.loaded_jobs, finished)
"""

#: A 1152-node AccaSim system: one core per node, one processor = one core.
ACCASIM_SYSTEM = {
    "groups": {"aoba": {"core": 1}},
    "resources": {"aoba": 1152},
    "equivalence": {"processor": {"core": 1}},
    "start_time": 0,
}


@dataclass(frozen=True)
class Case:
    name: str
    peer: str  # "spars" or "accasim"
    workload: str  # file in scenarios/data
    platform: str  # hpcpower preset (SPARS-ICON: platforms/<AOBA-n>.json)
    hp_policy: str
    spars_algorithm: str = ""
    long: bool = False


CASES = [
    Case("das2-snf-icon", "spars", "DAS2-fs1-0-3000.json.gz", "aoba-64", "snf-icon", "snf_icon"),
    Case(
        "das2-fcfs-easy-ipm",
        "spars",
        "DAS2-fs1-0-3000.json.gz",
        "aoba-64",
        "fcfs-easy-ipm",
        "easy_psas",
    ),
    Case(
        "sdsc-snf-icon",
        "spars",
        "SDSC-BLUE-2000-4.2-cln-0-3000.json.gz",
        "aoba-1152",
        "snf-icon",
        "snf_icon",
        long=True,
    ),
    Case(
        "sdsc-full-fcfs-easy", "accasim", "SDSC-BLUE-2000-4.2-cln.swf.gz", "aoba-1152", "fcfs-easy"
    ),
]


@dataclass
class Run:
    cpu_s: float
    peak_mb: float
    finished: int  # jobs finished
    expected: int  # jobs in the workload


# ---------------------------------------------------------------- timing
def timed(cmd: list[str], cwd: Path, scratch: Path) -> tuple[str, float, float]:
    """Run ``cmd`` under /usr/bin/time; returns its stdout, CPU seconds and peak MB."""
    report = scratch / "time.txt"
    done = subprocess.run(
        [TIME, "-f", "%U %S %M", "-o", str(report), *cmd],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=_WITH_BYTECODE,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{tail}")
    # The last line: /usr/bin/time writes a note above it when the command was signalled.
    user, system, max_kb = report.read_text().split("\n")[-2].split()
    return done.stdout, float(user) + float(system), int(max_kb) / 1024


#: This environment, with bytecode written and read (see the module docstring).
_WITH_BYTECODE = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def byte_compile(python: Path | str, tree: Path) -> None:
    """Compile the Python sources under ``tree`` with ``python`` (as an install does).

    A file that does not compile is left to fail, if ever, when it is imported.
    """
    subprocess.run(
        [str(python), "-m", "compileall", "-q", str(tree)],
        check=False,
        capture_output=True,
        env=_WITH_BYTECODE,
    )


def installed_package(python: Path | str) -> Path:
    """The folder of the hpcpower package that ``python`` imports."""
    done = subprocess.run(
        [str(python), "-c", "import hpcpower, os; print(os.path.dirname(hpcpower.__file__))"],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),  # (not this checkout's package, unless it is the installed one)
    )
    if done.returncode != 0:
        raise SystemExit(f"peers.py: {python} cannot import hpcpower: install it there first")
    return Path(done.stdout.strip())


# ------------------------------------------------------------- the peers
def spars_config(case: Case, workload: Path, spars: Path, out: Path) -> dict:
    """A SPARS-ICON run configuration (RunSPARSConfig.py reads it; JSON is YAML)."""
    if case.spars_algorithm == "snf_icon":
        settings = {**SNF_ICON_SETTINGS, "decision_log_path": str(out / "decisions.csv")}
    else:  # the paper's IPM baselines: only the idle timeout
        settings = {"timeout": 7200}
    nodes = case.platform.split("-")[1]
    return {
        "paths": {
            "workload": str(workload),
            "platform": str(spars / "platforms" / f"AOBA-{nodes}.json"),
            "output": str(out),
        },
        "run": {
            "algorithm": case.spars_algorithm,
            "algo_config": settings,
            "overrun_policy": "continue",
            "start_time": 0,
            "force_wakeup": False,
        },
        "rl": {
            "enabled": False,
            "learn": False,
            "type": "discrete",
            "dt": 3600,
            "device": "cpu",
            "epochs": 1,
            "episode_batch_size": 1,
        },
        "logging": {"level": "INFO", "file": str(out / "simulation.log")},
    }


def run_spars(case: Case, args: argparse.Namespace, scratch: Path) -> Run:
    """One SPARS-ICON run; the finished jobs are counted in its raw_job_log.csv."""
    workload = scratch / case.workload.removesuffix(".gz")
    if not workload.exists():
        workload.write_bytes(gzip.decompress((DATA / case.workload).read_bytes()))
    expected = len(json.loads(workload.read_text())["jobs"])
    out = scratch / f"spars-{case.name}"
    shutil.rmtree(out, ignore_errors=True)
    config = scratch / f"{case.name}.yaml"
    config.write_text(json.dumps(spars_config(case, workload, args.spars, out), indent=1))
    _, cpu, peak = timed(
        [str(args.spars_python), "RunSPARSConfig.py", str(config)], args.spars, scratch
    )
    with open(out / "raw_job_log.csv") as f:
        finished = sum(",execution_finished," in line for line in f)
    shutil.rmtree(out)
    return Run(cpu, peak, finished, expected)


def accasim_input(case: Case, scratch: Path) -> tuple[Path, int]:
    """The workload as hpcpower reads it, written as a plain SWF; and its job count.

    Fields 5 and 8 (allocated and requested processors) both carry the job's
    nodes, so AccaSim, which reads field 8 first, sees the same requests.
    """
    from hpcpower import load_workload

    swf = scratch / (Path(case.workload).name.split(".")[0] + ".swf")
    if not swf.exists():  # written once, at the first repeat
        with open(swf, "w") as f:
            for j in load_workload(DATA / case.workload).jobs:
                # SDSC Blue's times are whole seconds: nothing is rounded away.
                f.write(
                    f"{j.id + 1} {j.submit_s:.0f} -1 {j.runtime_s:.0f} {j.res} -1 -1 {j.res} "
                    f"{j.reqtime_s:.0f} -1 1 {max(j.user_id, 1)} -1 -1 -1 -1 -1 -1\n"
                )
    with open(swf) as f:
        return swf, sum(1 for _ in f)


def run_accasim(case: Case, args: argparse.Namespace, scratch: Path) -> Run:
    """One AccaSim run of our driver (``ACCASIM_DRIVER``)."""
    swf, expected = accasim_input(case, scratch)
    driver = scratch / "accasim_driver.py"
    driver.write_text(ACCASIM_DRIVER)
    system = scratch / "accasim_system.json"
    system.write_text(json.dumps(ACCASIM_SYSTEM))
    out = scratch / f"accasim-{case.name}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    stdout, cpu, peak = timed(
        [str(args.accasim_python), str(driver), str(swf), str(system), str(out)], scratch, scratch
    )
    shutil.rmtree(out)
    line = next(ln for ln in stdout.splitlines() if ln.startswith("RESULT "))
    loaded, done = (int(x) for x in line.split()[1:])
    if loaded != expected:
        raise RuntimeError(f"AccaSim read {loaded} jobs of {expected}")
    return Run(cpu, peak, done, expected)


# ---------------------------------------------------------------- hpcpower
def run_hpcpower(case: Case, python: Path | str, scratch: Path) -> Run:
    """One ``hpcpower run`` of the case's workload, policy and preset, seed 42."""
    out = scratch / f"hpcpower-{case.name}"
    cmd = [str(python), "-m", "hpcpower", "run", str(DATA / case.workload)]
    cmd += ["--policy", case.hp_policy, "--platform", case.platform, "--seed", "42"]
    cmd += ["--out", str(out), "--force", "--quiet", "--json"]
    stdout, cpu, peak = timed(cmd, scratch, scratch)
    shutil.rmtree(out)
    summary = json.loads(stdout)
    return Run(cpu, peak, summary["jobs_completed"], summary["jobs_submitted"])


# ---------------------------------------------------------------- report
def spread(runs: list[Run]) -> str:
    """Median CPU seconds and the range over the repeats."""
    cpu = [r.cpu_s for r in runs]
    if len(cpu) == 1:
        return f"{cpu[0]:.2f}"
    return f"{statistics.median(cpu):.2f} ({min(cpu):.2f}–{max(cpu):.2f})"


def jobs_done(runs: list[Run]) -> str:
    """Jobs finished, or what went missing."""
    bad = [r for r in runs if r.finished != r.expected]
    if not bad:
        return f"{runs[0].finished:,}"
    return f"**{bad[0].finished:,} of {bad[0].expected:,}**"


def table(results: dict[str, tuple[list[Run], list[Run]]]) -> str:
    rows = [
        "| case | peer | peer CPU s | hpcpower CPU s | peer / hpcpower | peer peak MB "
        "| hpcpower peak MB | jobs finished (peer / hpcpower) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, (peer, hp) in results.items():
        case = next(c for c in CASES if c.name == name)
        ratio = statistics.median(r.cpu_s for r in peer) / statistics.median(r.cpu_s for r in hp)
        rows.append(
            f"| {name} | {'SPARS-ICON' if case.peer == 'spars' else 'AccaSim'} "
            f"| {spread(peer)} | {spread(hp)} | {ratio:.1f} "
            f"| {max(r.peak_mb for r in peer):.0f} | {max(r.peak_mb for r in hp):.0f} "
            f"| {jobs_done(peer)} / {jobs_done(hp)} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spars", type=Path, help="SPARS-ICON work tree (has RunSPARSConfig.py)")
    parser.add_argument("--spars-python", type=Path, help="python of SPARS-ICON's environment")
    parser.add_argument("--accasim-python", type=Path, help="python of AccaSim's environment")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side and case (default 3)")
    parser.add_argument(
        "--hpcpower-python",
        type=Path,
        help="python of an environment with hpcpower installed, as the peers have theirs "
        "(default: this python)",
    )
    parser.add_argument(
        "--hpcpower-runs",
        type=int,
        default=1,
        help="hpcpower runs after each peer run (default 1): several give a steadier median "
        "of the short side on a machine whose speed wanders",
    )
    parser.add_argument(
        "--cases",
        nargs="+",
        choices=[c.name for c in CASES] + ["all"],
        default=[c.name for c in CASES if not c.long],
        help="cases to run (default: all but the long sdsc-snf-icon)",
    )
    args = parser.parse_args()
    if args.repeat < 1 or args.hpcpower_runs < 1:
        parser.error("--repeat and --hpcpower-runs take a whole number >= 1")
    names = [c.name for c in CASES] if "all" in args.cases else args.cases
    cases = [c for c in CASES if c.name in names]
    for c in cases:
        if c.peer == "spars" and not (args.spars and args.spars_python):
            parser.error(f"{c.name} needs --spars and --spars-python")
        if c.peer == "accasim" and not args.accasim_python:
            parser.error(f"{c.name} needs --accasim-python")
    if args.spars:
        args.spars = args.spars.resolve()
    # Absolute, not resolved: a venv's python is a link to the base interpreter,
    # which would run without the venv's packages. Each peer starts elsewhere.
    for name in ("spars_python", "accasim_python", "hpcpower_python"):
        if getattr(args, name):
            setattr(args, name, getattr(args, name).absolute())
    hp_python = args.hpcpower_python or Path(sys.executable)

    byte_compile(hp_python, installed_package(hp_python))
    if args.spars and args.spars_python:
        byte_compile(args.spars_python, args.spars)

    results: dict[str, tuple[list[Run], list[Run]]] = {c.name: ([], []) for c in cases}
    with tempfile.TemporaryDirectory(prefix="hpcpower-peers-") as tmp:
        scratch = Path(tmp)
        for i in range(args.repeat):
            for c in cases:
                peer, hp = results[c.name]
                # The two sides one after the other, so that a change in the
                # machine's load falls on both.
                if c.peer == "spars":
                    peer.append(run_spars(c, args, scratch))
                else:
                    peer.append(run_accasim(c, args, scratch))
                for _ in range(args.hpcpower_runs):
                    hp.append(run_hpcpower(c, hp_python, scratch))
                print(
                    f"[{i + 1}/{args.repeat}] {c.name}: peer {peer[-1].cpu_s:.2f} s "
                    f"{peer[-1].peak_mb:.0f} MB {peer[-1].finished} jobs, hpcpower "
                    f"{hp[-1].cpu_s:.2f} s {hp[-1].peak_mb:.0f} MB {hp[-1].finished} jobs",
                    file=sys.stderr,
                    flush=True,
                )
    runs = f"{args.repeat} runs"
    if args.hpcpower_runs > 1:
        runs += f" ({args.repeat * args.hpcpower_runs} of hpcpower)"
    print(f"CPU s: user + system of the whole process; median (min–max) of {runs}.\n")
    print(table(results))


if __name__ == "__main__":
    main()
