"""Sweeps: many runs from one file, run in parallel, recorded as they finish, and reported.

* :mod:`~hpcpower.experiments.sweepfile` reads a sweep file, checks every run
  and expands the grid into a :class:`~hpcpower.experiments.sweepfile.Plan`;
* :mod:`~hpcpower.experiments.identity` gives each run its stable ``run_id``;
* :mod:`~hpcpower.experiments.runner` runs the plan on local processes or a
  Dask cluster (:func:`sweep`, :func:`run_sweep`);
* :mod:`~hpcpower.experiments.worker` is the one function workers execute;
* :mod:`~hpcpower.experiments.store` writes each finished run at once and
  builds the results table;
* :mod:`~hpcpower.experiments.stats` and :mod:`~hpcpower.experiments.report`
  turn the table into means, confidence intervals, paired differences,
  tables and plots (:func:`report`).

Importing this package loads neither SimPy, pandas, pyarrow, matplotlib nor
Dask; each is loaded by the step that needs it.
"""

from __future__ import annotations

from hpcpower.experiments.report import report
from hpcpower.experiments.runner import Options, Outcome, run_sweep, sweep
from hpcpower.experiments.sweepfile import Plan, load_plan

__all__ = ["Options", "Outcome", "Plan", "load_plan", "report", "run_sweep", "sweep"]
