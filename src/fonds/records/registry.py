"""The record-type registry: what a type declaration says (`RecordType`), the `Registry` of
them all and `build_registry()`, which checks them. Declarations live beside their hooks, one
module per area (`records/types/`, users and groups in `auth/types.py`); `fonds.model` builds
the complete registry from which routes, tables, validation and the generic tests derive."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

from sqlalchemy import Integer, String

from fonds.records import hooks
from fonds.records.search_spec import SearchSpec
from fonds.records.trees.decorations import TreeViews
from fonds.storage.tables import ColumnSpec, TableSpec, build_metadata

ACTIONS = ("list", "create", "read", "update", "delete")


class Scope(Enum):
    GLOBAL = "global"
    REPOSITORY = "repository"


@dataclass(frozen=True)
class Permissions:
    """ArchivesSpace permission names needed per action (evaluated in the URL's repository)."""

    read: str
    create: str
    update: str
    delete: str

    def for_action(self, action: str) -> str:
        return self.read if action in ("list", "read") else getattr(self, action)


@dataclass(frozen=True)
class UniqueKey:
    columns: tuple[str, ...]
    field: str
    # May name the clashing value as `{value}` (the last column's).
    message: str
    report_conflict: bool = False


@dataclass(frozen=True)
class RefRule:
    """What happens to a record holding a ref at `field` when the ref's target is deleted;
    `cascade_last`: the ref is removed, and the record deleted once no ref at `field` remains
    (an event goes with the last record it links)."""

    field: str
    on_target_delete: Literal["cascade", "cascade_last", "restrict", "unlink"]
    unlink_at: str | None = None
    message: str = ""


@dataclass(frozen=True)
class RequiredOneOf:
    """At least one of `fields` must be present (Fonds' minimum to create)."""

    fields: tuple[str, ...]
    custom: tuple[tuple[str, str], ...] = ()

    def messages(self) -> list[tuple[str, str]]:
        if self.custom:
            return list(self.custom)
        first, *others = self.fields
        suffix = f" (or give {' or '.join(others)})" if others else ""
        return [(first, "Property is required but was missing" + suffix)]


@dataclass(frozen=True)
class Lookup:
    """A `find_by_id` criterion (ArchivesSpace's `GET /repositories/:repo_id/find_by_id/<path>`):
    the query parameter `<param>[]` matches records whose `column` equals one of its values.
    `parse` turns a value as sent into the column's form (None: no record can match it). Several
    values of one parameter are OR-ed, several parameters AND-ed, as ArchivesSpace's IDLookup."""

    param: str
    column: str
    parse: Callable[[str], object] | None = None

    def values(self, sent: list[str]) -> list:
        parsed = sent if self.parse is None else [self.parse(value) for value in sent]
        return [value for value in parsed if value is not None]


@dataclass(frozen=True)
class TreeSpec:
    """A hierarchy two record types form: `root` records (a resource) hold ordered trees of `node`
    records (archival objects). Each node's JSON refs its root under the field named after the
    root type and its parent node under `parent`; its table keeps `<root>_id`, `parent_id` and
    `position` (physical, gapped: see records/trees/positions.py). Both types declare the same
    spec, and every tree route, read and move is written once against it."""

    root: str
    node: str
    # The jsonmodel_type of a batch of new children (`POST …/children`).
    children_type: str
    # What the tree views show beyond the fields every tree shares (records/trees/decorations.py).
    views: TreeViews = field(default_factory=TreeViews, compare=False)

    # A node's fields computed at read time (records/trees/node_fields.py), never stored.
    node_read_fields = ("position", "ancestors")

    @property
    def root_field(self) -> str:
        return self.root

    @property
    def root_column(self) -> str:
        return f"{self.root}_id"

    @property
    def node_indexes(self) -> tuple[tuple[str, ...], ...]:
        """A node table's index of each sibling list below a node, in order: children, descendants
        level by level, a node's siblings."""
        return (("parent_id", "position"),)

    @property
    def top_level_indexes(self) -> tuple[tuple[tuple[str, ...], str], ...]:
        """A node table's index of each tree's top level, in order: of the top-level nodes only (a
        few of a tree's thousands), so the other nodes' writes do not enter it. `parent_id` in it
        too, though always null: without it, SQLite looked each entry's row up to check that
        `parent_id IS NULL` (counting a flat tree's top level read every node's row)."""
        return (((self.root_column, "parent_id", "position"), "parent_id IS NULL"),)


@dataclass(frozen=True)
class RecordType:
    name: str
    path: str
    scope: Scope
    model_name: str
    permissions: Permissions
    minimum: tuple[RequiredOneOf, ...] = ()
    columns: tuple[ColumnSpec, ...] = ()
    unique_keys: tuple[UniqueKey, ...] = ()
    indexes: tuple[tuple[str, ...], ...] = ()
    ref_rules: tuple[RefRule, ...] = ()
    hooks: hooks.Hooks = field(default_factory=hooks.Hooks)
    actions: tuple[str, ...] = ACTIONS
    list_is_plain_array: bool = False
    # Only groups may live in the hidden global repository (its administrators group).
    allowed_in_global_repository: bool = False
    # ArchivesSpace's 404 message where it is not "<Model> not found".
    missing_message: str = ""
    # The hierarchy this type is the root or a node of.
    tree: TreeSpec | None = None
    # What its search document holds; None: not searchable.
    search: SearchSpec | None = None
    # `POST <record>/suppressed` hides it from users who may not see suppressed records.
    suppressible: bool = False
    # `GET /repositories/:repo_id/find_by_id/<path>` criteria; none: no such route.
    lookups: tuple[Lookup, ...] = ()

    # Worked out once (in the instance's dict, beside the frozen fields): a bulk load asks each
    # record's type several times.
    @functools.cached_property
    def repo_scoped(self) -> bool:
        return self.scope is Scope.REPOSITORY

    @property
    def collection_path(self) -> str:
        """The route path template (FastAPI syntax) of the type's collection."""
        return f"/repositories/{{repo_id}}/{self.path}" if self.repo_scoped else f"/{self.path}"

    def uri(self, record_id: int, repo_id: int | None = None) -> str:
        if self.repo_scoped:
            return f"/repositories/{repo_id}/{self.path}/{record_id}"
        return f"/{self.path}/{record_id}"

    @functools.cached_property
    def is_tree_node(self) -> bool:
        """Whether its records are the nodes of a tree (an archival object), not its roots."""
        return self.tree is not None and self.tree.node == self.name

    @functools.cached_property
    def tree_fields(self) -> frozenset[str]:
        """A tree node's refs to its root and to its parent: its columns hold them (`root_column`,
        `parent_id`), so they are not kept as link rows as well (`refs.stored_links`)."""
        return frozenset((self.tree.root_field, "parent")) if self.is_tree_node else frozenset()

    @functools.cached_property
    def read_fields(self) -> tuple[str, ...]:
        """Fields computed at read time and spliced into the stored JSON: never stored."""
        node = self.tree.node_read_fields if self.is_tree_node else ()
        return (*self.hooks.read_fields, *node)

    def not_found(self) -> str:
        return self.missing_message or f"{self.model_name} not found"

    def table_spec(self) -> TableSpec:
        return TableSpec(
            name=self.name,
            repo_scoped=self.repo_scoped,
            columns=self.columns,
            unique=tuple(key.columns for key in self.unique_keys),
            indexes=self.indexes + (self.tree.node_indexes if self.is_tree_node else ()),
            partial_indexes=self.tree.top_level_indexes if self.is_tree_node else (),
        )

    def rule_for(self, field_pattern: str) -> RefRule:
        for rule in self.ref_rules:
            if rule.field == field_pattern:
                return rule
        return RefRule(field_pattern, "unlink")


@dataclass(frozen=True)
class ParsedUri:
    record_type: RecordType
    record_id: int
    repo_id: int | None


ID = r"[1-9][0-9]*"
# Ids are canonical (`/subjects/01` is not a URI): a ref is stored as written and must resolve.
_SCOPED_URI = re.compile(rf"^/repositories/({ID})/(.+)/({ID})$")
_GLOBAL_URI = re.compile(rf"^/(.+)/({ID})$")
# URIs whose parse is kept (~330 bytes each: 65,536 held 21 MB, and 8,192 left 4 MB in RSS after
# a bulk load; a parse is ~2 µs). Refs that repeat (a tree's resource, a batch's subjects and
# agents) stay; unique ones (the indexer's) need not.
PARSED_URIS = 2048


class Registry:
    def __init__(self, types: list[RecordType]):
        self.types = {t.name: t for t in types}
        # A URI's record type by its path: two patterns and a lookup, not a pattern per type.
        self._scoped_paths = {t.path: t for t in types if t.repo_scoped}
        self._global_paths = {t.path: t for t in types if not t.repo_scoped}

        # Refs repeat (every component of a tree names its resource): parsing is cached.
        self.parse_uri = functools.lru_cache(maxsize=PARSED_URIS)(self._parse_uri)

    def __getitem__(self, name: str) -> RecordType:
        return self.types[name]

    def __iter__(self):
        return iter(self.types.values())

    def _parse_uri(self, uri: str) -> ParsedUri | None:
        match = _SCOPED_URI.match(uri)
        if match and match.group(2) in self._scoped_paths:
            return ParsedUri(self._scoped_paths[match.group(2)], int(match.group(3)), int(match.group(1)))
        match = _GLOBAL_URI.match(uri)
        if match and match.group(1) in self._global_paths:
            return ParsedUri(self._global_paths[match.group(1)], int(match.group(2)), None)
        return None

    def uri_pattern(self, names: list[str]) -> str:
        """A regular expression matching the URIs `uri_type` gives one of `names`, for a compiled
        schema (its `$` ends the text; Python's also lets a final newline through: stricter there)."""
        scoped = [re.escape(self[n].path) for n in names if n in self.types and self[n].repo_scoped]
        unscoped = [re.escape(self[n].path) for n in names if n in self.types and not self[n].repo_scoped]
        forms = [f"/repositories/{ID}/({'|'.join(scoped)})"] if scoped else []
        forms += [f"/({'|'.join(unscoped)})"] if unscoped else []
        return f"^({'|'.join(forms)})/{ID}$" if forms else "a^"  # none: matches nothing

    def uri_type(self, uri: str) -> str | None:
        parsed = self.parse_uri(uri)
        return parsed.record_type.name if parsed else None

    def table_specs(self) -> list[TableSpec]:
        return [t.table_spec() for t in self]

    def trees(self) -> list[TreeSpec]:
        return list(dict.fromkeys(t.tree for t in self if t.tree is not None))

    def metadata(self):
        """The tables of every registered type plus the shared ones (change log, links, sessions)."""
        return build_metadata(self.table_specs())


class RegistryError(ValueError):
    """A declaration that cannot work; raised when the registry is built, so at start."""


def build_registry(types: Iterable[RecordType], *, permission_codes: Iterable[str]) -> Registry:
    """The registry of `types`, refusing duplicate names or paths and unknown permission codes
    (a typo in a declaration would otherwise leave an action no one may perform)."""
    types, known = list(types), frozenset(permission_codes)
    problems = []
    for attribute in ("name", "path"):
        seen = [getattr(t, attribute) for t in types]
        problems += [f"two record types have the {attribute} '{value}'" for value in sorted({v for v in seen if seen.count(v) > 1})]
    for t in types:
        for action in ("read", "create", "update", "delete"):
            code = getattr(t.permissions, action)
            if code not in known:
                problems.append(f"record type '{t.name}' needs unknown permission '{code}' to {action}")
    for t in types:
        problems += _lookup_problems(t) + _hook_problems(t)
    if problems:
        raise RegistryError("; ".join(problems))
    return Registry(types)


def _hook_problems(record_type: RecordType) -> list[str]:
    """A type that derives a new record alone (`Hooks.derive_new`) may have it derived away from
    its write (a batch import's, where it is validated): nothing else may run on its batch's docs."""
    kind, base = type(record_type.hooks), hooks.Hooks
    if kind.derive_new is base.derive_new:
        return []
    return [
        f"record type '{record_type.name}' derives new records alone (derive_new) but has its own {name}"
        for name in ("prepare_batch", "after_save")
        if getattr(kind, name) is not getattr(base, name)
    ]


def _lookup_problems(record_type: RecordType) -> list[str]:
    """A lookup needs a repository (its route is under one) and a column of the type's table."""
    if record_type.lookups and not record_type.repo_scoped:
        return [f"record type '{record_type.name}' declares lookups but is not repository-scoped"]
    columns = {column.name for column in record_type.columns}
    return [
        f"record type '{record_type.name}' looks up '{lookup.param}' in '{lookup.column}', which is not one of its columns"
        for lookup in record_type.lookups
        if lookup.column not in columns
    ]


def id_column(name: str, index: bool = False) -> ColumnSpec:
    return ColumnSpec(name, Integer(), index=index)


def text_column(name: str, length: int = 255, index: bool = False) -> ColumnSpec:
    return ColumnSpec(name, String(length), index=index)
