"""The report of a sweep: means and confidence intervals, paired differences, tables, plots.

``report(DIR)`` reads a sweep's folder (its plan and its run files) and
writes, into ``DIR/report`` or another folder:

* ``report.md``: for each study, the mean of each configuration over the
  seeds with a 95 % Student-t interval, paired differences against the
  reference policies (per seed: the same workload and transition-time draws,
  see ``docs/how-to/run-sweeps.md``), the empirical Pareto front per case,
  sensitivity to each numeric setting swept, waits by job size and the ICON
  time share; then the runs that differ only in their platform, side by side;
* the same numbers as CSV (``summary.csv``, ``paired.csv``, ``pareto.csv``,
  ``size_bins.csv``, ``cross_platform.csv``), in the summary's own units
  (seconds, joules, fractions);
* PNG plots: ``pareto-<study>.png``, ``sensitivity-<study>.png``,
  ``size-bins-<study>.png``, ``icon-share-<study>.png`` and
  ``cross-platform.png``.

A configuration is a study's case and grid values without the seed; its
replications are its runs with different seeds. Failed runs are counted and
left out of every statistic.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpcpower.experiments.stats import LEVEL, Estimate, estimate, paired
from hpcpower.experiments.store import Store, atomic_write, csv_text
from hpcpower.experiments.sweepfile import Plan, Study

#: Metrics the report summarises: (summary key, heading, divisor to its unit, format).
METRICS: tuple[tuple[str, str, float, str], ...] = (
    ("mean_wait_s", "mean wait (min)", 60.0, ".2f"),
    ("wasted_energy_j", "wasted energy (MWh)", 3.6e9, ".3f"),
    ("total_energy_j", "total energy (MWh)", 3.6e9, ".3f"),
    ("median_wait_s", "median wait (min)", 60.0, ".2f"),
    ("p95_wait_s", "p95 wait (min)", 60.0, ".1f"),
    ("mean_bounded_slowdown", "mean bounded slowdown", 1.0, ".3f"),
    ("utilization", "utilisation (%)", 0.01, ".1f"),
    ("icon_time_fraction", "ICON time (%)", 0.01, ".1f"),
)
#: The metrics shown in the Markdown tables (all of METRICS go to the CSV files).
SHOWN = ("mean_wait_s", "wasted_energy_j", "utilization", "icon_time_fraction")
#: The metrics of the paired differences.
PAIRED = ("mean_wait_s", "wasted_energy_j")
#: Settings that are replications, not configurations.
SEED_SETTINGS = ("simulation.seed", "workload.seed")
_SIZE_BIN = re.compile(r"^size_bin\.([0-9-]+)\.median_wait_s$")


@dataclass
class Config:
    """One configuration of a study: a case and grid values, with its runs by seed."""

    study: str
    case: str
    axes: dict[str, Any]
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``snf-icon`` or ``snf-icon, alpha=10``: the grid values, short."""
        return label_of(self.axes)

    def values(self, metric: str) -> dict[int, float]:
        """The metric of each seed's run (NaN where a run lacks it)."""
        return {seed: _number(run["metrics"].get(metric)) for seed, run in self.runs.items()}

    def estimate(self, metric: str) -> Estimate:
        """Mean and interval of the metric over the seeds."""
        return estimate(list(self.values(metric).values()))


def label_of(axes: dict[str, Any]) -> str:
    """The grid values as a short label (the policy name bare, other settings as key=value)."""
    parts = []
    for key, value in axes.items():
        if key == "policy.name":
            parts.append(str(value))
        else:
            parts.append(f"{key.rpartition('.')[2]}={_show(value)}")
    return ", ".join(parts) or "base"


