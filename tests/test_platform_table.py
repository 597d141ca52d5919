"""Small presets and the ``[platform]`` table that describes a uniform cluster directly."""

from __future__ import annotations

import importlib.resources
import json

import pytest

from hpcpower import Simulation, load_platform
from hpcpower.errors import InputError
from hpcpower.platform import PRESETS, Duration
from hpcpower.scenario import resolve

WATTS = (
    "watts = {sleeping = 10, switching_on = 150, idle = 100, computing = 200, switching_off = 150}"
)
UNIFORM = f"[platform]\nnodes = 2\n{WATTS}\nswitch_on_s = 60\nswitch_off_s = 30\n"
# Job 1 (1 node, 100 s) starts at once; job 2 (2 nodes, 50 s) arrives at 300 s,
# when both nodes sleep, and waits for their 60 s switch-on.
TWO_JOBS = {
    "nb_res": 2,
    "jobs": [
        {"job_id": 1, "res": 1, "subtime": 0, "reqtime": 100, "runtime": 100},
        {"job_id": 2, "res": 2, "subtime": 300, "reqtime": 50, "runtime": 50},
    ],
}
REST = '[workload]\npath = "two.json"\n\n[policy]\nname = "snf-ipm"\ntimeout_s = 60\n'


@pytest.fixture
def scenario(tmp_path):
    """Write a scenario with the given ``[platform]`` table and the two-job workload."""
    (tmp_path / "two.json").write_text(json.dumps(TWO_JOBS))

    def write(platform: str = UNIFORM):
        path = tmp_path / "s.toml"
        path.write_text(platform + "\n" + REST)
        return path

    return write


def test_every_platform_file_is_a_preset_and_loads():
    shipped = {
        f.name.removesuffix(".json")
        for f in (importlib.resources.files("hpcpower") / "platforms").iterdir()
        if f.name.endswith(".json")
    }
    assert shipped == set(PRESETS)
    for name in PRESETS:
        assert load_platform(name).n_nodes == int(name.rsplit("-", 1)[1])


def test_the_toy_presets_are_round_numbers_and_fixed_durations():
    for name, n in (("toy-4", 4), ("toy-8", 8)):
        p = load_platform(name)
        (t,) = p.node_types
        assert p.n_nodes == n
        assert t.power_w == (10.0, 150.0, 100.0, 200.0, 150.0)
        assert (t.switch_on, t.switch_off) == (Duration(60.0, 0.0), Duration(30.0, 0.0))


@pytest.mark.parametrize("model", ["aoba", "taurus"])
def test_the_8_node_models_are_the_64_node_ones_with_fewer_nodes(model):
    small, large = load_platform(f"{model}-8"), load_platform(f"{model}-64")
    assert small.n_nodes == 8
    assert small.node_types == large.node_types


def test_a_two_job_run_on_a_uniform_table_costs_the_joules_computed_by_hand(scenario):
    # Node 0: computes 0-100, idle 100-160, switches off 160-190, sleeps
    # 190-300, switches on 300-360, computes 360-410.
    # Node 1: idle 0-60, switches off 60-90, sleeps 90-300, switches on
    # 300-360, computes 360-410.
    results = Simulation.from_scenario(scenario()).run()
    s = results.summary
    assert s["energy_j"] == {
        "sleeping": 110 * 10 + 210 * 10,
        "switching_on": 2 * 60 * 150,
        "idle": 60 * 100 + 60 * 100,
        "computing": (100 + 50 + 50) * 200,
        "switching_off": 2 * 30 * 150,
    }
    assert s["total_energy_j"] == 82_200
    assert s["wasted_energy_j"] == 42_200
    assert s["mean_wait_s"] == 30.0  # job 2 waits the 60 s switch-on
    assert s["simulated_span_s"] == 410.0
    assert s["config"]["platform"] == "uniform" and s["config"]["n_nodes"] == 2
    assert s["config"]["scenario"]["platform"]["watts"]["idle"] == 100.0


def test_a_uniform_table_is_the_same_cluster_as_platform_uniform(scenario):
    sim = Simulation.from_scenario(scenario(UNIFORM + 'name = "lab"\nswitch_on_std_s = 6\n'))
    (t,) = sim.platform.node_types
    assert (sim.platform.name, sim.platform.n_nodes) == ("lab", 2)
    assert t.power_w == (10.0, 150.0, 100.0, 200.0, 150.0)
    assert (t.switch_on, t.switch_off) == (Duration(60.0, 6.0), Duration(30.0, 0.0))


