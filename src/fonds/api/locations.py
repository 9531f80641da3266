"""Routes beside the generated CRUD of locations and vocabularies: ArchivesSpace's location
batches (`POST /locations/batch`, `/locations/batch_update`) and a vocabulary's terms."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from fonds.api.deps import RawBody, Services, require
from fonds.api.routing import add_route, json_response, json_schema_response, record_response
from fonds.errors import BadRequest
from fonds.records import location_batch
from fonds.records.service import Actor
from fonds.records.vocabulary_terms import vocabulary_terms

UPDATE = "update_location_record"
VIEW = "view_repository"


def _dry_run(dry_run: Annotated[str | None, Query(description="true: list the titles, create nothing")] = None) -> bool:
    value = (dry_run or "false").strip().lower()
    if value not in ("true", "false", "1", "0"):
        raise BadRequest({"dry_run": [f"Wanted type Boolean but got '{dry_run}'"]})
    return value in ("true", "1")


def create_batch(actor: Actor = require(UPDATE), *, app: Services, body: RawBody, dry_run: Annotated[bool, Depends(_dry_run)]):
    return json_response(location_batch.create_batch(app.records, body, dry_run=dry_run, actor=actor))


def update_batch(actor: Actor = require(UPDATE), *, app: Services, body: RawBody):
    return json_response(location_batch.update_batch(app.records, body, actor=actor))


def list_terms(actor: Actor = require(VIEW), *, id: int, app: Services):
    return json_response(vocabulary_terms(app.db, app.records.registry, id))


STRINGS = {"type": "array", "items": {"type": "string"}}
BATCH_BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}}}


def register(router: APIRouter) -> None:
    # Before the generated `/locations/{id}` routes, which would otherwise take `batch` for an id.
    add_route(
        router,
        "/locations/batch",
        create_batch,
        methods=["POST"],
        permission=UPDATE,
        summary="Create a batch of locations from a template and coordinate ranges (dry_run: their titles)",
        tags=["location"],
        openapi_extra={**BATCH_BODY, "responses": json_schema_response(STRINGS, "URIs (or titles)")},
    )
    add_route(
        router,
        "/locations/batch_update",
        update_batch,
        methods=["POST"],
        permission=UPDATE,
        summary="Set the same fields on many locations (record_uris)",
        tags=["location"],
        openapi_extra={**BATCH_BODY, "responses": json_schema_response({"type": "array", "items": {"type": "object"}}, "Updated")},
    )
    add_route(
        router,
        "/vocabularies/{id}/terms",
        list_terms,
        methods=["GET"],
        permission=VIEW,
        summary="The terms of a vocabulary",
        tags=["vocabulary"],
        openapi_extra={"responses": record_response("term", many=True)},
    )
