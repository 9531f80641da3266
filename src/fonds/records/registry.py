"""The record-type registry: every type declared once. Routes, tables, validation and the
generic tests are all derived from `REGISTRY`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

from sqlalchemy import Boolean, Integer, String

from fonds.records import hooks
from fonds.records import search_spec as search
from fonds.records.search_spec import SearchSpec
from fonds.storage.tables import ColumnSpec, TableSpec

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
    """What happens to a record holding a ref at `field` when the ref's target is deleted."""

    field: str
    on_target_delete: Literal["cascade", "restrict", "unlink"]
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
    # What its search document holds; None: not searchable.
    search: SearchSpec | None = None
    # `POST <record>/suppressed` hides it from users who may not see suppressed records.
    suppressible: bool = False

    @property
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

    def not_found(self) -> str:
        return self.missing_message or f"{self.model_name} not found"

    def table_spec(self) -> TableSpec:
        return TableSpec(
            name=self.name,
            repo_scoped=self.repo_scoped,
            columns=self.columns,
            unique=tuple(key.columns for key in self.unique_keys),
            indexes=self.indexes,
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


class Registry:
    def __init__(self, types: list[RecordType]):
        self.types = {t.name: t for t in types}
        self._uri_patterns = [
            (
                re.compile(rf"^/repositories/(\d+)/{re.escape(t.path)}/(\d+)$" if t.repo_scoped else rf"^/{re.escape(t.path)}/(\d+)$"),
                t,
            )
            for t in types
        ]

    def __getitem__(self, name: str) -> RecordType:
        return self.types[name]

    def __iter__(self):
        return iter(self.types.values())

    def parse_uri(self, uri: str) -> ParsedUri | None:
        for pattern, record_type in self._uri_patterns:
            match = pattern.match(uri)
            if match:
                if record_type.repo_scoped:
                    return ParsedUri(record_type, int(match.group(2)), int(match.group(1)))
                return ParsedUri(record_type, int(match.group(1)), None)
        return None

    def uri_type(self, uri: str) -> str | None:
        parsed = self.parse_uri(uri)
        return parsed.record_type.name if parsed else None

    def table_specs(self) -> list[TableSpec]:
        return [t.table_spec() for t in self]


def _id_column(name: str, index: bool = False) -> ColumnSpec:
    return ColumnSpec(name, Integer(), index=index)


def _text_column(name: str, length: int = 255, index: bool = False) -> ColumnSpec:
    return ColumnSpec(name, String(length), index=index)


IDENTIFIER_TAKEN = "That ID is already in use"
# Deleting a top container deletes the instances that point at it (ArchivesSpace).
INSTANCE_RULES = (RefRule("instances/*/sub_container/top_container", "unlink", unlink_at="instances/*"),)
ARCHIVAL = dict(read="view_repository", delete="delete_archival_record")

REGISTRY = Registry(
    [
        RecordType(
            name="repository",
            path="repositories",
            scope=Scope.GLOBAL,
            model_name="Repository",
            permissions=Permissions(
                read="view_repository", create="create_repository", update="create_repository", delete="delete_repository"
            ),
            minimum=(RequiredOneOf(("name", "title")),),
            columns=(_text_column("repo_code"),),
            unique_keys=(UniqueKey(("repo_code",), "repo_code", "short name already in use"),),
            hooks=hooks.RepositoryHooks(),
            search=search.REPOSITORY_SEARCH,
            list_is_plain_array=True,
        ),
        RecordType(
            name="accession",
            path="accessions",
            scope=Scope.REPOSITORY,
            model_name="Accession",
            permissions=Permissions(create="update_accession_record", update="update_accession_record", **ARCHIVAL),
            minimum=(RequiredOneOf(("title",)),),
            columns=(_text_column("identifier", 1024),),
            unique_keys=(UniqueKey(("repo_id", "identifier"), "id_0", IDENTIFIER_TAKEN),),
            ref_rules=INSTANCE_RULES,
            hooks=hooks.AccessionHooks(),
            search=search.ACCESSION_SEARCH,
            suppressible=True,
        ),
        RecordType(
            name="resource",
            path="resources",
            scope=Scope.REPOSITORY,
            model_name="Resource",
            permissions=Permissions(create="update_resource_record", update="update_resource_record", **ARCHIVAL),
            minimum=(RequiredOneOf(("title",)),),
            columns=(_text_column("identifier", 1024), _text_column("ead_id"), _text_column("level")),
            unique_keys=(
                UniqueKey(("repo_id", "identifier"), "id_0", IDENTIFIER_TAKEN),
                UniqueKey(("repo_id", "ead_id"), "ead_id", "Must be unique"),
            ),
            ref_rules=INSTANCE_RULES,
            hooks=hooks.ResourceHooks(),
            search=search.RESOURCE_SEARCH,
            suppressible=True,
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
                _id_column("resource_id"),
                _id_column("parent_id", index=True),
                _id_column("position"),
                _text_column("ref_id"),
                _text_column("component_id", index=True),
                _text_column("level"),
            ),
            unique_keys=(UniqueKey(("resource_id", "ref_id"), "ref_id", "An Archival Object Ref ID must be unique to its resource"),),
            indexes=(("resource_id", "parent_id", "position"),),
            ref_rules=(RefRule("resource", "cascade"), RefRule("parent", "cascade"), *INSTANCE_RULES),
            hooks=hooks.ArchivalObjectHooks(),
            search=search.ARCHIVAL_OBJECT_SEARCH,
            suppressible=True,
        ),
        RecordType(
            name="subject",
            path="subjects",
            scope=Scope.GLOBAL,
            model_name="Subject",
            permissions=Permissions(
                read="view_repository", create="update_subject_record", update="update_subject_record", delete="delete_subject_record"
            ),
            minimum=(RequiredOneOf(("title", "terms")),),
            columns=(_text_column("terms_key", 64), _text_column("authority_key", 64)),
            unique_keys=(
                UniqueKey(("terms_key",), "terms", "Subject must be unique", report_conflict=True),
                UniqueKey(
                    ("authority_key",), "authority_id", "Subject heading identifier must be unique within source", report_conflict=True
                ),
            ),
            ref_rules=(RefRule("vocabulary", "restrict", message="Vocabulary is in use by subjects"),),
            hooks=hooks.SubjectHooks(),
            search=search.SUBJECT_SEARCH,
        ),
        RecordType(
            name="top_container",
            path="top_containers",
            scope=Scope.REPOSITORY,
            model_name="TopContainer",
            permissions=Permissions(
                read="view_repository", create="update_container_record", update="update_container_record", delete="manage_container_record"
            ),
            minimum=(RequiredOneOf(("indicator", "title")),),
            columns=(_text_column("barcode"), _text_column("indicator", index=True)),
            unique_keys=(UniqueKey(("repo_id", "barcode"), "barcode", "A barcode must be unique within a repository"),),
            hooks=hooks.TopContainerHooks(),
            search=search.TOP_CONTAINER_SEARCH,
        ),
        RecordType(
            name="location_profile",
            path="location_profiles",
            scope=Scope.GLOBAL,
            model_name="LocationProfile",
            permissions=Permissions(
                read="view_repository",
                create="update_location_profile_record",
                update="update_location_profile_record",
                delete="update_location_profile_record",
            ),
            minimum=(RequiredOneOf(("name", "title")),),
            columns=(_text_column("name"),),
            unique_keys=(UniqueKey(("name",), "name", "Location profile name not unique"),),
            hooks=hooks.LocationProfileHooks(),
            search=search.LOCATION_PROFILE_SEARCH,
        ),
        RecordType(
            name="vocabulary",
            path="vocabularies",
            scope=Scope.GLOBAL,
            model_name="Vocabulary",
            permissions=Permissions(
                read="view_repository",
                create="update_vocabulary_record",
                update="update_vocabulary_record",
                delete="update_vocabulary_record",
            ),
            minimum=(RequiredOneOf(("name", "title")), RequiredOneOf(("ref_id",))),
            columns=(_text_column("ref_id"),),
            unique_keys=(UniqueKey(("ref_id",), "ref_id", "Vocabulary ref_id must be unique"),),
            hooks=hooks.VocabularyHooks(),
            list_is_plain_array=True,
        ),
        RecordType(
            name="user",
            path="users",
            scope=Scope.GLOBAL,
            model_name="User",
            permissions=Permissions(read="manage_users", create="manage_users", update="manage_users", delete="manage_users"),
            minimum=(RequiredOneOf(("name", "title")),),
            columns=(
                _text_column("username"),
                _text_column("password_hash"),
                ColumnSpec("is_active", Boolean()),
                ColumnSpec("is_system", Boolean()),
            ),
            unique_keys=(UniqueKey(("username",), "username", "Username '{value}' is already in use"),),
            hooks=hooks.UserHooks(),
            missing_message="User wasn't found",
            # Create, read, update and delete take passwords and check self-service and
            # administrator rights: api/users.py.
            actions=("list",),
        ),
        RecordType(
            name="group",
            path="groups",
            scope=Scope.REPOSITORY,
            model_name="Group",
            permissions=Permissions(
                read="manage_repository", create="manage_repository", update="manage_repository", delete="manage_repository"
            ),
            minimum=(RequiredOneOf(("group_code",)),),
            columns=(_text_column("group_code_key"),),
            unique_keys=(UniqueKey(("repo_id", "group_code_key"), "group_code", "Group code must be unique within a repository"),),
            hooks=hooks.GroupHooks(),
            # Listing, reading and updating take ArchivesSpace's group_code / with_members: api/groups.py.
            actions=("create", "delete"),
            allowed_in_global_repository=True,
        ),
    ]
)


def database_metadata():
    """The tables of every registered type plus the shared ones (change log, links, sessions)."""
    from fonds.storage.tables import build_metadata

    return build_metadata(REGISTRY.table_specs())
