"""The ``hpcpower`` command: a thin layer over the Python API.

``hpcpower run SCENARIO.toml`` runs one simulation and writes its outputs;
``hpcpower sweep SWEEP.toml --out DIR`` runs many and ``hpcpower report DIR``
summarises them; ``hpcpower trace info FILE`` describes a workload file; ``hpcpower policies``
and ``hpcpower platforms`` list what can be chosen. Every
:class:`~hpcpower.errors.HpcpowerError` is printed as one line on stderr with
exit status 2, never as a traceback; so is an error reading or writing a file.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from hpcpower._version import __version__
from hpcpower.errors import HpcpowerError, InputError


def _parse_sets(items: Sequence[str]) -> dict[str, object]:
    from hpcpower.scenario import parse_value

    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--set {item!r}: expected key=value, e.g. policy.timeout_s=3600")
        out[key.strip()] = parse_value(value.strip())
    return out


def _cmd_run(args: argparse.Namespace) -> int:
    from hpcpower.results._memory import map_large_allocations
    from hpcpower.results.export import check_out, require_parquet, write_all
    from hpcpower.scenario import resolve
    from hpcpower.simulation import Simulation

    _refuse_empty(args, "out", "policy", "platform")
    overrides = _parse_sets(args.set or [])
    if args.policy:
        overrides["policy.name"] = args.policy
    if args.platform:
        overrides["platform.name"] = args.platform
    if args.seed is not None:
        overrides["simulation.seed"] = args.seed
    source = Path(args.scenario)
    scenario: Path | None = source
    if source.suffix.lower() != ".toml":
        # A workload file run as it is: the settings are the defaults and --set.
        if "workload.path" in overrides:
            raise InputError(
                f"{source}: a workload file is given, and --set workload.path too; give one"
            )
        overrides["workload.path"] = str(source)
        overrides.setdefault("simulation.name", _trace_name(source))
        scenario = None
    config = resolve(scenario, overrides)
    sim = Simulation.from_config(config)
    # The output folder is checked before the run, which may be long.
    out = (
        Path(args.out) if args.out else _default_out(config["simulation"]["name"], sim.policy.name)
    )
    check_out(out, force=args.force)
    if args.parquet:
        require_parquet()
    if not args.quiet:  # (stderr: --json keeps stdout clean anyway)
        for line in _workload_warnings(sim):
            print(f"hpcpower: warning: {line}", file=sys.stderr)
    progress = sys.stderr.isatty() and not args.quiet
    if not args.quiet and sim.kernels == "numba":
        from hpcpower.planning import aot, compiled

        if not compiled.cached():
            print(
                "a long run: compiling the planning kernels first "
                "(once after an install, about half a minute; `hpcpower build-kernels` "
                "builds them once for every later run to load without numba) ...",
                file=sys.stderr,
            )
        if why := compiled.misfit():
            print(
                f"hpcpower: note: the kernels built ahead of time in {aot.folder()} "
                f"are for {why}, so this run compiles them instead: run `hpcpower "
                "build-kernels` here (or `hpcpower build-kernels --portable` for an install "
                "shared by machines with different processors)",
                file=sys.stderr,
            )
    t0 = time.perf_counter()
    results = _run_users_code(sim, config["policy"]["name"], progress)
    elapsed = time.perf_counter() - t0
    # The results hold what the files need; the simulation's own objects (its
    # jobs, processes and cluster refer to one another) are let go before the
    # files of a whole trace are made.
    del sim
    gc.collect()
    # (This process only writes the files now: their large temporaries are
    # given back as they are freed, not left as holes in the heap.)
    map_large_allocations()
    paths = write_all(results, out, force=args.force, parquet=args.parquet)
    if args.json:
        from hpcpower.results.export import summary_json

        print(summary_json(results))
    elif not args.quiet:
        print(format_summary(results.summary, elapsed))
        notes = results.summary["config"].get("workload_notes") or {}
        for line in _workload_lines(notes):
            print(line)
        print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def _workload_warnings(sim) -> list[str]:
    """What to say before a run about its workload: a traced machine larger than the platform."""
    traced = sim.workload.max_nodes
    n_nodes = sim.platform.n_nodes
    if traced is None or traced <= n_nodes:
        return []
    wider = sum(job.res > n_nodes for job in sim.workload.jobs)
    return [
        f"{sim.workload.source}: the traced machine has {traced} nodes, the platform "
        f"{n_nodes}; {wider} of its {len(sim.workload.jobs)} jobs ask for more and "
        "will be rejected"
    ]


def _workload_lines(notes: dict) -> list[str]:
    """The reader's drops and notes, a line each, for after the summary table."""
    lines = []
    if notes.get("dropped_total"):
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(notes["dropped"].items()))
        lines.append(f"workload: dropped {notes['dropped_total']} records ({reasons})")
    lines.extend(f"workload: {note}" for note in notes.get("notes", []))
    return lines


