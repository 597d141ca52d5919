"""Which form of the planning algorithms a run uses (``Simulation(kernels=...)``)."""

from __future__ import annotations

import pytest
from conftest import job, tiny_platform

from hpcpower import Simulation, load_platform, make_policy
from hpcpower.engine.simulation import AUTO_KERNELS_S, choose_kernels
from hpcpower.errors import InputError
from hpcpower.planning import _numba

needs_numba = pytest.mark.skipif(not _numba.AVAILABLE, reason="numba is not installed")


@pytest.fixture(autouse=True)
def _fresh_process(monkeypatch):
    """As in a process that has not loaded the twins yet (earlier tests may have)."""
    from hpcpower.planning import compiled

    monkeypatch.setattr(compiled, "_loaded", False)


@pytest.mark.parametrize(
    "policy,jobs,nodes,expected",
    [
        ("snf-ipm", 300, 64, "numpy"),  # the quickstart: never waits for the kernels
        ("fcfs-easy-ipm", 3000, 64, "numpy"),  # numpy path under a second
        ("fcfs-easy-ipm", 3000, 1152, "numba"),  # SDSC Blue's 3000 jobs: 4.4 s with numpy
        ("fcfs-easy-ipm", 39_356, 64, "numba"),  # the full DAS2-fs1 trace
        ("fcfs-easy", 3000, 1152, "numpy"),  # nobody reads the plan: 0.2 s with numpy
        ("fcfs-easy", 232_562, 1152, "numba"),  # the full SDSC Blue trace
        ("snf-icon", 3000, 64, "numpy"),  # the paper's cases: 0.7 s with numpy
        ("snf-icon", 3000, 1152, "numba"),  # SDSC Blue's 3000 jobs: 2.5 s with numpy
    ],
)
@needs_numba
def test_auto_uses_the_twins_only_when_the_numpy_path_is_long(policy, jobs, nodes, expected):
    assert choose_kernels("auto", make_policy(policy), jobs, nodes) == expected


@needs_numba
def test_auto_uses_the_twins_for_every_run_once_the_process_has_loaded_them(monkeypatch):
    """Loading is what small runs avoid; once paid (a sweep's worker, a notebook), all gain."""
    from hpcpower.planning import compiled

    assert choose_kernels("auto", make_policy("snf-ipm"), 300, 64) == "numpy"
    monkeypatch.setattr(compiled, "_loaded", True)
    assert choose_kernels("auto", make_policy("snf-ipm"), 300, 64) == "numba"
    assert choose_kernels("numpy", make_policy("snf-ipm"), 300, 64) == "numpy"
    monkeypatch.setattr(_numba, "AVAILABLE", False)
    assert choose_kernels("auto", make_policy("snf-ipm"), 300, 64) == "numpy"


def test_auto_never_uses_the_twins_for_runs_it_expects_under_the_threshold():
    policy = make_policy("fcfs-easy-ipm")
    jobs = int(AUTO_KERNELS_S / policy.planning_cost_s) - 1
    assert choose_kernels("auto", policy, jobs, 64) == "numpy"


def test_without_numba_every_run_uses_numpy(monkeypatch):
    monkeypatch.setattr(_numba, "AVAILABLE", False)
    assert choose_kernels("auto", make_policy("fcfs-easy-ipm"), 10**6, 1152) == "numpy"
    with pytest.raises(InputError, match=r"kernels = 'numba' needs numba: pip install"):
        choose_kernels("numba", make_policy("fcfs-easy-ipm"), 10, 64)


def test_an_unknown_setting_names_the_accepted_ones():
    with pytest.raises(InputError, match=r"kernels must be 'auto', 'numba' or 'numpy', got 'fast'"):
        Simulation(tiny_platform(2), [job(0, 0, 1, 5)], make_policy("snf-ipm"), kernels="fast")


@pytest.mark.parametrize("setting", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_the_form_in_use_is_in_the_config_and_both_agree(setting):
    jobs = [job(i, 10.0 * i, 1 + i % 2, 100.0 + 7 * i) for i in range(12)]
    sim = Simulation(load_platform("aoba-64"), jobs, make_policy("fcfs-easy-ipm"), kernels=setting)
    results = sim.run()
    assert results.summary["config"]["kernels"] == setting
    assert sim.view.compiled is (setting == "numba")
    reference = Simulation(
        load_platform("aoba-64"), jobs, make_policy("fcfs-easy-ipm"), kernels="numpy"
    ).run()
    assert results.summary["total_energy_j"] == reference.summary["total_energy_j"]
    assert results.jobs["start_s"].tolist() == reference.jobs["start_s"].tolist()


@needs_numba
def test_a_numba_that_does_not_import_falls_back_or_names_the_fix(monkeypatch):
    from hpcpower.planning import compiled

    def broken() -> None:
        raise ImportError("numpy version clash")

    monkeypatch.setattr(compiled, "load", broken)
    jobs = [job(i, 0, 1, 5) for i in range(3)]
    policy = make_policy("fcfs-easy-ipm")
    monkeypatch.setattr(policy, "planning_cost_s", 10.0)  # auto would pick the twins
    assert Simulation(tiny_platform(2), jobs, policy).kernels == "numpy"
    with pytest.raises(
        InputError, match=r"numba is installed but does not import.*kernels = 'numpy'"
    ):
        Simulation(tiny_platform(2), jobs, make_policy("fcfs-easy-ipm"), kernels="numba")