def report(folder: str | Path, out: str | Path | None = None) -> list[Path]:
    """Write the report of the sweep in ``folder``; returns the files written.

    Args:
        folder: A sweep's folder (``hpcpower sweep --out``), finished or not.
        out: Where to write the report (default ``folder/report``).
    """
    store = Store(folder)
    plan = store.read_plan()
    out = Path(out) if out is not None else store.folder / "report"
    out.mkdir(parents=True, exist_ok=True)
    records = {r["run_id"]: r for r in store.read_runs(plan)}
    written = [store.write_table(plan)]
    writer = _Writer(out)
    failed = sorted(rid for rid, r in records.items() if r["status"] != "ok")
    md = [f"# Sweep report: {plan.name}", ""]
    md.append(
        f"{len(records)} of {len(plan.runs)} runs recorded, {len(failed)} failed. "
        f"Values are means over the seeds with a {100 * LEVEL:.0f} % confidence interval "
        "(Student t; ± is its half width, blank with one seed). Paired differences "
        "compare runs with the same seed, which share the workload and the "
        "transition-time draws."
    )
    if failed:
        md += ["", "Failed runs (left out of every figure):", ""]
        md += [f"- `{rid}`: {records[rid]['error']}" for rid in failed]
    tables: dict[str, list[dict[str, Any]]] = {
        "summary": [],
        "paired": [],
        "pareto": [],
        "size_bins": [],
    }
    for study in plan.studies:
        configs = _configs(plan, study, records)
        if configs:
            md += _study(study, configs, tables, writer)
    cross = _cross_platform(plan, records)
    tables["cross_platform"] = cross
    if cross:
        md += ["", "## Across platforms", ""]
        md += [
            "Runs that differ only in their platform, on the seeds all platforms have "
            "(means over those seeds).",
            "",
        ]
        md += _cross_markdown(cross)
        md += ["", f"![across platforms]({writer.plot('cross-platform', _plot_cross, cross)})"]
    for name, rows in tables.items():
        if rows:
            writer.csv(f"{name}.csv", rows)
    writer.text("report.md", "\n".join(md) + "\n")
    return written + writer.written


# ------------------------------------------------------------------ gathering
def _configs(plan: Plan, study: Study, records: dict[str, dict]) -> list[Config]:
    """The configurations of a study, in the study's order, with their successful runs."""
    labelled = sorted(
        ((label, run) for run in plan.runs for label in run.labels if label.study == study.name),
        key=lambda pair: pair[0].position,
    )
    configs: dict[tuple, Config] = {}
    for label, run in labelled:
        record = records.get(run.run_id)
        key = (label.case, json.dumps(label.axes, sort_keys=True))
        config = configs.setdefault(key, Config(study.name, label.case, dict(label.axes)))
        if record is not None and record["status"] == "ok":
            config.runs[label.seed] = record
    return [c for c in configs.values() if c.runs]


def _by_case(configs: Sequence[Config]) -> dict[str, list[Config]]:
    cases: dict[str, list[Config]] = {}
    for config in configs:
        cases.setdefault(config.case, []).append(config)
    return cases


# ------------------------------------------------------------------ one study
def _study(
    study: Study, configs: list[Config], tables: dict[str, list], writer: _Writer
) -> list[str]:
    md = ["", f"## Study `{study.name}`", ""]
    if study.description:
        md += [study.description, ""]
    seeds = sorted({seed for c in configs for seed in c.runs})
    md += [f"Seeds: {', '.join(map(str, seeds))}. Source: `{Path(study.source).name}`.", ""]
    axes = study.axes
    shown = [m for m in METRICS if m[0] in SHOWN and _present(configs, m[0])]
    md += _table(
        ["case", *[_short(a) for a in axes], "n", *[m[1] for m in shown]],
        [
            [c.case, *[_show(c.axes.get(a)) for a in axes], str(len(c.runs))]
            + [_pm(c.estimate(key), scale, fmt) for key, _, scale, fmt in shown]
            for c in configs
        ],
    )
    for c in configs:
        row = {"study": study.name, "case": c.case, **c.axes, "n": len(c.runs)}
        for key, _, _, _ in METRICS:
            e = c.estimate(key)
            row.update({f"{key}.mean": e.mean, f"{key}.ci95": e.half_width, f"{key}.sd": e.sd})
        tables["summary"].append(row)
    md += _paired_section(study, configs, tables)
    md += _pareto_section(study, configs, tables, writer)
    md += _sensitivity_section(study, configs, writer)
    md += _size_section(study, configs, tables, writer)
    md += _icon_section(study, configs, writer)
    return md


