"""Marks the compiled twins; :mod:`hpcpower.planning.compiled` compiles them.

Importing a planning module never imports numba: each twin is a plain
Python function, recorded here by :func:`kernel`, until
:func:`hpcpower.planning.compiled.load` replaces it by its numba dispatcher.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable


def _installed(name: str) -> bool:
    """Whether ``name`` can be found, without importing it (a finder that refuses: no)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


#: Whether numba is installed (looked up without importing it).
AVAILABLE = _installed("numba")

_TWINS: list[Callable] = []


def kernel(func: Callable) -> Callable:
    """Mark ``func`` as a compiled twin (a Python function until compiled)."""
    _TWINS.append(func)
    return func
