"""Digital objects and their components: a tree like a resource's (the same TreeSpec capability),
with file versions, and the instances of archival records that point at a digital object."""

from __future__ import annotations

from sqlalchemy import Boolean, select

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
    LEVEL,
    DocumentField,
    SearchSpec,
    ancestor_uris,
    both,
    copied,
    node_dependents,
    ref_of,
)
from fonds.records.trees.decorations import TreeViews, dates
from fonds.records.types import archival
from fonds.records.types.agent_dependents import linked_agent_dependents
from fonds.records.types.events import linked_events, linked_events_sql
from fonds.storage import links as link_table
from fonds.storage.chunks import is_in, select_any
from fonds.storage.tables import ColumnSpec

DIGITAL = dict(
    read="view_repository", create="update_digital_object_record", update="update_digital_object_record", delete="delete_archival_record"
)
# Where an archival record's instance points at a digital object (the record_link field).
INSTANCE_LINK = "instances/*/digital_object"
# The types whose instances may point at a digital object, by name (their URIs are built from them).
INSTANCE_HOLDERS = {t.name: t for t in archival.TYPES}
COMPONENT_NAMES = ("label", "title", "dates")


def file_version_errors(type_name: str, doc: dict) -> FieldErrors:
    """ArchivesSpace's FileVersion rules: a representative file version is published, and a record
    has at most one (`backend/app/model/file_version.rb`, `mixins/representative.rb`)."""
    errors: FieldErrors = {}
    representative = 0
    for index, version in enumerate(doc.get("file_versions", [])):
        if not version.get("is_representative"):
            continue
        path = f"file_versions/{index}/is_representative"
        if not version.get("publish"):
            errors.setdefault(path, []).append("representative_file_version_must_be_published")
        representative += 1
        if representative > 1:
            errors.setdefault(path, []).append(f"A {type_name} can have only one FileVersion defined as: is_representative")
    return errors


def _refs(doc: dict, key: str) -> list[str]:
    return list(dict.fromkeys(item["ref"] for item in doc.get(key) or [] if item.get("ref")))


def _file_uris(doc: dict) -> list[str]:
    return [version["file_uri"] for version in doc.get("file_versions", []) if version.get("file_uri")]


def _iiif_manifest(version: dict) -> bool:
    wanted = {"file_format_name": "iiif", "use_statement": "text-json", "xlink_show_attribute": "embed"}
    return all(version.get(key) == value for key, value in wanted.items())


def representative_file_version(versions: list[dict]) -> dict | None:
    """ArchivesSpace's choice (mixins/representative_file_version.rb): the published representative
    file version, else the first published thumbnail, else the first published embeddable web
    file that is no IIIF manifest; `link_uri` is the published file version that follows it."""
    candidates: list[list[dict] | None] = [None, None, None]
    last = None
    for version in versions:
        if candidates[0] is not None and len(candidates[0]) == 2:
            break
        if last is not None and len(last) == 1:
            last.append(version)
        if not version.get("publish"):
            continue
        embeddable = version["file_uri"].startswith("http") and version.get("xlink_show_attribute") == "embed"
        for rank, fits in enumerate(
            (
                version.get("is_representative"),
                version.get("use_statement") == "image-thumbnail",
                embeddable and not _iiif_manifest(version),
            )
        ):
            if fits and candidates[rank] is None:
                last = candidates[rank] = [version]
                break
    chosen = next((pair for pair in candidates if pair), None)
    if chosen is None:
        return None
    result = dict(chosen[0])
    if len(chosen) > 1 and chosen[1].get("publish"):
        result["link_uri"] = chosen[1]["file_uri"]
    return result


def _derive_representative(doc: dict) -> None:
    chosen = representative_file_version(doc.get("file_versions", []))
    if chosen is not None:
        doc["representative_file_version"] = chosen


