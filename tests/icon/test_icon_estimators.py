"""Estimators, runtime model, next-event model and gate, against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from hpcpower.policies.icon.estimators import ArrivalEstimator, ResourcePmf, ServiceEstimator
from hpcpower.policies.icon.gate import arrival_gate, completion_shutdown
from hpcpower.policies.icon.next_event import expected_residual, horizon_cap, next_event
from hpcpower.policies.icon.runtime import (
    RuntimeModel,
    lognormal_mean_excess,
    normal_log_survival,
)

# ------------------------------------------------------------------ estimators


def test_arrival_rate_is_an_ema_of_interarrivals_starting_at_the_initial_rate():
    a = ArrivalEstimator(1 / 3600, 0.2)
    assert a.rate() == pytest.approx(1 / 3600)
    assert a.observe(100.0) is None  # the first arrival only sets the reference
    assert a.rate() == pytest.approx(1 / 3600)
    assert a.observe(400.0) == 300.0
    ema = 0.2 * 300 + 0.8 * 3600
    assert a.rate() == pytest.approx(1 / ema)
    assert a.observe(400.0) == 0.0
    assert a.rate() == pytest.approx(1 / (0.8 * ema))
    assert ArrivalEstimator(1.0, 0.2, fixed_rate=0.5).rate() == 0.5
    with pytest.raises(ValueError):
        a.observe(10.0)


def test_service_rate_uses_requests_until_a_job_finishes():
    s = ServiceEstimator(0.1)
    assert s.rate() == 0.0
    s.observe_request(1000.0, 1.0)
    s.observe_request(2000.0, 2.0)
    assert s.rate() == pytest.approx(1 / (0.1 * 1000 + 0.9 * 1000))
    s.observe_request(0.0, 1.0)  # no request: ignored
    s.observe_service(500.0)
    assert s.rate() == pytest.approx(1 / 500)
    s.observe_service(1500.0)
    assert s.rate() == pytest.approx(1 / (0.1 * 1500 + 0.9 * 500))


def test_pmf_ema_forgets_sizes_below_eps():
    p = ResourcePmf(0.1)
    assert p.pmf() == [(1, 1.0)]
    p.observe(4)
    assert p.pmf() == [(4, 1.0)]
    p.observe(2)
    sizes, weights = zip(*p.pmf(), strict=True)
    assert sizes == (2, 4) and weights == pytest.approx((0.1, 0.9))
    # 4 is never seen again: its weight 0.9 * 0.9**k falls below 1e-9 after k = 196 more
    for _ in range(195):
        p.observe(2)
    assert 4 in p.weights
    p.observe(2)
    assert 4 not in p.weights and p.pmf() == [(2, 1.0)]
    total = sum(w for _, w in ResourcePmf(0.1).pmf())
    assert total == 1.0
    fixed = ResourcePmf(0.1, fixed=((3, 0.5), (1, 0.5)))
    fixed.observe(8)
    assert fixed.pmf() == [(3, 0.5), (1, 0.5)]
    with pytest.raises(ValueError):
        p.observe(0)


# --------------------------------------------------------------------- runtime


@pytest.mark.parametrize("sigma", [0.25, 0.8, 1.6])
@pytest.mark.parametrize("elapsed", [0.0, 50.0, 900.0, 5000.0])
def test_conditional_mean_remaining_matches_scipy_lognormal(sigma, elapsed):
    m = math.log(1000.0) - 0.3
    dist = stats.lognorm(s=sigma, scale=math.exp(m))
    if elapsed == 0:
        expected = dist.mean()
    else:
        tail = integrate.quad(
            lambda t: t * dist.pdf(t), elapsed, math.inf, epsabs=0, epsrel=1e-12, limit=200
        )[0]
        expected = tail / dist.sf(elapsed) - elapsed
    assert lognormal_mean_excess(m, sigma, elapsed) == pytest.approx(expected, rel=1e-6)


def test_normal_log_survival_in_the_tail():
    for z in (-3.0, 0.0, 2.0, 7.9):
        assert normal_log_survival(z) == pytest.approx(stats.norm.logsf(z), rel=1e-12)
    # from z = 8 on, the asymptotic series (as the authors): a few 1e-6 relative
    for z in (8.0, 12.0, 30.0):
        assert normal_log_survival(z) == pytest.approx(stats.norm.logsf(z), rel=2e-6)


def test_runtime_model_queued_median_and_running_mean():
    r = RuntimeModel(0.1, 0.25, 86400.0)
    assert r.median_ratio() == 1.0 and r.distribution() is None
    # cold start: requested - elapsed, the request again once overrun
    assert r.remaining(1000.0, 300.0, None) == 700.0
    assert r.remaining(1000.0, 1500.0, None) == 1000.0
    assert r.remaining(None, 100.0, None) == 86400.0 - 100.0
    r.observe(500.0, 1000.0)
    mu, sigma = r.distribution()
    assert mu == pytest.approx(math.log(0.5)) and sigma == 0.25  # one sample: floor
    assert r.queued_duration(2000.0, None) == pytest.approx(1000.0)
    assert r.remaining(2000.0, 0.0, None) == pytest.approx(1000.0 * math.exp(0.25**2 / 2))
    r.observe(2000.0, 1000.0)
    m1 = 0.1 * math.log(2) + 0.9 * math.log(0.5)
    m2 = 0.1 * math.log(2) ** 2 + 0.9 * math.log(0.5) ** 2
    assert r.distribution() == pytest.approx((m1, math.sqrt(m2 - m1 * m1)))
    r.observe(0.0, 1000.0)  # no ratio from a zero duration
    r.observe(10.0, None)
    assert r.samples == 2
    assert r.remaining_all([2000.0, None], [0.0, 5.0], 700.0) == [
        r.remaining(2000.0, 0.0, 700.0),
        695.0,
    ]


@pytest.mark.parametrize("seed", range(10))
def test_running_predictions_at_once_are_the_scalar_ones(seed):
    rng = np.random.default_rng(seed)
    r = RuntimeModel(0.1, [0.25, 1e-3][seed % 2], 86400.0)
    for _ in range(seed % 4):
        r.observe(float(rng.lognormal(6, 1.5)), float(rng.lognormal(7, 1)))
    requested = [None, 1e-12, *rng.lognormal(7, 2, 30).tolist()]
    # elapsed 0, tiny, ordinary and far in the tail (z above 8)
    elapsed = [0.0, 1e-10, *rng.uniform(0, 5e4, 25).tolist(), 1e7, 1e9, 1e12, 1e15, -3.0]
    one_by_one = [r.remaining(q, a, 700.0) for q, a in zip(requested, elapsed, strict=True)]
    assert repr(r.remaining_all(requested, elapsed, 700.0)) == repr(one_by_one)


# ------------------------------------------------------------------ next event


def test_competing_exponentials_closed_forms():
    lam, d, cap = 1 / 800, 2500.0, 3000.0
    e = next_event(lam, [4000.0, d, math.inf], 3, 1 / 7200, cap)
    gamma = lam + 1 / d
    assert e.completion_rate == pytest.approx(1 / d)
    assert e.total_rate == pytest.approx(gamma)
    assert e.p_arrival == pytest.approx(lam / gamma)
    assert e.horizon_s == pytest.approx((1 - math.exp(-gamma * cap)) / gamma)
    # H = E[min(T, cap)] for T ~ Exp(gamma)
    t = stats.expon(scale=1 / gamma)
    assert e.horizon_s == pytest.approx(t.expect(lambda x: min(x, cap)), rel=1e-6)
    assert e.residual_rate == e.total_rate


def test_no_running_job_and_no_arrival_rate():
    e = next_event(0.0, [], 0, 1 / 7200, 500.0)
    assert e.completion_rate == 0.0 and e.p_arrival == 0.0
    assert e.horizon_s == 500.0 and e.residual_rate == pytest.approx(1 / 500)
    assert next_event(1e-3, [], 4, 1e-4, 10.0).completion_rate == pytest.approx(4e-4)


def test_horizon_cap_is_the_next_future_timeout():
    assert horizon_cap(100.0, [90.0, 100.0 + 1e-12, 400.0, 250.0], 86400.0) == 150.0
    assert horizon_cap(100.0, [50.0], 86400.0) == 86400.0
    assert horizon_cap(100.0, [5e6], 86400.0) == 86400.0
    assert horizon_cap(100.0, [150.0], 86400.0, timeout_set=False) == 86400.0


@settings(max_examples=300, deadline=None)
@given(
    st.floats(0.0, 1e7),
    st.lists(
        st.one_of(
            st.floats(0.0, 2e7),
            st.sampled_from([0.0, 1e-9, 1e-12, 7200.0, math.inf]),  # offsets from now below
        ),
        max_size=40,
    ),
    st.sampled_from([3600.0, 86400.0]),
)
def test_horizon_cap_is_the_least_delay_ahead_to_the_bit(now, values, max_horizon_s):
    """Over an array, the cap is every ``e - now`` ahead's minimum, as a list would give it."""
    expiries = [now + v if v < 1.0 or v == 7200.0 else v for v in values]
    delays = [e - now for e in expiries if e > now + 1e-9]
    want = min(max_horizon_s, min(delays)) if delays else max_horizon_s
    for given_as in (expiries, np.array(expiries, dtype=float), iter(expiries)):
        got = horizon_cap(now, given_as, max_horizon_s)
        assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want)


