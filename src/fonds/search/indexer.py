"""The indexer: the only writer of the search index. It applies the change log after the
sequence the live generation has reached, in batches; each batch is one tantivy commit followed
by the new sequence written beside the index. A crash between the two only makes the next start
apply a batch again, which is harmless: applying a change re-reads the record as it is now
(its document replaced, or removed when the record is gone)."""

from __future__ import annotations

import functools
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable

import orjson
import tantivy
from sqlalchemy import select

from fonds.records.imports import BULK_IMPORTS
from fonds.records.registry import ParsedUri, Registry
from fonds.search.catalog import FieldCatalog
from fonds.search.documents import LinkedTitles, load_records, result_fields, to_index_document
from fonds.search.fields import STORED_DOCUMENT
from fonds.search.index import IndexDirectory, IndexUnavailable, WriterLock
from fonds.storage import change_log
from fonds.storage import links as link_table
from fonds.storage.db import Database, leave_pool

log = logging.getLogger("fonds.search")
BATCH = 1000
# Records whose documents are built at once and handed to the writer before the next are built
# (a batch with its dependents is still one commit). A whole batch's records, linked titles and
# documents at once were the largest passing allocation of a server catching up after a bulk
# load: Python's object heap peaked ~32 MB higher at 100,000 records, and the few objects that
# outlive each batch keep such memory from going back (at rest, 13-16 MB more RSS).
BUILD_SLICE = 200
# tantivy's indexing buffer: `fonds reindex` writes millions of documents and fewer, larger
# segments merge faster; the live indexer commits at most BATCH changes (and their dependents)
# at a time, a few MB of postings, and its buffer is resident in the server's memory while it
# fills, so the server's own rebuilds use it too (100,000 records: 36 s with it, 30 s with the
# larger one, which raised RSS by 60 MB while it ran).
REBUILD_WRITER_HEAP = 64_000_000
LIVE_WRITER_HEAP = 16_000_000  # tantivy's least for one indexing thread is 15 MB
# A backlog of more changes than the index holds documents (a bulk load into a new or small
# archive) is caught up by rebuilding the index: a rebuild builds each record once, with no
# dependents to look for and a commit at the end (100,000 records loaded, same host: applied
# in 56-69 s, rebuilt in 37-44 s, RSS at rest 162-165 -> 155 MB). A small backlog is applied
# change by change, which makes the first of them searchable at once.
REBUILD_BACKLOG_MINIMUM = 10_000
Built = tuple[dict, tantivy.Document] | None
# Called between a rebuild's batches; True when it waited for imports (see _FullScan).
Pause = Callable[[], bool | None]


class DocumentBuilder:
    """Search documents for records, read from the database as GET returns them."""

    def __init__(self, registry: Registry, render: Callable, catalog: FieldCatalog):
        self.registry, self.render, self.catalog = registry, render, catalog

    def build(self, conn, uris: Iterable[str]) -> dict[str, Built]:
        """uri -> (record, tantivy document), or None where the record is gone or not searchable."""
        by_type: dict[str, list[int]] = defaultdict(list)
        result: dict[str, Built] = {}
        for uri in uris:
            parsed = self.registry.parse_uri(uri)
            if parsed is not None and parsed.record_type.search is not None:
                by_type[parsed.record_type.name].append(parsed.record_id)
            result[uri] = None
        loaded = {name: load_records(conn, self.registry[name], ids, self.render) for name, ids in by_type.items()}
        linked = LinkedTitles(conn, self.registry, [doc for found in loaded.values() for doc, _ in found.values()])
        for name, found in loaded.items():
            record_type = self.registry[name]
            for record, body in found.values():
                fields = result_fields(record_type, record, linked)
                result[record["uri"]] = (record, to_index_document(self.catalog, fields, record, body))
        return result

    def dependents(self, conn, index: tantivy.Index, built: dict[str, Built]) -> set[str]:
        """Records whose documents changed with these although their rows did not: the records
        linking to a renamed subject, the later siblings and the subtree of a moved node."""
        found: set[str] = set()
        searcher = index.searcher()
        indexed = functools.cache(lambda uri: indexed_record(index, uri, searcher))
        for uri, now in built.items():
            parsed = self.registry.parse_uri(uri)
            spec = parsed.record_type.search if parsed else None
            if spec is None or not (spec.dependents or spec.shown_in_linkers):
                continue
            old, new = indexed(uri), (now[0] if now else None)
            if spec.dependents and (old or new):
                found.update(spec.dependents(conn, self.registry, old, new, indexed))
            if spec.shown_in_linkers and old and new and spec.title(old) != spec.title(new):
                found.update(self._linking(conn, parsed))
        return found - set(built)

    def _linking(self, conn, parsed: ParsedUri) -> list[str]:
        tables = conn.info["fonds_tables"]
        uris = []
        for link in link_table.links_to(conn, [(parsed.record_type.name, parsed.record_id)]):
            source = self.registry[link.source_type]
            repo_id = None
            if source.repo_scoped:
                table = tables[source.name]
                repo_id = conn.execute(select(table.c.repo_id).where(table.c.id == link.source_id)).scalar_one_or_none()
            uris.append(source.uri(link.source_id, repo_id))
        return uris


