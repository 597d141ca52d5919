"""SNF-ICON: Smallest-Need-First with adaptive optimisation of idle node counts.

The controller of Pulungan et al. (paper §III-IV, Appendices A-B), faithful
to the authors' ``snf_icon.py``. One module per piece:

* :mod:`.config` — :class:`IconConfig`, every setting with the paper's values;
* :mod:`.screen` — the workload screen (CV, lag-1 autocorrelation, KS);
* :mod:`.estimators` — EMA arrival rate, service rate, node-request pmf;
* :mod:`.runtime` — log-normal runtime-ratio model and predictions;
* :mod:`.planner` — dispatch, predicted release map, future-SNF plan, wakes;
* :mod:`.next_event` — competing exponential clocks and the horizon;
* :mod:`.spares` — warm-spare target optimisation;
* :mod:`.gate` — arrival-recency gate and completion shutdown;
* :mod:`.controller` — :class:`SnfIcon`, one invocation in the authors' order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpcpower.policies.icon.config import IconConfig

#: The paper's variants: name -> settings that define it.
VARIANTS: dict[str, dict[str, object]] = {
    "snf-icon": {},
    "snf-icon-nf": {"fallback_enabled": False},
    "snf-icon-ng": {"spare_arrival_window_s": None},
    "snf-icon-ngnf": {"fallback_enabled": False, "spare_arrival_window_s": None},
}

__all__ = ["IconConfig", "SnfIcon", "VARIANTS"]


def __getattr__(name: str) -> Any:
    # The controller (and with it the engine and SimPy) is imported when first
    # asked for, so that the pieces above import on their own.
    if name == "SnfIcon":
        from hpcpower.policies.icon.controller import SnfIcon

        return SnfIcon
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    from hpcpower.policies.icon.controller import SnfIcon
