"""Twins built ahead of time: the numpy forms' results, no numba import, guarded types.

One build per test session (in a fresh process, as ``hpcpower build-kernels``
does, with a shorter workout), into a folder of its own; the runs that bind
it run in fresh processes too, so that this process keeps numba's twins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from hpcpower import make_policy
from hpcpower.cli import main
from hpcpower.engine.simulation import choose_kernels
from hpcpower.planning import _numba, aot, compiled

needs_numba = pytest.mark.skipif(not _numba.AVAILABLE, reason="numba is not installed")

#: Two short runs that call most twins: SNF-ICON on 64 nodes, FCFS/B+IPM on 1152.
CASES = [("snf-icon", "aoba-64", 0.35, 0.8), ("fcfs-easy-ipm", "aoba-1152", 0.35, 0.8)]

RUNS = """
import hashlib, json, sys
from hpcpower import Simulation, load_platform, make_policy
from hpcpower.workload.generate import markovian

def runs(kernels):
    out = []
    for policy, platform, p, load in {cases!r}:
        platform = load_platform(platform)
        n = platform.n_nodes
        jobs = markovian(200, nodes=n, p_geometric=p, target_utilization=load, seed=7)
        sim = Simulation(platform, jobs, make_policy(policy), seed=42, kernels=kernels)
        sim.run()
        digest = hashlib.sha1()
        for array in (sim.start_s, sim.finish_s, sim.cluster.time_in_state_s):
            digest.update(array.tobytes())
        digest.update(repr(list(sim.decisions)).encode())
        out.append((sim.kernels, digest.hexdigest()))
    return out