class DigitalObjectHooks(Hooks):
    read_fields = ("linked_instances", "collection", "linked_events")

    def check(self, doc):
        return file_version_errors("digital_object", doc)

    def derive(self, ctx, doc):
        doc["tree"] = {"ref": f"{ctx.uri}/tree"}
        _derive_representative(doc)
        ctx.columns.update(digital_object_id=doc.get("digital_object_id"), publish=bool(doc.get("publish")))

    def read_extras(self, conn, rows):
        """`linked_instances` (the records whose instances point here) and `collection` (their
        resources or accessions; an archival object's resource only while it is published), as
        ArchivesSpace's DigitalObject.sequel_to_jsonmodel: two bounded queries per page of rows."""
        tables = conn.info["fonds_tables"]
        links = link_table.readable(conn)
        found = select_any(
            conn,
            lambda chunk: (
                select(links.c.target_id, links.c.source_type, links.c.source_id)
                .where(links.c.target_type == "digital_object", links.c.field == INSTANCE_LINK, is_in(links.c.target_id, chunk))
                .order_by(links.c.id)
            ),
            [row.id for row in rows],
        )
        objects = tables["archival_object"]
        component_ids = sorted({link.source_id for link in found if link.source_type == "archival_object"})
        owners = {
            row.id: row
            for row in select_any(
                conn,
                lambda chunk: select(objects.c.id, objects.c.resource_id, objects.c.publish).where(is_in(objects.c.id, chunk)),
                component_ids,
            )
        }
        by_object: dict[int, list] = {}
        for link in found:
            by_object.setdefault(link.target_id, []).append(link)
        events = linked_events(conn, "digital_object", [row.id for row in rows])
        return [{**self._links_of(row, by_object.get(row.id, []), owners), **linked} for row, linked in zip(rows, events)]

    @staticmethod
    def _links_of(row, links, owners) -> dict:
        linked, collection = [], []
        for link in links:
            uri = INSTANCE_HOLDERS[link.source_type].uri(link.source_id, row.repo_id)
            linked.append({"ref": uri})
            if link.source_type != "archival_object":
                collection.append(uri)
                continue
            owner = owners.get(link.source_id)
            if owner is not None and owner.publish and owner.resource_id is not None:
                collection.append(INSTANCE_HOLDERS["resource"].uri(owner.resource_id, row.repo_id))
        return {"linked_instances": linked, "collection": [{"ref": uri} for uri in dict.fromkeys(collection)]}


def component_display_string(doc: dict) -> str:
    """The title (or else the label), then the dates, as an archival object's display string."""
    return archival.archival_object_display_string(doc, name=doc.get("title") or doc.get("label"))


class DigitalObjectComponentHooks(Hooks):
    read_fields = ("linked_events",)
    derive_reads_referenced_rows = False  # placement knows new parents from the batch

    def check(self, doc):
        return file_version_errors("digital_object_component", doc)

    def read_extras(self, conn, rows):
        return linked_events(conn, "digital_object_component", [row.id for row in rows])

    def read_sql(self, dialect, row):
        return {"linked_events": linked_events_sql(dialect, "digital_object_component", row)}

    def derive(self, ctx, doc):
        doc["display_string"] = component_display_string(doc)
        _derive_representative(doc)
        ctx.columns.update(component_id=doc.get("component_id"), publish=bool(doc.get("publish")), display_string=doc["display_string"])


class DigitalTreeViews(TreeViews):
    """The digital object tree (ArchivesSpace's LargeTreeDigitalObject and DigitalObjectTrees)."""

    def root(self, tree, doc):
        return {"digital_object_type": doc.get("digital_object_type"), "file_uri_summary": ", ".join(_file_uris(doc))}

    def waypoint(self, tree, docs):
        extras = []
        for doc in docs:
            extra = {"label": doc["label"]} if doc.get("label") else {}
            if doc.get("dates"):
                extra["dates"] = dates(doc)
            if doc.get("file_versions"):
                extra["file_uri_summary"] = ", ".join(_file_uris(doc))
            extras.append(extra)
        return extras

    def old_tree_root(self, tree, doc, partial):
        return {
            "level": doc.get("level"),
            "digital_object_type": doc.get("digital_object_type"),
            "file_versions": doc.get("file_versions", []),
        }

    def old_tree_nodes(self, tree, docs):
        return [{"file_versions": doc.get("file_versions", [])} for doc in docs]


