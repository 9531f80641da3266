"""Repositories, including the hidden global repository that holds system-wide groups."""

from __future__ import annotations

from fonds.records.hooks import Hooks
from fonds.records.registry import Permissions, RecordType, RequiredOneOf, Scope, UniqueKey, text_column
from fonds.records.search_spec import SearchSpec, copied

GLOBAL_REPO_CODE = "_archivesspace"
# Created first, so always /repositories/1 (as in ArchivesSpace).
GLOBAL_REPO_ID = 1


class RepositoryHooks(Hooks):
    contains_repository_records = True

    # The global repository is known by its id: whatever its code says, it is not an ordinary one.
    def list_filter(self, table):
        return table.c.id != GLOBAL_REPO_ID

    def can_delete(self, row) -> bool:
        return row.id != GLOBAL_REPO_ID

    def hidden(self, row) -> bool:
        return row.id == GLOBAL_REPO_ID

    def derive(self, ctx, doc):
        doc.setdefault("name", doc.get("title"))
        doc["display_string"] = f"{doc['name']} ({doc['repo_code']})"
        ctx.columns["repo_code"] = doc["repo_code"]

    def after_save(self, service, ctx, doc, actor):
        if ctx.existing is not None or ctx.record_id == GLOBAL_REPO_ID:
            return
        for record_type in ctx.registry:
            record_type.hooks.seed_repository(service, ctx, doc, actor)


# What each type's search documents hold (fonds.records.search_spec).
REPOSITORY_SEARCH = SearchSpec(
    fields=(copied("repo_code", "keyword"),),
    title=lambda doc: doc.get("name"),
)


TYPES = (
    RecordType(
        name="repository",
        path="repositories",
        scope=Scope.GLOBAL,
        model_name="Repository",
        permissions=Permissions(read="view_repository", create="create_repository", update="create_repository", delete="delete_repository"),
        minimum=(RequiredOneOf(("name", "title")),),
        columns=(text_column("repo_code"),),
        unique_keys=(UniqueKey(("repo_code",), "repo_code", "short name already in use"),),
        hooks=RepositoryHooks(),
        search=REPOSITORY_SEARCH,
        list_is_plain_array=True,
    ),
)