def _paired_section(study: Study, configs: list[Config], tables: dict[str, list]) -> list[str]:
    md: list[str] = []
    for reference in study.reference:
        rows = []
        for c in configs:
            if c.axes.get("policy.name") == reference:
                continue
            base = _partner(configs, c, reference)
            if base is None:
                continue
            row = {"study": study.name, "case": c.case, **c.axes, "reference": reference}
            cells = [c.case, c.label]
            for key in PAIRED:
                diff = paired(c.values(key), base.values(key))
                ref = base.estimate(key).mean
                rel = 100.0 * diff.mean / ref if ref else math.nan
                scale, fmt = _unit(key)
                cells += [_interval(diff, scale, fmt), f"{rel:+.1f} %"]
                row.update(
                    {
                        f"{key}.diff": diff.mean,
                        f"{key}.ci95": diff.half_width,
                        f"{key}.relative_pct": rel,
                        "pairs": diff.n,
                    }
                )
            cells.insert(2, str(row["pairs"]))
            rows.append(cells)
            tables["paired"].append(row)
        if rows:
            md += ["", f"### Paired differences against {reference}", ""]
            md += [
                f"Each configuration minus {reference} with the same seed and case: mean "
                f"difference [{100 * LEVEL:.0f} % interval] and the change relative to "
                f"{reference}'s mean.",
                "",
            ]
            md += _table(
                [
                    "case",
                    "configuration",
                    "pairs",
                    "Δ mean wait (min)",
                    "Δ wait",
                    "Δ wasted energy (MWh)",
                    "Δ wasted",
                ],
                rows,
            )
    return md


def _partner(configs: list[Config], c: Config, policy: str) -> Config | None:
    """The configuration like ``c`` but with the given policy (other settings equal)."""
    want = {**c.axes, "policy.name": policy}
    for other in configs:
        if other.case == c.case and other.axes == want:
            return other
    return None


def _pareto_section(
    study: Study, configs: list[Config], tables: dict[str, list], writer: _Writer
) -> list[str]:
    from hpcpower.results.plots import pareto_front

    cases = _by_case(configs)
    if all(len(group) < 2 for group in cases.values()):
        return []
    md = ["", "### Waiting time against wasted energy: the empirical Pareto front", ""]
    lines = []
    for case, group in cases.items():
        points = [
            (c.estimate("mean_wait_s").mean, c.estimate("wasted_energy_j").mean) for c in group
        ]
        front = set(pareto_front(points))
        lines.append(
            f"- {case}: " + "; ".join(group[i].label for i in sorted(front)) + " on the front"
        )
        for i, c in enumerate(group):
            tables["pareto"].append(
                {
                    "study": study.name,
                    "case": case,
                    **c.axes,
                    "mean_wait_s": points[i][0],
                    "wasted_energy_j": points[i][1],
                    "on_front": i in front,
                }
            )
    md += lines
    md += ["", f"![Pareto fronts]({writer.plot(f'pareto-{study.name}', _plot_pareto, cases)})"]
    return md