DIGITAL_TREE = TreeSpec(
    root="digital_object", node="digital_object_component", children_type="digital_record_children", views=DigitalTreeViews()
)
FILE_URIS = DocumentField("file_uri", "keyword", lambda doc, _: _file_uris(doc))

DIGITAL_OBJECT_SEARCH = SearchSpec(
    fields=(
        copied("identifier", "keyword", "digital_object_id", default_weight=3.0),
        copied("digital_object_id", "keyword"),
        copied("digital_object_type", "keyword"),
        LEVEL,
        copied("restrictions", "boolean"),
        FILE_URIS,
        # ArchivesSpace's names for the records whose instances point here and their collections.
        DocumentField("linked_instance_uris", "keyword", lambda doc, _: _refs(doc, "linked_instances")),
        DocumentField("collection_uri_u_sstr", "keyword", lambda doc, _: _refs(doc, "collection")),
        *DESCRIBED,
    ),
    dependents=linked_agent_dependents,
)

DIGITAL_OBJECT_COMPONENT_SEARCH = SearchSpec(
    fields=(
        copied("identifier", "keyword", "component_id", default_weight=3.0),
        copied("component_id", "keyword"),
        # ArchivesSpace indexes a component's component_id as its digital_object_id too.
        copied("digital_object_id", "keyword", "component_id"),
        DocumentField("digital_object", "keyword", lambda doc, _: ref_of(doc, "digital_object")),
        DocumentField("parent", "keyword", lambda doc, _: ref_of(doc, "parent")),
        DocumentField("ancestors", "keyword", lambda doc, _: ancestor_uris(doc)),
        copied("position", "integer"),
        FILE_URIS,
        *DESCRIBED,
    ),
    title=lambda doc: doc.get("display_string") or doc.get("title"),
    dependents=both(node_dependents, linked_agent_dependents),
)


TYPES = (
    RecordType(
        name="digital_object",
        path="digital_objects",
        scope=Scope.REPOSITORY,
        model_name="DigitalObject",
        permissions=Permissions(**DIGITAL),
        minimum=(RequiredOneOf(("title",)),),
        columns=(text_column("digital_object_id", index=True), ColumnSpec("publish", Boolean())),
        unique_keys=(UniqueKey(("repo_id", "digital_object_id"), "digital_object_id", "Must be unique"),),
        hooks=DigitalObjectHooks(),
        lookups=(Lookup("digital_object_id", "digital_object_id"),),
        tree=DIGITAL_TREE,
        search=DIGITAL_OBJECT_SEARCH,
        suppressible=True,
    ),
    RecordType(
        name="digital_object_component",
        path="digital_object_components",
        scope=Scope.REPOSITORY,
        model_name="DigitalObjectComponent",
        permissions=Permissions(**DIGITAL),
        minimum=(RequiredOneOf(COMPONENT_NAMES, custom=tuple((f, "you must provide a label, title or date") for f in COMPONENT_NAMES)),),
        columns=(
            id_column("digital_object_id"),
            id_column("parent_id"),
            id_column("position"),
            text_column("component_id", index=True),
            ColumnSpec("publish", Boolean()),
            # Tree views list thousands of nodes by display string without parsing their JSON.
            text_column("display_string", 8192),
        ),
        unique_keys=(
            UniqueKey(
                ("digital_object_id", "component_id"), "component_id", "A Digital Object Component ID must be unique to its Digital Object"
            ),
        ),
        ref_rules=(RefRule("digital_object", "cascade"), RefRule("parent", "cascade")),
        hooks=DigitalObjectComponentHooks(),
        tree=DIGITAL_TREE,
        search=DIGITAL_OBJECT_COMPONENT_SEARCH,
        suppressible=True,
    ),
)
