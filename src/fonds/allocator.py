"""The C allocator (glibc malloc) under the process: fewer arenas, large blocks given back.

Much of what the server allocates is native: SQLite's page caches, tantivy's indexing buffers,
argon2's 19 MiB per hash, the compiled schemas. glibc gives each thread that allocates while
another holds an arena a new one (up to 8 per core), and keeps what is freed in each: with ~20
threads, RSS settled 75 MB above what a process with 2 arenas holds after the same work. Its
mmap threshold also rises to the largest block freed so far (up to 32 MiB), after which blocks
such as argon2's stay in the arenas instead of going back to the system when freed.

Only on glibc; elsewhere (musl, macOS) these are no-ops. The operator's own `MALLOC_ARENA_MAX`
or `MALLOC_MMAP_THRESHOLD_` environment variables win over the settings."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
# Blocks from 1 MiB up get their own mapping, returned to the system when freed. Requests do not
# allocate that much per call; argon2's 19 MiB, tantivy's buffers and big result sets do.
MMAP_THRESHOLD_BYTES = 1024 * 1024


def _libc():
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


_LIBC = _libc()


def configure(arenas: int) -> None:
    """Cap malloc's arenas and fix its mmap threshold; call before the server starts threads
    (arenas that already exist stay)."""
    if _LIBC is None:
        return
    if "MALLOC_ARENA_MAX" not in os.environ:
        _LIBC.mallopt(M_ARENA_MAX, arenas)
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        _LIBC.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


def release_free_memory() -> None:
    """Give the pages malloc holds free back to the system (`malloc_trim`): freed memory in the
    middle of an arena otherwise stays in RSS. Takes a few milliseconds: call it when idle."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