def _sensitivity_section(study: Study, configs: list[Config], writer: _Writer) -> list[str]:
    numeric = [
        a
        for a in study.axes
        if a != "policy.name"
        and all(isinstance(c.axes.get(a), (int, float)) for c in configs)
        and len({c.axes.get(a) for c in configs}) > 1
    ]
    md: list[str] = []
    for axis in numeric:
        lines = _lines(configs, axis)
        scale, unit = _axis_unit(axis, [c.axes[axis] for c in configs])
        image = writer.plot(
            f"sensitivity-{study.name}-{_short(axis)}",
            _plot_sensitivity,
            (axis, lines, scale, unit),
        )
        md += ["", f"### Sensitivity to {axis}", ""]
        if study.axes != [axis] or len(lines) > 1:
            # (A study with this one axis and one line has this table above already.)
            shown = [m for m in METRICS if m[0] in SHOWN and _present(configs, m[0])]
            rows = [
                [name, _show(value / scale)]
                + [_pm(c.estimate(key), s, fmt) for key, _, s, fmt in shown]
                for name, points in lines.items()
                for value, c in points
            ]
            header = f"{_short(axis)} ({unit})" if unit else _short(axis)
            md += _table(["case, configuration", header, *[m[1] for m in shown]], rows)
            md += [""]
        md += [f"![sensitivity to {axis}]({image})"]
    return md


def _lines(configs: list[Config], axis: str) -> dict[str, list[tuple[float, Config]]]:
    """Configurations along one numeric axis, one line per case and other settings."""
    lines: dict[str, list[tuple[float, Config]]] = {}
    for c in configs:
        others = {k: v for k, v in c.axes.items() if k != axis}
        name = f"{c.case}, {label_of(others)}" if others else c.case
        lines.setdefault(name, []).append((float(c.axes[axis]), c))
    for points in lines.values():
        points.sort(key=lambda p: p[0])
    return lines


def _size_section(
    study: Study, configs: list[Config], tables: dict[str, list], writer: _Writer
) -> list[str]:
    if "policy.name" not in study.axes:
        return []
    cases = _by_case(configs)
    bins: dict[str, None] = {}
    for c in configs:
        for run in c.runs.values():
            for key in run["metrics"]:
                found = _SIZE_BIN.match(key)
                if found:
                    bins[found.group(1)] = None
    order = sorted(bins, key=lambda b: int(b.split("-")[0]))
    if not order:
        return []
    md = ["", "### Waiting time by job size", ""]
    md += [
        "Median wait (min) of the completed jobs in each bin of requested nodes "
        "(1, 2, 3-4, 5-8, ...), mean over the seeds; the plot shows the quartiles too.",
        "",
    ]
    rows = []
    for c in configs:
        cells = [c.case, c.label]
        for b in order:
            stats = {
                stat: c.estimate(f"size_bin.{b}.{stat}").mean
                for stat in (
                    "n_jobs",
                    "mean_wait_s",
                    "p25_wait_s",
                    "median_wait_s",
                    "p75_wait_s",
                    "p95_wait_s",
                )
            }
            cells.append(
                ""
                if math.isnan(stats["median_wait_s"])
                else _fmt(stats["median_wait_s"] / 60, ".1f")
            )
            if not math.isnan(stats["n_jobs"]):
                tables["size_bins"].append(
                    {"study": study.name, "case": c.case, **c.axes, "bin": b, **stats}
                )
        rows.append(cells)
    md += _table(["case", "configuration", *order], rows)
    image = writer.plot(f"size-bins-{study.name}", _plot_sizes, (cases, order))
    md += ["", f"![waits by job size]({image})"]
    return md


def _icon_section(study: Study, configs: list[Config], writer: _Writer) -> list[str]:
    icon = [c for c in configs if not math.isnan(c.estimate("icon_time_fraction").mean)]
    if not icon:
        return []
    md = ["", "### ICON time share", ""]
    md += ["Share of the simulated time the controller spent in ICON mode.", ""]
    md += _table(
        ["case", "configuration", "ICON time (%)"],
        [[c.case, c.label, _pm(c.estimate("icon_time_fraction"), 0.01, ".1f")] for c in icon],
    )
    image = writer.plot(f"icon-share-{study.name}", _plot_icon, icon)
    md += ["", f"![ICON time share]({image})"]
    return md


