"""Accessions, resources and archival objects (the resource's tree of description)."""

from __future__ import annotations

import os
import threading
import time

import orjson
from sqlalchemy import Boolean

from fonds.errors import FieldErrors
from fonds.records.hooks import Hooks
from fonds.records.registry import (
    Lookup,
    Permissions,
    RecordType,
    RefRule,
    RequiredOneOf,
    Scope,
    TreeSpec,
    UniqueKey,
    id_column,
    text_column,
)
from fonds.records.search_spec import (
    DESCRIBED,
    FOUR_PART_ID,
    IDENTIFIER,
    LEVEL,
    DocumentField,
    SearchSpec,
    ancestor_uris,
    both,
    copied,
    instance_dependents,
    node_dependents,
    ref_of,
)
from fonds.records.trees.decorations import ArchivalTreeViews
from fonds.records.types.agent_dependents import linked_agent_dependents
from fonds.records.types.container_links import node_container_dependents, resource_container_dependents
from fonds.records.types.events import linked_events, linked_events_sql
from fonds.storage.tables import ColumnSpec

IDENTIFIER_PARTS = ("id_0", "id_1", "id_2", "id_3")
IDENTIFIER_TAKEN = "That ID is already in use"
# Deleting a top container or a digital object deletes the instances that point at it (ArchivesSpace).
INSTANCE_RULES = (
    RefRule("instances/*/sub_container/top_container", "unlink", unlink_at="instances/*"),
    RefRule("instances/*/digital_object", "unlink", unlink_at="instances/*"),
)
ARCHIVAL = dict(read="view_repository", delete="delete_archival_record")
# The resource's tree of archival objects: its routes, reads and moves are records/trees.
ARCHIVAL_TREE = TreeSpec(root="resource", node="archival_object", children_type="archival_record_children", views=ArchivalTreeViews())


def _identifier(doc: dict) -> str | None:
    if not doc.get("id_0"):
        return None
    return orjson.dumps([doc.get(part) for part in IDENTIFIER_PARTS]).decode()


def identifier_lookup(sent: str) -> str | None:
    """ArchivesSpace's `identifier[]` lookup value: a JSON array of one to four parts, padded
    with nulls, in the identifier column's form (None: not such an array, so nothing matches)."""
    try:
        parts = orjson.loads(sent)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(parts, list) or not 0 < len(parts) <= len(IDENTIFIER_PARTS):
        return None
    # Empty parts are missing ones, as on write.
    parts = [None if part == "" else part for part in parts]
    return orjson.dumps(parts + [None] * (len(IDENTIFIER_PARTS) - len(parts))).decode()


def identifier_errors(doc: dict) -> FieldErrors:
    errors: FieldErrors = {}
    for part in IDENTIFIER_PARTS:
        if isinstance(doc.get(part), str) and len(doc[part]) > 50:
            errors.setdefault(part, []).append("Max length is 50 characters")
    parts = [doc.get(part) for part in IDENTIFIER_PARTS]
    while parts and not parts[-1]:
        parts.pop()
    if any(not part for part in parts):
        errors.setdefault("identifier", []).append("must not contain blank entries")
    return errors


def instance_errors(doc: dict) -> FieldErrors:
    """ArchivesSpace's check_instance (common/validations.rb): a digital object instance names its
    digital object, a digital object is only named by such an instance, any other holds a container."""
    errors: FieldErrors = {}
    for index, instance in enumerate(doc.get("instances", [])):
        kind, path = instance.get("instance_type"), f"instances/{index}"
        if kind == "digital_object":
            if not instance.get("digital_object"):
                errors[f"{path}/digital_object"] = ["Can't be empty"]
        elif instance.get("digital_object"):
            errors[f"{path}/instance_type"] = ["An instance with a digital object reference must be of type 'digital_object'"]
        elif kind and not instance.get("sub_container"):
            errors[f"{path}/sub_container"] = ["Can't be empty"]
    return errors


