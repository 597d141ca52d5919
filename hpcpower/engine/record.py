"""The plain record of a run that the engine hands to whoever reports on it.

Arrays and rows only: everything :class:`~hpcpower.results.records.Results`
needs, so results never read the simulation's internals or call back into it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hpcpower.workload.job import Job


@dataclass(frozen=True)
class RunRecord:
    """What a run did, as of its end (or of the moment it was taken).

    Attributes:
        jobs: The submitted jobs, in submit order (``job.id`` is the position).
        start_s: Start time per job (nan if it never started).
        finish_s: Finish time per job (nan if it did not finish).
        gangs: The nodes of each started job (``None`` if it never started).
        rejected: Reason per rejected job id.
        transitions: Rows ``(node, to_state, start_s, end_s)`` of every
            switch-on and switch-off.
        state_counts: Rows ``(time_s, sleeping, switching_on, idle,
            computing, switching_off)`` each time the counts changed.
        time_in_state_s: Seconds per (node, state), accounted up to ``end_s``.
        node_state: Each node's state at ``end_s`` (a :class:`~hpcpower.states.NodeState` value).
        power_w: Watts per (node, state).
        switch_ons: Switch-ons commanded.
        switch_offs: Switch-offs commanded.
        passes: Controller passes.
        arrived: How many jobs had been submitted (the first ``arrived`` of ``jobs``).
        decisions: The decision log (the note of every pass that had one).
        policy_summary: Summary entries the policy computed from its notes.
        kill_at_walltime: Whether jobs were ended at their requested time.
        finished: Whether the run reached its end.
        end_s: The time the record was taken (the run's end when finished).
        config: The full configuration of the run.
    """

    jobs: list[Job]
    start_s: np.ndarray
    finish_s: np.ndarray
    gangs: Sequence[np.ndarray | None]
    rejected: dict[int, str]
    transitions: Sequence[tuple[int, int, float, float]]
    state_counts: Sequence[tuple[float, int, int, int, int, int]]
    time_in_state_s: np.ndarray
    node_state: np.ndarray
    power_w: np.ndarray
    switch_ons: int
    switch_offs: int
    passes: int
    arrived: int
    decisions: Sequence[dict[str, Any]]
    policy_summary: dict[str, Any]
    kill_at_walltime: bool
    finished: bool
    end_s: float
    config: dict[str, Any]
