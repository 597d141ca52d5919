"""Sweep files are checked whole before any run, and expand into distinct runs."""

from __future__ import annotations

import pytest
from sweep_helpers import ROOT, SMOKE, write_sweep

from hpcpower.errors import InputError
from hpcpower.experiments.sweepfile import load_plan

BASE = """
[sweep]
scenario = "QUICKSTART"
seeds = [0, 1]

[grid]
policy.name = ["snf-ipm", "fcfs-easy-ipm"]
"""


def test_the_smoke_sweep_expands_to_its_grid_times_its_seeds():
    plan = load_plan(SMOKE)
    assert plan.name == "smoke"
    assert len(plan.runs) == 3 * 2 * 3
    (study,) = plan.studies
    assert study.axes == ["policy.name", "policy.timeout_s"]
    assert study.seeds == [0, 1, 2]
    assert study.cases == ["quickstart"]
    assert study.reference == ["fcfs-easy-ipm"]
    first = plan.runs[0]
    assert first.config["simulation"]["seed"] == 0
    assert first.config["workload"]["seed"] == 0  # a seed sets the generator's seed too
    assert first.labels[0].axes == {"policy.name": "fcfs-easy-ipm", "policy.timeout_s": 1800}


def test_dotted_and_nested_keys_are_the_same_setting(tmp_path):
    nested = load_plan(write_sweep(tmp_path, BASE, "a.toml"))
    dotted = load_plan(
        write_sweep(tmp_path, BASE.replace("policy.name", '"policy.name"'), "b.toml")
    )
    assert [r.run_id for r in nested.runs] == [r.run_id for r in dotted.runs]


def test_the_same_configuration_asked_twice_is_one_run(tmp_path):
    # alpha = 5000 is SNF-ICON's default: the two cases are the same run.
    path = write_sweep(
        tmp_path,
        """
        [sweep]
        scenario = "QUICKSTART"
        [set]
        policy.name = "snf-icon"
        [[case]]
        name = "default"
        [[case]]
        name = "explicit"
        policy.alpha = 5000
        """,
    )
    plan = load_plan(path)
    assert len(plan.runs) == 1
    assert [label.case for label in plan.runs[0].labels] == ["default", "explicit"]


def test_includes_add_studies_and_share_runs(tmp_path):
    write_sweep(tmp_path, BASE, "one.toml")
    write_sweep(tmp_path, BASE.replace("[sweep]", '[sweep]\nname = "two"'), "two.toml")
    top = tmp_path / "all.toml"
    top.write_text('[sweep]\nname = "all"\ninclude = ["one.toml", "two.toml"]\n')
    plan = load_plan(top)
    assert [s.name for s in plan.studies] == ["one", "two"]
    assert len(plan.runs) == 4
    assert all([lb.study for lb in run.labels] == ["one", "two"] for run in plan.runs)


def test_the_paper_sweep_is_valid():
    plan = load_plan(ROOT / "scenarios" / "sweeps" / "paper.toml")
    names = [s.name for s in plan.studies]
    assert names == [
        "main",
        "cross-platform",
        "alpha",
        "tm",
        "timeouts",
        "main-replications",
        "markovian-generated",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BASE + "policy.timout_s = [1, 2]\n", "policy 'snf-ipm' has no setting policy.timout_s"),
        (BASE + "simulation.sed = [1]\n", "unknown setting 'simulation.sed'"),
        (BASE + 'policy.timeout_s = ["soon"]\n', "setting policy.timeout_s: expected a number"),
        (BASE + "policy.timeout_s = 600\n", "[grid] policy.timeout_s: expected a non-empty list"),
        (BASE + "policy.timeout_s = []\n", "[grid] policy.timeout_s: expected a non-empty list"),
        (BASE.replace('"snf-ipm"', '"snf-fast"'), "unknown policy 'snf-fast'"),
        (BASE + '[reprot]\nreference = "snf-ipm"\n', "unknown table or key 'reprot'"),
        (
            BASE + '[report]\nreference = ["fcfs-easy-ipmm"]\n',
            "[report] reference: 'fcfs-easy-ipmm' is not a policy of this sweep "
            "(its policies: snf-ipm, fcfs-easy-ipm)",
        ),
        (
            BASE.replace('policy.name = ["snf-ipm", "fcfs-easy-ipm"]', "policy.timeout_s = [1, 2]")
            + '[report]\nreference = "snf-ipm"\n',
            "'snf-ipm' is not a policy of this sweep (its [grid] has no policy.name)",
        ),
        (BASE + "[report]\nreference = [1]\n", "[report] reference: expected a list of policy"),
        (BASE.replace("seeds = [0, 1]", "seeds = [0, -1]"), "seeds: expected a list of whole"),
        (BASE.replace("seeds = [0, 1]", "seeds = [1, 1]"), "seeds: a seed is listed twice"),
        (BASE.replace("seeds = [0, 1]", "sedes = [1]"), "[sweep]: unknown key 'sedes'"),
        (BASE + "simulation.seed = [3]\n", "simulation.seed is set by [sweep] seeds"),
        (BASE + "[set]\nplatform.name = 'aoba-65'\n", "aoba-65"),
        (BASE + "[set]\nworkload.path = 'nowhere.swf'\n", "no such file"),
        (BASE + "[set]\npolicy.name = 'snf'\n", "policy.name is in both [set] and [grid]"),
        (BASE + "[set]\ntimeout = 5\n", "'timeout' is not a setting"),
        ("[grid]\npolicy.name = ['snf']\n", "no scenario"),
        ("[sweep]\nname = 'x'\n", "give [sweep] scenario"),
        ("[sweep\n", "not valid TOML"),
    ],
)
def test_a_malformed_sweep_file_is_an_error_naming_the_key(tmp_path, text, message):
    path = write_sweep(tmp_path, text)
    with pytest.raises(InputError) as caught:
        load_plan(path)
    assert message in str(caught.value)
    if "TOML" not in message:
        assert str(path) in str(caught.value)


def test_an_include_circle_is_an_error(tmp_path):
    (tmp_path / "a.toml").write_text('[sweep]\ninclude = ["b.toml"]\n')
    (tmp_path / "b.toml").write_text('[sweep]\ninclude = ["a.toml"]\n')
    with pytest.raises(InputError, match="includes itself"):
        load_plan(tmp_path / "a.toml")


def test_a_sweep_can_be_given_as_a_dict(monkeypatch):
    monkeypatch.chdir(ROOT)
    plan = load_plan(
        {
            "sweep": {"scenario": "scenarios/quickstart.toml", "seeds": [3]},
            "grid": {"policy.name": ["snf-ipm"]},
        }
    )
    assert len(plan.runs) == 1
    assert plan.runs[0].config["simulation"]["seed"] == 3
