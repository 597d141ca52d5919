"""Marks the compiled twins; :mod:`hpcpower.planning.compiled` compiles them.

Importing a planning module never imports numba: each twin is a plain
Python function, recorded here by :func:`kernel`, until
:func:`hpcpower.planning.compiled.load` replaces it by its numba dispatcher.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

#: Whether numba is installed (looked up without importing it).
AVAILABLE = importlib.util.find_spec("numba") is not None

_TWINS: list[Callable] = []


def kernel(func: Callable) -> Callable:
    """Mark ``func`` as a compiled twin (a Python function until compiled)."""
    _TWINS.append(func)
    return func
