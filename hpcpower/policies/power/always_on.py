"""The reference power manager: every node stays on, nothing is ever switched."""

from __future__ import annotations

from hpcpower.policies.base import Decision, PowerManager, Schedule, SystemView


class AlwaysOn(PowerManager):
    """Keep every node powered; nodes that start asleep are woken when the plan needs them."""

    name = "always-on"
    #: The plan is read only while nodes sleep (at most at the start).
    reads_plan = False

    def manage(self, view: SystemView, schedule: Schedule, decision: Decision) -> None:
        """Wake sleeping nodes the plan uses; never switch anything off."""
        sleeping = view.cluster.sleeping
        if not sleeping:
            return
        wake: set[int] = set()
        for planned in schedule.plan:
            wake.update(n for n in planned.nodes if n in sleeping)
        decision.switch_on.extend(sorted(wake))
