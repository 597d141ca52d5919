"""The simulation as users drive it: the engine's run, reported as :class:`Results`.

:class:`Simulation` is the engine's :class:`hpcpower.engine.simulation.Simulation`
(every argument, stepping, ``run(until=)``) plus the public ends: ``run()``
to the end returns :class:`~hpcpower.results.records.Results` made from the
engine's plain run record, and :meth:`Simulation.from_scenario` builds one
from a scenario file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from hpcpower.engine import simulation as _engine
from hpcpower.errors import InputError
from hpcpower.results.records import Results
from hpcpower.scenario import resolve, simulation_args

if TYPE_CHECKING:
    from hpcpower.explain import Explanation


class Simulation(_engine.Simulation):
    """One simulated run of a workload on a platform under a policy.

    The arguments are those of :class:`hpcpower.engine.simulation.Simulation`.
    """

    # Reporting Results where the engine returns its plain record is the point
    # of this class, so its run() cannot be a type-compatible override; the
    # engine's class is never used in its place.
    @overload  # type: ignore[override]
    def run(self, until: None = None, *, progress: bool = False) -> Results: ...
    @overload
    def run(self, until: float, *, progress: bool = False) -> None: ...
    @overload
    def run(self, until: float | None, *, progress: bool = False) -> Results | None: ...

    def run(self, until: float | None = None, *, progress: bool = False) -> Results | None:
        """Run to the end (returns the :class:`Results`) or to ``until`` (returns ``None``).

        Args:
            until: Stop at this simulated time; call again to continue.
            progress: Show a progress bar of finished jobs.
        """
        record = super().run(until, progress=progress)
        return None if record is None else Results.from_record(record)

    def results(self) -> Results:
        """The results so far (complete once the run has finished)."""
        return Results.from_record(self.record())

    def explain(self, *, job: int | str | None = None, node: int | None = None) -> Explanation:
        """Why a job waited, or what a node did and why (needs ``explain=True``).

        Args:
            job: A job's id in the workload (as in ``jobs.csv``): its arrival,
                its place in the queue at each pass until it started, its
                planned start, and its wait split into waiting for busy
                nodes, for a switch-on and behind the order.
            node: A node id: its state history, each change with the
                decision behind it.

        Returns:
            An :class:`~hpcpower.explain.Explanation`: prints as text,
            ``.to_pandas()`` gives its rows.
        """
        from hpcpower.explain import explain_job, explain_node

        if job is not None and node is None:
            return explain_job(self, job)
        if node is not None and job is None:
            return explain_node(self, node)
        raise InputError("explain: give job=<id> or node=<id>, one of them")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Simulation:
        """Build a simulation from a resolved scenario configuration (see ``scenario.resolve``)."""
        args, options = simulation_args(config)
        return cls(*args, **options)

    @classmethod
    def from_scenario(cls, path: str | Path, **overrides: Any) -> Simulation:
        """Build a simulation from a scenario TOML file.

        Args:
            path: The scenario file.
            **overrides: Settings as ``{"section.key": value}``, e.g.
                ``**{"policy.timeout_s": 600}``, or ``section__key=value``.
        """
        dotted = {k.replace("__", "."): v for k, v in overrides.items()}
        return cls.from_config(resolve(path, dotted))
