"""The bundled data the benchmark scripts run on (imported by them; run from the project root)."""

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "scenarios" / "data"

#: The paper's five 64-node cases (3000 jobs each, AOBA-64).
PAPER_64 = [
    "DAS2-fs1-0-3000.json.gz",
    "DAS2-fs2-0-3000.json.gz",
    "DAS2-fs3-0-3000.json.gz",
    "DAS2-fs4-0-3000.json.gz",
    "generated-markovian-3000.json.gz",
]
