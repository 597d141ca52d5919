"""The bundled data the benchmark scripts run on (imported by them; run from the project root)."""

import argparse
from pathlib import Path

from hpcpower.planning._numba import AVAILABLE

DATA = Path(__file__).resolve().parents[1] / "scenarios" / "data"

#: The paper's five 64-node cases (3000 jobs each, AOBA-64).
PAPER_64 = [
    "DAS2-fs1-0-3000.json.gz",
    "DAS2-fs2-0-3000.json.gz",
    "DAS2-fs3-0-3000.json.gz",
    "DAS2-fs4-0-3000.json.gz",
    "generated-markovian-3000.json.gz",
]


def add_kernels_option(parser: argparse.ArgumentParser) -> None:
    """``--kernels``: the form of the planning algorithms to time (numba where installed)."""
    parser.add_argument(
        "--kernels",
        choices=("numba", "numpy", "auto"),
        default="numba" if AVAILABLE else "numpy",
        help="form of the planning algorithms (default: numba where installed)",
    )
