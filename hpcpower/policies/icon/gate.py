"""Arrival-recency gate and completion shutdown (paper §III-I).

The gate decides whether ICON may prepare warm spares for *future* jobs: it
is open only while the latest arrival is at most ``window`` seconds old
(closed before any arrival; always open when the window is ``None``, the
NG variants). It is independent of the workload screen: with the gate closed
ICON stays active and still handles queued jobs.

With the gate closed, a decision after a completion switches off the nodes
that completion freed at once, ignoring their fresh idle timeout, unless a
job started in the same pass took them (the authors'
``_spare_arrival_gate`` and ``_switch_off_stale_completion_nodes``; the
shutdown only happens with an empty queue, so no planned job can need them).
Other idle nodes follow the idle timeout.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import NamedTuple

EPS = 1e-9


class GateState(NamedTuple):
    """The gate at one pass (a named tuple: one is made every pass).

    Attributes:
        enabled: False for the NG variants (no window).
        open: Whether spare planning is allowed.
        reason: ``disabled``, ``no_arrival_observed``, ``recent_arrival`` or
            ``arrival_window_expired``.
        arrival_age_s: Time since the latest arrival (``None`` if none or disabled).
    """

    enabled: bool
    open: bool
    reason: str
    arrival_age_s: float | None = None


def arrival_gate(now: float, last_arrival_s: float | None, window_s: float | None) -> GateState:
    """Whether spares may be planned now.

    Args:
        now: Current time.
        last_arrival_s: Submit time of the latest arrival seen, or ``None``.
        window_s: The recency window, or ``None`` to disable the gate.
    """
    if window_s is None:
        return GateState(False, True, "disabled")
    if last_arrival_s is None:
        return GateState(True, False, "no_arrival_observed")
    age = max(0.0, float(now) - float(last_arrival_s))
    allowed = age <= float(window_s) + EPS
    return GateState(True, allowed, "recent_arrival" if allowed else "arrival_window_expired", age)


def completion_shutdown(
    released: Iterable[int], taken: Collection[int], idle: Collection[int]
) -> list[int]:
    """Nodes to switch off after a completion with the gate closed.

    Args:
        released: Nodes freed by jobs that finished since the previous pass.
        taken: Nodes given to jobs started in this pass.
        idle: Nodes idle after this pass's dispatch.

    Returns:
        The released nodes not taken and still idle, by increasing id.
    """
    return sorted(n for n in set(released) if n not in taken and n in idle)
