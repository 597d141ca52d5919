"""Light parts stay light: they import without SimPy, numba or the engine.

``import hpcpower`` loads only what it must; the public names are looked up
when first used. The workload readers, the platform, the states and the
pieces of SNF-ICON (screen, estimators, runtime model, next event, spares,
gate, config) import even where SimPy and numba cannot be imported. Each check
runs in a fresh interpreter, so modules loaded by other tests do not count.
See docs/background/architecture.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Modules that must import with SimPy and numba missing.
LIGHT = (
    "hpcpower",
    "hpcpower.workload",
    "hpcpower.platform",
    "hpcpower.states",
    "hpcpower.policies.icon.screen",
    "hpcpower.policies.icon.estimators",
    "hpcpower.policies.icon.runtime",
    "hpcpower.policies.icon.next_event",
    "hpcpower.policies.icon.spares",
    "hpcpower.policies.icon.gate",
    "hpcpower.policies.icon.config",
    "hpcpower.experiments",
)

#: Makes simpy and numba (and their submodules) impossible to import.
BLOCK = """
import sys

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("simpy", "numba"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Blocked())
"""

#: Exits with a message on stderr if the engine, simpy or numba was loaded.
CHECK_LOADED = """
import sys

loaded = sorted(
    name for name in sys.modules
    if name.partition(".")[0] in ("simpy", "numba")
    or name == "hpcpower.engine" or name.startswith("hpcpower.engine.")
)
if loaded:
    sys.exit("loaded: " + ", ".join(loaded))
"""


def run(code: str) -> tuple[int, str, str]:
    """Run ``code`` in a fresh interpreter from the repository root."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("module", LIGHT, ids=LIGHT)
def test_imports_without_simpy_numba_or_engine(module):
    code, _, err = run(f"{BLOCK}\nimport {module}\n{CHECK_LOADED}")
    assert code == 0, f"import {module} with simpy and numba blocked:\n{err}"


def test_import_hpcpower_is_light_and_exports_are_lazy():
    code, out, err = run(
        """
        import sys

        import hpcpower

        heavy = ("simpy", "numba", "matplotlib", "hpcpower.engine")
        loaded = [name for name in heavy if name in sys.modules]
        if loaded:
            sys.exit("import hpcpower loaded: " + ", ".join(loaded))

        Simulation = hpcpower.Simulation
        from hpcpower import Simulation as Engine

        assert Simulation is Engine, Simulation
        print("ok")
        """
    )
    assert code == 0, err
    assert out.strip() == "ok"


def test_every_public_name_resolves():
    code, _, err = run(
        """
        import hpcpower

        missing = [name for name in hpcpower.__all__ if not hasattr(hpcpower, name)]
        assert not missing, missing
        """
    )
    assert code == 0, err


def test_submodules_are_reachable_as_attributes_after_a_bare_import():
    code, _, err = run(
        """
        import hpcpower

        assert hpcpower.platform.PRESETS
        assert hpcpower.workload.load_workload
        assert hpcpower.errors.InputError
        assert "engine" in dir(hpcpower) and "Simulation" in dir(hpcpower)
        """
    )
    assert code == 0, err


def test_sweeps_load_pandas_pyarrow_and_dask_only_when_used():
    code, out, err = run(
        """
        import sys

        import hpcpower
        import hpcpower.experiments

        sweep = hpcpower.sweep
        heavy = ("pandas", "pyarrow", "dask", "distributed", "matplotlib", "simpy")
        loaded = [name for name in heavy if name in sys.modules]
        if loaded:
            sys.exit("loaded: " + ", ".join(loaded))
        from hpcpower.experiments import sweep as same

        assert sweep is same
        print("ok")
        """
    )
    assert code == 0, err
    assert out.strip() == "ok"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: numpy's pool is one thread anyway")
def test_the_command_keeps_numpys_thread_pool_to_one_thread():
    # OpenBLAS starts a thread per core when numpy is imported; the command
    # sets the pools' size before anything imports numpy (see cli.one_thread_pools).
    code, out, err = run(
        """
        import os
        import sys

        from hpcpower.cli import ONE_THREAD, main

        for name in ONE_THREAD:
            os.environ.pop(name, None)
        assert "numpy" not in sys.modules, "hpcpower.cli imports numpy at its top"
        assert main(["platforms"]) == 0
        import numpy

        print(len(os.listdir("/proc/self/task")), os.environ["OPENBLAS_NUM_THREADS"])
        """
    )
    assert code == 0, err
    assert out.split()[-2:] == ["1", "1"]
