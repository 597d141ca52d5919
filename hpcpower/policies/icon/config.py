"""Settings of the SNF-ICON controller (paper §III-IV, Table of parameters).

One frozen dataclass, :class:`IconConfig`, holds every setting of the
controller with the paper's base values as defaults (the authors'
``RunSPARSOuter.BASE_CONFIG``). Names carry units where they have one
(``_s`` for seconds); rates are per second, energies in joules. Values are
checked when the object is made: a bad value raises
:class:`~hpcpower.errors.InputError` naming the setting as ``policy.<name>``,
the way scenario files and ``--set`` spell it.

The authors' code leaves ``markov_ks_param`` unchecked; here it must be a
finite positive number like the other thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from hpcpower.errors import InputError


def _bad(name: str, want: str, value: Any) -> InputError:
    return InputError(f"policy.{name} must be {want}, got {value!r}")


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(name, "a number", value)
    value = float(value)
    if not math.isfinite(value):
        raise _bad(name, "a finite number", value)
    return value


def _integer(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise _bad(name, "a whole number", value)
    return int(value)


#: The settings that take ``None`` (``"none"`` in a scenario file or ``--set``).
_OPTIONAL = (
    "max_spare_nodes",
    "spare_arrival_window_s",
    "timeout_s",
    "arrival_rate",
    "service_rate",
    "resource_pmf",
)


@dataclass(frozen=True)
class IconConfig:
    """Every setting of SNF-ICON, with the paper's values as defaults.

    Attributes:
        alpha: Weight of the expected power-induced wait (s) in the spare cost.
        beta: Weight of the expected non-compute energy (J) in the spare cost.
        min_spare_nodes: S_min, the preferred least number of warm spares.
        max_spare_nodes: S_max, the preferred largest number (``None``: all nodes).
        initial_arrival_rate: Arrival rate (1/s) before any interarrival is seen.
        arrival_ema_alpha: EMA weight of the newest interarrival time.
        service_ema_alpha: EMA weight of the newest service time, requested
            service time and log runtime ratio (first and second moment).
        resource_ema_alpha: EMA weight of the newest node request in the pmf.
        runtime_log_sigma_floor: Least standard deviation of the log ratio
            actual / requested runtime.
        max_decision_horizon_s: H_max, the horizon when no idle timeout is pending.
        spare_arrival_window_s: Arrival-recency gate: spares are planned only
            if the last arrival is at most this old (``None``: gate always open).
        immediate_shutdown_on_stale_completion: With the gate closed, switch
            off the nodes a completion frees at once.
        respect_timeout: The spare optimiser may switch off an idle node only
            once its idle timeout has expired.
        fallback_enabled: A rejected workload screen hands the whole pass to
            SNF+IPM.
        markov_window_s: T_M, how far back the screen looks.
        markov_min_samples: Least number of samples per series (at least 3).
        markov_max_samples: Most recent samples kept per series.
        markov_cv_tolerance: Accept a series when ``|CV - 1|`` is at most this.
        markov_max_lag1: Accept when ``|lag-1 autocorrelation|`` is at most this.
        markov_ks_multiplier: KS acceptance limit is
            ``markov_ks_multiplier * markov_ks_param / sqrt(n)``.
        markov_ks_param: See ``markov_ks_multiplier``.
        require_service_samples: The service series must pass too (and have
            enough samples); if false it is ignored.
        timeout_s: Idle timeout of the power manager (``None``: never).
        arrival_rate: Fixed arrival rate (1/s) instead of the EMA estimate.
        service_rate: Fixed service rate (1/s) instead of the EMA estimate.
        resource_pmf: Fixed node-request pmf ``{nodes: probability}`` instead
            of the EMA estimate; normalised, kept as ``((nodes, p), ...)``.
    """

    alpha: float = 5000.0
    beta: float = 1.0
    min_spare_nodes: int = 1
    max_spare_nodes: int | None = None
    initial_arrival_rate: float = 1.0 / 3600.0
    arrival_ema_alpha: float = 0.2
    service_ema_alpha: float = 0.1
    resource_ema_alpha: float = 0.1
    runtime_log_sigma_floor: float = 0.25
    max_decision_horizon_s: float = 86400.0
    spare_arrival_window_s: float | None = 43200.0
    immediate_shutdown_on_stale_completion: bool = True
    respect_timeout: bool = True
    fallback_enabled: bool = True
    markov_window_s: float = 7200.0
    markov_min_samples: int = 3
    markov_max_samples: int = 1000
    markov_cv_tolerance: float = 0.45
    markov_max_lag1: float = 0.65
    markov_ks_multiplier: float = 1.25
    markov_ks_param: float = 3.0
    require_service_samples: bool = True
    timeout_s: float | None = 7200.0
    arrival_rate: float | None = None
    service_rate: float | None = None
    resource_pmf: Any = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        # Scenario files and --set have no null: "none" spells it for these settings.
        for name in _OPTIONAL:
            value = getattr(self, name)
            if isinstance(value, str) and value.strip().lower() == "none":
                put(self, name, None)
        for name in ("alpha", "beta", "runtime_log_sigma_floor", "markov_cv_tolerance"):
            value = _real(name, getattr(self, name))
            if value < 0:
                raise _bad(name, "a number >= 0", value)
            put(self, name, value)
        if self.alpha <= 0 and self.beta <= 0:
            raise InputError("policy.alpha and policy.beta: at least one must be positive")
        for name in (
            "initial_arrival_rate",
            "max_decision_horizon_s",
            "markov_window_s",
            "markov_ks_multiplier",
            "markov_ks_param",
        ):
            value = _real(name, getattr(self, name))
            if value <= 0:
                raise _bad(name, "a number > 0", value)
            put(self, name, value)
        for name in ("arrival_rate", "service_rate"):
            value = getattr(self, name)
            if value is not None:
                value = _real(name, value)
                if value <= 0:
                    raise _bad(name, "None or a number > 0", value)
                put(self, name, value)
        for name in ("arrival_ema_alpha", "service_ema_alpha", "resource_ema_alpha"):
            value = _real(name, getattr(self, name))
            if not 0.0 < value <= 1.0:
                raise _bad(name, "in (0, 1]", value)
            put(self, name, value)
        lag = _real("markov_max_lag1", self.markov_max_lag1)
        if not 0.0 <= lag <= 1.0:
            raise _bad("markov_max_lag1", "in [0, 1]", lag)
        put(self, "markov_max_lag1", lag)
        for name in ("spare_arrival_window_s", "timeout_s"):
            value = getattr(self, name)
            if value is not None:
                value = _real(name, value)
                if value < 0:
                    raise _bad(name, "None or a number >= 0", value)
                put(self, name, value)
        lo = _integer("min_spare_nodes", self.min_spare_nodes)
        if lo < 0:
            raise _bad("min_spare_nodes", "a whole number >= 0", lo)
        put(self, "min_spare_nodes", lo)
        if self.max_spare_nodes is not None:
            hi = _integer("max_spare_nodes", self.max_spare_nodes)
            if hi < lo:
                raise _bad(
                    "max_spare_nodes", f"None or a whole number >= min_spare_nodes ({lo})", hi
                )
            put(self, "max_spare_nodes", hi)
        n_min = _integer("markov_min_samples", self.markov_min_samples)
        if n_min < 3:
            raise _bad("markov_min_samples", "a whole number >= 3", n_min)
        put(self, "markov_min_samples", n_min)
        n_max = _integer("markov_max_samples", self.markov_max_samples)
        if n_max < n_min:
            raise _bad(
                "markov_max_samples", f"a whole number >= markov_min_samples ({n_min})", n_max
            )
        put(self, "markov_max_samples", n_max)
        for name in (
            "immediate_shutdown_on_stale_completion",
            "respect_timeout",
            "fallback_enabled",
            "require_service_samples",
        ):
            if not isinstance(getattr(self, name), bool):
                raise _bad(name, "true or false", getattr(self, name))
        if self.resource_pmf is not None:
            put(self, "resource_pmf", _normalise_pmf(self.resource_pmf))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The setting names, in declaration order."""
        return tuple(f.name for f in fields(cls))

    def as_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (for results and logs)."""
        out = {name: getattr(self, name) for name in self.names()}
        if self.resource_pmf is not None:
            out["resource_pmf"] = dict(self.resource_pmf)
        return out


def _normalise_pmf(pmf: Any) -> tuple[tuple[int, float], ...]:
    """Check a fixed node-request pmf and scale it to sum to one (input order kept)."""
    items = pmf.items() if isinstance(pmf, Mapping) else pmf
    cleaned: dict[int, float] = {}
    try:
        pairs = [(k, v) for k, v in items]
    except (TypeError, ValueError):
        raise _bad("resource_pmf", "None or a mapping {nodes: probability}", pmf) from None
    for key, value in pairs:
        try:
            nodes = int(key)
        except (TypeError, ValueError):
            raise _bad("resource_pmf", "keyed by whole node counts", key) from None
        if nodes <= 0 or nodes != float(key):
            raise _bad("resource_pmf", "keyed by node counts > 0", key)
        p = _real("resource_pmf", value)
        if p < 0:
            raise _bad("resource_pmf", "made of probabilities >= 0", value)
        if p > 0:
            cleaned[nodes] = cleaned.get(nodes, 0.0) + p
    total = sum(cleaned.values())
    if total <= 0:
        raise _bad("resource_pmf", "a pmf with some positive probability", pmf)
    return tuple((r, p / total) for r, p in cleaned.items())
