"""Concurrent creates written together: one transaction for every create waiting when the
previous one committed (group commit).

A create validated in its request thread queues here (`create`). A queued thread finding no
group being written leads: it opens a write transaction (on SQLite, once the write lock is its),
takes the creates waiting then (at most `MAX_GROUP`), writes them as batches (records/writes.py,
one per writing user) and gives each its own answer; the others wait, and one still waiting when
that group commits leads the next. A create validated on the event loop queues without a thread
(`submit`): the writer thread leads its group when no waiting thread does, and each is told once
done (`PendingCreate.on_done`). With 8 clients creating, a thread for each create was switched
out about ten times a create, waiting for the interpreter lock or for its group (the server made
15-17 context switches a create; 5-7 with the writer thread, and 50 % more creates a second).

The statements of a write (the lock, the repository, id, unique-key and value-list checks, the
inserts, the change log, the commit) are paid once per group instead of once per create, and
SQLite's one write lock changes hands once per group. Nothing waits to make a group: a lone
create is written at once, alone.

Every create keeps the answer it would have had alone: when a group of several fails (two
members holding one unique key, a ref to a record deleted meanwhile, value lists changed by
another worker), its transaction is rolled back and each member is written again in its own
transaction, so only the failing ones fail, each with its own error. A create is answered only
after the commit of the transaction that wrote it.

A create may carry a `Precondition` read in the writing transaction (the auth generation its
cached session was read at): one read per group, and a create whose precondition no longer
holds is left unwritten and answered `PreconditionChanged`, for its caller to decide again."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fonds.errors import FondsError
from fonds.records import value_lists
from fonds.records.writes import Batch, NewRecord
from fonds.storage import driver

if TYPE_CHECKING:
    from fonds.records.registry import RecordType

log = logging.getLogger("fonds.records")

# Enough to take every create of a loaded server's request threads; bounds one group's latency.
MAX_GROUP = 64
# The thread writing creates submitted from the event loop ends after this long with none; the
# next one starts it again (~0.1 ms).
WRITER_IDLE_SECONDS = 1.0


class RefusedInWrite(Exception):
    """A create with a precondition refused in its writing transaction, after the precondition
    held there: `refusal` is its answer (trying again would only spend another id)."""

    def __init__(self, refusal: FondsError):
        super().__init__(str(refusal))
        self.refusal = refusal


class PreconditionChanged(Exception):
    """The create's precondition did not hold in the writing transaction: nothing was written."""


@dataclass(frozen=True)
class Precondition:
    """`query` (SQL giving one value) must still give `expected` in the transaction writing the
    create: read there by the statement that reads the value lists' generation."""

    query: str
    expected: object


def read_with_lists(
    conn, preconditions: list[Precondition], *, lists: bool = True, also: tuple[str, ...] = ()
) -> tuple[int | None, dict[str, object]]:
    """The value lists' generation (None unless `lists`) and each precondition's value (and each
    of the one-value queries `also`), read by one statement: a write transaction checks them all
    before it writes, and on PostgreSQL each statement is a round trip."""
    queries = list(dict.fromkeys([*(condition.query for condition in preconditions), *also]))
    if lists:
        queries.insert(0, value_lists.GENERATION_SQL)
    values = dict(zip(queries, driver.values_of(conn, queries))) if queries else {}
    return values.pop(value_lists.GENERATION_SQL, None), values


def _repositories_counted(conn, group: list[PendingCreate]) -> tuple[frozenset[int], str | None]:
    """The repositories of the group's creates, and a query counting those of them that exist
    (None: the group has none), to be read with the lists' generation: one statement less a
    group than each batch reading them."""
    repositories = frozenset(p.repo_id for p in group if p.record_type.repo_scoped and p.repo_id is not None)
    if not repositories:
        return repositories, None
    table = conn.dialect.identifier_preparer.quote(conn.info["fonds_tables"]["repository"].name)
    listed = ", ".join(str(int(repo_id)) for repo_id in sorted(repositories))
    return repositories, f"SELECT count(*) FROM {table} WHERE id IN ({listed})"


@dataclass(eq=False)
class PendingCreate:
    """A create validated in its request thread (`clean`, `warnings`), waiting to be written."""

    record_type: RecordType
    body: bytes
    clean: dict
    warnings: dict
    repo_id: int | None
    actor: object
    options: dict = field(default_factory=dict)
    precondition: Precondition | None = None
    result: dict | None = None
    error: BaseException | None = None
    done: bool = False
    # Held while the create waits: released when it is done or handed the lead.
    wake: threading.Lock = field(default_factory=threading.Lock)
    # For a create no thread waits for (`GroupedCreates.submit`): called once it is done, on the
    # thread that wrote it. Must not raise.
    on_done: Callable[[PendingCreate], None] | None = None


