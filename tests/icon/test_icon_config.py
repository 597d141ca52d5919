"""IconConfig defaults and validation; registry names and settings."""

from __future__ import annotations

import pytest

from hpcpower import make_policy
from hpcpower.errors import InputError
from hpcpower.policies.icon import IconConfig, SnfIcon


def test_defaults_are_the_paper_base_configuration():
    c = IconConfig()
    assert (c.alpha, c.beta, c.min_spare_nodes, c.max_spare_nodes) == (5000.0, 1.0, 1, None)
    assert c.initial_arrival_rate == 1 / 3600
    assert (c.arrival_ema_alpha, c.service_ema_alpha, c.resource_ema_alpha) == (0.2, 0.1, 0.1)
    assert c.runtime_log_sigma_floor == 0.25
    assert (c.max_decision_horizon_s, c.spare_arrival_window_s) == (86400.0, 43200.0)
    assert c.immediate_shutdown_on_stale_completion and c.respect_timeout and c.fallback_enabled
    assert (c.markov_window_s, c.markov_min_samples, c.markov_max_samples) == (7200.0, 3, 1000)
    assert (c.markov_cv_tolerance, c.markov_max_lag1) == (0.45, 0.65)
    assert (c.markov_ks_multiplier, c.markov_ks_param) == (1.25, 3.0)
    assert c.require_service_samples and c.timeout_s == 7200.0
    assert c.arrival_rate is None and c.service_rate is None and c.resource_pmf is None


@pytest.mark.parametrize(
    "name,value",
    [
        ("alpha", -1),
        ("beta", float("nan")),
        ("initial_arrival_rate", 0),
        ("arrival_ema_alpha", 0.0),
        ("service_ema_alpha", 1.5),
        ("resource_ema_alpha", "0.1"),
        ("runtime_log_sigma_floor", -0.1),
        ("max_decision_horizon_s", 0),
        ("spare_arrival_window_s", -5),
        ("markov_window_s", float("inf")),
        ("markov_min_samples", 2),
        ("markov_min_samples", 3.5),
        ("markov_cv_tolerance", -0.1),
        ("markov_max_lag1", 1.2),
        ("markov_ks_multiplier", 0),
        ("markov_ks_param", -3),
        ("min_spare_nodes", -1),
        ("timeout_s", -1),
        ("arrival_rate", 0),
        ("service_rate", -2),
        ("respect_timeout", "yes"),
        ("fallback_enabled", 1),
        ("resource_pmf", {0: 1.0}),
        ("resource_pmf", {1: -0.5}),
        ("resource_pmf", {1: 0.0}),
    ],
)
def test_invalid_values_name_the_setting(name, value):
    with pytest.raises(InputError, match=rf"policy\.{name}"):
        IconConfig(**{name: value})


def test_cross_field_checks():
    with pytest.raises(InputError, match=r"policy\.max_spare_nodes"):
        IconConfig(min_spare_nodes=4, max_spare_nodes=2)
    with pytest.raises(InputError, match=r"policy\.markov_max_samples"):
        IconConfig(markov_min_samples=10, markov_max_samples=5)
    with pytest.raises(InputError, match=r"policy\.alpha and policy\.beta"):
        IconConfig(alpha=0, beta=0)


def test_fixed_pmf_is_normalised_in_input_order():
    c = IconConfig(resource_pmf={4: 1.0, 1: 3.0})
    assert c.resource_pmf == ((4, 0.25), (1, 0.75))
    assert c.as_dict()["resource_pmf"] == {4: 0.25, 1: 0.75}


@pytest.mark.parametrize(
    "name,fallback,gate",
    [
        ("snf-icon", True, 43200.0),
        ("snf-icon-nf", False, 43200.0),
        ("snf-icon-ng", True, None),
        ("snf-icon-ngnf", False, None),
    ],
)
def test_registry_variants(name, fallback, gate):
    p = make_policy(name)
    assert isinstance(p, SnfIcon) and p.name == name
    assert p.settings.fallback_enabled is fallback
    assert p.settings.spare_arrival_window_s == gate
    assert p.config()["name"] == name


def test_registry_accepts_every_setting_and_rejects_unknown_ones():
    p = make_policy("snf-icon", alpha=2500, markov_window_s=3600)
    assert p.settings.alpha == 2500.0 and p.settings.markov_window_s == 3600.0
    with pytest.raises(InputError, match=r"policy\.gamma") as err:
        make_policy("snf-icon", alpha=1.0, gamma=2)
    assert "policy.alpha" not in str(err.value).split(";")[0]
    with pytest.raises(InputError, match=r"policy\.alpha"):
        make_policy("snf-icon-ng", alpha=-1)


def test_a_variant_refuses_to_undo_what_defines_it():
    with pytest.raises(InputError, match=r"policy\.fallback_enabled.*snf-icon-nf"):
        make_policy("snf-icon-nf", fallback_enabled=True)
    p = make_policy("snf-icon-nf", fallback_enabled=False)
    assert p.settings.fallback_enabled is False
