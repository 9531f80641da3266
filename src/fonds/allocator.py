"""The C allocator (glibc malloc) under the process: fewer arenas, free memory given back.

Much of what the server allocates is native: SQLite's page caches, tantivy's indexing buffers,
argon2's 19 MiB per hash, the compiled schemas. glibc gives each thread that allocates while
another holds an arena a new one (up to 8 per core), and keeps what is freed in each: with ~20
threads, RSS settled 50 MB above what a process with 2 arenas holds after the same work. And
what is freed in the middle of an arena stays in RSS until `malloc_trim`: the server calls it
after start-up and then every few seconds (`release_free_memory`).

The thresholds are fixed (glibc otherwise moves them with the largest block freed): blocks up to
32 MiB come from the arenas, so that argon2's 19 MiB is reused by the next hash instead of being
mapped and faulted in afresh (a third more CPU per login). An arena keeps at most 24 MiB free at
its top, and 20 MiB (one hash's worth) when it gives the rest back: `malloc_trim` returns the
free memory inside every arena and at the main arena's top, but never at the top of the other
arenas, where the request threads' and the indexer's freed memory ends up. Those tops go back
only when a `free` finds them above the trim threshold: at 64 MiB, the threshold this had
before, they held up to 64 MiB each for good. In the medium bench these two settings lowered the
peak RSS under load by 13-29 MB at no CPU cost measured, logins included; glibc's default
threshold (128 KiB, no pad) saved 36 MB but cost each login a third more CPU.

Only on glibc; elsewhere (musl, macOS) these are no-ops. The operator's own `MALLOC_ARENA_MAX`,
`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_` or `MALLOC_TOP_PAD_` environment variables win."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 24 * 1024 * 1024
TOP_PAD_BYTES = 20 * 1024 * 1024


def _libc():
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


_LIBC = _libc()


def configure(arenas: int) -> None:
    """Cap malloc's arenas and fix its thresholds; call before the server starts threads
    (arenas that already exist stay)."""
    if _LIBC is None:
        return
    for variable, option, value in (
        ("MALLOC_ARENA_MAX", M_ARENA_MAX, arenas),
        ("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES),
        ("MALLOC_TRIM_THRESHOLD_", M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
        ("MALLOC_TOP_PAD_", M_TOP_PAD, TOP_PAD_BYTES),
    ):
        if variable not in os.environ:
            _LIBC.mallopt(option, value)


def release_free_memory() -> None:
    """Give the pages malloc holds free back to the system (`malloc_trim`): freed memory in the
    middle of an arena otherwise stays in RSS. Takes milliseconds (4–26 ms seen): off the event loop while serving."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
