"""Run a sweep: check it, skip what is done, run the rest in parallel, record each run at once.

Two executors run the same :func:`hpcpower.experiments.worker.execute` on
the same plain data, so a sweep gives the same table on both:

* ``local``: processes on this machine (``concurrent.futures`` with the
  ``spawn`` start method, so no state of the driving process leaks into a
  worker). A worker stops when the driving process is gone, even after
  SIGKILL, so no orphan finishes a run that a resumed sweep also starts.
* ``dask``: a Dask distributed cluster (``pip install "hpcpower[distributed]"``);
  ``scheduler_address`` names a running scheduler, otherwise a
  ``LocalCluster`` is started for the sweep. Workers must see the workload
  files at the same paths (a shared file system); they send results back,
  and only the driving process writes the sweep's folder.

The driving process writes each run's file the moment its result arrives
(:class:`~hpcpower.experiments.store.Store`), so a sweep stopped at any point
resumes with ``resume=True`` without repeating or losing a finished run.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpcpower.errors import InputError
from hpcpower.experiments.store import Store
from hpcpower.experiments.sweepfile import Plan, PlannedRun, load_plan
from hpcpower.experiments.worker import execute

EXECUTORS = ("local", "dask")

#: How often a local worker checks that the driving process is still there (seconds).
_PARENT_POLL_S = 0.2


@dataclass
class Outcome:
    """What a sweep did.

    Attributes:
        folder: The sweep's folder.
        plan: The checked, expanded plan.
        skipped: Runs already recorded before this call (not run again).
        done: Runs finished by this call.
        failed: The run ids among them that failed, with their errors.
        table: The results table written (Parquet or CSV).
        wall_time_s: Wall time of this call.
    """

    folder: Path
    plan: Plan
    skipped: int = 0
    done: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    table: Path | None = None
    wall_time_s: float = 0.0

    def frame(self):
        """The results table as a pandas DataFrame (one row per recorded run, in plan order)."""
        pd = _pandas()
        columns, rows = Store(self.folder).rows(self.plan)
        return pd.DataFrame(rows, columns=columns)


@dataclass(frozen=True)
class Options:
    """How to run a sweep (the keyword arguments of :func:`sweep`)."""

    executor: str = "local"
    workers: int | None = None
    scheduler_address: str | None = None
    resume: bool = False
    retry_failed: bool = False
    keep_runs: bool = False
    progress: bool = False


def run_sweep(
    source: str | Path | Mapping[str, Any], out: str | Path, options: Options | None = None
) -> Outcome:
    """Run a sweep into ``out`` and say what was done (:func:`sweep` returns the table instead)."""
    options = options or Options()
    if options.executor not in EXECUTORS:
        raise InputError(
            f"unknown executor {options.executor!r}; choose one of: {', '.join(EXECUTORS)}"
        )
    if options.workers is not None and options.workers < 1:
        raise InputError(f"workers: expected 1 or more, got {options.workers}")
    if options.scheduler_address and options.executor != "dask":
        raise InputError("a scheduler address goes with the dask executor (--executor dask)")
    if options.retry_failed and not options.resume:
        raise InputError("retrying failed runs goes with resuming a sweep (--resume)")
    if options.executor == "dask":
        _distributed()  # before the sweep's folder is made
        if options.scheduler_address:
            _check_address(options.scheduler_address)
    _check_not_reimported()
    workers = options.workers or os.cpu_count() or 1
    started = time.perf_counter()
    plan = load_plan(source)
    store = Store(out).open(resume=options.resume, plan=plan)
    outcome = Outcome(store.folder, plan)
    finished = False
    try:
        store.write_plan(plan)
        recorded = store.recorded()
        todo = [
            run
            for run in plan.runs
            if run.run_id not in recorded or (options.retry_failed and recorded[run.run_id] != "ok")
        ]
        outcome.skipped = len(plan.runs) - len(todo)
        if todo:
            if options.executor == "dask":
                results = _dask(todo, workers, options.scheduler_address, options.keep_runs)
            else:
                results = _local(todo, workers, options.keep_runs)
            _collect(results, store, outcome, len(plan.runs), options.progress)
        finished = True
    finally:
        if not finished and store.made and not store.recorded():
            # Stopped before any run was recorded (an executor that cannot
            # start): leave no folder behind, so the same command runs again.
            store.discard()
        else:
            # Whatever stopped the sweep, the table holds every run recorded so far.
            outcome.table = store.write_table(plan)
            store.close()
        outcome.wall_time_s = time.perf_counter() - started
    return outcome


def sweep(
    source: str | Path | Mapping[str, Any],
    out: str | Path,
    *,
    executor: str = "local",
    workers: int | None = None,
    scheduler_address: str | None = None,
    resume: bool = False,
    retry_failed: bool = False,
    keep_runs: bool = False,
    progress: bool = False,
):
    """Run a sweep file and return its results table as a pandas DataFrame.

    Args:
        source: A sweep TOML file (``docs/reference/sweep-files.md``), or its
            content as a dict.
        out: The sweep's folder; each run is written there as it finishes.
        executor: ``"local"`` (processes on this machine) or ``"dask"``.
        workers: Parallel runs (default: the number of CPUs); for ``dask``
            without an address, the workers of the ``LocalCluster``.
        scheduler_address: A running Dask scheduler (``tcp://host:8786``).
        resume: Continue the sweep already in ``out``: runs recorded there are
            not run again.
        retry_failed: With ``resume``, run the failed runs again.
        keep_runs: Keep each run's output files (``jobs.csv``,
            ``machine_states.csv``, ``decisions.csv``, ...) in ``out/runs/<run_id>/``.
        progress: Show a progress bar (runs done, failed, time left) on stderr.

    Returns:
        One row per run: ``run_id``, its study, case and seed, ``status`` and
        ``error``, the configuration (``policy.name``, ...), every summary
        metric, the waits by job size, ``wall_time_s`` and ``version``.

    Raises:
        InputError: A bad sweep file (before any run), a folder holding a sweep
            without ``resume`` (or another sweep with it), a bad scheduler
            address, or a missing optional dependency. A sweep that stops
            before recording any run removes the folder it made.
    """
    _pandas()  # before the runs, not after them
    options = Options(
        executor, workers, scheduler_address, resume, retry_failed, keep_runs, progress
    )
    return run_sweep(source, out, options).frame()


def _pandas():
    try:
        import pandas
    except ImportError:
        raise InputError(
            'a sweep\'s table as a DataFrame needs pandas: pip install "hpcpower[tables]"'
        ) from None
    return pandas


def _collect(
    results: Iterator[tuple[PlannedRun, dict[str, Any]]],
    store: Store,
    outcome: Outcome,
    total: int,
    progress: bool,
) -> None:
    """Record each result as it arrives, and keep the progress bar up to date."""
    from tqdm.auto import tqdm

    with tqdm(
        total=total,
        initial=outcome.skipped,
        unit="run",
        desc="sweep",
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
    ) as bar:
        bar.set_postfix(failed=0)
        try:
            for run, result in results:
                store.record(run, result)
                outcome.done += 1
                if result["status"] != "ok":
                    outcome.failed[run.run_id] = result["error"]
                    bar.set_postfix(failed=len(outcome.failed))
                bar.update()
        finally:
            results.close()  # type: ignore[attr-defined]


def _task(run: PlannedRun, keep_runs: bool) -> dict[str, Any]:
    return {"run_id": run.run_id, "config": run.config, "keep_runs": keep_runs}


def _check_not_reimported() -> None:
    """Refuse a sweep started while a spawned worker re-imports the main script.

    Local workers start with ``spawn``, which imports the main script again; a
    sweep called at its top level, not under ``if __name__ == "__main__":``,
    would start there once more in every worker.
    """
    import multiprocessing

    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise InputError(
            "a sweep was started while a worker process imported the main script; "
            'put the call under `if __name__ == "__main__":`'
        )


def _died() -> str:
    """Why a run was lost when its local worker died, with the likely cause from a script."""
    why = "a worker process died during this run (or one beside it)"
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    try:
        # Workers re-import the main script (spawn); without the guard they die starting.
        guarded = script is None or "__main__" in Path(script).read_text(errors="replace")
    except OSError:
        guarded = True
    if not guarded:
        why += f'; {script} has no `if __name__ == "__main__":` guard around the sweep'
    return why


def _lost(run: PlannedRun, why: str) -> dict[str, Any]:
    """The result of a run whose worker died under it."""
    from hpcpower._version import __version__

    return {
        "run_id": run.run_id,
        "status": "failed",
        "error": why,
        "traceback": None,
        "metrics": {},
        "wall_time_s": float("nan"),
        "version": __version__,
    }


# ------------------------------------------------------------------ local
def _local(
    runs: list[PlannedRun], workers: int, keep_runs: bool
) -> Iterator[tuple[PlannedRun, dict[str, Any]]]:
    """Run in processes on this machine; yield each (run, result) as it finishes."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=min(workers, len(runs)),
            mp_context=context,
            initializer=_worker_start,
            initargs=(os.getpid(),),
        )

    pending = deque(runs)
    running: dict[Any, PlannedRun] = {}
    pool = new_pool()
    try:
        while pending or running:
            # Only as many runs in flight as workers: a worker that dies takes
            # few runs with it, and nothing queued is lost on an interruption.
            while pending and len(running) < workers:
                run = pending.popleft()
                running[pool.submit(execute, _task(run, keep_runs))] = run
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            broken = False
            for future in finished:
                run = running.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool:
                    broken = True
                    result = _lost(run, _died())
                yield run, result
            if broken:
                for run in list(running.values()):
                    yield run, _lost(run, _died())
                running.clear()
                pool.shutdown(wait=False, cancel_futures=True)
                pool = new_pool()
    finally:
        _stop(pool)