def indexed_record(index: tantivy.Index, uri: str, searcher: tantivy.Searcher | None = None) -> dict | None:
    """The record as the index last saw it (its stored `json`), or None."""
    searcher = searcher or index.searcher()
    hits = searcher.search(tantivy.Query.term_query(index.schema, "id", uri), limit=1).hits
    if not hits:
        return None
    stored = searcher.doc(hits[0][1]).get_first(STORED_DOCUMENT)
    return orjson.loads(orjson.loads(stored)["json"])


def rebuild(
    directory: IndexDirectory,
    db: Database,
    builder: DocumentBuilder,
    progress: Callable[[int], None] | None = None,
    *,
    heap: int = REBUILD_WRITER_HEAP,
    pause: Pause = lambda: None,
) -> str:
    """Build a new generation from the database and make it live; returns its name. Changes
    committed while it runs are applied afterwards by the indexer (from the head read when the
    scan began). `pause` is called before each batch of records (the server's indexer waits
    there while imports run, and returns True when it waited)."""
    build, index = directory.start_build()
    try:
        writer = index.writer(heap, 1)
        head = _FullScan(db, builder, writer, progress, pause).run()
        writer.commit()
        writer.wait_merging_threads()
    except BaseException:
        directory.discard(build)
        raise
    return directory.publish(build, head)


class _Overtaken(Exception):
    """More changed while the scan waited than it had scanned."""


class _FullScan:
    """Every searchable record into a rebuild's writer. When the scan has waited for imports and
    more changed meanwhile than it had scanned, it starts over from the new head: the changes
    after the head it began at would be applied again one by one after it, so a bulk load that
    ran while a rebuild waited was indexed twice (1M records: caught up in 673 s, not ~330)."""

    def __init__(self, db: Database, builder: DocumentBuilder, writer, progress, pause):
        self.db, self.builder, self.writer, self.progress, self.pause = db, builder, writer, progress, pause
        self.head = self.scanned = 0

    def run(self) -> int:
        """Scan; returns the change-log head the scan began at."""
        while True:
            self.head, self.scanned = self._read_head(), 0
            try:
                for record_type in self.builder.registry:
                    if record_type.search is not None:
                        self._index_all(record_type)
                return self.head
            except _Overtaken:
                log.info("search index: rebuilding again, from change %d (imports ran meanwhile)", self.head)
                self.writer.rollback()  # what it added (delete_all_documents keeps what is not yet committed)

    def _read_head(self) -> int:
        with self.db.read() as conn:
            return change_log.head(conn)

    def _index_all(self, record_type) -> None:
        after = 0
        while True:
            if self.pause() and self._read_head() - self.head > self.scanned:
                raise _Overtaken()
            with self.db.read() as conn:
                leave_pool(conn)
                table = conn.info["fonds_tables"][record_type.name]
                query = select(table.c.id, table.c.repo_id).where(table.c.id > after).order_by(table.c.id).limit(BATCH)
                rows = conn.execute(query).all()
                if not rows:
                    return
                uris = [record_type.uri(record_id, repo_id) for record_id, repo_id in rows]
                for start in range(0, len(uris), BUILD_SLICE):
                    for found in self.builder.build(conn, uris[start : start + BUILD_SLICE]).values():
                        if found is not None:
                            self.writer.add_document(found[1])
            after = rows[-1].id
            self.scanned += len(rows)
            if self.progress is not None:
                self.progress(len(rows))


def count_searchable(db: Database, registry: Registry) -> int:
    from sqlalchemy import func

    with db.read() as conn:
        tables = conn.info["fonds_tables"]
        return sum(conn.execute(select(func.count()).select_from(tables[t.name])).scalar_one() for t in registry if t.search is not None)