@pytest.mark.parametrize("gamma", [1e-4, 1 / 800, 0.05])
@pytest.mark.parametrize("d", [0.0, 15.0, 600.0, 1200.0])
def test_expected_unfinished_transition_time(gamma, d):
    closed = d - (1 - math.exp(-gamma * d)) / gamma
    assert expected_residual(d, gamma) == pytest.approx(max(0.0, closed), abs=1e-9)
    t = stats.expon(scale=1 / gamma)
    assert expected_residual(d, gamma) == pytest.approx(
        t.expect(lambda x: max(d - x, 0.0)), rel=1e-6, abs=1e-9
    )


# ------------------------------------------------------------------------ gate


def test_gate_states():
    assert arrival_gate(10.0, None, None).open
    assert arrival_gate(10.0, None, None).reason == "disabled"
    g = arrival_gate(10.0, None, 43200.0)
    assert not g.open and g.reason == "no_arrival_observed"
    g = arrival_gate(43300.0, 100.0, 43200.0)
    assert g.open and g.arrival_age_s == 43200.0
    g = arrival_gate(43300.1, 100.0, 43200.0)
    assert not g.open and g.reason == "arrival_window_expired"


def test_completion_shutdown_spares_reused_nodes():
    assert completion_shutdown([5, 3, 9, 3], taken={9}, idle={3, 5, 7}) == [3, 5]


def test_pmf_weights_sum_to_one_after_many_updates():
    p = ResourcePmf(0.1)
    for r in np.random.default_rng(1).geometric(0.35, 500):
        p.observe(int(r))
    assert sum(w for _, w in p.pmf()) == pytest.approx(1.0)