# ------------------------------------------------------------------ across platforms
def _cross_platform(plan: Plan, records: dict[str, dict]) -> list[dict[str, Any]]:
    """Means of runs that differ only in their platform, one row per platform.

    Only the seeds every platform of a group has are used, so the platforms
    are compared on the same replications.
    """
    groups: dict[str, dict[str, dict[int, dict]]] = {}
    names: dict[str, tuple[str, str]] = {}
    for run in plan.runs:
        record = records.get(run.run_id)
        if record is None or record["status"] != "ok":
            continue
        ident = json.loads(json.dumps(run.identity))
        platform = run.config["platform"]["name"]
        ident.pop("platform")
        for setting in SEED_SETTINGS:
            section, _, key = setting.partition(".")
            ident[section].pop(key, None)
        key = json.dumps(ident, sort_keys=True)
        seed = run.config["simulation"]["seed"]
        groups.setdefault(key, {}).setdefault(Path(str(platform)).stem, {})[seed] = record
        names[key] = (_workload_name(run.config), run.config["policy"]["name"])
    rows = []
    for key, platforms in groups.items():
        seeds = set.intersection(*(set(by_seed) for by_seed in platforms.values()))
        if len(platforms) < 2 or not seeds:
            continue
        workload, policy = names[key]
        for platform, by_seed in platforms.items():
            runs = [by_seed[seed] for seed in sorted(seeds)]
            row = {"workload": workload, "policy": policy, "platform": platform, "n": len(runs)}
            for metric in ("mean_wait_s", "wasted_energy_j", "total_energy_j"):
                e = estimate([_number(r["metrics"].get(metric)) for r in runs])
                row[f"{metric}.mean"] = e.mean
                row[f"{metric}.ci95"] = e.half_width
            rows.append(row)
    rows.sort(key=lambda r: (r["workload"], r["policy"], r["platform"]))
    return rows


def _cross_markdown(rows: list[dict[str, Any]]) -> list[str]:
    return _table(
        ["workload", "policy", "platform", "n", "mean wait (min)", "wasted energy (MWh)"],
        [
            [
                r["workload"],
                r["policy"],
                r["platform"],
                str(r["n"]),
                _pm(Estimate(r["n"], r["mean_wait_s.mean"], 0, r["mean_wait_s.ci95"]), 60, ".2f"),
                _pm(
                    Estimate(r["n"], r["wasted_energy_j.mean"], 0, r["wasted_energy_j.ci95"]),
                    3.6e9,
                    ".3f",
                ),
            ]
            for r in rows
        ],
    )


def _workload_name(config: dict[str, Any]) -> str:
    wl = config["workload"]
    if wl["path"]:
        name = Path(wl["path"]).name
        for ending in (".gz", ".swf", ".json"):
            name = name.removesuffix(ending)
        return name
    return f"generated {wl['generator']}"


