"""Loading the compiled twins of the planning algorithms (needs numba: ``hpcpower[fast]``).

:func:`load` imports numba and replaces each twin, in every planning module
that holds it, by its compiled dispatcher. The machine code is cached on
disk, so only the first load after an install compiles, for about half a
minute. It replaces the twin under every name a planning module holds it
by, so a twin imported by name into another planning module is compiled
there too; code outside ``hpcpower.planning`` reaches a twin through its
module (``release.release_map``).
"""

from __future__ import annotations

import os
import sys

from hpcpower.planning import easy, gang, release, select, timelines  # noqa: F401
from hpcpower.planning._numba import _TWINS, AVAILABLE

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

    compiled = {id(f): numba.njit(cache=True, nogil=True)(f) for f in _TWINS}
    for name, module in list(sys.modules.items()):
        if not name.startswith("hpcpower.planning."):
            continue
        for attr, value in list(vars(module).items()):
            if callable(value) and id(value) in compiled:
                setattr(module, attr, compiled[id(value)])
    _loaded = True


def cached() -> bool:
    """Whether the twins' machine code is on disk, so loading them compiles nothing.

    A best guess from numba's cache index files (``True`` where it cannot
    tell), used only to tell the user about the pause before it.
    """
    if not AVAILABLE:
        return True
    try:
        import numba  # noqa: F401  (the cache locator needs numba's config)
        from numba.core.caching import FunctionCache
    except ImportError:  # pragma: no cover - another numba's layout
        return True
    try:
        return all(os.path.exists(FunctionCache(f)._cache_file._index_path) for f in _TWINS)
    except Exception:  # pragma: no cover - another numba's internals
        return True