class Indexer:
    """Applies the change log to the live generation; owned by the process holding the writer lock."""

    def __init__(self, directory: IndexDirectory, db: Database, builder: DocumentBuilder):
        self.directory, self.db, self.builder = directory, db, builder
        self.name: str | None = None
        self.index: tantivy.Index | None = None
        self.writer = None
        self.applied = 0

    def open(self, *, force_rebuild: bool = False, pause: Pause = lambda: None) -> None:
        """Open the live generation, rebuilding it when it is missing, unreadable or older than
        the change log still kept (an index restored from a backup made before a prune).
        `pause`: called before each batch of records a rebuild reads."""
        name = self.directory.current_name()
        try:
            if name is None or force_rebuild:
                raise IndexUnavailable("no index yet" if name is None else "the change log was pruned past it")
            index = self.directory.open(name)
            applied = self.directory.applied(name)
            with self.db.read() as conn:
                oldest = change_log.first(conn)
            if oldest is not None and applied < oldest - 1:
                raise IndexUnavailable(f"index at change {applied} but the log starts at {oldest}")
        except IndexUnavailable as why:
            log.warning("search index %s: rebuilding from the database", why)
            self._rebuild(pause)
            return
        self._switch_to(name, index, applied)

    def _rebuild(self, pause: Pause = lambda: None) -> None:
        name = rebuild(self.directory, self.db, self.builder, heap=LIVE_WRITER_HEAP, pause=pause)
        self._switch_to(name, self.directory.open(name), self.directory.applied(name))

    def _switch_to(self, name: str, index: tantivy.Index, applied: int) -> None:
        self.close_writer()
        self.name, self.index, self.applied = name, index, applied
        self.writer = index.writer(LIVE_WRITER_HEAP, 1)
        self.directory.remove_stale(keep=name)

    def follow_rebuild(self, pause: Pause = lambda: None) -> bool:
        """Switch to a generation `fonds reindex` has made live meanwhile (or rebuild a deleted one)."""
        name = self.directory.current_name()
        if name == self.name:
            return False
        if name is None:  # the index directory was deleted under us: rebuild it
            self.open(pause=pause)
        else:
            self._switch_to(name, self.directory.open(name), self.directory.applied(name))
        return True

    def apply_pending(self, pause: Pause = lambda: None) -> int:
        """Apply the next batch of changes, or all of them by rebuilding the index when only a
        rebuild is complete or it is complete sooner; returns how many were applied. `pause`:
        called between the batches of a rebuild a backlog brought (waits while imports run, as
        applying the backlog would)."""
        # A bulk load's changes are mostly new records, whose links `dependents` reads by target:
        # merged (storage/links.py), from the index by target rather than scanning them all.
        link_table.merge_recent_of(self.db)
        with self.db.read() as conn:
            changes = change_log.read_after(conn, self.applied, BATCH)
            if not changes:
                return 0
            pruned = self._pruned_past(conn, changes)
            behind = None if pruned else self._far_behind(conn)
            if pruned is None and behind is None:
                self._replace_documents(conn, [change.uri for change in changes])
        if pruned or behind:
            # Outside the read: a rebuild reads batch after batch, each in a transaction of its own.
            log.warning("search index %s: rebuilding it", pruned or behind)
            self._rebuild(pause if behind else lambda: None)
            return len(changes)
        try:
            self.writer.commit()
        except BaseException:
            self.writer.rollback()
            raise
        self.directory.set_applied(self.name, changes[-1].seq)
        self.index.reload()
        self.applied = changes[-1].seq
        return len(changes)

    def _pruned_past(self, conn, changes: list) -> str | None:
        """Why only a rebuild is complete: the log was pruned past what this index has applied."""
        if changes[0].seq > self.applied + 1 and change_log.first(conn) == changes[0].seq:
            return f"at change {self.applied} but the change log now starts at {changes[0].seq}"
        return None

    def _far_behind(self, conn) -> str | None:
        """Why a rebuild is complete sooner than applying the changes (REBUILD_BACKLOG_MINIMUM)."""
        backlog = change_log.head(conn) - self.applied
        if backlog > max(REBUILD_BACKLOG_MINIMUM, self.index.searcher().num_docs):
            return f"{backlog} changes behind, more than it holds documents"
        return None

    def _replace_documents(self, conn, uris: list[str]) -> None:
        """Replace, in the writer, the documents of `uris` and of the records depending on them,
        built `BUILD_SLICE` records at a time. Dependents have dependents too: a node's later
        siblings are indexed with it, and when their own changes come in a later batch the index
        already holds them as they are, so only now can the agents they link (say) be seen to
        change. Each record is built once, from this read's snapshot."""
        done: set[str] = set()
        queue, start = list(uris), 0
        try:
            while start < len(queue):
                taken = queue[start : start + BUILD_SLICE]
                start += len(taken)
                wanted = [uri for uri in dict.fromkeys(taken) if uri not in done]
                if not wanted:
                    continue
                built = self.builder.build(conn, wanted)
                done.update(built)
                for uri, found in built.items():
                    self.writer.delete_documents_by_term("id", uri)
                    if found is not None:
                        self.writer.add_document(found[1])
                queue += self.builder.dependents(conn, self.index, built) - done
        except BaseException:
            self.writer.rollback()
            raise

    def close_writer(self) -> None:
        if self.writer is not None:
            self.writer.wait_merging_threads()
            self.writer = None


