"""The memory of writing a run's files grows slowly with the run: bounded blocks, few copies.

Measured as in ``tests/engine/test_storage.py``: each size in a fresh
process, the slope between two sizes (what a span costs, whatever the fixed
part). A span is a node's job or transition; the files' state changes and
energy rows grow with them. Linux only (``/proc``), as there.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

#: Bytes a span may add to the peak of ``write_all`` above the results it
#: writes (70–85 measured; 290 when the state changes, the energy rows
#: and the node ids of a whole trace were held together and copied).
BYTES_PER_SPAN_BOUND = 150

PROBE = textwrap.dedent(
    """
    import sys, tempfile
    from hpcpower import Simulation, load_platform, make_policy
    from hpcpower.workload import markovian
    from hpcpower.results.export import write_all

    n = int(sys.argv[1])
    r = Simulation(
        load_platform("aoba-64"), markovian(n, seed=43), make_policy("fcfs-easy-ipm"),
        seed=42, kernels="numpy",
    ).run()
    assert r.summary["jobs_completed"] == n

    def kb(key):
        return int(open("/proc/self/status").read().split(key + ":")[1].split()[0])

    started = r.jobs["start_s"] == r.jobs["start_s"]
    spans = int(r.jobs["res"][started].sum()) + len(r.transitions)
    before = kb("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:  # (VmHWM from here on)
        fh.write("5")
    with tempfile.TemporaryDirectory() as out:
        write_all(r, out + "/run")
    print(spans, (kb("VmHWM") - before) * 1024)
    """
)


def _write_peak(n_jobs: int) -> tuple[int, int]:
    """Spans of a run of ``n_jobs`` Markovian jobs, and bytes ``write_all`` added to its peak."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(n_jobs)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    spans, extra = map(int, done.stdout.split())
    return spans, extra


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_writing_a_runs_files_costs_a_bounded_number_of_bytes_a_span():
    (small_spans, small), (large_spans, large) = _write_peak(10_000), _write_peak(40_000)
    assert large_spans > 3 * small_spans
    assert (large - small) / (large_spans - small_spans) < BYTES_PER_SPAN_BOUND
