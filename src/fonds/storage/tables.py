"""Table definitions. Record tables are built from plain `TableSpec`s that the record registry
supplies, so storage never imports the record layer."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    text,
)
from sqlalchemy.types import TypeEngine

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "pk": "pk_%(table_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
}


@dataclass(frozen=True)
class ColumnSpec:
    """A column kept beside a record's JSON so it can be queried, ordered or kept unique."""

    name: str
    type: TypeEngine
    index: bool = False


@dataclass(frozen=True)
class TableSpec:
    name: str
    repo_scoped: bool
    columns: tuple[ColumnSpec, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()
    indexes: tuple[tuple[str, ...], ...] = ()
    # Indexes of the rows matching a condition only (SQL, the same on every database): (columns,
    # condition), each named as an index of its columns and `partial`.
    partial_indexes: tuple[tuple[tuple[str, ...], str], ...] = ()


# PostgreSQL cuts identifiers at 63 bytes (SQLAlchemy refuses longer ones).
MAX_NAME = 63


def index_name(table: str, columns: tuple[str, ...]) -> str:
    """`ix_<table>_<columns>`, or, past PostgreSQL's limit, its start and a digest of the whole."""
    name = f"ix_{table}_{'_'.join(columns)}"
    if len(name) <= MAX_NAME:
        return name
    return f"{name[: MAX_NAME - 9]}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _record_table(metadata: MetaData, spec: TableSpec) -> Table:
    columns = [
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("repo_id", Integer, nullable=True),
        Column("lock_version", Integer, nullable=False, default=0),
        # The canonical record JSON, served as stored.
        Column("json", LargeBinary, nullable=False),
        Column("create_time", DateTime, nullable=False),
        Column("system_mtime", DateTime, nullable=False),
        Column("user_mtime", DateTime, nullable=False),
        Column("created_by", String(255), nullable=True),
        Column("last_modified_by", String(255), nullable=True),
    ]
    columns += [Column(c.name, c.type, nullable=True, index=c.index) for c in spec.columns]
    constraints = [UniqueConstraint(*cols) for cols in spec.unique]
    indexes = [Index(index_name(spec.name, cols), *cols) for cols in spec.indexes]
    indexes += [
        Index(index_name(spec.name, (*cols, "partial")), *cols, sqlite_where=text(where), postgresql_where=text(where))
        for cols, where in spec.partial_indexes
    ]
    if spec.repo_scoped:
        # A repository's records in id order, from the index alone: listings and all_ids.
        indexes.append(Index(index_name(spec.name, ("repo_id", "id")), "repo_id", "id"))
    # sqlite_autoincrement: ids of deleted records are never handed out again.
    return Table(spec.name, metadata, *columns, *constraints, *indexes, sqlite_autoincrement=True)


def build_metadata(specs: list[TableSpec]) -> MetaData:
    metadata = MetaData(naming_convention=NAMING)
    for spec in specs:
        _record_table(metadata, spec)
    Table(
        "change_log",
        metadata,
        Column("seq", Integer, primary_key=True, autoincrement=True),
        Column("record_type", String(64), nullable=False),
        Column("record_id", Integer, nullable=False),
        Column("repo_id", Integer, nullable=True),
        Column("uri", String(255), nullable=False),
        Column("op", String(16), nullable=False),
        Column("at", DateTime, nullable=False),
        sqlite_autoincrement=True,
    )
    Table(
        "record_link",
        metadata,
        *_link_columns(autoincrement=True),
        Index("ix_record_link_source", "source_type", "source_id"),
        # With the sources: the links to a record are read in their sources' order from the index.
        Index("ix_record_link_target", "target_type", "target_id", "field", "source_type", "source_id"),
    )
    # SQLite: links written by bulk writes, merged into record_link in bulk (storage/links.py);
    # with no index by target, which made each import write a page of it for most of its links.
    Table(
        "record_link_recent",
        metadata,
        *_link_columns(autoincrement=False),  # ids given by the writes, kept by the merge
        Index("ix_record_link_recent_source", "source_type", "source_id"),
    )
    Table(
        "session",
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("token_hash", String(64), nullable=False, unique=True),
        Column("user_id", Integer, nullable=False, index=True),
        Column("expiring", Boolean, nullable=False),
        Column("created_at", DateTime, nullable=False),
        # Indexed for the purge of idle sessions.
        Column("last_used_at", DateTime, nullable=False, index=True),
    )
    # Who belongs to which group and what each group grants: the rows every permission check
    # reads, kept beside the groups' JSON so a check is one indexed join.
    Table(
        "group_member",
        metadata,
        Column("group_id", Integer, primary_key=True),
        Column("user_id", Integer, primary_key=True, index=True),
    )
    Table(
        "group_permission",
        metadata,
        Column("group_id", Integer, primary_key=True),
        Column("permission", String(64), primary_key=True),
    )
    # One row, bumped in the transaction of every change that can end a session or change a
    # user's rights (logout, password, deactivation, membership, grants): each worker's session
    # cache compares it on every request, so no worker serves a session another has ended.
    Table(
        "auth_generation",
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("value", Integer, nullable=False),
    )
    # How many records of each type each repository holds, per block of ids (`id / 1024`), kept
    # by triggers on the record tables in the writing transaction (fonds.storage.counts): a
    # listing's total and the block holding any page, without counting or skipping rows.
    Table(
        "record_bucket",
        metadata,
        Column("record_type", String(64), primary_key=True),
        Column("repo_id", Integer, primary_key=True, autoincrement=False),
        Column("bucket", Integer, primary_key=True, autoincrement=False),
        Column("n", Integer, nullable=False),
        # Clustered on its key: a listing sums its blocks' counts in key order, read from one b-tree.
        sqlite_with_rowid=False,
    )
    # How many nodes each sibling list holds per band of 2**18 physical positions, kept by
    # triggers on the node tables (fonds.storage.siblings): a node's logical position without
    # counting every sibling before it. Top-level nodes have parent_id 0.
    Table(
        "sibling_bucket",
        metadata,
        Column("node_type", String(64), primary_key=True),
        Column("root_id", Integer, primary_key=True, autoincrement=False),
        Column("parent_id", Integer, primary_key=True, autoincrement=False),
        Column("bucket", Integer, primary_key=True, autoincrement=False),
        Column("n", Integer, nullable=False),
        # Clustered on its key: a list's bands are read in one range, with their counts.
        sqlite_with_rowid=False,
    )
    # SQLite: a row here, inside a write transaction, tells the insert triggers of record_bucket
    # and sibling_bucket that the transaction counts the rows it is inserting itself, grouped
    # (fonds.storage.deferred_counts). Deleted before they are counted: never committed.
    Table(
        "counting_deferred",
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
    )
    # Failed logins per username and per client address, where every worker sees them.
    Table(
        "login_throttle",
        metadata,
        Column("key", String(320), primary_key=True),
        Column("failures", Integer, nullable=False),
        Column("last_failure_at", DateTime, nullable=False, index=True),
        Column("locked_until", DateTime, nullable=True),
    )
    _enumeration_tables(metadata)
    return metadata


def _link_columns(*, autoincrement: bool) -> list[Column]:
    """A link table's columns: one ref a record holds."""
    return [
        Column("id", Integer, primary_key=True, autoincrement=autoincrement),
        Column("source_type", String(64), nullable=False),
        Column("source_id", Integer, nullable=False),
        # `field` is the path with array indexes replaced by `*` (e.g. `subjects/*`), `path` the concrete one.
        Column("field", String(255), nullable=False),
        Column("path", String(255), nullable=False),
        Column("target_type", String(64), nullable=False),
        Column("target_id", Integer, nullable=False),
    ]


def _audit_columns() -> list[Column]:
    return [
        Column("lock_version", Integer, nullable=False, default=0),
        Column("create_time", DateTime, nullable=False),
        Column("system_mtime", DateTime, nullable=False),
        Column("user_mtime", DateTime, nullable=False),
        Column("created_by", String(255), nullable=True),
        Column("last_modified_by", String(255), nullable=True),
    ]


def _enumeration_tables(metadata: MetaData) -> None:
    """The controlled value lists (ArchivesSpace's enumerations), edited through /config/enumerations."""
    Table(
        "enumeration",
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("name", String(255), nullable=False, unique=True),
        Column("editable", Boolean, nullable=False),
        Column("default_value_id", Integer, nullable=True),
        *_audit_columns(),
        sqlite_autoincrement=True,
    )
    Table(
        "enumeration_value",
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("enumeration_id", Integer, ForeignKey("enumeration.id"), nullable=False, index=True),
        Column("value", String(255), nullable=False),
        Column("position", Integer, nullable=False),
        Column("suppressed", Boolean, nullable=False),
        Column("readonly", Boolean, nullable=False),
        *_audit_columns(),
        UniqueConstraint("enumeration_id", "value"),
        sqlite_autoincrement=True,
    )
    # One row whose number goes up with every change to any list: each worker compares it with
    # the one its cached lists were read at. Its row lock also serialises changes to the lists.
    Table(
        "enumeration_generation",
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("generation", Integer, nullable=False),
    )