def _trace_name(path: Path) -> str:
    """A run name from a workload file's name, without its endings (``.swf.gz``, ``.json``)."""
    name = path.name
    for ending in (".gz", ".swf", ".json"):
        if name.lower().endswith(ending):
            name = name[: -len(ending)]
    return name or "workload"


def _default_out(name: str, policy: str) -> Path:
    """``runs/<simulation.name>/<policy>``, refusing names that would leave ``runs/``."""
    runs = Path("runs")
    out = runs / name / policy
    inside = out.resolve().is_relative_to(runs.resolve()) and out.resolve() != runs.resolve()
    if not inside or Path(name).is_absolute() or ".." in Path(name).parts:
        raise InputError(
            f"setting simulation.name: {name!r} would put the results outside runs/; "
            "use a plain name, or --out for another folder"
        )
    return out


def format_summary(s: dict, elapsed_s: float | None = None) -> str:
    """The summary as an aligned text table for a terminal."""
    e = s["energy_j"]
    icon = s.get("icon_time_fraction")
    rows = [
        ("policy", s["config"]["policy"]["name"]),
        ("platform", f"{s['config']['platform']} ({s['config']['n_nodes']} nodes)"),
        (
            "jobs",
            f"{s['jobs_completed']} completed, {s['jobs_rejected']} rejected "
            f"of {s['jobs_submitted']}",
        ),
        ("mean wait", f"{s['mean_wait_s'] / 60:.2f} min ({s['mean_wait_s']:.1f} s)"),
        (
            "median / p95 / max wait",
            f"{s['median_wait_s']:.0f} / {s['p95_wait_s']:.0f} / {s['max_wait_s']:.0f} s",
        ),
        ("mean bounded slowdown", f"{s['mean_bounded_slowdown']:.3f}"),
        ("makespan", f"{s['makespan_s']:.0f} s ({s['makespan_s'] / 86400:.2f} d)"),
        ("utilization", f"{100 * s['utilization']:.2f} %"),
        ("total energy", f"{s['total_energy_j'] / 3.6e9:.4f} MWh"),
        ("wasted energy", f"{s['wasted_energy_j'] / 3.6e9:.4f} MWh"),
        ("  idle / sleeping", f"{e['idle'] / 3.6e9:.4f} / {e['sleeping'] / 3.6e9:.4f} MWh"),
        (
            "  switching on / off",
            f"{e['switching_on'] / 3.6e9:.4f} / {e['switching_off'] / 3.6e9:.4f} MWh",
        ),
        ("switch-ons / offs", f"{s['switch_ons']} / {s['switch_offs']}"),
        ("controller passes", str(s["decisions"])),
    ]
    if icon is not None:
        rows.append(("ICON time share", f"{100 * icon:.1f} %"))
    if elapsed_s is not None:
        rows.append(("wall time", f"{elapsed_s:.2f} s"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _cmd_trace_info(args: argparse.Namespace) -> int:
    from hpcpower.workload import trace_info

    info = trace_info(args.file, procs_per_node=args.procs_per_node)
    width = max(len(str(k)) for k in info)
    for key, value in info.items():
        if isinstance(value, dict):
            print(f"{key}:")
            for k, v in value.items():
                print(f"  {k}: {v}")
        elif isinstance(value, list):
            print(f"{key}:")
            for v in value:
                print(f"  - {v}")
        else:
            print(f"{key:<{width}}  {value}")
    return 0


def _cmd_policies(_args: argparse.Namespace) -> int:
    from hpcpower.policies.registry import POLICIES

    for name, (_factory, doc) in POLICIES.items():
        print(f"{name:<16} {doc}")
    return 0


def _kernel_workout(say) -> None:
    """Short runs of every policy on a small and a large machine, with the twins.

    They call each twin that Python calls, with the argument types real
    runs use, so that :func:`hpcpower.planning.compiled.build` builds them.
    Markovian workloads, generated (no file needed): 400 jobs on 64 nodes
    and on 1152, with small and wide jobs, at the paper's load and at twice
    it (queues, so plans, backfilling and wakes), on AOBA and Taurus power.
    """
    from hpcpower import Simulation, make_policy
    from hpcpower.platform import load_platform
    from hpcpower.policies.registry import POLICIES
    from hpcpower.workload.generate import markovian

    cases = [
        ("aoba-64", 0.35, 0.4),
        ("aoba-64", 0.1, 0.8),
        ("taurus-64", 0.35, 0.8),
        ("aoba-1152", 0.02, 0.4),
        ("aoba-1152", 0.35, 0.8),
    ]
    for platform_name, p_geometric, load in cases:
        platform = load_platform(platform_name)
        workload = markovian(
            400,
            nodes=platform.n_nodes,
            p_geometric=p_geometric,
            target_utilization=load,
            seed=7,
        )
        for name in POLICIES:
            sim = Simulation(platform, workload, make_policy(name), seed=42, kernels="numba")
            sim.run()
        say(f"  ran every policy on {platform_name}, {load:.0%} load")


def _cmd_build_kernels(args: argparse.Namespace) -> int:
    from hpcpower.planning import _numba, compiled
    from hpcpower.results.export import check_folder_out

    if not _numba.AVAILABLE:
        raise InputError('build-kernels needs numba: pip install "hpcpower[fast]"')
    _refuse_empty(args, "out")
    if args.out:
        check_folder_out(args.out)  # (before the half minute of compiling)
    say = (lambda text: None) if args.quiet else print
    say("running every policy with the twins compiled just in time (to learn their types) ...")
    try:
        path = compiled.build(
            lambda: _kernel_workout(say),
            Path(args.out) if args.out else None,
            portable=args.portable,
            say=say,
        )
    except RuntimeError as exc:
        raise InputError(f"build-kernels: {exc}") from None
    except OSError as exc:
        raise InputError(
            f"build-kernels: cannot write {exc.filename or 'the twins'} ({exc.strerror}); "
            "choose a folder with --out and set HPCPOWER_TWINS_DIR to it"
        ) from None
    made_for = "any processor of this architecture" if args.portable else "this processor"
    say(f"every later run on {made_for} loads the twins from {path.parent} (no numba import)")
    return 0


def _refuse_empty(args: argparse.Namespace, *options: str) -> None:
    """An option given as an empty string is a slip (an unset variable), not "the default"."""
    for option in options:
        if getattr(args, option, None) == "":
            raise InputError(f"--{option}: empty; give a value or leave the option out")


def _run_users_code(sim, policy: str, progress: bool):
    """``sim.run()``; an error raised in a policy of the user's own code is one line naming it."""
    if ":" not in policy:  # (a registered policy: its errors are the package's bugs)
        return sim.run(progress=progress)
    from hpcpower.policies.registry import user_code_error

    try:
        return sim.run(progress=progress)
    except HpcpowerError:
        raise
    except Exception as exc:
        raise user_code_error(exc, policy, f" (at t={sim.now:g} s)") from exc


def _cmd_platforms(_args: argparse.Namespace) -> int:
    from hpcpower.platform import PRESETS, load_platform

    for name in PRESETS:
        p = load_platform(name)
        t = p.node_types[0]
        print(
            f"{name:<12} {p.n_nodes:>5} nodes  computing {t.power_w[3]:g} W, "
            f"idle {t.power_w[2]:g} W, "
            f"sleeping {t.power_w[0]:g} W, on {t.switch_on.mean_s:g}±{t.switch_on.sd_s:g} s, "
            f"off {t.switch_off.mean_s:g}±{t.switch_off.sd_s:g} s"
        )
    return 0


def _load_results(source_arg: str, policy: str | None, sets: Sequence[str] | None):
    """The results of a scenario file (with ``--policy``/``--set``) or of a run folder.

    The output files hold no node intervals, so a run folder is re-run from
    the resolved scenario its summary.json carries (runs are seeded); a
    warning says when the re-run's energy differs from the recorded one.

    Returns:
        ``(results, config)``: the run and its resolved scenario.
    """
    import math

    from hpcpower.results.view import read_summary
    from hpcpower.scenario import resolve
    from hpcpower.simulation import Simulation

    source, saved = Path(source_arg), None
    if source.is_dir():
        if policy or sets:
            raise InputError(f"{source}: --policy and --set apply to a scenario file, not a run")
        if not (source / "summary.json").exists():
            raise InputError(f"{source}: no summary.json here; give a run folder or a scenario")
        saved = read_summary(source)
        config = (saved.get("config") or {}).get("scenario")
        if config is None:
            raise InputError(f"{source}/summary.json: not made from a scenario, cannot re-run it")
        sim = _saved_simulation(source, config)
    else:
        overrides = _parse_sets(sets or [])
        if policy:
            overrides["policy.name"] = policy
        config = resolve(source, overrides)
        sim = Simulation.from_config(config)
    results = sim.run()
    total = results.summary["total_energy_j"]
    recorded = saved.get("total_energy_j") if saved is not None else None
    if not isinstance(recorded, (int, float)):
        recorded = 0.0
    if saved is not None and not math.isclose(total, recorded):
        print(
            f"hpcpower: warning: re-running {source} gave {total!r} J, its summary.json says "
            f"{saved.get('total_energy_j')!r} J (written by hpcpower {saved.get('version')})",
            file=sys.stderr,
        )
    return results, config


def _saved_simulation(source: Path, config: object):
    """The simulation of the scenario a run folder's summary.json records (``config.scenario``).

    The scenario was resolved when the run was made, so it is not resolved
    again; a summary.json damaged or edited by hand gives a setting that is
    missing or of the wrong kind, said in one line naming the file.
    """
    from hpcpower.simulation import Simulation

    where = f"{source}/summary.json: config.scenario"
    if not isinstance(config, dict):
        raise InputError(f"{where}: not a table of settings, cannot re-run it")
    try:
        return Simulation.from_config(config)
    except HpcpowerError:
        raise
    except KeyError as exc:
        raise InputError(f"{where}: no setting {exc.args[0]!r}, cannot re-run it") from None
    except (AttributeError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: a damaged setting ({exc}), cannot re-run it") from None


#: Units a time on the command line may carry (``90min``, ``2h``, ``1.5d``; bare: seconds).
_TIME_SUFFIXES = {"s": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_time(text: str) -> float:
    """Seconds from ``"3600"``, ``"90min"``, ``"2h"`` or ``"1.5d"``.

    Raises:
        InputError: Not a number with one of the units s, min (or m), h, d.
    """
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-z]*)\s*", text)
    if not m or m.group(2) not in ("", *_TIME_SUFFIXES):
        raise InputError(f"{text!r}: not a time; write seconds (3600) or 90min, 2h, 1.5d")
    return float(m.group(1)) * _TIME_SUFFIXES.get(m.group(2), 1.0)


def _window_of(args: argparse.Namespace) -> tuple[float, float] | None:
    """The time window of ``--window T0:T1`` or ``--from T0 --to T1`` (either may be left out)."""
    t0 = t1 = None
    if getattr(args, "window", None):
        first, sep, last = args.window.partition(":")
        if not sep:
            raise InputError(f"--window {args.window!r}: expected FROM:TO, e.g. 2h:6h or 0:3600")
        t0 = parse_time(first) if first.strip() else None
        t1 = parse_time(last) if last.strip() else None
    if getattr(args, "start", None) is not None:
        t0 = parse_time(args.start)
    if getattr(args, "stop", None) is not None:
        t1 = parse_time(args.stop)
    if t0 is None and t1 is None:
        return None
    return (0.0 if t0 is None else t0, math.inf if t1 is None else t1)


def _add_source(
    parser: argparse.ArgumentParser,
    what: str = "scenario TOML or run folder",
    metavar: str = "RUN_DIR_OR_SCENARIO",
) -> None:
    parser.add_argument("source", metavar=metavar, help=what)
    parser.add_argument("--policy", help="policy name (scenario files only)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a setting")


def _add_window(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--window", metavar="FROM:TO", help="show only this time window, e.g. 2h:6h or 0:3600"
    )
    parser.add_argument("--from", dest="start", metavar="T", help="start of the window (2h)")
    parser.add_argument("--to", dest="stop", metavar="T", help="end of the window (1.5d)")


def _cmd_plot(args: argparse.Namespace) -> int:
    from hpcpower.results import plots

    window = _window_of(args)
    if args.kind == "tradeoff":
        return _plot_tradeoff(args)
    out = _image_out(args.out) if args.out else None  # (before the run, which may be long)
    results, config = _load_results(args.source, args.policy, args.set)
    try:
        if args.kind == "compare":
            if not args.other:
                raise InputError("--kind compare: name the other run with --with RUN_OR_SCENARIO")
            other, _ = _load_results(args.other, None, None)
            figure = plots.compare(results, other, window=window)
        else:
            if args.other:
                raise InputError("--with applies to --kind compare only")
            figure = plots.plot(results, args.kind, window=window)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    name = f"{config['simulation']['name']}-{config['policy']['name']}-{args.kind}.png"
    return _save(figure, out or _image_out(name))


def _image_out(text: str) -> Path:
    """The image file of ``--out``, checked before the work: a format matplotlib writes.

    A name without an ending gets ``.png``, as matplotlib would give it, so
    that the name printed is the file written.
    """
    from matplotlib.backend_bases import FigureCanvasBase

    from hpcpower.results.export import check_file_out

    out = Path(text)
    with contextlib.suppress(OSError):  # (a name too long: check_file_out says so)
        if not out.suffix and not out.is_dir():
            out = out.with_name(f"{out.name}.png")
    formats = FigureCanvasBase.get_supported_filetypes()
    if out.suffix and (ext := out.suffix[1:].lower()) not in formats:
        # (In matplotlib's words, which savefig would use after the run.)
        raise InputError(
            f"--out {out}: Format {ext!r} is not supported "
            f"(supported formats: {', '.join(sorted(formats))})"
        )
    return check_file_out(out)


def _save(figure, out: Path) -> int:
    from hpcpower.results.export import replacing

    # Through a temporary file, so that a failed write leaves no half image.
    with _writing(out), replacing(out) as partial:
        try:
            figure.savefig(partial, dpi=120, format=out.suffix[1:].lower())
        except ValueError as exc:
            raise InputError(f"--out {out}: {exc}") from None
    print(f"wrote {out}")
    return 0


@contextlib.contextmanager
def _writing(out: Path) -> Iterator[None]:
    """An error writing the output ``out`` (a full disk, a refusing folder) as one line."""
    try:
        yield
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None


#: Idle timeouts of ``hpcpower plot --kind tradeoff`` without ``--timeouts``.
DEFAULT_TIMEOUTS = "1min,10min,30min,1h,2h,6h"


def _plot_tradeoff(args: argparse.Namespace) -> int:
    """Run a scenario once per ``--timeouts`` value and plot mean wait against wasted energy."""
    from hpcpower.results import plots
    from hpcpower.scenario import resolve
    from hpcpower.simulation import Simulation

    source = Path(args.source)
    if source.is_dir() or args.other:
        raise InputError("--kind tradeoff runs a scenario file over --timeouts; give a .toml")
    timeouts = [parse_time(t) for t in (args.timeouts or DEFAULT_TIMEOUTS).split(",")]
    out = _image_out(args.out) if args.out else None  # (before the runs)
    summaries = []
    for timeout in timeouts:
        overrides = _parse_sets(args.set or [])
        overrides["policy.timeout_s"] = timeout
        if args.policy:
            overrides["policy.name"] = args.policy
        config = resolve(source, overrides)
        summaries.append(Simulation.from_config(config).run().summary)
    ax = plots.timeout_tradeoff(summaries)
    name = f"{config['simulation']['name']}-{config['policy']['name']}-tradeoff.png"
    return _save(ax.figure, out or _image_out(name))


def _cmd_animate(args: argparse.Namespace) -> int:
    from hpcpower.results.animate import GIF_MIN_FPS, animate, writer_for
    from hpcpower.results.export import check_file_out

    out = Path(args.out)
    window = _window_of(args)
    # (All checked before the run, which may be long.)
    if not (math.isfinite(args.fps) and args.fps > 0):
        raise InputError(f"--fps: expected a number > 0, got {args.fps:g}")
    try:
        kind = writer_for(out)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if kind == "pillow" and args.fps < GIF_MIN_FPS:
        raise InputError(
            f"--fps: a GIF frame lasts at most 655.35 s, so {GIF_MIN_FPS:.4g} or more, "
            f"got {args.fps:g}"
        )
    check_file_out(out)
    results, _ = _load_results(args.source, args.policy, args.set)
    try:
        with _writing(out):
            animate(results, out, frames=args.frames, window=window, fps=args.fps)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    print(f"wrote {out} ({args.frames} frames)")
    return 0


def _cmd_view(args: argparse.Namespace) -> int:
    from hpcpower.results.view import write_html

    source = Path(args.source)
    out = _page_out(args.out, args.force) if args.out else None  # (before a scenario's run)
    if source.is_dir():
        if args.policy or args.set:
            raise InputError(f"{source}: --policy and --set apply to a scenario file, not a run")
        what = source
        name = source.resolve().name  # (not "" for ".")
    else:
        what, config = _load_results(args.source, args.policy, args.set)
        name = f"{config['simulation']['name']}-{config['policy']['name']}"
    out = out or _page_out(f"{name}.html", args.force)
    with _writing(out):
        write_html(what, out)
    print(f"wrote {out}")
    return 0


def _page_out(text: str, force: bool) -> Path:
    """The page of ``hpcpower view``: an .html file, replacing one already there only if forced.

    (The ending keeps a slip of ``--out`` off a scenario or a run's files.)
    """
    from hpcpower.results.export import check_file_out

    out = Path(text)
    if out.suffix.lower() != ".html":
        raise InputError(f"--out {out}: the page is HTML; give a file name ending in .html")
    return check_file_out(out, force=force)


#: ``hpcpower plot --kind``: the one-run kinds of ``hpcpower.results.plots.KINDS``, then
#: ``compare`` (two runs, ``--with``) and ``tradeoff`` (one run per ``--timeouts`` value).
PLOT_KINDS = ("overview", "gantt", "states", "power", "queue", "icon", "compare", "tradeoff")


def _cmd_sweep(args: argparse.Namespace) -> int:
    from hpcpower.experiments.runner import Options, run_sweep
    from hpcpower.experiments.sweepfile import load_plan

    if args.dry_run:
        plan = load_plan(args.sweep_file)
        for study in plan.studies:
            count = sum(any(lb.study == study.name for lb in r.labels) for r in plan.runs)
            print(f"{study.name}: {count} runs ({len(study.cases)} cases)")
        print(f"{plan.name}: {len(plan.runs)} distinct runs; checked, none started")
        return 0
    options = Options(
        executor=args.executor,
        workers=args.workers,
        scheduler_address=args.scheduler_address,
        resume=args.resume,
        retry_failed=args.retry_failed,
        keep_runs=args.keep_runs,
        progress=sys.stderr.isatty() and not args.quiet,
    )
    outcome = run_sweep(args.sweep_file, args.out, options)
    if not args.quiet:
        total = len(outcome.plan.runs)
        print(
            f"{outcome.plan.name}: {total} runs: {outcome.skipped} already done, "
            f"{outcome.done} run now, {len(outcome.failed)} of them failed"
        )
        for run_id, error in outcome.failed.items():
            print(f"failed: {run_id}: {error}")
        print(f"wall time {outcome.wall_time_s:.1f} s")
        print(f"wrote {outcome.table}")
    return 1 if outcome.failed else 0


def _cmd_report(args: argparse.Namespace) -> int:
    from hpcpower.experiments.report import report
    from hpcpower.results.export import check_folder_out

    if args.out:
        check_folder_out(args.out)  # (before the tables and plots are made)
    paths = report(args.folder, args.out)
    if not args.quiet:
        for path in paths:
            print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="hpcpower",
        description="Simulate HPC clusters whose idle nodes can be powered down.",
    )
    parser.add_argument("--version", action="version", version=f"hpcpower {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one scenario and write its results")
    run.add_argument(
        "scenario",
        help="scenario TOML file, or a workload file (.swf, .json, .gz) run with the defaults",
    )
    run.add_argument("--policy", help="policy name (see `hpcpower policies`)")
    run.add_argument("--platform", help="platform preset or SPARS platform JSON path")
    run.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a setting, e.g. policy.timeout_s=3600",
    )
    run.add_argument("--seed", type=int, help="simulation seed")
    run.add_argument("--out", help="output folder (default runs/<scenario>/<policy>)")
    run.add_argument(
        "--force", action="store_true", help="replace a result already in the output folder"
    )
    run.add_argument("-q", "--quiet", action="store_true", help="print nothing, show no progress")
    run.add_argument(
        "--json", action="store_true", help="print the summary as JSON on stdout (for scripts)"
    )
    run.add_argument(
        "--parquet",
        action="store_true",
        help='also write the tables as Parquet (needs pip install "hpcpower[tables]")',
    )
    run.set_defaults(func=_cmd_run)

    trace = sub.add_parser("trace", help="inspect workload files")
    trace_sub = trace.add_subparsers(dest="trace_command", required=True)
    info = trace_sub.add_parser("info", help="describe a workload file and what the reader drops")
    info.add_argument("file")
    info.add_argument("--procs-per-node", type=int, default=1)
    info.set_defaults(func=_cmd_trace_info)

    plot = sub.add_parser("plot", help="run a scenario (or re-run a run folder) and plot it")
    _add_source(plot)
    plot.add_argument("--kind", choices=PLOT_KINDS, default="overview")
    plot.add_argument("--out", help="image file (default <scenario>-<policy>-<kind>.png)")
    _add_window(plot)
    plot.add_argument(
        "--with",
        dest="other",
        metavar="RUN_DIR_OR_SCENARIO",
        help="--kind compare: the run to draw beside the first",
    )
    plot.add_argument(
        "--timeouts",
        metavar="T,T,...",
        help=f"--kind tradeoff: idle timeouts to run (default {DEFAULT_TIMEOUTS})",
    )
    plot.set_defaults(func=_cmd_plot)

    animate = sub.add_parser(
        "animate", help="an animation of a run: node states, queue and power (GIF or MP4)"
    )
    _add_source(animate)
    animate.add_argument("--out", required=True, help="run.gif, or run.mp4 (needs ffmpeg)")
    animate.add_argument("--frames", type=int, default=60, help="number of frames (default 60)")
    animate.add_argument("--fps", type=float, default=10.0, help="frames per second (default 10)")
    _add_window(animate)
    animate.set_defaults(func=_cmd_animate)

    view = sub.add_parser(
        "view", help="one self-contained HTML page to step through a run with a time slider"
    )
    _add_source(view, "a run folder (or a scenario TOML, run first)", "RUN_DIR")
    view.add_argument("--out", help="HTML file (default <run folder name>.html)")
    view.add_argument("--force", action="store_true", help="replace a file already at --out")
    view.set_defaults(func=_cmd_view)

    sweep = sub.add_parser(
        "sweep", help="run a sweep file: many runs in parallel, each recorded as it finishes"
    )
    sweep.add_argument("sweep_file", metavar="SWEEP.toml", help="sweep file")
    sweep.add_argument("--out", required=True, help="the sweep's folder (results, run files)")
    sweep.add_argument(
        "--executor", choices=("local", "dask"), default="local", help="where runs execute"
    )
    sweep.add_argument("--workers", type=int, help="parallel runs (default: the number of CPUs)")
    sweep.add_argument(
        "--scheduler-address",
        metavar="ADDR",
        help="a running Dask scheduler (with --executor dask)",
    )
    sweep.add_argument(
        "--resume", action="store_true", help="continue the sweep in --out, skipping recorded runs"
    )
    sweep.add_argument(
        "--retry-failed", action="store_true", help="with --resume, run failed runs again"
    )
    sweep.add_argument(
        "--keep-runs",
        action="store_true",
        help="keep each run's output files (jobs.csv, machine_states.csv, ...) in --out/runs/",
    )
    sweep.add_argument(
        "--dry-run", action="store_true", help="check the sweep file and count its runs, run none"
    )
    sweep.add_argument("-q", "--quiet", action="store_true", help="print nothing, show no progress")
    sweep.set_defaults(func=_cmd_sweep)

    rep = sub.add_parser("report", help="tables and plots of a sweep's results")
    rep.add_argument("folder", metavar="DIR", help="a sweep's folder (hpcpower sweep --out)")
    rep.add_argument("--out", help="where to write the report (default DIR/report)")
    rep.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    rep.set_defaults(func=_cmd_report)

    kernels = sub.add_parser(
        "build-kernels",
        help="build the compiled planning kernels ahead of time (needs numba and a C compiler)",
    )
    kernels.add_argument(
        "--out", help="folder to build into (default: $HPCPOWER_TWINS_DIR, else the package's)"
    )
    kernels.add_argument(
        "--portable",
        action="store_true",
        help="build for any processor of this architecture, not only this one (for an install "
        "shared by machines with different processors; slower where loops over many nodes "
        "dominate)",
    )
    kernels.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    kernels.set_defaults(func=_cmd_build_kernels)
    sub.add_parser("policies", help="list the policies").set_defaults(func=_cmd_policies)
    sub.add_parser("platforms", help="list the platform presets").set_defaults(func=_cmd_platforms)
    return parser


