"""Python's cyclic garbage collector, run less often than its default.

The collector's youngest generation is collected after every 700 net allocations of container
objects. A search document, a record parsed from JSON and a request's dicts are thousands of
them, nearly all freed by reference counting and holding no cycles: at the default the
collector ran every few records, walking the objects alive at that moment each time. Measured
rebuilding the search index from 20,000 records, in-process: 300 µs of CPU per document at the
default, 253 with the threshold at 10,000 and 243 at 50,000 (238 with the collector off). The
cycles the server does make (exceptions and their tracebacks, SQLAlchemy's internals) are
still collected, only later, in bigger and rarer sweeps."""

from __future__ import annotations

import gc

# Net container allocations between collections of the youngest generation, and collections of
# each generation between collections of the next.
THRESHOLDS = (50_000, 20, 20)


def configure() -> None:
    """Raise the collector's thresholds (never lower them, nor turn on a collector switched off
    by threshold 0: an embedding program's own choice stays)."""
    current = gc.get_threshold()
    if current[0] == 0:
        return
    gc.set_threshold(*(max(mine, theirs) for mine, theirs in zip(THRESHOLDS, current)))
