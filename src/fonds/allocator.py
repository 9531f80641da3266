"""The C allocator (glibc malloc) under the process: fewer arenas, free memory given back.

Much of what the server allocates is native: SQLite's page caches, tantivy's indexing buffers,
the compiled schemas. glibc gives each thread that allocates while another holds an arena a new
one (up to 8 per core), and keeps what is freed in each: with ~20 threads, RSS settled 50 MB
above what a process with 2 arenas holds after the same work. And what is freed in the middle
of an arena stays in RSS until `malloc_trim`: the server calls it after start-up and then every
few seconds (`release_free_memory`).

The thresholds are fixed (glibc otherwise raises them to the largest block freed, and then keeps
that much free for good): blocks of 256 KiB and more are mapped on their own and go back when
freed, and an arena keeps at most 4 MiB free at its top. That matters beyond the main arena:
`malloc_trim` returns the free memory inside every arena but the top of the main one only, so
the top of any other arena (where the request threads' and the indexer's memory is freed) goes
back only when a `free` finds it above the trim threshold. Password hashing, which once set
these thresholds high so that argon2's 19 MiB was reused, now keeps memory of its own
(`fonds.auth.argon2_memory`). In the medium bench, these settings (against 32, 24 and 20 MiB)
lowered RSS at rest after the load by 21 MB and during the reads by 10-14 MB, with no CPU cost
measured.

One arena and blocks of 256 KiB mapped on their own (were 2 arenas and 4 MiB): a bulk load's
passing buffers (request bodies, the validating process's answers, JSON texts of a chunk) grew
the arenas to ~140 MB of address space holding ~30 MB in use; trimmed, that costs no RSS at rest,
but the allocations of the requests after it (creates with the indexer running) were spread over
those freed pages and brought ~40 MB of them back into RSS. After a 150,000-record load on
SQLite: arenas 141 -> 93 MB, the server's own memory under 8 clients creating 157-169 -> 138 MB
at its peak; creates (1,466-1,668/s against 1,490/s), the load and the reads (GET one, pages of
10 and 250, search, trees, runs alternated) within this host's spread.

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
MMAP_THRESHOLD_BYTES = 256 * 1024
TRIM_THRESHOLD_BYTES = 4 * 1024 * 1024
TOP_PAD_BYTES = 0


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
