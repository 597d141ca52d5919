"""Markovian generator: formulas, determinism, and statistics of the paper's workload."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from hpcpower.errors import InputError
from hpcpower.workload import (
    capped_geometric_mean,
    markovian,
    markovian_mean_interarrival,
    read_spars_json,
)

DATA = Path(__file__).resolve().parents[2] / "scenarios" / "data"


def columns(w):
    submit = np.array([j.submit_s for j in w.jobs])
    return {
        "interarrival": np.diff(np.concatenate(([0.0], submit))),
        "runtime": np.array([j.runtime_s for j in w.jobs]),
        "reqtime": np.array([j.reqtime_s for j in w.jobs]),
        "res": np.array([j.res for j in w.jobs]),
    }


@pytest.fixture(scope="module")
def paper():
    return columns(read_spars_json(DATA / "generated-markovian-3000.json.gz"))


def test_paper_mean_interarrival_is_803_57():
    assert capped_geometric_mean(0.35, 64) == pytest.approx(1 / 0.35, rel=1e-10)
    assert markovian_mean_interarrival() == pytest.approx(803.5714, abs=1e-4)
    assert markovian_mean_interarrival() == pytest.approx(7200 * (1 - 0.65**64) / 0.35 / 25.6)


def test_capped_geometric_mean_small_caps():
    assert capped_geometric_mean(0.35, 1) == 1.0
    assert capped_geometric_mean(0.5, 2) == pytest.approx(1.5)  # 1*0.5 + 2*0.5
    res = np.minimum(np.random.default_rng(0).geometric(0.2, 200_000), 4)
    assert res.mean() == pytest.approx(capped_geometric_mean(0.2, 4), rel=0.01)


def test_defaults_and_metadata():
    w = markovian(50)
    assert len(w) == 50 and w.max_nodes == 64
    assert [j.id for j in w.jobs] == list(range(50))
    assert [j.name for j in w.jobs] == [str(k) for k in range(1, 51)]
    assert all(j.user_id == 0 for j in w.jobs)
    assert w.jobs[0].submit_s > 0
    assert all(a.submit_s <= b.submit_s for a, b in zip(w.jobs, w.jobs[1:], strict=False))
    assert "seed=43" in w.source
    assert any("803.571" in n for n in w.notes)


def test_deterministic_and_no_global_state():
    before = np.random.get_state()[1].copy()
    a, b = markovian(200, seed=5), markovian(200, seed=5)
    assert a.jobs == b.jobs
    assert markovian(200, seed=6).jobs != a.jobs
    assert np.array_equal(np.random.get_state()[1], before)
    rng = np.random.default_rng(5)
    assert markovian(200, seed=rng).jobs == a.jobs
    assert markovian(200, seed=rng).jobs != a.jobs  # the caller's generator advanced


def test_seed_43_reproduces_the_paper_file(paper):
    """Same draw order as the paper's generator: seed 43 gives its file (to rounding)."""
    mine = columns(markovian(3000, seed=43))
    assert np.array_equal(mine["res"], paper["res"])
    assert np.array_equal(mine["runtime"], paper["runtime"])
    assert np.array_equal(mine["reqtime"], paper["reqtime"])
    assert np.allclose(np.cumsum(mine["interarrival"]), np.cumsum(paper["interarrival"]), rtol=1e-9)


def test_statistics_match_the_paper_workload(paper):
    """Another seed: same distributions as the shipped file (two-sample KS, moments)."""
    mine = columns(markovian(3000, seed=2024))
    for key in ("interarrival", "runtime", "reqtime"):
        assert stats.ks_2samp(mine[key], paper[key]).pvalue > 0.01, key
    # Means against the model, within 4 standard errors (exponential: sd = mean).
    n = 3000
    for key, mean in (("interarrival", 803.5714), ("runtime", 7200.0), ("reqtime", 8640.0)):
        for sample in (mine[key], paper[key]):
            assert abs(sample.mean() - mean) < 4 * mean / np.sqrt(n), key
    # Node requests: same geometric shape (chi-square on 1, 2, 3, 4, >= 5).
    bins = [1, 2, 3, 4, 5, 65]
    table = np.array([np.histogram(x, bins=bins)[0] for x in (mine["res"], paper["res"])])
    assert stats.chi2_contingency(table).pvalue > 0.01
    assert mine["res"].mean() == pytest.approx(1 / 0.35, rel=0.05)
    # Requested time independent of runtime.
    assert abs(stats.spearmanr(mine["runtime"], mine["reqtime"]).statistic) < 0.06
    # Offered load close to the 40 % target.
    load = mine["res"].mean() * mine["runtime"].mean() / (64 * mine["interarrival"].mean())
    assert load == pytest.approx(0.40, abs=0.05)


def test_times_are_not_rounded():
    w = markovian(100, seed=1)
    assert any(j.runtime_s != round(j.runtime_s) for j in w.jobs)


def test_requests_capped_at_node_count():
    w = markovian(2000, nodes=3, p_geometric=0.2, seed=3)
    res = np.array([j.res for j in w.jobs])
    assert res.max() == 3 and res.min() == 1
    assert w.max_nodes == 3


def test_explicit_pmf():
    w = markovian(4000, nodes=8, res_pmf=[0, 1, 0, 3], seed=9)
    res = np.array([j.res for j in w.jobs])
    assert set(res.tolist()) == {2, 4}
    assert (res == 4).mean() == pytest.approx(0.75, abs=0.03)
    mean_ia = markovian_mean_interarrival(nodes=8, mean_res=3.5)
    assert any(f"{mean_ia:.6g}" in n for n in w.notes)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_jobs": 0}, "n_jobs"),
        ({"nodes": 0}, "nodes"),
        ({"target_utilization": 0.0}, "target_utilization"),
        ({"target_utilization": 1.5}, "target_utilization"),
        ({"mean_runtime_s": -1.0}, "mean_runtime_s"),
        ({"mean_reqtime_s": 0.0}, "mean_reqtime_s"),
        ({"p_geometric": 0.0}, "p_geometric"),
        ({"seed": "x"}, "seed"),
        ({"res_pmf": [0.5] * 65}, "res_pmf"),
        ({"res_pmf": [-1, 2]}, "res_pmf"),
    ],
)
def test_bad_parameters(kwargs, match):
    args = {"n_jobs": 10, **kwargs}
    with pytest.raises(InputError, match=match):
        markovian(args.pop("n_jobs"), **args)