class ArchivalHooks(Hooks):
    """An archival record lists the events linking it (`linked_events`) when read."""

    read_fields = ("linked_events",)

    def read_extras(self, conn, rows):
        return linked_events(conn, self.type_name, [row.id for row in rows])

    def read_sql(self, dialect, row):
        return {"linked_events": linked_events_sql(dialect, self.type_name, row)}


class AccessionHooks(ArchivalHooks):
    type_name = "accession"

    def check(self, doc):
        return {**identifier_errors(doc), **instance_errors(doc)}

    def derive(self, ctx, doc):
        ctx.columns.update(self.derive_new(doc)[0])

    def derive_new(self, doc):
        ids = [doc[p] for p in IDENTIFIER_PARTS if doc.get(p)]
        doc["display_string"] = doc.get("title") or "-".join(ids)
        return {"identifier": _identifier(doc)}, False


class ResourceHooks(ArchivalHooks):
    type_name = "resource"

    def check(self, doc):
        return {**identifier_errors(doc), **instance_errors(doc)}

    def derive(self, ctx, doc):
        doc["tree"] = {"ref": f"{ctx.uri}/tree"}
        ctx.columns.update(identifier=_identifier(doc), ead_id=doc.get("ead_id"), level=doc.get("level"), publish=bool(doc.get("publish")))


def _date_label(date: dict) -> str:
    if date.get("expression"):
        text = date["expression"]
    elif date.get("begin") and date.get("end"):
        text = f"{date['begin']} - {date['end']}"
    else:
        text = date.get("begin", "")
    return f"bulk: {text}" if date.get("date_type") == "bulk" else text


def archival_object_display_string(doc: dict, name: str | None = None) -> str:
    """The title (or `name`, for records named otherwise) and the dates (ArchivesSpace's display string)."""
    dates = ", ".join(_date_label(d) for d in doc.get("dates", []))
    title = (doc.get("title") if name is None else name) or ""
    return ", ".join(part for part in (title, dates) if part) if title and dates else (title or dates)


class ArchivalObjectHooks(ArchivalHooks):
    type_name = "archival_object"
    derive_reads_referenced_rows = False  # placement knows new parents from the batch

    def check(self, doc):
        return instance_errors(doc)

    def derive(self, ctx, doc):
        if ctx.existing is None:
            columns, stale = self.derive_new(doc)
            ctx.stale = ctx.stale or stale
            ctx.columns.update(columns)
            return
        if doc.get("ref_id") != ctx.existing.ref_id:
            ctx.stale = True
        doc["ref_id"] = ctx.existing.ref_id  # immutable once set, as ArchivesSpace
        ctx.columns.update(self._columns(doc))

    def derive_new(self, doc):
        stale = not doc.get("ref_id")
        if stale:
            doc["ref_id"] = new_ref_id()
        return self._columns(doc), stale

    @staticmethod
    def _columns(doc: dict) -> dict:
        doc["display_string"] = archival_object_display_string(doc)
        return dict(
            ref_id=doc["ref_id"],
            component_id=doc.get("component_id"),
            level=doc.get("level"),
            publish=bool(doc.get("publish")),
            display_string=doc["display_string"],
        )


def _digital_objects(doc: dict | None) -> list[str]:
    """The digital objects the record's instances point at."""
    refs = [ref_of(instance, "digital_object") for instance in (doc or {}).get("instances", [])]
    return list(dict.fromkeys(ref for ref in refs if ref))


def digital_object_dependents(conn, registry, old: dict | None, new: dict | None, indexed=None) -> list[str]:
    """A digital object's `linked_instances` and `collection` are computed from the records whose
    instances point at it (and from an archival object's resource and publish flag)."""
    before, after = _digital_objects(old), _digital_objects(new)
    old, new = old or {}, new or {}
    if (old.get("publish"), ref_of(old, "resource")) != (new.get("publish"), ref_of(new, "resource")):
        return list(dict.fromkeys(before + after))
    return sorted(set(before) ^ set(after))