"""


def _python(code: str, twins_dir: Path) -> str:
    env = {**os.environ, "HPCPOWER_TWINS_DIR": str(twins_dir)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A folder holding twins built ahead of time for the workout of :data:`CASES`."""
    pytest.importorskip("numba")
    folder = tmp_path_factory.mktemp("twins")
    stale = [folder / f"hpcpower_twins_{'0' * 20}{aot._SUFFIX}", folder / "notes.txt"]
    stale.append(stale[0].with_name(stale[0].name + ".json"))
    for path in stale:
        path.write_text("")
    code = RUNS.format(cases=CASES) + textwrap.dedent(
        """
        from pathlib import Path
        from hpcpower.planning import compiled
        compiled.build(lambda: runs("numba"), Path(sys.argv[1]))
        """
    )
    env = {**os.environ, "HPCPOWER_TWINS_DIR": str(folder)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    # A build from other sources goes; anything else stays.
    assert [path.exists() for path in stale] == [False, True, False]
    return folder


@needs_numba
def test_built_twins_give_the_numpy_results_without_importing_numba(built):
    numpy_runs = json.loads(
        _python(RUNS.format(cases=CASES) + "print(json.dumps(runs('numpy')))", built)
    )
    code = RUNS.format(cases=CASES) + textwrap.dedent(
        """
        from hpcpower.planning import aot, compiled
        result = runs("auto")
        print(json.dumps([result, compiled.form(), "numba" in sys.modules, aot.fallbacks]))
        """
    )
    runs, form, numba_imported, fallbacks = json.loads(_python(code, built))
    assert [kernels for kernels, _ in numpy_runs] == ["numpy", "numpy"]
    # "auto" takes the built twins even for runs this short; the same bits.
    assert [kernels for kernels, _ in runs] == ["numba", "numba"]
    assert [digest for _, digest in runs] == [digest for _, digest in numpy_runs]
    assert form == "ahead of time"
    assert not numba_imported
    assert fallbacks == {}


@needs_numba
def test_a_call_with_other_types_runs_the_python_twin(built):
    code = textwrap.dedent(
        """
        import json
        import numpy as np
        from hpcpower.planning import aot, compiled, markov
        compiled.load()
        values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0]
        floats = markov.small_stats(np.array(values), 2.0, False, 96)
        # int64 samples: not a type the twin was built for (built code would
        # read their bits as floats), so the Python twin runs.
        ints = markov.small_stats(np.array([3, 1, 4, 1, 5, 9]), 2.0, False, 96)
        python = markov.small_stats.__wrapped__(np.array(values), 2.0, False, 96)
        as_floats = lambda stats: [float(x) for x in stats]  # (numpy or Python scalars)
        print(json.dumps([as_floats(floats), as_floats(ints), as_floats(python), aot.fallbacks]))
        """
    )
    floats, ints, python, fallbacks = json.loads(_python(code, built))
    assert floats == python == ints
    # (The Python twin's own calls of helpers built too fall back as well.)
    assert fallbacks["hpcpower.planning.markov.small_stats"] == 1
    assert all(name.startswith("hpcpower.planning.markov.") for name in fallbacks)


@needs_numba
def test_twins_built_from_other_sources_are_not_bound(built, monkeypatch):
    monkeypatch.setenv("HPCPOWER_TWINS_DIR", str(built))
    here = compiled.sources_digest()
    assert aot.available(here)
    assert not aot.available("0" * 64)
    assert aot.bind("0" * 64, _numba._TWINS) is False
    # The manifest names the sources it was built from, and what each twin was built for.
    manifest = json.loads(aot.paths(here)[1].read_text())
    assert manifest["digest"] == here
    assert manifest["cpu"] == aot.host_key()  # (built for this processor)
    # (The workout's plans are read by IPM's wakes: forward_plan itself is
    # called from Python only in passes it lacks: expired nodes, explanations,
    # a whole plan read.)
    assert "hpcpower.planning.forward.forward_wakes" in manifest["functions"]


@needs_numba
def test_a_manifest_naming_functions_the_module_lacks_binds_nothing(built, tmp_path, monkeypatch):
    here = compiled.sources_digest()
    module, manifest = aot.paths(here, built)
    copy_module, copy_manifest = aot.paths(here, tmp_path)
    copy_module.write_bytes(module.read_bytes())
    listed = json.loads(manifest.read_text())
    listed["functions"]["hpcpower.planning.markov.small_stats"][0][0] = "not_built__0"
    copy_manifest.write_text(json.dumps(listed))
    monkeypatch.setenv("HPCPOWER_TWINS_DIR", str(tmp_path))
    from hpcpower.planning import markov

    before = markov.small_stats
    assert aot.bind(here, _numba._TWINS) is False
    assert markov.small_stats is before


@needs_numba
def test_twins_built_against_another_numpy_are_not_bound(built, tmp_path, monkeypatch):
    here = compiled.sources_digest()
    module, manifest = aot.paths(here, built)
    copy_module, copy_manifest = aot.paths(here, tmp_path)
    copy_module.write_bytes(module.read_bytes())
    listed = json.loads(manifest.read_text())
    assert listed["numpy"] == np.__version__
    listed["numpy"] = "1.0.0"
    copy_manifest.write_text(json.dumps(listed))
    monkeypatch.setenv("HPCPOWER_TWINS_DIR", str(tmp_path))
    assert not aot.available(here)
    assert aot.bind(here, _numba._TWINS) is False


@needs_numba
def test_twins_built_for_another_processor_are_not_bound_and_portable_ones_are(built, tmp_path):
    here = compiled.sources_digest()
    module, manifest = aot.paths(here, built)
    copy_module, copy_manifest = aot.paths(here, tmp_path)
    copy_module.write_bytes(module.read_bytes())
    listed = json.loads(manifest.read_text())
    code = textwrap.dedent(
        """
        import json
        from hpcpower.planning import aot, compiled
        here = compiled.sources_digest()
        print(json.dumps([aot.available(here), aot.bind(here, compiled._TWINS)]))
        """
    )
    listed["cpu"] = "0" * 16
    copy_manifest.write_text(json.dumps(listed))
    assert json.loads(_python(code, tmp_path)) == [False, False]
    # A portable build names no processor and binds on any. (This one was
    # built for this processor, which runs it; the manifest is what is read.)
    listed["cpu"] = None
    copy_manifest.write_text(json.dumps(listed))
    assert json.loads(_python(code, tmp_path)) == [True, True]


def test_the_host_key_reads_the_processor_model_and_flags(tmp_path, monkeypatch, request):
    request.addfinalizer(aot.host_key.cache_clear)  # (this processor's key again afterwards)

    def key(text: str | None) -> str | None:
        path = tmp_path / "cpuinfo"
        path.unlink(missing_ok=True)
        if text is not None:
            path.write_text(text)
        monkeypatch.setattr(aot, "CPUINFO", str(path))
        aot.host_key.cache_clear()
        return aot.host_key()

    first = "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: sse2 avx2 fma\n\n"
    second = "processor\t: 1\nmodel name\t: Other CPU\nflags\t\t: sse2\n"
    base = key(first + second)
    assert base is not None and len(base) == 16
    assert key(first) == base  # (the first processor only)
    assert key(first.replace("sse2 avx2 fma", "fma sse2 avx2")) == base
    assert key(first.replace(" avx2", "")) != base
    assert key(first.replace("Some", "Another")) != base
    assert key("processor\t: 0\nFeatures\t: fp asimd\n") is not None  # (Arm)
    assert key("processor\t: 0\n") is None
    assert key(None) is None


def test_build_kernels_passes_portable_on(monkeypatch, tmp_path):
    asked: list[bool] = []

    def fake_build(workout, where, *, portable, say):
        asked.append(portable)
        return tmp_path / "twins.so"

    monkeypatch.setattr(_numba, "AVAILABLE", True)
    monkeypatch.setattr(compiled, "build", fake_build)
    assert main(["build-kernels", "-q"]) == 0
    assert main(["build-kernels", "-q", "--portable"]) == 0
    assert asked == [False, True]


def test_the_guards_compare_dtypes_dimensions_layout_scalars_and_tuples():
    check = aot._guard(
        [
            ["float"],
            ["int"],
            ["bool"],
            ["array", "float64", 1],
            ["tuple", [["array", "int8", 1], ["int"]]],
        ]
    )
    a = np.zeros(4)
    states = np.zeros(3, dtype=np.int8)
    assert check(1.5, 2, True, a, (states, 3))
    assert check(np.float64(1.5), np.int64(2), np.bool_(True), a, (states, np.int64(3)))
    assert not check(1, 2, True, a, (states, 3))  # an int for a float
    assert not check(1.5, True, True, a, (states, 3))  # a bool for an int
    assert not check(1.5, 2, 1, a, (states, 3))  # an int for a bool
    assert not check(1.5, 2, True, a.astype(np.float32), (states, 3))
    assert not check(1.5, 2, True, a.reshape(2, 2), (states, 3))
    assert not check(1.5, 2, True, np.zeros(8)[::2], (states, 3))  # not contiguous
    assert not check(1.5, 2, True, list(a), (states, 3))
    assert not check(1.5, 2, True, a, (states,))
    assert not check(1.5, 2, True, a, [states, 3])
    assert not check(1.5, 2, True, a, (states.astype(np.int64), 3))
    assert not check(1.5, 2, True, a)
    # A type the manifest cannot express never matches.
    assert not aot._guard([["other", "float32"]])(np.float32(1.0))


def test_without_built_twins_or_numba_the_twins_cannot_be_asked_for(monkeypatch, tmp_path):
    monkeypatch.setenv("HPCPOWER_TWINS_DIR", str(tmp_path))
    monkeypatch.setattr(_numba, "AVAILABLE", False)
    assert not compiled.available()
    assert choose_kernels("auto", make_policy("snf-icon"), 10**6, 1152) == "numpy"


def test_built_twins_are_used_by_auto_even_for_a_short_run(monkeypatch):
    monkeypatch.setattr(compiled, "built", lambda: True)
    monkeypatch.setattr(compiled, "available", lambda: True)
    monkeypatch.setattr(_numba, "AVAILABLE", False)
    assert choose_kernels("auto", make_policy("snf-ipm"), 10, 64) == "numba"
    assert choose_kernels("numba", make_policy("snf-ipm"), 10, 64) == "numba"


def test_building_without_numba_names_the_fix(monkeypatch, capsys):
    monkeypatch.setattr(_numba, "AVAILABLE", False)
    assert main(["build-kernels", "--out", "unused"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        'hpcpower: error: build-kernels needs numba: pip install "hpcpower[fast]"'
    )


def test_build_kernels_checks_its_out_before_compiling(monkeypatch, tmp_path, capsys):
    def fake_build(workout, where, *, portable, say):
        raise AssertionError("compiled before --out was checked")

    monkeypatch.setattr(_numba, "AVAILABLE", True)
    monkeypatch.setattr(compiled, "build", fake_build)
    (tmp_path / "afile").write_text("")
    assert main(["build-kernels", "-q", "--out", str(tmp_path / "afile" / "sub")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hpcpower: error: --out ") and "a file is in the way" in err
    assert main(["build-kernels", "-q", "--out", ""]) == 2
    assert "--out: empty" in capsys.readouterr().err