# ------------------------------------------------------------------ plots
def _figure(panels: int, size: tuple[float, float] = (5.0, 4.0)):
    from matplotlib.figure import Figure

    cols = min(panels, 3)
    rows = math.ceil(panels / cols)
    fig = Figure(figsize=(size[0] * cols, size[1] * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[panels:]:
        ax.set_visible(False)
    return fig, axes


def _plot_pareto(cases: dict[str, list[Config]]):
    from hpcpower.results.plots import pareto

    fig, axes = _figure(len(cases))
    for ax, (case, group) in zip(axes, cases.items(), strict=False):
        # Configurations with the same results (a variant that never differs)
        # are one point with one label, "snf-icon = snf-icon-ng".
        merged: dict[tuple[float, float], dict[str, Any]] = {}
        for c in group:
            xy = (c.estimate("mean_wait_s").mean, c.estimate("wasted_energy_j").mean)
            point = merged.setdefault(
                xy, {"mean_wait_s": xy[0], "wasted_energy_j": xy[1], "labels": [], "config": c}
            )
            point["labels"].append(c.label)
        points = list(merged.values())
        for p in points:
            labels = p.pop("labels")
            p["label"] = (
                " = ".join(labels)
                if len(labels) < 3
                else f"{labels[0]} ... {labels[-1]} ({len(labels)} alike)"
            )
        pareto(points, label_key="label", ax=ax)
        for p in points:
            c = p["config"]
            xerr = c.estimate("mean_wait_s").half_width / 60
            yerr = c.estimate("wasted_energy_j").half_width / 3.6e9
            if not (math.isnan(xerr) or math.isnan(yerr)):
                ax.errorbar(
                    p["mean_wait_s"] / 60,
                    p["wasted_energy_j"] / 3.6e9,
                    xerr=xerr,
                    yerr=yerr,
                    color="0.4",
                    linewidth=0.8,
                    zorder=1,
                )
        ax.set_title(case)
    return fig


def _plot_sensitivity(spec):
    axis, lines, scale, unit = spec
    fig, axes = _figure(2)
    for ax, (key, heading, divisor, _) in zip(
        axes, [m for m in METRICS if m[0] in PAIRED], strict=True
    ):
        for name, points in lines.items():
            xs = [v / scale for v, _ in points]
            es = [c.estimate(key) for _, c in points]
            ys = [e.mean / divisor for e in es]
            err = [0.0 if math.isnan(e.half_width) else e.half_width / divisor for e in es]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=name)
        ax.set_xlabel(f"{axis} ({unit})" if unit else axis)
        ax.set_ylabel(heading)
        if all(v > 0 for pts in lines.values() for v, _ in pts) and _spread(lines) > 50:
            ax.set_xscale("log")
    axes[0].legend(fontsize="small")
    return fig


def _plot_sizes(spec):
    cases, order = spec
    fig, axes = _figure(len(cases), (6.0, 4.0))
    for ax, (case, group) in zip(axes, cases.items(), strict=False):
        width = 0.8 / max(1, len(group))
        for k, c in enumerate(group):
            xs, med, low, high = [], [], [], []
            for i, b in enumerate(order):
                m = c.estimate(f"size_bin.{b}.median_wait_s").mean
                if math.isnan(m):
                    continue
                xs.append(i - 0.4 + width * (k + 0.5))
                med.append(m / 60)
                low.append(m / 60 - c.estimate(f"size_bin.{b}.p25_wait_s").mean / 60)
                high.append(c.estimate(f"size_bin.{b}.p75_wait_s").mean / 60 - m / 60)
            ax.errorbar(xs, med, yerr=[low, high], fmt="o", capsize=2, label=c.label)
        ax.set_xticks(range(len(order)), order, rotation=45)
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_xlabel("requested nodes")
        ax.set_ylabel("wait (min): median, quartiles")
        ax.set_title(case)
    axes[0].legend(fontsize="small")
    return fig


def _plot_icon(configs: list[Config]):
    fig, axes = _figure(1, (max(5.0, 0.5 * len(configs)), 4.0))
    ax = axes[0]
    es = [c.estimate("icon_time_fraction") for c in configs]
    ax.bar(
        range(len(configs)),
        [100 * e.mean for e in es],
        yerr=[0.0 if math.isnan(e.half_width) else 100 * e.half_width for e in es],
        color="tab:blue",
    )
    ax.set_xticks(range(len(configs)), [f"{c.case}\n{c.label}" for c in configs], rotation=90)
    ax.set_ylabel("ICON time (%)")
    return fig


def _plot_cross(rows: list[dict[str, Any]]):
    from matplotlib.patches import Patch

    fig, axes = _figure(2, (7.0, 4.5))
    groups = sorted({(r["workload"], r["policy"]) for r in rows})
    platforms = sorted({r["platform"] for r in rows})
    colors = {p: f"C{k}" for k, p in enumerate(platforms)}
    for ax, (metric, heading, divisor) in zip(
        axes,
        [("wasted_energy_j", "wasted energy (MWh)", 3.6e9), ("mean_wait_s", "mean wait (min)", 60)],
        strict=True,
    ):
        for i, group in enumerate(groups):
            # Each group's bars share its slot: two platforms, two half-width bars.
            here = [r for r in rows if (r["workload"], r["policy"]) == group]
            width = 0.8 / len(here)
            for k, r in enumerate(sorted(here, key=lambda r: r["platform"])):
                ax.bar(
                    i - 0.4 + width * (k + 0.5),
                    r[f"{metric}.mean"] / divisor,
                    width,
                    color=colors[r["platform"]],
                )
        ax.set_xticks(range(len(groups)), [f"{w}\n{p}" for w, p in groups], rotation=90)
        ax.set_ylabel(heading)
        ax.set_yscale("log")
    handles = [Patch(color=c, label=p) for p, c in colors.items()]
    axes[0].legend(handles=handles, fontsize="small")
    return fig


def _spread(lines: dict[str, list[tuple[float, Config]]]) -> float:
    values = [v for pts in lines.values() for v, _ in pts]
    return max(values) / min(values)


# ------------------------------------------------------------------ writing
class _Writer:
    """Writes the report's files into one folder and remembers them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.written: list[Path] = []

    def text(self, name: str, text: str) -> Path:
        path = self.folder / name
        atomic_write(path, text.encode())
        self.written.append(path)
        return path

    def csv(self, name: str, rows: list[dict[str, Any]]) -> Path:
        columns = list(dict.fromkeys(k for row in rows for k in row))
        return self.text(name, csv_text(columns, rows))

    def plot(self, name: str, draw: Callable[[Any], Any], spec: Any) -> str:
        path = self.folder / f"{name}.png"
        draw(spec).savefig(path, dpi=110)
        self.written.append(path)
        return path.name


# ------------------------------------------------------------------ formatting
def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    rows = list(rows)
    align = ["---" if i < 1 or not _numeric_column(rows, i) else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _numeric_column(rows: list[Sequence[str]], i: int) -> bool:
    cells = [row[i] for row in rows if i < len(row) and row[i]]
    return bool(cells) and all(c[:1].isdigit() or c[:1] in "+-−[" for c in cells)


def _pm(e: Estimate, scale: float, fmt: str) -> str:
    if e.n == 0 or math.isnan(e.mean):
        return ""
    text = _fmt(e.mean / scale, fmt)
    if not math.isnan(e.half_width):
        text += f" ± {_fmt(e.half_width / scale, fmt)}"
    return text


def _interval(e: Estimate, scale: float, fmt: str) -> str:
    if e.n == 0 or math.isnan(e.mean):
        return ""
    text = _fmt(e.mean / scale, "+" + fmt)
    if not math.isnan(e.half_width):
        text += f" [{_fmt(e.low / scale, '+' + fmt)}, {_fmt(e.high / scale, '+' + fmt)}]"
    return text


def _fmt(value: float, fmt: str) -> str:
    return format(value, fmt)


def _unit(key: str) -> tuple[float, str]:
    for metric, _, scale, fmt in METRICS:
        if metric == key:
            return scale, fmt
    return 1.0, ".3g"


def _axis_unit(axis: str, values: Sequence[float]) -> tuple[float, str]:
    """Seconds shown in hours or minutes when every value is a whole number of them."""
    if not axis.endswith("_s"):
        return 1.0, ""
    for scale, unit in ((3600.0, "h"), (60.0, "min")):
        if all(float(v) % scale == 0 for v in values):
            return scale, unit
    return 1.0, "s"


def _short(key: str) -> str:
    return "policy" if key == "policy.name" else key.rpartition(".")[2]


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return "" if value is None else str(value)


def _present(configs: Sequence[Config], metric: str) -> bool:
    return any(metric in run["metrics"] for c in configs for run in c.runs.values())


def _number(value: Any) -> float:
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
