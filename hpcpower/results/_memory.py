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

#: glibc's ``mallopt`` parameter for the size served by ``mmap`` (``M_MMAP_THRESHOLD``).
_M_MMAP_THRESHOLD = -3


@cache
def _libc_function(name: str) -> Callable[..., int] | None:
    """A function of the C library (glibc), or ``None`` where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # (here: most runs never write a whole trace's files)

    # The process's own symbols hold the C library it runs on; not
    # ctypes.util.find_library, which starts ldconfig in a child process.
    for library in (None, "libc.so.6"):
        try:
            return getattr(ctypes.CDLL(library), name)
        except (OSError, AttributeError):
            continue
    return None


def release_free_memory() -> bool:
    """Return the allocator's free pages to the system; whether it could (glibc only)."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return False
    trim(0)
    return True


def map_large_allocations(threshold: int = 1 << 20) -> bool:
    """Serve every allocation of ``threshold`` bytes or more from its own mapping; whether it could.

    glibc raises its ``mmap`` threshold (up to 32 MB) each time a mapped
    block is freed, so after the first large temporary array the next ones
    come from the heap and leave holes there when freed: on a whole trace,
    writing the files then grows the process by a few tens of megabytes
    more than its arrays ever hold at once. A fixed threshold gives each
    large array back to the system when it is freed. It lasts for the
    process (``hpcpower run`` sets it before writing, then exits), and
    costs a fresh mapping per large array. glibc only; elsewhere nothing.
    """
    mallopt = _libc_function("mallopt")
    return mallopt is not None and bool(mallopt(_M_MMAP_THRESHOLD, int(threshold)))
