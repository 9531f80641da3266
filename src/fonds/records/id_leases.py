"""Ids reserved ahead for the next batch imports, where writers take turns (SQLite).

An import's records need their ids before it is written (their URIs are in one another's
JSON). Reserved once the records were validated, in a transaction of their own, they waited
for the write of the import before to end (SQLite has one write lock), and the write lock then
stood idle while the import pointed its refs at them. So the write of a large import also
reserves, before it commits, as many ids of each type as it used, for the imports after it.

Where a stream of imports is read and validated by a process of its own
(records/import_validation.py), those ids go to that process with the next import it is sent:
it gives the records of an import the URIs they get as it validates them, when it holds enough
ids of every type, and the server then has no refs to point anywhere (the server's interpreter,
which the write holds, is what a bulk load waits for; that process had time to spare).

Reserved ids that no import uses (the server or that process stops, or the load ends and
single creates follow, which take ids past them) are skipped for good, as the ids of a
rolled-back insert are."""

from __future__ import annotations

import threading

from fonds.storage import records as store
from fonds.storage.db import writers_take_turns


class IdLeases:
    # An import of fewer records reserves none ahead: small imports and single creates keep
    # consecutive ids, and only a bulk load's imports waited on each other.
    LEAST = 500
    # Ids kept ahead of each type, in imports like the one reserving them: consecutive imports of a
    # stream differ in what they hold of each type, and those in flight at once are validated
    # before the write of the one before them commits. (A 100,000-record load in imports of 2,000:
    # 36 of its 52 imports were validated with their ids; the others came as the process started
    # and where the types the imports hold change.)
    IMPORTS_AHEAD = 2

    def __init__(self):
        self._lock = threading.Lock()
        self._free: dict[str, list[range]] = {}
        # What the process validating imports said it had left of each type, after its last import.
        self._elsewhere: dict[str, int] = {}

    def take(self, counts: dict[str, int]) -> dict[str, list[int]] | None:
        """`counts[name]` ids of each type, in ascending order; None (and none taken) unless
        there are enough of every type."""
        with self._lock:
            if any(self._left(name) < count for name, count in counts.items()):
                return None
            return {name: self._pop(name, count) for name, count in counts.items()}

    def take_for(self, entries: list) -> list[int] | None:
        """The id of each of an import's `entries` (by `Entry.index`, from 0), or None (`take`)."""
        taken = self.take(type_counts(entries))
        return None if taken is None else ids_in_order(entries, taken)

    def take_all(self) -> dict[str, list[range]]:
        """Every id reserved ahead, handed over (to the process validating the next import)."""
        with self._lock:
            taken, self._free = self._free, {}
        return taken

    def held_elsewhere(self, left: dict[str, int]) -> None:
        """What the process validating imports has left of each type, after the import it answered
        last (those handed to it with the imports after that one are not counted anywhere: the
        writes meanwhile reserve more, and its next answer counts them)."""
        self._elsewhere = left

    def add_all(self, ranges: dict[str, list[range]]) -> None:
        with self._lock:
            for name, more in ranges.items():
                free = self._free.setdefault(name, [])
                free.extend(more)
                # Lowest first: two writes' reservations may come in either order.
                free.sort(key=lambda ids: ids.start)

    def give_back(self, entries: list, ids: list[int]) -> None:
        """The ids taken for an import that was refused before anything was written (`take_for`)."""
        taken: dict[str, list[int]] = {}
        for entry in entries:
            taken.setdefault(entry.record_type.name, []).append(ids[entry.index])
        self.add_all({name: _runs(members) for name, members in taken.items()})

    def reserve_ahead(self, conn, counts: dict[str, int]) -> dict[str, list[range]]:
        """In the write transaction `conn` of an import that created `counts[name]` records of
        each type: ids reserved for the imports after it, up to IMPORTS_AHEAD times as many as it
        created, less those here and in the process validating imports. They are here once the
        transaction commits (`add_all`): a rolled-back one reserved nothing."""
        # PostgreSQL's sequence hands ids out without waiting for a writer.
        if not writers_take_turns(conn) or sum(counts.values()) < self.LEAST:
            return {}
        tables, ahead, elsewhere = conn.info["fonds_tables"], {}, self._elsewhere
        with self._lock:
            here = {name: self._left(name) for name in counts}
        for name, count in counts.items():
            wanted = count * self.IMPORTS_AHEAD - here[name] - elsewhere.get(name, 0)
            if wanted > 0:
                ids = store.reserve_ids(conn, tables[name], wanted)
                ahead[name] = [range(ids[0], ids[-1] + 1)]  # consecutive on SQLite (`allocate_ids`)
        return ahead

    def left(self) -> dict[str, int]:
        with self._lock:
            return {name: self._left(name) for name in self._free}

    def _left(self, name: str) -> int:
        return sum(len(ids) for ids in self._free.get(name, ()))

    def _pop(self, name: str, count: int) -> list[int]:
        taken, free = [], self._free.get(name, [])
        while len(taken) < count:
            ids = free[0]
            part = ids[: count - len(taken)]
            taken += part
            if len(part) == len(ids):
                free.pop(0)
            else:
                free[0] = ids[len(part) :]
        return taken


def type_counts(entries: list) -> dict[str, int]:
    """How many of an import's entries are of each type."""
    counts: dict[str, int] = {}
    for entry in entries:
        name = entry.record_type.name
        counts[name] = counts.get(name, 0) + 1
    return counts


def ids_in_order(entries: list, taken: dict[str, list[int]]) -> list[int]:
    """Each entry's id, given each type's ids in the order of its entries."""
    members = {name: iter(ids) for name, ids in taken.items()}
    return [next(members[entry.record_type.name]) for entry in entries]


def _runs(ids: list[int]) -> list[range]:
    """`ids` as ranges of consecutive ids."""
    runs: list[range] = []
    for record_id in sorted(ids):
        if runs and runs[-1].stop == record_id:
            runs[-1] = range(runs[-1].start, record_id + 1)
        else:
            runs.append(range(record_id, record_id + 1))
    return runs
