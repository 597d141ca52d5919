"""The twins' disk cache is dropped whole when any planning source changed.

numba checks a cached function against its own file only; a twin that calls
a twin from another file would otherwise keep machine code built against
the old one (seen as ``NRT_adapt_ndarray_to_python: 'descr' is NULL``).
"""

from __future__ import annotations

from pathlib import Path

from hpcpower.planning import compiled


def fill(folder, names):
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"machine code")


CACHED = ["easy.easy_pass-293.py311.nbi", "easy.easy_pass-293.py311.1.nbc", "release.x.py311.nbi"]


def test_a_cache_from_other_sources_is_dropped_and_stamped(tmp_path):
    fill(tmp_path, [*CACHED, "other.f-1.py311.nbi", "notes.txt"])
    assert compiled.drop_stale_cache(tmp_path, "new") is True
    # Only the planning modules' cache files go; anything else stays.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "hpcpower-twins.stamp",
        "notes.txt",
        "other.f-1.py311.nbi",
    ]
    assert (tmp_path / "hpcpower-twins.stamp").read_text() == "new"


def test_a_cache_from_the_same_sources_is_kept(tmp_path):
    fill(tmp_path, CACHED)
    (tmp_path / "hpcpower-twins.stamp").write_text("same")
    assert compiled.drop_stale_cache(tmp_path, "same") is False
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*CACHED, "hpcpower-twins.stamp"])


def test_the_digest_covers_every_planning_source():
    names = sorted(m.__name__ for m in compiled._MODULES)
    assert names == [
        "hpcpower.planning.common",
        "hpcpower.planning.easy",
        "hpcpower.planning.forward",
        "hpcpower.planning.gang",
        "hpcpower.planning.lognormal",
        "hpcpower.planning.markov",
        "hpcpower.planning.release",
        "hpcpower.planning.select",
        "hpcpower.planning.spareplans",
        "hpcpower.planning.timelines",
        "hpcpower.planning.wakes",
    ]
    # Every planning source that marks a twin is among them.
    marked = sorted(
        f"hpcpower.planning.{path.stem}"
        for path in Path(compiled.__file__).parent.glob("*.py")
        if "@kernel" in path.read_text()
    )
    assert set(marked) <= set(names), marked
    assert compiled.sources_digest() == compiled.sources_digest()
