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

Where the twins were built ahead of time from the same sources
(:mod:`hpcpower.planning.aot`, ``hpcpower build-kernels``), :func:`load`
binds those instead, without importing numba.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from hpcpower.planning import _numba, aot
from hpcpower.planning._numba import _TWINS

#: The modules whose twins share the cache (and whose sources the stamp covers).
_NAMES = "common easy forward gang lognormal markov release select spareplans timelines wakes"
_MODULES: tuple[ModuleType, ...] = tuple(
    importlib.import_module(f"hpcpower.planning.{name}") for name in _NAMES.split()
)
_STAMP = "hpcpower-twins.stamp"

_loaded = False
#: How the loaded twins were compiled: "ahead of time", "just in time" or None (not loaded).
_form: str | None = None
# Each twin's just-in-time dispatcher, by the id of its Python function.
_dispatchers: dict[int, Any] = {}
_digest: str | None = None


def loaded() -> bool:
    """Whether the twins are compiled (:func:`load` ran)."""
    return _loaded


def form() -> str | None:
    """How the loaded twins were compiled: ``"ahead of time"``, ``"just in time"`` or ``None``."""
    return _form


def available() -> bool:
    """Whether this process can have the twins: numba installed, or twins built ahead of time."""
    return _numba.AVAILABLE or aot.available(sources_digest())


def built() -> bool:
    """Whether twins built ahead of time from these sources are there (loading costs nothing)."""
    return _form == "ahead of time" or aot.available(sources_digest())


def misfit() -> str | None:
    """What twins built ahead of time from these sources were built for, if not for this process.

    ``None`` when none were built or they bind here (see :func:`.aot.misfit`).
    """
    return aot.misfit(sources_digest())


def load() -> None:
    """Put every twin's compiled form in place of its Python function.

    Twins built ahead of time from these sources (:mod:`.aot`) are bound
    without importing numba; otherwise numba compiles them just in time
    (from its cache after the first time).

    Raises:
        ImportError: Nothing was built ahead of time and numba is not installed.
    """
    global _loaded, _form
    if _loaded:
        return
    if aot.bind(sources_digest(), _TWINS):
        _loaded, _form = True, "ahead of time"
        return
    _load_just_in_time()


def _load_just_in_time() -> None:
    global _loaded, _form
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
    _dispatchers.update(compiled)
    _loaded, _form = True, "just in time"


def build(
    workout: Callable[[], None],
    where: Path | None = None,
    *,
    portable: bool = False,
    say: Callable[[str], None] = lambda text: None,
) -> Path:
    """Build the twins ahead of time for the types ``workout`` calls them with (see :mod:`.aot`).

    Compiles them just in time first (numba's cache makes that quick after
    the first time), so it must run in a process whose twins were not
    bound ahead of time. The build is for this processor, or for any of
    its architecture if ``portable``. Returns the built module's path.

    Raises:
        ImportError: numba is not installed.
        RuntimeError: The twins were bound ahead of time in this process, or
            building failed (the message says why).
    """
    if _form == "ahead of time":
        raise RuntimeError("the twins were bound ahead of time in this process: build in another")
    if not _loaded:
        _load_just_in_time()
    return aot.build(
        workout, _TWINS, _dispatchers, sources_digest(), where, portable=portable, say=say
    )


def cached() -> bool:
    """Whether the twins' machine code for these sources is on disk (the long compile is done).

    A best guess from numba's cache index files (``True`` where it cannot
    tell), used only to tell the user about the pause before a run. Twins
    compile when first called, so a twin that no run has needed yet (the
    screen's for a user of FCFS only) compiles then, in a second or two;
    that is no reason to announce the half-minute compile again.
    """
    if not _numba.AVAILABLE or built():
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
    """A digest of every planning source the twins are compiled from (read once a process)."""
    global _digest
    if _digest is None:
        digest = hashlib.sha256()
        for module in _MODULES:
            digest.update(_source(module).read_bytes())
        _digest = digest.hexdigest()
    return _digest


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
