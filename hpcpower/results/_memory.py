"""Give the C allocator's free memory back to the system between the steps of a long write.

Writing a whole trace's files makes large temporary arrays, one step after
another. glibc keeps much of what they freed as holes in its heap, still
counted in the process's resident memory, and the next step's arrays land
around them instead of in them; the peak then grows by what the steps
before left behind. ``malloc_trim(0)`` returns those holes' pages to the
system (as dask.distributed's workers do). Elsewhere (macOS, musl,
Windows) this does nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's ``malloc_trim`` (glibc), or ``None`` where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # (here: most runs never write a whole trace's files)

    # The process's own symbols hold the C library it runs on; not
    # ctypes.util.find_library, which starts ldconfig in a child process.
    for name in (None, "libc.so.6"):
        try:
            return ctypes.CDLL(name).malloc_trim
        except (OSError, AttributeError):
            continue
    return None


def release_free_memory() -> bool:
    """Return the allocator's free pages to the system; whether it could (glibc only)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
