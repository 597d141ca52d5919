"""Loading the compiled twins of the planning algorithms (needs numba: ``hpcpower[fast]``).

:func:`load` imports numba and replaces each twin, in every planning module
that holds it, by its compiled dispatcher. The machine code is cached on
disk, so only the first load after an install compiles, for about half a
minute. It replaces the twin under every name a planning module holds it
by, so a twin imported by name into another planning module is compiled
there too; code outside ``hpcpower.planning`` reaches a twin through its
module (``release.release_map``).

numba checks a cached twin against its own file only, not against the
twins it calls from other files; the cache is therefore kept with a stamp
of every planning source, and dropped whole when any of them changed.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
from pathlib import Path
from types import ModuleType

from hpcpower.planning._numba import _TWINS, AVAILABLE

#: The modules whose twins share the cache (and whose sources the stamp covers).
_NAMES = "common easy forward gang lognormal markov release select spareplans timelines wakes"
_MODULES: tuple[ModuleType, ...] = tuple(
    importlib.import_module(f"hpcpower.planning.{name}") for name in _NAMES.split()
)
_STAMP = "hpcpower-twins.stamp"

_loaded = False


def loaded() -> bool:
    """Whether the twins are compiled (:func:`load` ran)."""
    return _loaded


def load() -> None:
    """Import numba and put every twin's dispatcher in place of its Python function.

    Raises:
        ImportError: numba is not installed.
    """
    global _loaded
    if _loaded:
        return
    import numba

    folder = _cache_folder()
    if folder is not None:
        drop_stale_cache(folder, sources_digest())
    compiled = {id(f): numba.njit(cache=True, nogil=True)(f) for f in _TWINS}
    for name, module in list(sys.modules.items()):
        if not name.startswith("hpcpower.planning."):
            continue
        for attr, value in list(vars(module).items()):
            if callable(value) and id(value) in compiled:
                setattr(module, attr, compiled[id(value)])
    _loaded = True


def cached() -> bool:
    """Whether the twins' machine code for these sources is on disk (the long compile is done).

    A best guess from numba's cache index files (``True`` where it cannot
    tell), used only to tell the user about the pause before a run. Twins
    compile when first called, so a twin that no run has needed yet (the
    screen's for a user of FCFS only) compiles then, in a second or two;
    that is no reason to announce the half-minute compile again.
    """
    if not AVAILABLE:
        return True
    try:
        import numba  # noqa: F401  (the cache locator needs numba's config)
        from numba.core.caching import FunctionCache
    except ImportError:  # pragma: no cover - another numba's layout
        return True
    try:
        indexes = [Path(FunctionCache(f)._cache_file._index_path) for f in _TWINS]
    except Exception:  # pragma: no cover - another numba's internals
        return True
    stamp = indexes[0].parent / _STAMP
    try:
        fresh = stamp.read_text() == sources_digest()
    except OSError:
        fresh = False
    return fresh and any(index.exists() for index in indexes)


def sources_digest() -> str:
    """A digest of every planning source the twins are compiled from."""
    digest = hashlib.sha256()
    for module in _MODULES:
        digest.update(_source(module).read_bytes())
    return digest.hexdigest()


def _source(module: ModuleType) -> Path:
    """The file a planning module was loaded from (numba compiles and caches from it)."""
    if module.__file__ is None:
        raise RuntimeError(f"{module.__name__} was not loaded from a file")
    return Path(module.__file__)


def drop_stale_cache(folder: Path, digest: str) -> bool:
    """Remove the twins' cached machine code in ``folder`` unless it was made from ``digest``.

    Returns whether anything was dropped. The stamp is written afresh (a
    folder that cannot be written is left as it is: numba then compiles
    into memory only).
    """
    stamp = folder / _STAMP
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass
    stems = tuple(f"{_source(m).stem}." for m in _MODULES)
    dropped = False
    for path in folder.iterdir() if folder.is_dir() else ():
        if path.suffix in (".nbi", ".nbc") and path.name.startswith(stems):
            try:
                path.unlink()
                dropped = True
            except OSError:
                pass
    try:
        folder.mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest)
    except OSError:
        pass
    return dropped


def _cache_folder() -> Path | None:
    """Where numba caches the twins (``None`` where it cannot tell)."""
    try:
        from numba.core.caching import FunctionCache

        return Path(FunctionCache(_TWINS[0])._cache_file._index_path).parent
    except Exception:  # pragma: no cover - another numba's internals
        return None