def test_a_preset_scenario_resolves_as_before(scenario):
    assert resolve(scenario('[platform]\nname = "toy-4"\n'))["platform"] == {"name": "toy-4"}


def test_overrides_change_one_watt_or_replace_the_table(scenario):
    path = scenario()
    table = resolve(path, {"platform.watts.idle": 50})["platform"]
    assert table["watts"]["idle"] == 50.0 and table["name"] == "uniform"
    assert resolve(path, {"platform.name": "toy-8"})["platform"] == {"name": "toy-8"}
    assert resolve(path, {"platform.nodes": 4})["platform"]["nodes"] == 4
    sim = Simulation.from_scenario(path, platform__nodes=3)
    assert sim.platform.n_nodes == 3


@pytest.mark.parametrize(
    "table, message",
    [
        (UNIFORM.replace("idle = 100", "idle = -5"), "platform.watts.idle: expected a number >= 0"),
        (UNIFORM.replace("idle = 100", 'idle = "x"'), "platform.watts.idle: expected a number"),
        (UNIFORM.replace("idle = 100, ", ""), "platform.watts.idle: missing"),
        (UNIFORM.replace("idle = 100", "idel = 100"), "platform.watts.idel: not a power state"),
        (UNIFORM.replace("nodes = 2", "nodes = 0"), "platform.nodes: expected a whole number >= 1"),
        (UNIFORM.replace("nodes = 2", "nodes = 2.5"), "platform.nodes: expected a whole number"),
        (
            UNIFORM.replace("nodes = 2", "nodes = 10_000_000"),
            "platform.nodes: at most 1,000,000, got 10,000,000",
        ),
        (UNIFORM.replace("switch_on_s = 60", "switch_on_s = -1"), "platform.switch_on_s: expected"),
        (UNIFORM.replace("switch_off_s = 30\n", ""), "platform.switch_off_s: missing"),
        (UNIFORM + "switch_off_std_s = true\n", "platform.switch_off_std_s: expected a number"),
        (UNIFORM.replace("nodes = 2\n", ""), "platform.watts: only with platform.nodes"),
        (UNIFORM + 'name = "aoba-64"\n', "platform.name: 'aoba-64' is a preset"),
        (UNIFORM.replace(WATTS, "watts = 5"), "platform.watts: expected a table"),
        ("[platform]\nnode = 2\n", "unknown setting 'platform.node'"),
    ],
)
def test_a_bad_uniform_table_is_one_line_naming_the_key(scenario, table, message):
    with pytest.raises(InputError) as caught:
        resolve(scenario(table))
    text = str(caught.value)
    assert message in text and "\n" not in text


def test_the_command_line_runs_a_uniform_table(scenario, tmp_path, capsys):
    from hpcpower.cli import main

    code = main(["run", str(scenario()), "--out", str(tmp_path / "out"), "-q"])
    assert code == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["total_energy_j"] == 82_200


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda m: m.__setitem__("id", ["0-999999999999"]),
            "machines[0].id[0]: range '0-999999999999' makes more than 1,000,000 nodes",
        ),
        (
            lambda m: m["dvfs_profiles"]["base"].__setitem__("power_idle", -3),
            "machines[0].dvfs_profiles.base.power_idle: must not be negative, got -3",
        ),
        (
            lambda m: m["dvfs_profiles"]["base"].__setitem__("compute_speed", "x"),
            "machines[0].dvfs_profiles.base.compute_speed: expected a number, got 'x'",
        ),
    ],
)
def test_a_bad_platform_file_names_the_whole_key(tmp_path, change, message):
    import importlib.resources
    import json

    from hpcpower import load_platform

    preset = importlib.resources.files("hpcpower") / "platforms" / "toy-4.json"
    data = json.loads(preset.read_text())
    change(data["machines"][0])
    (tmp_path / "p.json").write_text(json.dumps(data))
    with pytest.raises(InputError) as caught:
        load_platform(str(tmp_path / "p.json"))
    assert str(caught.value) == f"{tmp_path / 'p.json'}: {message}"
