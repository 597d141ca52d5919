"""The workload screen against independent computations (scipy, numpy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hpcpower.policies.icon.screen import (
    SampleWindow,
    ScreenSettings,
    WorkloadScreen,
    combine,
    ks_exponential,
    lag1_autocorrelation,
    screen_series,
)

S = ScreenSettings()


def _reference(values):
    v = np.asarray(values, float)
    mean = v.mean()
    cv = v.std(ddof=0) / mean
    rho = np.corrcoef(v[:-1], v[1:])[0, 1]
    ks = stats.kstest(v, stats.expon(scale=mean).cdf).statistic
    return mean, cv, rho, ks


@pytest.mark.parametrize("n", [4, 10, 60, 95, 96, 300])
def test_statistics_match_numpy_and_scipy(n):
    values = np.random.default_rng(n).exponential(800.0, n).tolist()
    v = screen_series(values, S, name="interarrival", required=True)
    mean, cv, rho, ks = _reference(values)
    assert v.n == n
    assert v.mean == pytest.approx(mean, rel=1e-12)
    assert v.cv == pytest.approx(cv, rel=1e-10)
    assert v.lag1 == pytest.approx(rho, rel=1e-9, abs=1e-12)
    assert v.ks == pytest.approx(ks, rel=1e-12)
    assert v.ks_limit == pytest.approx(1.25 * 3.0 / math.sqrt(n))
    ok = abs(cv - 1) <= 0.45 and abs(rho) <= 0.65 and ks <= 3.75 / math.sqrt(n)
    assert v.accepted == bool(ok)


def test_lag1_uses_separate_means_and_is_one_when_undefined():
    x = np.array([1.0, 2.0, 4.0, 3.0, 7.0])
    left, right = x[:-1], x[1:]
    expected = ((left - left.mean()) * (right - right.mean())).sum() / math.sqrt(
        ((left - left.mean()) ** 2).sum() * ((right - right.mean()) ** 2).sum()
    )
    assert lag1_autocorrelation(x) == pytest.approx(expected)
    assert lag1_autocorrelation(np.array([5.0, 5.0, 5.0, 5.0])) == 1.0
    assert ks_exponential(np.array([1.0, 2.0, 3.0]), 2.0) == pytest.approx(
        stats.kstest([1.0, 2.0, 3.0], stats.expon(scale=2.0).cdf).statistic
    )


def test_three_samples_always_fail_the_lag1_check():
    rng = np.random.default_rng(0)
    for _ in range(50):
        v = screen_series(rng.exponential(1.0, 3).tolist(), S, name="x", required=True)
        assert not v.accepted and "lag1_autocorrelation" in v.reason
        assert abs(v.lag1) == pytest.approx(1.0)


def test_too_few_samples_and_zero_mean():
    v = screen_series([1.0, 2.0], S, name="service", required=True)
    assert not v.accepted and v.reason == "insufficient_samples_in_time_window"
    v = screen_series([1.0, 2.0], S, name="service", required=False)
    assert v.accepted and v.reason.startswith("optional")
    v = screen_series([0.0, 0.0, 0.0, 0.0], S, name="x", required=True)
    assert not v.accepted and v.reason == "non_positive_mean"
    # negative and non-finite values are not samples
    v = screen_series([-1.0, math.nan, 1.0, 2.0], S, name="x", required=True)
    assert v.n == 2


def test_combined_verdict_and_reason():
    good = screen_series([1.0, 0.5, 3.0, 2.0, 0.1, 1.2, 4.0, 0.7], S, name="a", required=True)
    bad = screen_series([1.0, 1.0], S, name="service", required=True)
    assert good.accepted
    r = combine(good, bad, require_service=True)
    assert not r.accepted and r.reason == "service:insufficient_samples_in_time_window"
    assert combine(good, bad, require_service=False).accepted
    r = combine(bad, bad, require_service=True)
    assert r.reason.startswith("arrival:") and ";service:" in r.reason


def test_window_keeps_the_last_span_and_at_most_n_max():
    w = SampleWindow(100.0, 3)
    for t in (0.0, 10.0, 50.0, 90.0):
        w.add(t, t)
    assert w.values() == [10.0, 50.0, 90.0]  # the oldest dropped (n_max = 3)
    w.prune(110.0)  # cutoff 10: a stamp on the edge stays
    assert w.values() == [10.0, 50.0, 90.0]
    w.prune(150.1)
    assert w.values() == [90.0]


def test_a_window_of_no_samples_is_refused():
    with pytest.raises(ValueError, match="at least 1 sample, got 0"):
        SampleWindow(100.0, 0)


def test_window_matches_a_plain_deque_through_many_adds_and_prunes():
    """The buffer is moved to its front when full: the window never shows it."""
    from collections import deque

    rng = np.random.default_rng(5)
    w = SampleWindow(50.0, 7)
    want: deque[tuple[float, float]] = deque(maxlen=7)
    now = 0.0
    for _ in range(2000):
        now += float(rng.exponential(8.0))
        value = float(rng.random())
        w.add(now, value)
        want.append((now, value))
        if rng.random() < 0.3:
            w.prune(now)
            while want and want[0][0] < now - 50.0:
                want.popleft()
        assert w.values() == [v for _, v in want]
        assert w.array().tolist() == w.values() and len(w) == len(want)


def test_screen_caches_until_a_window_changes():
    screen = WorkloadScreen(7200.0, 1000, S)
    for i, t in enumerate(np.cumsum(np.random.default_rng(3).exponential(600.0, 12))):
        screen.interarrivals.add(t, 600.0 + i)
        screen.services.add(t, 1000.0 + 37 * i)
    first = screen.verdict(8000.0)
    assert screen.verdict(8000.0) is first
    screen.services.add(8000.0, 5.0)
    assert screen.verdict(8000.0) is not first


def test_screen_rescreens_only_the_series_that_changed(monkeypatch):
    from hpcpower.policies.icon import screen as module

    screened = []
    original = module.screen_series

    def counting(values, settings, *, name, required, **kwargs):
        screened.append(name)
        return original(values, settings, name=name, required=required, **kwargs)

    monkeypatch.setattr(module, "screen_series", counting)
    screen = WorkloadScreen(7200.0, 1000, S)
    for i in range(6):
        screen.interarrivals.add(100.0 * i, 600.0 + i)
        screen.services.add(100.0 * i, 1000.0 + 37 * i)
    screen.verdict(600.0)
    assert screened == ["interarrival", "service"]
    screen.services.add(700.0, 5.0)
    changed = screen.verdict(700.0)
    assert screened[2:] == ["service"]
    screen.interarrivals.add(800.0, 50.0)
    assert screen.verdict(800.0).service is changed.service
    assert screened[3:] == ["interarrival"]


def _authors_stats(v):
    """The statistics as the authors write them: generator sums, a max per sample."""
    n = len(v)
    mean = sum(v) / n
    variance = sum((x - mean) ** 2 for x in v) / n
    cv = math.sqrt(max(0.0, variance)) / mean
    left, right = v[:-1], v[1:]
    ml = sum(left) / len(left)
    mr = sum(right) / len(right)
    num = sum((x - ml) * (y - mr) for x, y in zip(left, right, strict=True))
    den = math.sqrt(sum((x - ml) ** 2 for x in left) * sum((y - mr) ** 2 for y in right))
    rho = num / den if den > 1e-9 else 1.0
    ks = 0.0
    for i, x in enumerate(sorted(v), start=1):
        cdf = 1.0 - math.exp(-x / mean)
        ks = max(ks, abs((i - 1) / n - cdf), abs(i / n - cdf))
    return mean, cv, rho, ks


@pytest.mark.parametrize("seed", range(20))
def test_short_window_statistics_are_the_authors_floats(seed):
    from hpcpower.policies.icon.screen import _stats_small

    rng = np.random.default_rng(seed)
    for n in (3, 4, 7, 20, 50, 95):
        if seed % 3 == 0:
            values = rng.exponential(rng.uniform(1, 5000), n)
        elif seed % 3 == 1:
            values = rng.integers(0, 20, n).astype(float)  # ties and zeros
        else:
            values = rng.lognormal(3, 2, n)
        v = values.tolist()
        if sum(v) / n > 1e-9:
            assert repr(_stats_small(v)) == repr(_authors_stats(v))


def test_poisson_windows_are_mostly_accepted_and_bursty_ones_rejected():
    rng = np.random.default_rng(7)
    accepted = sum(
        screen_series(rng.exponential(800.0, 12).tolist(), S, name="a", required=True).accepted
        for _ in range(300)
    )
    assert accepted / 300 > 0.9
    # Bursts: many near-simultaneous arrivals then long gaps (CV far above 1).
    bursty = [rng.choice([1.0, 20000.0], p=[0.9, 0.1]) for _ in range(60)]
    assert not screen_series(bursty, S, name="a", required=True).accepted
    # Heavy tail: Pareto shape 1.2.
    heavy = (rng.pareto(1.2, 80) + 1) * 100
    assert not screen_series(heavy.tolist(), S, name="a", required=True).accepted