class Stopping(Exception):
    """The indexer thread is stopping: raised out of a rebuild to abandon it."""


class IndexerThread(threading.Thread):
    """Runs the indexer: wakes on every committed write of this process, and polls for those of
    other processes."""

    POLL_SECONDS = 0.1
    # While changes keep coming, the time they are left to gather between two commits: a tantivy
    # commit (and the segment merges it brings) costs about as much CPU for one change as for
    # hundreds (measured: 1.4 ms of CPU per change in commits of 20, 0.4 ms in commits of 150).
    # A search waiting for its changes cuts it short (`hurry`); a lone write is applied at once.
    GATHER_SECONDS = 0.2

    LOCK_RETRY_SECONDS = 1.0

    def __init__(self, indexer: Indexer, lock: WriterLock, on_applied: Callable[[], None], *, stalled: bool = False):
        super().__init__(name="fonds-indexer", daemon=True)
        self.indexer, self.lock, self.on_applied = indexer, lock, on_applied
        # Crash tests: the index is opened but no change applied, as in a process killed
        # between a database commit and the index commit.
        self.stalled = stalled
        self.wake = threading.Event()
        self.hurried = threading.Event()
        self.stopping = threading.Event()

    def run(self) -> None:
        # One writer per index directory: the other workers wait here, and one of them takes
        # over when the writer's process ends (the lock goes with it).
        while not self.lock.try_acquire():
            if self.stopping.wait(self.LOCK_RETRY_SECONDS):
                return
        try:
            while not self.stopping.is_set():
                try:
                    self._serve()
                except Stopping:
                    return
                except Exception:
                    log.exception("search indexer failed; starting again")
                    self.indexer.close_writer()
                    self.stopping.wait(self.LOCK_RETRY_SECONDS)
        finally:
            self.indexer.close_writer()
            self.lock.release()

    def _serve(self) -> None:
        if self.indexer.index is None or self.indexer.writer is None:
            self.indexer.open(pause=self._stop_point)
        if self.stalled:
            self.stopping.wait()
        while not self.stopping.is_set():
            self.indexer.follow_rebuild(pause=self._stop_point)
            while (
                self._no_import_running()
                and (applied := self.indexer.apply_pending(pause=self._wait_for_imports))
                and not self.stopping.is_set()
            ):
                self.on_applied()
                if applied < BATCH:
                    self.hurried.wait(self.GATHER_SECONDS)
                    self.hurried.clear()
            self.on_applied()
            self.wake.wait(self.POLL_SECONDS)
            self.wake.clear()

    def _no_import_running(self) -> bool:
        """Batch imports of this process have the interpreter to themselves: indexing alongside
        them halved their speed (both want the GIL); the index catches up once they are done.
        A search waiting for its changes (`hurry`) does not wait for the imports' quiet period."""
        quiet = 0 if self.hurried.is_set() else BULK_IMPORTS.QUIET_SECONDS
        return BULK_IMPORTS.wait_until_quiet(self.POLL_SECONDS, quiet)

    def _wait_for_imports(self) -> bool:
        """Between a rebuild's batches, as between the batches of changes applied; True when it
        waited for imports."""
        waited = False
        while not self.stopping.is_set() and not self._no_import_running():
            waited = True
        self._stop_point()
        return waited

    def _stop_point(self) -> None:
        """Between a rebuild's batches: a stopping server abandons the rebuild (its next start
        builds the index again) rather than keep its shutdown waiting until the rebuild ends."""
        if self.stopping.is_set():
            raise Stopping()

    def hurry(self) -> None:
        """Apply the changes now: a search is waiting for them."""
        self.hurried.set()
        self.wake.set()

    def stop(self) -> None:
        self.stopping.set()
        self.hurry()
        self.join(timeout=30)