DIGITAL_OBJECT_URIS = DocumentField("digital_object_uris", "keyword", lambda doc, _: _digital_objects(doc))

# What each type's search documents hold (fonds.records.search_spec).
ACCESSION_SEARCH = SearchSpec(
    fields=(
        IDENTIFIER,
        FOUR_PART_ID,
        copied("accession_date", "date"),
        copied("acquisition_type", "keyword"),
        copied("resource_type", "keyword"),
        DIGITAL_OBJECT_URIS,
        *DESCRIBED,
    ),
    dependents=both(instance_dependents, digital_object_dependents, linked_agent_dependents),
)

RESOURCE_SEARCH = SearchSpec(
    fields=(
        IDENTIFIER,
        FOUR_PART_ID,
        LEVEL,
        copied("ead_id", "keyword"),
        copied("finding_aid_title", "text"),
        copied("finding_aid_filing_title", "text", default_weight=2.0),
        copied("finding_aid_status", "keyword"),
        copied("resource_type", "keyword"),
        DIGITAL_OBJECT_URIS,
        *DESCRIBED,
    ),
    dependents=both(resource_container_dependents, digital_object_dependents, linked_agent_dependents),
)

ARCHIVAL_OBJECT_SEARCH = SearchSpec(
    fields=(
        copied("identifier", "keyword", "component_id", default_weight=3.0),
        copied("component_id", "keyword"),
        copied("ref_id", "keyword"),
        LEVEL,
        DocumentField("resource", "keyword", lambda doc, _: ref_of(doc, "resource")),
        DocumentField("parent", "keyword", lambda doc, _: ref_of(doc, "parent")),
        DocumentField("ancestors", "keyword", lambda doc, _: ancestor_uris(doc)),
        copied("position", "integer"),
        DIGITAL_OBJECT_URIS,
        *DESCRIBED,
    ),
    title=lambda doc: doc.get("display_string") or doc.get("title"),
    dependents=both(node_dependents, node_container_dependents, digital_object_dependents, linked_agent_dependents),
)


TYPES = (
    RecordType(
        name="accession",
        path="accessions",
        scope=Scope.REPOSITORY,
        model_name="Accession",
        permissions=Permissions(create="update_accession_record", update="update_accession_record", **ARCHIVAL),
        minimum=(RequiredOneOf(("title",)),),
        columns=(text_column("identifier", 1024),),
        unique_keys=(UniqueKey(("repo_id", "identifier"), "id_0", IDENTIFIER_TAKEN),),
        ref_rules=INSTANCE_RULES,
        hooks=AccessionHooks(),
        search=ACCESSION_SEARCH,
        suppressible=True,
    ),
    RecordType(
        name="resource",
        path="resources",
        scope=Scope.REPOSITORY,
        model_name="Resource",
        permissions=Permissions(create="update_resource_record", update="update_resource_record", **ARCHIVAL),
        minimum=(RequiredOneOf(("title",)),),
        columns=(text_column("identifier", 1024), text_column("ead_id"), text_column("level"), ColumnSpec("publish", Boolean())),
        unique_keys=(
            UniqueKey(("repo_id", "identifier"), "id_0", IDENTIFIER_TAKEN),
            UniqueKey(("repo_id", "ead_id"), "ead_id", "Must be unique"),
        ),
        ref_rules=INSTANCE_RULES,
        hooks=ResourceHooks(),
        tree=ARCHIVAL_TREE,
        search=RESOURCE_SEARCH,
        suppressible=True,
        lookups=(Lookup("identifier", "identifier", identifier_lookup),),
    ),
    RecordType(
        name="archival_object",
        path="archival_objects",
        scope=Scope.REPOSITORY,
        model_name="ArchivalObject",
        permissions=Permissions(create="update_resource_record", update="update_resource_record", **ARCHIVAL),
        minimum=(
            RequiredOneOf(
                ("title", "dates"),
                custom=(
                    ("dates", "one or more required (or enter a Title)"),
                    ("title", "must not be an empty string (or enter a Date)"),
                ),
            ),
        ),
        columns=(
            id_column("resource_id"),
            id_column("parent_id"),
            id_column("position"),
            text_column("ref_id"),
            text_column("component_id", index=True),
            text_column("level"),
            ColumnSpec("publish", Boolean()),
            # Tree views list thousands of nodes by display string without parsing their JSON.
            text_column("display_string", 8192),
        ),
        unique_keys=(UniqueKey(("resource_id", "ref_id"), "ref_id", "An Archival Object Ref ID must be unique to its resource"),),
        ref_rules=(RefRule("resource", "cascade"), RefRule("parent", "cascade"), *INSTANCE_RULES),
        hooks=ArchivalObjectHooks(),
        tree=ARCHIVAL_TREE,
        search=ARCHIVAL_OBJECT_SEARCH,
        suppressible=True,
        lookups=(Lookup("ref_id", "ref_id"), Lookup("component_id", "component_id")),
    ),
)


