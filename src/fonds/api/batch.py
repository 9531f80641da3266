"""`POST /repositories/{repo_id}/batch_imports`: ArchivesSpace's batch import, all or none."""

from __future__ import annotations

from fastapi import APIRouter

from fonds.api.deps import RawBody, Services, require
from fonds.api.routing import add_route, json_response, json_schema_response
from fonds.auth.permissions import has_permission
from fonds.records.imports import BULK_IMPORTS, import_batch
from fonds.records.service import Actor
from fonds.storage import statistics

# Each record is checked against its own type's create permission; reading the repository is
# what the route itself asks.
ROUTE_PERMISSION = "view_repository"

SAVED = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"saved": {"type": "object", "additionalProperties": {"type": "array"}}},
    },
}


def batch_import(
    actor: Actor = require(ROUTE_PERMISSION), *, repo_id: int, app: Services, body: RawBody, use_transaction: str | None = None
):
    def may_create(record_type) -> bool:
        scope = repo_id if record_type.repo_scoped else None
        return has_permission(actor.grants, record_type.permissions.create, scope)

    service = app.records
    # The collector stays off from parsing until the records are gone: else the objects of a
    # large body, all young, are walked again and again as they are made, then once more when
    # it is turned back on.
    with BULK_IMPORTS.one():
        imported = import_batch(service, body, repo_id=repo_id, actor=actor, may_create=may_create)
    statistics.after_bulk_load(service.db, imported.types, imported.count, background=True, until_quiet=BULK_IMPORTS.analysis_may_start)
    # ArchivesSpace streams progress messages ending with this one; clients read the last element.
    return json_response([{"saved": imported.saved}])


def register(router: APIRouter) -> None:
    add_route(
        router,
        "/repositories/{repo_id}/batch_imports",
        batch_import,
        methods=["POST"],
        permission=ROUTE_PERMISSION,
        summary="Import records that refer to each other by temporary URIs (all or none)",
        description="`use_transaction` is accepted for ArchivesSpace's clients; the import is always one transaction.",
        tags=["import"],
        openapi_extra={"responses": json_schema_response(SAVED)},
    )
