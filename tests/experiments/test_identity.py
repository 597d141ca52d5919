"""A run's id comes from its full configuration, the same in every process and checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from sweep_helpers import QUICKSTART, ROOT, SMOKE

from hpcpower.experiments.identity import RUN_ID_DIGITS, canonical, run_id
from hpcpower.experiments.sweepfile import load_plan
from hpcpower.policies.registry import make_policy
from hpcpower.scenario import resolve

PRINT_IDS = (
    "import json, sys\n"
    "from hpcpower.experiments.sweepfile import load_plan\n"
    "print(json.dumps([r.run_id for r in load_plan(sys.argv[1]).runs]))\n"
)


def ids_in_a_new_process(hash_seed: str) -> list[str]:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", PRINT_IDS, str(SMOKE)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    return json.loads(done.stdout)


def test_run_ids_are_the_same_in_other_processes_and_under_other_hash_seeds():
    here = [r.run_id for r in load_plan(SMOKE).runs]
    assert len(set(here)) == len(here)
    assert all(len(i) == RUN_ID_DIGITS and int(i, 16) >= 0 for i in here)
    assert ids_in_a_new_process("0") == here
    assert ids_in_a_new_process("12345") == here


def identity(overrides: dict, path=QUICKSTART) -> dict:
    config = resolve(path, overrides)
    params = {k: v for k, v in config["policy"].items() if k != "name"}
    return canonical(config, make_policy(config["policy"]["name"], **params).config())


def test_the_id_ignores_labels_and_the_kernels_but_not_settings():
    base = run_id(identity({}))
    assert run_id(identity({"simulation.name": "other"})) == base
    assert run_id(identity({"simulation.kernels": "numpy"})) == base
    assert run_id(identity({"simulation.seed": 1})) != base
    assert run_id(identity({"policy.timeout_s": 3600})) != base
    assert run_id(identity({"policy.timeout_s": 7200})) == base  # the scenario's own value


def test_the_id_knows_a_workload_by_its_bytes_not_its_path(tmp_path):
    trace = ROOT / "scenarios" / "data" / "DAS2-fs1-0-3000.json.gz"
    copy = tmp_path / "elsewhere.json.gz"
    shutil.copy(trace, copy)
    assert run_id(identity({"workload.path": str(copy)})) == run_id(identity({}))
    copy.write_bytes(copy.read_bytes() + b"\0")
    assert run_id(identity({"workload.path": str(copy)})) != run_id(identity({}))


def test_the_id_is_the_sha256_of_the_canonical_json():
    import hashlib

    ident = identity({})
    text = json.dumps(ident, sort_keys=True, separators=(",", ":"))
    assert run_id(ident) == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert "path" not in ident["workload"] and "sha256" in ident["workload"]
    assert ident["policy"]["timeout_s"] == 7200.0 and ident["policy"]["name"] == "snf-ipm"
