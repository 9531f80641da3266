"""The search index on disk: tantivy generations under one directory.

    <index dir>/CURRENT        the name of the live generation (replaced atomically)
    <index dir>/gen-<id>/      a tantivy index, plus `applied` (the change-log sequence it
                               reflects) and `schema` (a fingerprint of the field catalog)

`fonds reindex` builds a new generation in `build-<id>` while the service answers from the
live one, then renames it and points CURRENT at it; readers and the indexer follow CURRENT.
The lock making one process the writer is `<index dir>.writer.lock`, beside the directory.
The index is derived data: a generation that is missing, unreadable or built for another
field catalog is rebuilt from the database."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import time
from pathlib import Path

import orjson
import tantivy

from fonds.search.analysis import register_analyzers
from fonds.search.catalog import FieldCatalog
from fonds.search.fields import STORED_DOCUMENT

CURRENT = "CURRENT"
APPLIED = "applied"
SCHEMA = "schema"
# Bumped when what goes into documents changes in a way the catalog does not show.
# 2: records' `json` holds their schema defaults (migration 0010_schema_defaults filled stored ones).
DOCUMENT_VERSION = 2


class IndexUnavailable(Exception):
    """The live generation is missing, unreadable or of another catalog: it must be rebuilt."""


def build_schema(catalog: FieldCatalog) -> tantivy.Schema:
    builder = catalog.add_to_schema(tantivy.SchemaBuilder())
    builder.add_bytes_field(STORED_DOCUMENT, stored=True)
    return builder.build()


def catalog_fingerprint(catalog: FieldCatalog) -> str:
    described = [repr(f) for f in catalog.fields] + [repr(catalog.default_fields), catalog.stem_boost, DOCUMENT_VERSION]
    return hashlib.sha256(orjson.dumps(described)).hexdigest()[:16]


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


class IndexDirectory:
    def __init__(self, path: Path, catalog: FieldCatalog):
        self.path = path
        self.catalog = catalog
        self.schema = build_schema(catalog)
        self.fingerprint = catalog_fingerprint(catalog)
        path.mkdir(parents=True, exist_ok=True)

    # -- generations --------------------------------------------------------------------------

    def current_name(self) -> str | None:
        try:
            return (self.path / CURRENT).read_text().strip() or None
        except FileNotFoundError:
            return None

    def open(self, name: str) -> tantivy.Index:
        """Open a generation for reading or writing; IndexUnavailable if it cannot serve."""
        directory = self.path / name
        try:
            if (directory / SCHEMA).read_text().strip() != self.fingerprint:
                raise IndexUnavailable(f"{directory} was built for another field catalog")
            index = tantivy.Index.open(str(directory))
            register_analyzers(index)
            index.searcher()
        except (OSError, ValueError) as exc:
            raise IndexUnavailable(f"{directory}: {exc}") from None
        return index

    def start_build(self) -> tuple[Path, tantivy.Index]:
        """A new, empty generation to fill (not live until `publish`)."""
        directory = self.path / f"build-{time.time_ns()}-{os.getpid()}"
        directory.mkdir(parents=True)
        index = tantivy.Index(self.schema, path=str(directory))
        register_analyzers(index)
        (directory / SCHEMA).write_text(self.fingerprint)
        return directory, index

    def publish(self, build: Path, applied: int) -> str:
        """Make a finished build the live generation (its writer must be closed)."""
        self.set_applied(build, applied)
        name = "gen-" + build.name.removeprefix("build-")
        os.replace(build, self.path / name)
        _write_atomically(self.path / CURRENT, name)
        return name

    def remove_stale(self, keep: str) -> None:
        """Delete generations other than `keep` (the live one): what a rebuild replaced."""
        for entry in self.path.glob("gen-*"):
            if entry.name != keep:
                shutil.rmtree(entry, ignore_errors=True)

    def discard(self, build: Path) -> None:
        shutil.rmtree(build, ignore_errors=True)

    # -- the applied sequence -------------------------------------------------------------------

    def applied(self, name: str | Path) -> int:
        try:
            return int((self.path / name / APPLIED).read_text())
        except (FileNotFoundError, ValueError):
            return 0

    def set_applied(self, name: str | Path, seq: int) -> None:
        _write_atomically(self.path / name / APPLIED, str(seq))

    def size_bytes(self, name: str | None = None) -> int:
        name = name or self.current_name()
        if name is None:
            return 0
        return sum(_size(f) for f in (self.path / name).glob("*"))


def _size(path: Path) -> int:
    # The writer merges and deletes segment files while it indexes: one may vanish between listing and stat.
    try:
        return path.stat().st_size if path.is_file() else 0
    except FileNotFoundError:
        return 0


class WriterLock:
    """The lock making one process per index directory its writer (released when the process dies)."""

    def __init__(self, path: Path):
        self.path = path
        self._handle = None

    def try_acquire(self) -> bool:
        if self._handle is not None:
            return True
        handle = open(self.path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._handle = handle
        return True

    @property
    def held(self) -> bool:
        return self._handle is not None

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None
