"""Write the lessons' workloads (JSON in the SNF-ICON paper's format) into this folder.

    python scenarios/teaching/data/make_data.py

Every file is drawn from a fixed seed, so running this again rewrites the same
bytes; tests/teaching checks that the committed files are what it makes.

* ``workday.json``: three working days of single-node jobs on a 4-node
  cluster. From 8:00 to 16:00 a job arrives every 60-180 s (uniform) and runs
  120-400 s (uniform); nights are empty. Lessons 1-3 (idle timeouts).
* ``starvation.json``: a steady stream of 1-node jobs (one every 25 s, each
  100 s long, for two hours: four of the eight nodes busy at any time) and
  one 8-node job arriving at 300 s. Lesson 5 (SNF and large jobs).
* ``bursty.json``: 300 jobs in bursts of 8-19 jobs within two minutes, bursts
  about four hours apart (exponential gaps); runtimes exponential (mean
  900 s), node requests geometric(0.6) capped at 8, as the Markovian lessons'
  generator draws them. Lesson 6 (what SNF-ICON's screen does with bursts).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _job(k: int, submit_s: float, res: int, reqtime_s: float, runtime_s: float) -> dict:
    return {
        "job_id": k + 1,
        "res": int(res),
        "subtime": submit_s,
        "reqtime": reqtime_s,
        "runtime": runtime_s,
    }


def workday(seed: int = 2, days: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    rows = []
    for day in range(days):
        t = day * 86400 + 8 * 3600
        end = day * 86400 + 16 * 3600
        while True:
            t += rng.uniform(60, 180)
            if t > end:
                break
            runtime = rng.uniform(120, 400)
            rows.append((round(t), 1, round(1.5 * runtime), round(runtime)))
    return {"nb_res": 4, "jobs": [_job(k, *row) for k, row in enumerate(rows)]}


def starvation() -> dict:
    rows = [(25 * k, 1, 100, 100) for k in range(288)]
    rows.append((300, 8, 600, 600))
    rows.sort(key=lambda row: row[0])  # the large job keeps its place among same-time arrivals
    return {"nb_res": 8, "jobs": [_job(k, *row) for k, row in enumerate(rows)]}


def bursty(seed: int = 5, n_jobs: int = 300) -> dict:
    rng = np.random.default_rng(seed)
    rows = []
    t = 600.0
    while len(rows) < n_jobs:
        for _ in range(min(int(rng.integers(8, 20)), n_jobs - len(rows))):
            runtime = rng.exponential(900.0)
            res = min(8, int(rng.geometric(0.6)))
            rows.append(
                (
                    round(t + rng.uniform(0, 120), 1),
                    res,
                    round(1.2 * runtime + 1, 1),
                    round(runtime + 1, 1),
                )
            )
        t += rng.exponential(4 * 3600.0)
    rows.sort(key=lambda row: row[0])
    return {"nb_res": 8, "jobs": [_job(k, *row) for k, row in enumerate(rows)]}


WORKLOADS = {"workday.json": workday, "starvation.json": starvation, "bursty.json": bursty}


def render(data: dict) -> str:
    """One job per line: small diffs, and readable in an editor."""
    jobs = ",\n".join("    " + json.dumps(job) for job in data["jobs"])
    return f'{{"nb_res": {data["nb_res"]}, "jobs": [\n{jobs}\n]}}\n'


def main(folder: Path = HERE) -> int:
    for name, make in WORKLOADS.items():
        (folder / name).write_text(render(make()))
        print(f"wrote {folder / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE))