#: The numeric libraries' thread pools, which the command keeps to one thread.
ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def one_thread_pools() -> None:
    """Keep the numeric libraries' thread pools to one thread, unless the user set their size.

    A simulation runs on one core and never multiplies large matrices, so a
    pool only costs: OpenBLAS starts a thread per core when numpy is imported,
    and they spin while they wait (about 0.1 CPU seconds a process on two
    cores; see ``benchmarks/RESULTS.md``), and a sweep's worker processes
    inherit the setting instead of each starting a pool on every core.
    dask.distributed sets the same variables for its workers. The pools read
    them when numpy is first imported, so this module does not import numpy
    at its top (``tests/test_lazy_imports.py`` checks both).
    """
    for name in ONE_THREAD:
        os.environ.setdefault(name, "1")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hpcpower`` command."""
    one_thread_pools()
    args = build_parser().parse_args(argv)
    # SIGTERM (a batch system's stop) unwinds like Ctrl-C, so that a result
    # being written is dropped whole instead of left half-written.
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if main_thread else None
    try:
        return args.func(args)
    except HpcpowerError as exc:
        print(f"hpcpower: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        # A file that cannot be read or written where no command says so
        # itself: still one line naming it, not a traceback.
        if exc.filename is None:
            raise
        print(f"hpcpower: error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except _Terminated:
        print("hpcpower: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("hpcpower: interrupted", file=sys.stderr)
        return 130
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


class _Terminated(BaseException):
    """SIGTERM, raised where the program is, so that ``finally`` blocks run."""


def _terminated(signum, frame) -> None:
    raise _Terminated()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
