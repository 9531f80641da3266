"""The controlled value lists: ArchivesSpace's /config/enumerations and /config/enumeration_values
routes. Reading is public (as in ArchivesSpace); every change needs `update_enumeration_record`."""

from __future__ import annotations

import csv
import io
from typing import Annotated

from fastapi import APIRouter, Form, Query
from starlette.responses import Response

from fonds.api.deps import PUBLIC, RawBody, Services, require
from fonds.api.routing import add_route, json_response, json_schema_response
from fonds.api.sessions import parse_bool
from fonds.errors import missing_parameter
from fonds.records.enumerations import Change
from fonds.records.service import Actor, parse_body
from fonds.storage.records import utcnow

PERMISSION = "update_enumeration_record"


def _change(actor: Actor) -> Change:
    return Change(actor.username, utcnow())


def list_enumerations(app: Services):
    return json_response(app.enumerations.listing())


def read_enumeration(enum_id: int, app: Services):
    return json_response(app.enumerations.by_id(enum_id))


def read_enumeration_by_name(enum_name: str, app: Services):
    return json_response(app.enumerations.by_name(enum_name))


def read_value(enum_val_id: int, app: Services):
    return json_response(app.enumerations.value(enum_val_id))


def create_enumeration(body: RawBody, app: Services, actor: Actor = require(PERMISSION)):
    return json_response(app.enumerations.create(parse_body(body), _change(actor)))


def update_enumeration(enum_id: int, body: RawBody, app: Services, actor: Actor = require(PERMISSION)):
    return json_response(app.enumerations.update(enum_id, parse_body(body), _change(actor)))


def migrate_value(body: RawBody, app: Services, actor: Actor = require(PERMISSION)):
    return json_response(app.enumerations.migrate(parse_body(body), _change(actor)))


def update_value(enum_val_id: int, body: RawBody, app: Services, actor: Actor = require(PERMISSION)):
    return json_response(app.enumerations.update_value(enum_val_id, parse_body(body), _change(actor)))


def set_position(
    enum_val_id: int,
    app: Services,
    actor: Actor = require(PERMISSION),
    position: Annotated[str | None, Query(description="The 0-based position to move the value to.")] = None,
    position_form: Annotated[str | None, Form(alias="position")] = None,
):
    given = position_form if position_form is not None else position
    if given in (None, ""):
        raise missing_parameter("position")
    return json_response(app.enumerations.set_position(enum_val_id, given, _change(actor)))


def set_suppressed(
    enum_val_id: int,
    app: Services,
    actor: Actor = require(PERMISSION),
    suppressed: Annotated[str | None, Query(description="true to suppress the value, false to restore it.")] = None,
    suppressed_form: Annotated[str | None, Form(alias="suppressed")] = None,
):
    given = suppressed_form if suppressed_form is not None else suppressed
    if given in (None, ""):
        raise missing_parameter("suppressed")
    state = parse_bool("suppressed", given, False)
    return json_response(app.enumerations.set_suppressed(enum_val_id, state, _change(actor)))


def list_csv(app: Services):
    return Response(_csv(app.enumerations.listing()), media_type="text/csv")


CSV_HEADERS = ["Enumeration code", "Enumeration", "Value code", "Value", "Position", "Read-only"]


def _csv(lists: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADERS)
    for enum in sorted(lists, key=lambda e: e["name"]):
        for value in enum["enumeration_values"]:
            if not value["suppressed"]:
                writer.writerow([enum["name"], enum["name"], value["value"], value["value"], value["position"], value["readonly"]])
    return out.getvalue()


def register(router: APIRouter) -> None:
    tags = ["enumerations"]
    routes = [
        ("/config/enumerations", list_enumerations, "GET", PUBLIC, "Every controlled value list"),
        ("/config/enumerations/csv", list_csv, "GET", PUBLIC, "Every unsuppressed value of every list, as CSV"),
        ("/config/enumerations", create_enumeration, "POST", PERMISSION, "Create a value list"),
        ("/config/enumerations/migration", migrate_value, "POST", PERMISSION, "Merge a value into another (its records follow)"),
        ("/config/enumerations/names/{enum_name}", read_enumeration_by_name, "GET", PUBLIC, "A value list by name"),
        ("/config/enumerations/{enum_id}", read_enumeration, "GET", PUBLIC, "A value list"),
        ("/config/enumerations/{enum_id}", update_enumeration, "POST", PERMISSION, "Add, remove or rename values; set the default"),
        ("/config/enumeration_values/{enum_val_id}", read_value, "GET", PUBLIC, "A value"),
        ("/config/enumeration_values/{enum_val_id}", update_value, "POST", PERMISSION, "Rename, move or suppress a value"),
        ("/config/enumeration_values/{enum_val_id}/position", set_position, "POST", PERMISSION, "Move a value in its list"),
        ("/config/enumeration_values/{enum_val_id}/suppressed", set_suppressed, "POST", PERMISSION, "Suppress or restore a value"),
    ]
    # What a route answers when it is not one object.
    answers = {
        list_enumerations: json_schema_response({"type": "array", "items": {"type": "object"}}),
        list_csv: {"200": {"description": "OK", "content": {"text/csv": {"schema": {"type": "string"}}}}},
    }
    for path, endpoint, method, permission, summary in routes:
        extra = {"openapi_extra": {"responses": answers[endpoint]}} if endpoint in answers else {}
        add_route(router, path, endpoint, methods=[method], permission=permission, summary=summary, tags=tags, **extra)
