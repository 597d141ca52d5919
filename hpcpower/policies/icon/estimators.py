"""Adaptive workload estimates: arrival rate, service rate, node-request pmf (paper §III-B).

All three are exponential moving averages updated at every controller pass,
in both modes, from the jobs that arrived or finished since the previous pass
(the authors' ``_observe_arrivals``, ``_observe_completions``,
``_update_resource_ema``):

* **arrival rate** ``lambda = 1 / EMA(interarrival)``, the EMA starting at
  ``1 / initial_arrival_rate``; the first arrival only sets the reference
  time (the simulation start is not an arrival);
* **service rate** ``mu = 1 / EMA(service time)`` once a job has finished,
  before that ``1 / EMA(requested time / mean node speed)``, before any
  arrival 0;
* **node-request pmf**: a weight per request size; every arrival multiplies
  all weights by ``1 - a`` (dropping those that fall to 1e-9 or below) and
  adds ``a`` to its own size; the very first arrival starts with weight 1.

Either rate and the pmf can be fixed by configuration instead. Updates use
plain Python floats in the authors' order, so estimates are the same numbers.
"""

from __future__ import annotations

EPS = 1e-9


def ema_update(previous: float | None, sample: float, weight: float) -> float:
    """EMA of non-negative samples: the first sample sets it."""
    sample = max(0.0, float(sample))
    if previous is None:
        return sample
    return weight * sample + (1.0 - weight) * previous


def ema_update_signed(previous: float | None, sample: float, weight: float) -> float:
    """EMA of samples of any sign: the first sample sets it."""
    if previous is None:
        return float(sample)
    return weight * float(sample) + (1.0 - weight) * previous


class ArrivalEstimator:
    """EMA of interarrival times, and the time of the latest arrival (for the gate).

    Args:
        initial_rate: Arrival rate (1/s) assumed before any interarrival.
        weight: EMA weight of the newest interarrival.
        fixed_rate: If given, :meth:`rate` returns it instead of the estimate.
    """

    def __init__(self, initial_rate: float, weight: float, fixed_rate: float | None = None):
        self.weight = weight
        self.fixed_rate = fixed_rate
        self.ema_interarrival_s = 1.0 / initial_rate
        self.last_arrival_s: float | None = None

    def observe(self, submit_s: float) -> float | None:
        """Record one arrival; returns its interarrival time (``None`` for the first)."""
        submit_s = float(submit_s)
        gap = None
        if self.last_arrival_s is not None:
            if submit_s + EPS < self.last_arrival_s:
                raise ValueError(
                    f"arrivals out of order: {submit_s} s after {self.last_arrival_s} s"
                )
            gap = max(0.0, submit_s - self.last_arrival_s)
            self.ema_interarrival_s = ema_update(self.ema_interarrival_s, gap, self.weight)
        self.last_arrival_s = submit_s
        return gap

    def rate(self) -> float:
        """Arrival rate lambda in 1/s."""
        if self.fixed_rate is not None:
            return self.fixed_rate
        return 1.0 / max(EPS, self.ema_interarrival_s)

    def __repr__(self) -> str:
        return f"<ArrivalEstimator rate {self.rate():.3g}/s, last arrival {self.last_arrival_s}>"


class ServiceEstimator:
    """EMA of service times, with requested times standing in before any completion.

    Args:
        weight: EMA weight of the newest sample.
        fixed_rate: If given, :meth:`rate` returns it instead of the estimate.
    """

    def __init__(self, weight: float, fixed_rate: float | None = None) -> None:
        self.weight = weight
        self.fixed_rate = fixed_rate
        self.ema_service_s: float | None = None
        self.ema_requested_s: float | None = None

    def observe_request(self, reqtime_s: float, mean_speed: float) -> None:
        """Record an arrival's requested time (scaled by the mean node speed)."""
        if reqtime_s > 0.0:
            self.ema_requested_s = ema_update(
                self.ema_requested_s, reqtime_s / mean_speed, self.weight
            )

    def observe_service(self, duration_s: float) -> None:
        """Record a finished job's duration (finish − start, > 0)."""
        self.ema_service_s = ema_update(self.ema_service_s, duration_s, self.weight)

    def rate(self) -> float:
        """Service rate mu in 1/s (0 before any job is seen)."""
        if self.fixed_rate is not None:
            return self.fixed_rate
        mean = self.ema_service_s if self.ema_service_s is not None else self.ema_requested_s
        if mean is None:
            return 0.0
        return 1.0 / max(EPS, mean)

    def __repr__(self) -> str:
        return f"<ServiceEstimator mean service {self.ema_service_s} s>"


class ResourcePmf:
    """EMA of the node-request distribution.

    Args:
        weight: Weight ``a`` added to the newest request size.
        fixed: If given, a normalised ``((nodes, p), ...)`` used instead.
    """

    def __init__(self, weight: float, fixed: tuple[tuple[int, float], ...] | None = None):
        self.weight = weight
        self.fixed = fixed
        self.weights: dict[int, float] = {}
        self._cache: list[tuple[int, float]] | None = None

    def observe(self, nodes: int) -> None:
        """Record one arrival requesting ``nodes`` nodes."""
        nodes = int(nodes)
        if nodes <= 0:
            raise ValueError(f"a job requests {nodes} nodes; requests must be positive")
        self._cache = None
        w = self.weights
        if not w:
            w[nodes] = 1.0
            return
        keep = 1.0 - self.weight
        for key in list(w):
            w[key] *= keep
            if w[key] <= EPS:
                del w[key]
        w[nodes] = w.get(nodes, 0.0) + self.weight

    def pmf(self) -> list[tuple[int, float]]:
        """``[(nodes, probability), ...]`` by increasing size; ``[(1, 1.0)]`` before any arrival."""
        if self.fixed is not None:
            return list(self.fixed)
        if self._cache is None:
            total = sum(self.weights.values())
            if total <= EPS:
                self._cache = [(1, 1.0)]
            else:
                self._cache = [(r, w / total) for r, w in sorted(self.weights.items()) if w > EPS]
        return self._cache

    def __repr__(self) -> str:
        return f"<ResourcePmf {len(self.pmf())} sizes>"