class GroupedCreates:
    def __init__(self, service):
        self.service = service
        self._mutex = threading.Lock()
        self._queue: list[PendingCreate] = []
        self._leading = False
        self._writer_wanted = threading.Event()
        self._writer: threading.Thread | None = None

    @property
    def waiting(self) -> int:
        """Creates queued and not yet taken into a group."""
        return len(self._queue)

    def create(self, pending: PendingCreate) -> dict:
        """Write `pending` (in a group, or led by this thread) and return its write result."""
        # Each waiting thread sleeps on its own lock, released by the leader when its create is
        # done or the lead is handed to it: only the threads concerned wake (one condition for
        # all woke every waiting thread at every commit, most of them to sleep again).
        pending.wake.acquire()
        if not self._queued(pending):
            pending.wake.acquire()
        if not pending.done:
            try:
                while not pending.done:
                    self._lead(pending)
            finally:
                self._hand_on()
        if isinstance(pending.error, FondsError) and pending.precondition is not None:
            raise RefusedInWrite(pending.error) from pending.error
        if pending.error is not None:
            raise pending.error
        return pending.result

    def submit(self, pending: PendingCreate) -> None:
        """Queue `pending`, whose `on_done` is called once it is done: written in a group led by
        a waiting thread or by the writer thread, never by the caller (the event loop)."""
        if self._queued(pending):
            self._call_writer()

    def _queued(self, pending: PendingCreate) -> bool:
        """Queue `pending`; True if the lead is its (no group was being written)."""
        with self._mutex:
            self._queue.append(pending)
            leads, self._leading = not self._leading, True
        return leads

    def _hand_on(self) -> None:
        """The lead to the first create still queued (its thread's, or the writer thread's for
        one submitted), or to the next to come."""
        with self._mutex:
            if not self._queue:
                self._leading = False
                return
            if self._queue[0].on_done is None:
                self._queue[0].wake.release()
                return
        self._call_writer()

    def _call_writer(self) -> None:
        with self._mutex:
            self._writer_wanted.set()
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._write_submitted, name="fonds-creates", daemon=True)
                self._writer.start()

    def _write_submitted(self) -> None:
        """The writer thread: leads whenever the lead is handed to it (`_call_writer`); ends
        once idle for WRITER_IDLE_SECONDS (it holds the service: a test's app would be kept)."""
        while True:
            if not self._writer_wanted.wait(WRITER_IDLE_SECONDS):
                with self._mutex:
                    if not self._writer_wanted.is_set():
                        self._writer = None
                        return
            self._writer_wanted.clear()
            try:
                self._lead(None)
            except Exception:
                log.exception("grouped creates: a group failed outside its transaction")
            finally:
                self._hand_on()

    def _take(self) -> list[PendingCreate]:
        with self._mutex:
            group, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
            return group

    def _lead(self, leader: PendingCreate | None) -> None:
        # `taken`: every create of the group, to be woken; `group`: those still to be written
        # (`_write` drops those whose precondition failed, answered already).
        group: list[PendingCreate] = []
        taken: list[PendingCreate] = []
        results: list[tuple[PendingCreate, dict]] = []
        try:
            try:
                with self.service.db.write() as conn:
                    group = self._take()
                    taken = list(group)
                    results = self._write(conn, group)
            except Exception as error:
                if len(group) == 1:
                    group[0].error = error
                    return
                # Rolled back (or never begun): each member alone, for its own answer.
                if not taken:
                    group = self._take()
                    taken = list(group)
                for pending in group:
                    self._write_alone(pending)
                return
            for pending, result in results:
                pending.result = result
        except BaseException as error:
            for pending in group:
                if pending.result is None and pending.error is None:
                    pending.error = error
            raise
        finally:
            for pending in taken:
                pending.done = True
                if pending.on_done is not None:
                    pending.on_done(pending)
                elif pending is not leader:
                    pending.wake.release()

    def _write(self, conn, group: list[PendingCreate]) -> list[tuple[PendingCreate, dict]]:
        service = self.service
        repositories, counted = _repositories_counted(conn, group)
        preconditions = [p.precondition for p in group if p.precondition is not None]
        lists_generation, read = read_with_lists(conn, preconditions, also=(counted,) if counted else ())
        # Every repository of the group exists: the batches need not read them again. Else they
        # read them, and refuse the creates whose repository is gone with their own errors.
        existing = repositories if counted and read[counted] == len(repositories) else frozenset()
        group[:] = self._preconditions_held(group, read)
        if not service.value_lists.matches(lists_generation):
            if len(group) > 1:
                raise _Abandoned()  # validated against lists changed since: each alone, validated again
            service.value_lists.refresh(conn)
            for pending in group:
                pending.clean, pending.warnings, _ = service.prepare_body(pending.record_type, pending.body)
        by_actor: dict[object, list[PendingCreate]] = {}
        for pending in group:
            by_actor.setdefault(pending.actor, []).append(pending)
        results: list[tuple[PendingCreate, dict]] = []
        for actor, members in by_actor.items():
            items = [NewRecord(p.record_type, p.clean, p.warnings, p.repo_id, options=p.options) for p in members]
            results += zip(members, Batch(service, conn, actor).create(items, repositories=existing))
        return results

    def _preconditions_held(self, group: list[PendingCreate], read: dict[str, object]) -> list[PendingCreate]:
        """The members whose precondition holds (`read`: each query's value); the others are
        answered and done."""
        held = []
        for pending in group:
            condition = pending.precondition
            if condition is not None and read[condition.query] != condition.expected:
                pending.error, pending.done = PreconditionChanged(), True
                continue
            held.append(pending)
        return held

    def _write_alone(self, pending: PendingCreate) -> None:
        """In its own transaction, validated again (the group's batch changed its document)."""
        service = self.service
        try:
            with service.db.write() as conn:
                _, read = read_with_lists(conn, [pending.precondition] if pending.precondition else [], lists=False)
                if not self._preconditions_held([pending], read):
                    return
                service.value_lists.refresh(conn)
                clean, warnings, _ = service.prepare_body(pending.record_type, pending.body)
                pending.result = service.create_in(
                    conn, pending.record_type, clean, warnings, repo_id=pending.repo_id, actor=pending.actor, options=pending.options
                )
        except Exception as error:
            pending.result, pending.error = None, error


class _Abandoned(Exception):
    """The group cannot be written as one: its members are written one by one."""