def _stop(pool) -> None:
    """Shut a process pool down now: cancel what is queued, stop the workers."""
    kill = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if kill is not None:
        kill()
        pool.shutdown(wait=False, cancel_futures=True)
        return
    # Before 3.14 the executor has no public way to stop a worker mid-run; its
    # processes are taken before shutdown() forgets them.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()


def _worker_start(parent: int) -> None:
    """Set up a local worker: Ctrl-C is the driver's to handle; stop when the driver is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="hpcpower-parent-watch", daemon=True).start()


# ------------------------------------------------------------------ dask
def _check_address(address: str) -> None:
    """Refuse a scheduler address that is not ``[scheme://]host:port`` before anything is made."""
    from distributed.comm import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls", "ws", "wss"):
            parse_host_port(location)
    except (ValueError, TypeError):
        raise InputError(
            f"scheduler address {address!r}: expected host:port, e.g. tcp://10.0.0.5:8786"
        ) from None


def _distributed():
    """``dask.distributed``'s Client, LocalCluster and as_completed, or a clear error."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise InputError(
            'the dask executor needs dask.distributed: pip install "hpcpower[distributed]"'
        ) from None
    return Client, LocalCluster, as_completed


def _dask(
    runs: list[PlannedRun], workers: int, address: str | None, keep_runs: bool
) -> Iterator[tuple[PlannedRun, dict[str, Any]]]:
    """Run on a Dask cluster; yield each (run, result) as it finishes."""
    Client, LocalCluster, as_completed = _distributed()
    cluster = None
    try:
        if address:
            client = Client(address, timeout="20s")
        else:
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            client = Client(cluster)
    except (OSError, TimeoutError, ValueError) as exc:
        if cluster is not None:
            cluster.close()
        where = f"the Dask scheduler at {address}" if address else "a Dask LocalCluster"
        raise InputError(f"cannot reach {where} ({exc})") from None
    # A fresh token per call: keys on a shared scheduler never meet another sweep's.
    token = uuid.uuid4().hex[:8]
    futures = {}
    try:
        for run in runs:
            key = f"hpcpower-run-{run.run_id}-{token}"
            futures[client.submit(execute, _task(run, keep_runs), key=key, pure=False)] = run
        for future in as_completed(futures):
            run = futures[future]
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker fails this run only
                result = _lost(run, f"the Dask worker failed: {type(exc).__name__}: {exc}")
            yield run, result
    finally:
        client.cancel(list(futures))
        client.close()
        if cluster is not None:
            cluster.close()
