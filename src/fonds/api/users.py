"""User routes beyond the generic list and delete: create and update with passwords, the
current user, self-service password change, activation, group membership."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from fonds.api.deps import LOGGED_IN, RawBody, Services, require, require_login, require_self_or
from fonds.api.routing import DELETE_RESULT, WRITE_RESULT, add_route, json_response, json_schema_response, record_body, record_response
from fonds.api.sessions import parse_bool
from fonds.auth import users
from fonds.errors import missing_parameter
from fonds.records.service import Actor

MANAGE = "manage_users"
PasswordParam = Annotated[str | None, Query(description="The password (never echoed, never logged).")]
GroupsParam = Annotated[list[str], Query(alias="groups[]", description="Group URIs to join.")]


def create_user(actor: Actor = require(MANAGE), *, app: Services, body: RawBody, password: PasswordParam = None, groups: GroupsParam = []):
    return json_response(users.create_user(app.records, body, password=password, group_uris=groups, actor=actor))


def current_user(actor: Actor = require_login(), *, app: Services):
    return json_response(users.read_user(app.records, actor.user_id))


def read_user(actor: Actor = require_self_or(MANAGE), *, id: int, app: Services):
    return json_response(users.read_user(app.records, id))


def update_user(actor: Actor = require_self_or(MANAGE), *, id: int, app: Services, body: RawBody, password: PasswordParam = None):
    return json_response(users.update_user(app.records, id, body, password=password, actor=actor))


def delete_user(actor: Actor = require(MANAGE), *, id: int, app: Services):
    return json_response(users.delete_user(app.records, id, actor=actor))


def change_password(actor: Actor = require_login(), *, id: int, app: Services, password: PasswordParam = None):
    return json_response(users.change_own_password(app.records, id, password=password, actor=actor))


def activate(actor: Actor = require(MANAGE), *, id: int, app: Services):
    return json_response(users.set_active(app.records, id, active=True, actor=actor))


def deactivate(actor: Actor = require(MANAGE), *, id: int, app: Services):
    return json_response(users.set_active(app.records, id, active=False, actor=actor))


def set_groups(
    actor: Actor = require_login(),
    *,
    id: int,
    app: Services,
    groups: GroupsParam = [],
    remove_groups: Annotated[str | None, Query(description="true: leave the repository's groups not named.")] = None,
    repo_id: Annotated[int | None, Query(description="The repository whose groups are set.")] = None,
):
    if repo_id is None or remove_groups in (None, ""):
        raise missing_parameter(*[name for name, value in (("remove_groups", remove_groups), ("repo_id", repo_id)) if value in (None, "")])
    remove = parse_bool("remove_groups", remove_groups, False)
    return json_response(users.set_groups(app.records, id, group_uris=groups, remove_groups=remove, repo_id=repo_id, actor=actor))


def read_repository_user(actor: Actor = require("manage_repository"), *, repo_id: int, id: int, app: Services):
    return json_response(users.read_user(app.records, id, only_repo=repo_id))


PASSWORD_CHANGED = {
    "responses": json_schema_response({"type": "object", "required": ["success"], "properties": {"success": {"type": "string"}}})
}
GROUPS_SET = {"responses": json_schema_response({"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}})}


def register(router: APIRouter) -> None:
    tags = ["user"]
    one = {"responses": record_response("user")}
    routes = [
        (
            "/users",
            create_user,
            "POST",
            MANAGE,
            "Create a user (password as a query parameter)",
            {**record_body("user"), "responses": WRITE_RESULT},
        ),
        ("/users/current-user", current_user, "GET", LOGGED_IN, "The logged-in user, with permissions", one),
        ("/users/{id}", read_user, "GET", MANAGE, "Read a user (yourself, or with manage_users)", one),
        (
            "/users/{id}",
            update_user,
            "POST",
            MANAGE,
            "Update a user (yourself, or with manage_users); optional new password",
            {**record_body("user"), "responses": WRITE_RESULT},
        ),
        (
            "/users/{id}",
            delete_user,
            "DELETE",
            MANAGE,
            "Delete a user (an administrator only with administer_system)",
            {"responses": DELETE_RESULT},
        ),
        ("/users/{id}/password", change_password, "POST", LOGGED_IN, "Change your own password (ends your sessions)", PASSWORD_CHANGED),
        ("/users/{id}/activate", activate, "GET", MANAGE, "Allow a user to log in again", one),
        ("/users/{id}/deactivate", deactivate, "GET", MANAGE, "Stop a user logging in (ends their sessions)", one),
        ("/users/{id}/groups", set_groups, "POST", "manage_repository", "Set a user's groups in one repository", GROUPS_SET),
        (
            "/repositories/{repo_id}/users/{id}",
            read_repository_user,
            "GET",
            "manage_repository",
            "A user with this repository's groups",
            one,
        ),
    ]
    hashing = {create_user, update_user, change_password}  # wait for a turn at the hashing gate
    for path, endpoint, method, permission, summary, extra in routes:
        add_route(
            router,
            path,
            endpoint,
            methods=[method],
            permission=permission,
            summary=summary,
            tags=tags,
            openapi_extra=extra,
            hashes_password=endpoint in hashing,
        )
