"""hpcpower.rl stays light: agents run as policies without gymnasium or torch.

Each check runs in a fresh interpreter where gymnasium, torch and
stable_baselines3 cannot be imported.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BLOCK = """
import sys

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("gymnasium", "torch", "stable_baselines3"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Blocked())
"""


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCK + textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_agents_run_as_policies_without_gymnasium_or_torch(tmp_path):
    agent = tmp_path / "keep-4.json"
    agent.write_text('{"format": "hpcpower-agent", "constant_action": 4}')
    done = run(
        f"""
        import hpcpower, hpcpower.rl
        from hpcpower import Simulation, load_platform, load_workload, make_policy
        workload = load_workload("scenarios/data/DAS2-fs1-0-3000.json.gz")
        workload.jobs = workload.jobs[:50]
        policy = make_policy("rl:{agent}")
        Simulation(load_platform("aoba-64"), workload, policy, kernels="numpy").run()
        print(hpcpower.rl.AgentPolicy.__name__)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "AgentPolicy"


def test_the_environment_names_the_extra_it_needs():
    done = run(
        """
        import hpcpower.rl
        try:
            hpcpower.rl.PowerEnv
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert 'pip install "hpcpower[rl]"' in done.stdout