class _RefIds:
    """New components' `ref_id`s: a version 7 UUID's 32 hex digits (RFC 9562): the time in
    milliseconds, a count within it, then 62 random bits. Ids made later sort later, so a
    resource's new components go to the end of its `ref_id`s in the index of its unique key,
    not to a random page of it (with random ids, version 4, each import into the bench's
    100,000-component collection wrote back most of that collection's pages of the index: its
    1M-record load wrote 3.5 % less to the database and its log with these).

    Made 256 at a time from one read of the system's random bytes (one read an id, as
    `uuid.uuid4` does, cost more than the rest of making it), and taken with `list.pop`,
    atomic: no lock but the one making them, one batch at a time."""

    # One id for each value of its count's last two hex digits (`_BYTES_HEX`).
    COUNT = 256
    # The variant bits (RFC 4122/9562) of each id's random half, set in its first byte.
    VARIANT = bytes((byte & 0x3F) | 0x80 for byte in range(256))
    # Ids one millisecond holds (its count's 12 bits, a multiple of COUNT): past them, the next
    # millisecond's are taken (as RFC 9562 lets a generator do).
    PER_MS = 4096
    _BYTES_HEX = tuple(f"{byte:02x}" for byte in range(256))

    def __init__(self):
        self.ready: list[str] = []
        self.lock = threading.Lock()
        self.last = (0, 0)  # the millisecond of the last ids made, and how many it holds
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        """In a forked child: its parent's ids are not handed out again, and the lock a thread of the
        parent may have held as it forked is not waited for."""
        self.ready.clear()
        self.lock = threading.Lock()

    def take(self) -> str:
        while True:
            try:
                return self.ready.pop()
            except IndexError:  # another thread may take them all before this one's turn: made again
                with self.lock:
                    if not self.ready:  # one batch at a time, or a later one would be handed out first
                        self.ready.extend(self._made())

    def _made(self) -> list[str]:
        """The next COUNT ids, last first (`take` pops them from the end); under the lock."""
        raw = bytearray(os.urandom(8 * self.COUNT))
        raw[0::8] = raw[0::8].translate(self.VARIANT)
        random = raw.hex()
        ms, count = self.last
        now = time.time_ns() // 1_000_000
        if now > ms:
            ms, count = now, 0
        elif count == self.PER_MS:
            ms, count = ms + 1, 0
        self.last = (ms, count + self.COUNT)
        prefix = f"{ms:012x}7{count >> 8:x}"  # the time, the version, the count's first digit
        made = [prefix + low + random[16 * index : 16 * index + 16] for index, low in enumerate(self._BYTES_HEX)]
        made.reverse()
        return made


_REF_IDS = _RefIds()


def new_ref_id() -> str:
    """A component's new `ref_id`: 32 hex digits, as ArchivesSpace makes them (a version 7 UUID's: `_RefIds`)."""
    return _REF_IDS.take()
