"""`register_record_routes(router, record_type)`: list, create, read, update and delete routes for one registered type."""

from __future__ import annotations

from fastapi import APIRouter

from fonds.api.deps import RawBody, Services, require
from fonds.api.params import ListingParams, ResolveParam, SuppressedParam
from fonds.api.routing import (
    DELETE_RESULT,
    WRITE_RESULT,
    add_route,
    json_response,
    listing_response,
    record_body,
    record_response,
    with_repo_id,
)
from fonds.records.registry import RecordType
from fonds.records.service import Actor
from fonds.records.suppression import set_suppressed


def register_record_routes(router: APIRouter, record_type: RecordType) -> None:
    perms = record_type.permissions
    base = record_type.collection_path
    item = f"{base}/{{id}}"
    scoped = record_type.repo_scoped
    name = record_type.name

    def list_records(actor: Actor = require(perms.read), *, app: Services, params: ListingParams, repo_id: int | None = None):
        records = app.records
        if record_type.list_is_plain_array:
            return json_response(records.list_all(record_type, repo_id=repo_id, resolve=params.resolve))
        if params.page is not None:
            return json_response(records.list_page(record_type, repo_id=repo_id, page=params.page, resolve=params.resolve))
        if params.id_set is not None:
            return json_response(records.list_all(record_type, repo_id=repo_id, resolve=params.resolve, ids=params.id_set))
        return json_response(records.list_ids(record_type, repo_id=repo_id))

    def list_plain(actor: Actor = require(perms.read), *, app: Services, resolve: ResolveParam = [], repo_id: int | None = None):
        return json_response(app.records.list_all(record_type, repo_id=repo_id, resolve=resolve))

    def create_record(actor: Actor = require(perms.create), *, app: Services, body: RawBody, repo_id: int | None = None):
        return json_response(app.records.create(record_type, body, repo_id=repo_id, actor=actor))

    def read_record(actor: Actor = require(perms.read), *, id: int, app: Services, resolve: ResolveParam = [], repo_id: int | None = None):
        return json_response(app.records.read(record_type, id, repo_id=repo_id, resolve=resolve))

    def update_record(actor: Actor = require(perms.update), *, id: int, app: Services, body: RawBody, repo_id: int | None = None):
        return json_response(app.records.update(record_type, id, body, repo_id=repo_id, actor=actor))

    def delete_record(actor: Actor = require(perms.delete), *, id: int, app: Services, repo_id: int | None = None):
        return json_response(app.records.delete(record_type, id, repo_id=repo_id, actor=actor))

    def suppress_record(
        actor: Actor = require("suppress_archival_record"),
        *,
        id: int,
        app: Services,
        suppressed: SuppressedParam,
        repo_id: int | None = None,
    ):
        return json_response(set_suppressed(app.db, record_type, id, repo_id=repo_id, value=suppressed, username=actor.username))

    lister, listed = (
        (list_plain, record_response(name, many=True)) if record_type.list_is_plain_array else (list_records, listing_response(name))
    )
    routes = {
        "list": (base, lister, "GET", perms.read, f"List {name} records", {"responses": listed}),
        "create": (base, create_record, "POST", perms.create, f"Create a {name}", {**record_body(name), "responses": WRITE_RESULT}),
        "read": (item, read_record, "GET", perms.read, f"Read a {name}", {"responses": record_response(name)}),
        "update": (
            item,
            update_record,
            "POST",
            perms.update,
            f"Update a {name} (whole record, current lock_version)",
            {**record_body(name), "responses": WRITE_RESULT},
        ),
        "delete": (item, delete_record, "DELETE", perms.delete, f"Delete a {name} permanently", {"responses": DELETE_RESULT}),
    }
    if record_type.suppressible:
        add_route(
            router,
            f"{item}/suppressed",
            with_repo_id(suppress_record, scoped),
            methods=["POST"],
            permission="suppress_archival_record",
            summary=f"Suppress or unsuppress a {name}",
            name=f"suppress_{name}",
            tags=[name],
        )
    for action in record_type.actions:
        path, endpoint, method, permission, summary, extra = routes[action]
        add_route(
            router,
            path,
            with_repo_id(endpoint, scoped),
            methods=[method],
            permission=permission,
            summary=summary,
            name=f"{action}_{name}",
            openapi_extra=extra,
            tags=[name],
        )
