"""Permissions as an attacker meets them: every route walked as an unprivileged user, escalation
attempts, forged tokens, injection, secrets in responses and logs, login timing and throttling.
Also the permission list and what each standard group lets a member do."""

from __future__ import annotations

import datetime
import logging
import secrets
import statistics
import time

import pytest
from argon2 import PasswordHasher
from fastapi.routing import APIRoute
from sqlalchemy import func, select, update

from fonds.api.deps import PUBLIC
from fonds.api.search import ROUTES as SEARCH_ROUTES
from fonds.auth import passwords
from fonds.auth.permissions import BY_CODE, STANDARD_GROUPS
from fonds.model import REGISTRY
from tests.factories import ADMIN_PASSWORD, USER_PASSWORD, Api, collection_path, make_user, minimal, new_client

ACCESS_DENIED = {"error": "Access denied"}
LOGIN_FAILED = {"error": "Login failed"}


def login(app, username: str, password: str):
    return new_client(app).post(f"/users/{username}/login", data={"password": password})


def accession(title: str = "An accession") -> dict:
    return {"jsonmodel_type": "accession", "title": title}


def page(api, path: str):
    return api.get(path, params={"page": 1})


@pytest.fixture
def repo_b(api, repo) -> int:
    return api.create_repository("OTHER")


# -- the permission list ---------------------------------------------------------------------


@pytest.mark.parametrize("level", ["repository", "global", "all"])
def test_permissions_are_listed_publicly(client, level):
    response = client.get("/permissions", params={"level": level})
    assert response.status_code == 200, response.text
    listed = response.json()
    assert listed
    for permission in listed:
        assert set(permission) == {"permission_code", "description", "level", "uri", "jsonmodel_type"}
        assert permission["jsonmodel_type"] == "permission"
        assert permission["uri"].startswith("/permissions/") and permission["uri"].rsplit("/", 1)[1].isdigit()
        assert permission["description"]
        assert level == "all" or permission["level"] == level


def test_the_levels_partition_all_permissions(client):
    by_level = {level: client.get("/permissions", params={"level": level}).json() for level in ("repository", "global", "all")}
    codes = {level: {p["permission_code"] for p in listed} for level, listed in by_level.items()}
    assert codes["repository"] | codes["global"] == codes["all"]
    assert not codes["repository"] & codes["global"]
    assert len({p["uri"] for p in by_level["all"]}) == len(by_level["all"])
    assert {"view_repository", "update_accession_record", "delete_archival_record", "manage_repository", "manage_subject_record"} <= codes[
        "repository"
    ]
    assert {"administer_system", "manage_users", "create_repository", "update_subject_record", "delete_subject_record"} <= codes["global"]


@pytest.mark.parametrize("params", [{}, {"level": ""}])
def test_the_permission_level_is_required(client, params):
    response = client.get("/permissions", params=params)
    assert response.status_code == 400
    assert "level" in response.json()["error"]


def test_an_unknown_permission_level(client):
    response = client.get("/permissions", params={"level": "cosmic"})
    assert response.status_code == 400
    assert "level" in response.json()["error"]


# -- what the standard groups allow ----------------------------------------------------------


def test_viewers_read_but_do_not_write(api, repo):
    record = api.create(f"/repositories/{repo}/accessions", accession("Original"))
    viewer = make_user(api, "viewer", groups=[(repo, "repository-viewers")])
    assert page(viewer, f"/repositories/{repo}/accessions").json()["total"] == 1
    current = viewer.get(record["uri"])
    assert current.status_code == 200
    changed = {**current.json(), "title": "Changed"}
    for response in (
        viewer.post(record["uri"], json=changed),
        viewer.post(f"/repositories/{repo}/accessions", json=accession()),
        viewer.delete(record["uri"]),
    ):
        assert response.status_code == 403
        assert response.json() == ACCESS_DENIED
    assert api.get(record["uri"]).json()["title"] == "Original"
    assert page(api, f"/repositories/{repo}/accessions").json()["total"] == 1


def test_basic_data_entry_creates_but_does_not_delete(api, repo):
    clerk = make_user(api, "clerk", groups=[(repo, "repository-basic-data-entry")])
    created = clerk.create(f"/repositories/{repo}/accessions", accession("Mine"))
    record = clerk.get(created["uri"]).json()
    assert clerk.post(created["uri"], json={**record, "title": "Mine, edited"}).status_code == 200
    container = clerk.create(f"/repositories/{repo}/top_containers", {"jsonmodel_type": "top_container", "indicator": "1"})
    for uri in (created["uri"], container["uri"]):
        response = clerk.delete(uri)
        assert response.status_code == 403, uri
        assert api.get(uri).status_code == 200
    assert clerk.post("/subjects", json=minimal(REGISTRY["subject"])).status_code == 403


def test_project_managers_delete(api, repo):
    record = api.create(f"/repositories/{repo}/accessions", accession())
    container = api.create(f"/repositories/{repo}/top_containers", {"jsonmodel_type": "top_container", "indicator": "1"})
    manager = make_user(api, "pm", groups=[(repo, "repository-project-managers")])
    for uri in (record["uri"], container["uri"]):
        response = manager.delete(uri)
        assert response.status_code == 200, response.text
        assert api.get(uri).status_code == 404


@pytest.mark.parametrize("where", ["first", "second"])
def test_manage_subject_record_in_any_repository_manages_subjects(api, repo, repo_b, where):
    archivist = make_user(api, "archivist", groups=[(repo if where == "first" else repo_b, "repository-archivists")])
    subject = archivist.create("/subjects", minimal(REGISTRY["subject"]))
    record = archivist.get(subject["uri"]).json()
    assert archivist.post(subject["uri"], json={**record, "title": "Renamed subject"}).status_code == 200
    assert archivist.delete(subject["uri"]).status_code == 200
    assert api.get(subject["uri"]).status_code == 404


# Global types whose global permissions a repository-level manage_* permission implies.
IMPLIED_GLOBAL_TYPES = [t for t in REGISTRY if not t.repo_scoped and "create" in t.actions and BY_CODE[t.permissions.create].implied_by]


def _group_implying(code: str) -> str:
    """The standard group (archivists first) holding a permission that implies `code`: locations
    need `manage_repository` (ArchivesSpace's update_location_record), so only managers have it."""
    groups = sorted(STANDARD_GROUPS, key=lambda g: g[0] != "repository-archivists")
    return next(name for name, _, grants in groups if set(grants) & set(BY_CODE[code].implied_by))


@pytest.mark.parametrize("record_type", IMPLIED_GLOBAL_TYPES, ids=lambda t: t.name)
def test_implied_global_permissions_let_archivists_manage_global_records(api, repo, record_type):
    archivist = make_user(api, "archivist", groups=[(repo, _group_implying(record_type.permissions.create))])
    clerk = make_user(api, "clerk", groups=[(repo, "repository-basic-data-entry")])
    path = record_type.collection_path
    assert clerk.post(path, json=minimal(record_type)).status_code == 403
    created = archivist.create(path, minimal(record_type))
    assert archivist.post(created["uri"], json=archivist.get(created["uri"]).json()).status_code == 200
    assert clerk.delete(created["uri"]).status_code == 403
    assert archivist.delete(created["uri"]).status_code == 200


def test_subjects_need_more_than_viewing(api, repo):
    subject = api.create("/subjects", minimal(REGISTRY["subject"]))
    viewer = make_user(api, "viewer", groups=[(repo, "repository-viewers")])
    assert viewer.get(subject["uri"]).status_code == 200
    assert viewer.post("/subjects", json=minimal(REGISTRY["subject"])).status_code == 403
    assert viewer.delete(subject["uri"]).status_code == 403
    assert api.get(subject["uri"]).status_code == 200


def test_a_global_view_group_reads_every_repository(api, repo, repo_b):
    ids = {r: api.create(f"/repositories/{r}/accessions", accession())["uri"] for r in (repo, repo_b)}
    group = api.create(
        "/repositories/1/groups",
        {"jsonmodel_type": "group", "group_code": "readers", "description": "Read everything", "grants_permissions": ["view_repository"]},
    )
    reader = make_user(api, "reader", groups=[group["uri"]])
    for r, uri in ids.items():
        assert page(reader, f"/repositories/{r}/accessions").json()["total"] == 1
        assert reader.get(uri).status_code == 200
        assert reader.post(f"/repositories/{r}/accessions", json=accession()).status_code == 403
        assert reader.delete(uri).status_code == 403


def test_membership_changes_apply_to_an_existing_session_at_once(api, repo):
    user = make_user(api, "jdoe", groups=[(repo, "repository-viewers")])
    accessions = f"/repositories/{repo}/accessions"
    assert user.post(accessions, json=accession()).status_code == 403
    basic = api.group_uri(repo, "repository-basic-data-entry")
    add = {"groups[]": [basic], "remove_groups": "false", "repo_id": repo}
    assert api.post(f"/users/{user.user_id}/groups", params=add).status_code == 200
    assert user.post(accessions, json=accession()).status_code == 200
    assert basic in user.get("/users/current-user").json()["groups"]
    # Taken away again through the group itself, and then all groups of the repository.
    group = api.get(basic).json()
    group["member_usernames"] = []
    assert api.post(basic, json=group).status_code == 200
    assert user.post(accessions, json=accession()).status_code == 403
    assert page(user, accessions).status_code == 200
    remove_all = {"groups[]": [], "remove_groups": "true", "repo_id": repo}
    assert api.post(f"/users/{user.user_id}/groups", params=remove_all).status_code == 200
    assert page(user, accessions).status_code == 403


# -- walking every route as an unprivileged user ---------------------------------------------


class World:
    """Two repositories with one record of every type in each, a victim user, and what the
    walk needs to build a plausible request for any route."""

    def __init__(self, api: Api, repo_a: int, repo_b: int):
        self.api, self.repos = api, (repo_a, repo_b)
        self.ids: dict[tuple[str, int | None], int] = {}
        for record_type in REGISTRY:
            # Users have no generic create route (the victim below); the repositories are the world's own.
            if "create" not in record_type.actions or record_type.hooks.contains_repository_records:
                continue
            for repo_id in self.repos if record_type.repo_scoped else (None,):
                self.ids[(record_type.name, repo_id)] = api.create_minimal(record_type, repo_id)["id"]
        self.victim = api.create_user("victim")
        self.ids[("user", None)] = self.victim
        self.value_list = api.create(
            "/config/enumerations", {"jsonmodel_type": "enumeration", "name": "walk_list", "values": ["one", "two"]}
        )["uri"]

    def request(self, actor: Api, method: str, path: str, repo_id: int):
        """Send `method path` for `repo_id` as `actor`, with a body that would succeed for an admin."""
        if path.startswith("/config/"):
            return self._value_list_request(actor, method, path)
        url = path.replace("{repo_id}", str(repo_id))
        params: dict = {"page": 1}
        body = None
        record_type, kind = self._type_of(path)
        if "{id}" in url:
            if path.startswith("/users/{id}") or path.endswith("/users/{id}"):
                target = self.victim
            elif path == "/repositories/{id}":
                target = repo_id
            else:
                target = self.ids[(record_type.name, repo_id if record_type.repo_scoped else None)]
            url = url.replace("{id}", str(target))
        if record_type is not None and record_type.tree is not None and kind == "sub":
            params.update(self._tree_params(path, url, repo_id))
            if path.endswith("/children") and method == "POST":
                body = {"jsonmodel_type": record_type.tree.children_type, "children": [{"title": "walked", "level": "file"}]}
        if method == "POST":
            if kind == "collection":
                body = self._new(record_type, actor, repo_id)
            elif kind == "item":
                body = self.api.get(url).json()  # the current record, with its lock_version
                if record_type.name == "group":
                    body["member_usernames"] = [actor.username]
                    body["grants_permissions"] = ["view_repository", "manage_repository"]
            if (record_type is not None and record_type.name == "user") or path.endswith("/password"):
                params["password"] = "attacker-password"
            if path.endswith("/suppressed"):
                params["suppressed"] = "true"
            if path.endswith("/batch_imports"):
                body = [{"jsonmodel_type": "accession", "title": "walked in a batch"}]
            if path == "/locations/batch":
                body = {"building": "Walked", "coordinate_1_range": {"label": "Shelf", "start": "1", "end": "2"}}
            if path == "/locations/batch_update":
                body = {"record_uris": [REGISTRY["location"].uri(self.ids[("location", None)])], "floor": "walked"}
            if path == "/search/records":
                params["uri[]"] = [REGISTRY["accession"].uri(self.ids[("accession", repo_id)], repo_id)]
            if path == "/users/{id}/groups":
                url = f"/users/{actor.user_id}/groups"  # put yourself in the managers
                params.update(
                    {"repo_id": repo_id, "remove_groups": "false", "groups[]": [self.api.group_uri(repo_id, "repository-managers")]}
                )
        return actor.client.request(method, url, params=params, json=body)

    def _tree_params(self, path: str, url: str, repo_id: int) -> dict:
        """A node to show or move for a tree route: a new one under the route's record (made by the admin)."""
        target = url.rsplit("/", 2)[0] if "/tree/" in url else url.rsplit("/", 1)[0]
        wanted = ("/tree/node", "/tree/node_from_root", "/accept_children")
        if not path.endswith(wanted):
            return {"offset": 0} if path.endswith("/tree/waypoint") else {}
        target_type = REGISTRY.parse_uri(target).record_type
        spec = target_type.tree
        under = {"parent": {"ref": target}} if target_type.name == spec.node else {spec.root_field: {"ref": target}}
        if target_type.name == spec.node:
            under[spec.root_field] = self.api.get(target).json()[spec.root_field]
        node_type = REGISTRY[spec.node]
        node = self.api.create(collection_path(node_type, repo_id), {"jsonmodel_type": spec.node, "title": "n", **under})
        return {"node_uri": node["uri"], "node_ids[]": node["id"], "children[]": node["uri"], "position": 0}

    def _value_list_request(self, actor: Api, method: str, path: str):
        """The value-list routes (global): a list made for the walk, its first value, a spare value to merge."""
        current = self.api.get(self.value_list).json()
        first = current["enumeration_values"][0]
        url, params, body = path.replace("{enum_id}", self.value_list.rsplit("/", 1)[1]), {}, None
        url = url.replace("{enum_val_id}", str(first["id"]))
        if path == "/config/enumerations":
            body = {"jsonmodel_type": "enumeration", "name": f"walk_{secrets.token_hex(3)}", "values": ["x"]}
        elif path == "/config/enumerations/migration":
            spare = f"spare_{secrets.token_hex(3)}"
            self.api.post(self.value_list, json={**current, "values": [*current["values"], spare]})
            body = {"enum_uri": self.value_list, "from": spare, "to": "one"}
        elif path == "/config/enumerations/{enum_id}":
            body = {**current, "values": [*current["values"], f"walk_{secrets.token_hex(3)}"]}
        elif path == "/config/enumeration_values/{enum_val_id}":
            body = self.api.get(first["uri"]).json()
        elif path.endswith("/position"):
            params = {"position": 1}
        elif path.endswith("/suppressed"):
            params = {"suppressed": "false"}
        return actor.client.request(method, url, params=params, json=body)

    def _type_of(self, path: str):
        if path.endswith("/search"):
            return None, "other"
        if "{id}" not in path and "{repo_id}" not in path and path not in {t.collection_path for t in REGISTRY}:
            return None, "other"  # /users/current-user and the like
        for record_type in REGISTRY:
            if path == record_type.collection_path:
                return record_type, "collection"
            if path.startswith(record_type.collection_path + "/{id}"):
                return record_type, "item" if path == record_type.collection_path + "/{id}" else "sub"
        if path.startswith("/repositories/{repo_id}/find_by_id/") or path.endswith(("/search", "/batch_imports")):
            return None, "other"
        if path == "/repositories/{repo_id}/users/{id}":
            return REGISTRY["user"], "sub"
        raise AssertionError(f"the walk does not know how to reach {path}: teach World.request")

    def _new(self, record_type, actor: Api, repo_id: int) -> dict:
        if record_type.name == "user":
            return {"jsonmodel_type": "user", "username": f"sock{secrets.token_hex(3)}", "name": "Sock puppet", "is_admin": True}
        if record_type.name == "group":
            return {
                "jsonmodel_type": "group",
                "group_code": "mine",
                "description": "x",
                "grants_permissions": ["manage_repository"],
                "member_usernames": [actor.username],
            }
        return self.api.minimal(record_type, repo_id)


def walk(app):
    for route in app.routes:
        if isinstance(route, APIRoute) and route.fonds_permission != PUBLIC:
            for method in sorted(route.methods):
                yield method, route.path


# GETs outside /repositories/<id>/ a viewer of one repository may make (everything else: 403).
# Repository records themselves are readable with view_repository anywhere (they are public in
# ArchivesSpace, and GET /repositories lists them all anyway).
VIEWER_GLOBAL_READS = (
    {"/users/current-user"}
    | {
        path
        for t in REGISTRY
        if not t.repo_scoped and t.permissions.read == "view_repository"
        for path in (t.collection_path, f"{t.collection_path}/{{id}}")
    }
    | {"/search/repositories", "/search/subjects", "/search/location_profile", "/vocabularies/{id}/terms"}
)
# Searches are reads, whether sent as GET or as POST (a form body).
SEARCHES = {route[0] for route in SEARCH_ROUTES}
# Under /repositories/<id>/ of their own repository, a viewer is refused only what needs manage_repository.
MANAGING = ("/groups", "/users/")


@pytest.mark.parametrize("persona", ["viewer of one repository", "user in no group"])
def test_an_unprivileged_user_is_refused_everything_beyond_their_rights(app, api, repo, repo_b, persona):
    world = World(api, repo, repo_b)
    groups = [(repo, "repository-viewers")] if persona.startswith("viewer") else []
    user = make_user(api, "walker", groups=groups)
    readable = {repo} if groups else set()
    wrong = []
    checked = 0
    for method, path in walk(app):
        repo_ids = (repo, repo_b) if "{repo_id}" in path or path == "/repositories/{id}" else (repo,)
        for repo_id in repo_ids:
            response = world.request(user, method, path, repo_id)
            checked += 1
            if method != "GET" and path not in SEARCHES:
                expected = {403}
            elif path.startswith("/repositories/{repo_id}/"):
                expected = {200} if repo_id in readable and not any(part in path for part in MANAGING) else {403}
            else:
                expected = {200} if path == "/users/current-user" or (readable and path in VIEWER_GLOBAL_READS) else {403}
            if response.status_code not in expected or (response.status_code == 403 and response.json() != ACCESS_DENIED):
                wrong.append(f"{method} {path} (repository {repo_id}) -> {response.status_code} {response.text[:120]}")
    assert not wrong, "\n".join(wrong)
    assert checked > 60
    # Nothing was changed by all those attempts.
    me = api.user(user.user_id)
    assert me["is_admin"] is False
    assert me["groups"] == ([api.group_uri(repo, "repository-viewers")] if groups else [])
    assert [u["username"] for u in api.get("/users", params={"page": 1}).json()["results"]] == ["admin", "victim", "walker"]
    for (type_name, repo_id), record_id in world.ids.items():
        path = REGISTRY[type_name].uri(record_id, repo_id)
        assert api.get(path).status_code == 200, path
    assert login(app, "victim", USER_PASSWORD).status_code == 200
    assert login(app, "victim", "attacker-password").status_code == 403


def test_the_walk_sends_requests_an_administrator_could_make(app, api, repo, repo_b):
    """The walk's 403s mean something only if its requests would otherwise succeed."""
    world = World(api, repo, repo_b)
    wrong = []
    for method, path in walk(app):
        if method != "POST":
            continue  # deletes need no body; reads are checked by the walk itself
        response = world.request(api, method, path, repo)
        # Only yourself may change your password through /password (the victim is someone else).
        expected = 403 if path == "/users/{id}/password" else 200
        if response.status_code != expected:
            wrong.append(f"{method} {path} -> {response.status_code} {response.text[:200]}")
    assert not wrong, "\n".join(wrong)


def test_self_service_routes_work_for_an_unprivileged_user(app, api):
    user = make_user(api, "jdoe")
    me = user.get(f"/users/{user.user_id}")
    assert me.status_code == 200
    assert user.post(f"/users/{user.user_id}", json={**me.json(), "name": "New name"}).status_code == 200
    assert user.post(f"/users/{user.user_id}/password", params={"password": "my-new-password"}).json() == {"success": "password updated"}
    assert login(app, "jdoe", "my-new-password").json()["user"]["name"] == "New name"


# -- escalation ------------------------------------------------------------------------------


def test_no_escalation_through_updating_yourself(app, api, repo):
    user = make_user(api, "jdoe", groups=[(repo, "repository-viewers")])
    record = user.get("/users/current-user").json()
    response = user.post(f"/users/{user.user_id}", json={**record, "is_admin": True})
    assert response.status_code == 403
    assert response.json() == ACCESS_DENIED
    # groups and permissions in the body are read-only: ignored, whatever they claim.
    record = user.get("/users/current-user").json()
    claims = {
        **record,
        "groups": ["/repositories/1/groups/1", api.group_uri(repo, "repository-managers")],
        "permissions": {f"/repositories/{repo}": ["manage_repository"], "_archivesspace": ["administer_system", "manage_users"]},
        "is_system_user": True,
    }
    assert user.post(f"/users/{user.user_id}", json=claims).status_code == 200
    after = user.get("/users/current-user").json()
    assert after["is_admin"] is False
    assert after["groups"] == [api.group_uri(repo, "repository-viewers")]
    assert after["permissions"] == {f"/repositories/{repo}": ["view_repository"], "_archivesspace": ["edit_user_self"]}
    assert "is_system_user" not in after
    assert user.post(f"/repositories/{repo}/accessions", json=accession()).status_code == 403
    assert user.get("/users", params={"page": 1}).status_code == 403
    assert api.delete(f"/users/{user.user_id}").status_code == 200  # still an ordinary, deletable user


def test_no_escalation_through_groups_of_a_repository_you_do_not_manage(api, repo, repo_b):
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    mine = {"jsonmodel_type": "group", "group_code": "mine", "description": "x"}
    for repo_id, code in ((repo_b, "repository-managers"), (1, "administrators")):
        uri = api.group_uri(repo_id, code)
        group = api.get(uri).json()
        members = group["member_usernames"]
        attempts = (
            manager.post(uri, json={**group, "member_usernames": [*members, "manager"]}),
            manager.post(
                f"/repositories/{repo_id}/groups", json={**mine, "member_usernames": ["manager"], "grants_permissions": ["view_repository"]}
            ),
            manager.delete(uri),
            manager.get(uri),
        )
        for response in attempts:
            assert response.status_code == 403, (uri, response.text)
            assert response.json() == ACCESS_DENIED
        assert api.get(uri).json()["member_usernames"] == members
    assert set(manager.get("/users/current-user").json()["permissions"]) == {
        f"/repositories/{repo}",
        f"/repositories/{repo_b}",
        "_archivesspace",
    }
    assert manager.get("/users/current-user").json()["permissions"][f"/repositories/{repo_b}"] == []


def test_no_escalation_by_granting_global_permissions_in_your_own_repository(api, repo):
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    create = manager.post(
        f"/repositories/{repo}/groups",
        json={
            "jsonmodel_type": "group",
            "group_code": "root",
            "description": "x",
            "member_usernames": ["manager"],
            "grants_permissions": ["administer_system", "manage_users"],
        },
    )
    assert create.status_code == 403
    uri = api.group_uri(repo, "repository-managers")
    group = manager.get(uri).json()
    group["grants_permissions"] = [*group["grants_permissions"], "manage_users", "create_repository"]
    assert manager.post(uri, json=group).status_code == 403
    # What they may do: repository-level codes in their repository (global ones implied are fine).
    group["grants_permissions"] = ["view_repository", "manage_repository"]
    assert manager.post(uri, json=group).status_code == 200
    # manage_repository implies the global update_location_record (ArchivesSpace's bootstrap_access_control.rb).
    assert manager.get("/users/current-user").json()["permissions"]["_archivesspace"] == ["edit_user_self", "update_location_record"]
    assert manager.get("/users", params={"page": 1}).status_code == 403
    assert manager.post("/repositories", json=minimal(REGISTRY["repository"])).status_code == 403


def test_no_escalation_through_setting_your_own_groups(api, repo, repo_b):
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    own = f"/users/{manager.user_id}/groups"
    denied = (
        {"repo_id": repo_b, "groups[]": [api.group_uri(repo_b, "repository-managers")]},
        {"repo_id": 1, "groups[]": ["/repositories/1/groups/1"]},
    )
    for params in denied:
        response = manager.post(own, params={**params, "remove_groups": "false"})
        assert response.status_code == 403, params
        assert response.json() == ACCESS_DENIED
    # Groups of other repositories slipped in with your own repository's id are not applied.
    smuggled = {
        "repo_id": repo,
        "remove_groups": "false",
        "groups[]": ["/repositories/1/groups/1", api.group_uri(repo_b, "repository-managers")],
    }
    assert manager.post(own, params=smuggled).status_code == 200
    me = api.user(manager.user_id)
    assert me["is_admin"] is False
    assert me["groups"] == [api.group_uri(repo, "repository-managers")]
    assert api.get("/repositories/1/groups/1").json()["member_usernames"] == ["admin"]


def test_a_user_manager_cannot_make_or_take_over_an_administrator(app, api, repo):
    """manage_users without administer_system: may manage ordinary users, not administrators."""
    user_managers = api.create(
        "/repositories/1/groups",
        {"jsonmodel_type": "group", "group_code": "user-managers", "description": "x", "grants_permissions": ["manage_users"]},
    )
    keeper = make_user(api, "keeper", groups=[user_managers["uri"]])
    plain = api.create_user("plain")
    # Ordinary users: yes.
    assert keeper.post(f"/users/{plain}", params={"password": "reset-by-keeper"}, json=api.user(plain)).status_code == 200
    assert login(app, "plain", "reset-by-keeper").status_code == 200
    # Making anyone an administrator, themselves included: no.
    for user_id in (plain, keeper.user_id):
        response = keeper.post(f"/users/{user_id}", json={**api.user(user_id), "is_admin": True})
        assert response.status_code == 403
        assert api.user(user_id)["is_admin"] is False
    # Resetting an administrator's password (and so becoming them): no.
    response = keeper.post("/users/1", params={"password": "taken-over!"}, json=api.user(1))
    assert response.status_code == 403
    assert login(app, "admin", "taken-over!").json() == LOGIN_FAILED
    assert login(app, "admin", ADMIN_PASSWORD).status_code == 200
    assert api.get("/users/current-user").status_code == 200


def test_a_user_manager_cannot_deactivate_or_delete_an_administrator(app, api):
    user_managers = api.create(
        "/repositories/1/groups",
        {"jsonmodel_type": "group", "group_code": "user-managers", "description": "x", "grants_permissions": ["manage_users"]},
    )
    keeper = make_user(api, "keeper", groups=[user_managers["uri"]])
    boss = api.create_user("boss", is_admin=True)
    assert keeper.get(f"/users/{boss}/deactivate").status_code == 403
    assert keeper.delete(f"/users/{boss}").status_code == 403
    assert api.user(boss)["is_active_user"] is True


def test_records_of_another_repository_are_out_of_reach_through_your_own(api, repo, repo_b):
    theirs = api.create(f"/repositories/{repo_b}/accessions", accession("Theirs"))
    record_id = theirs["id"]
    clerk = make_user(api, "clerk", groups=[(repo, "repository-project-managers")])
    through_mine = f"/repositories/{repo}/accessions/{record_id}"
    assert clerk.get(through_mine).status_code == 404
    record = api.get(theirs["uri"]).json()
    assert clerk.post(through_mine, json={**record, "title": "Hijacked"}).status_code == 404
    assert clerk.delete(through_mine).status_code == 404
    assert api.get(theirs["uri"]).json()["title"] == "Theirs"
    # A record created in your repository stays there, whatever repository the body names.
    created = clerk.create(f"/repositories/{repo}/accessions", {**accession(), "repository": {"ref": f"/repositories/{repo_b}"}})
    assert created["uri"].startswith(f"/repositories/{repo}/")
    assert page(api, f"/repositories/{repo_b}/accessions").json()["total"] == 1


# -- tokens ----------------------------------------------------------------------------------


def _age_sessions(app, seconds: int) -> None:
    db = app.state.fonds.db
    sessions = db.tables["session"]
    past = datetime.datetime.now(datetime.UTC).replace(microsecond=0, tzinfo=None) - datetime.timedelta(seconds=seconds)
    with db.engine.begin() as conn:
        conn.execute(update(sessions).values(last_used_at=past))


@pytest.mark.parametrize("kind", ["forged", "truncated", "extended", "upper-cased", "expired"])
def test_a_bad_token_is_412_on_every_path(app, api, repo, kind):
    token = api.token
    bad = {
        "forged": secrets.token_hex(32),
        "truncated": token[:-1],
        "extended": token + "0",
        "upper-cased": token.upper(),
        "expired": token,
    }[kind]
    if kind == "expired":
        _age_sessions(app, 2 * 3600)
    client = new_client(app)
    requests = [
        ("GET", "/"),
        ("GET", "/version"),
        ("GET", "/permissions?level=all"),
        ("GET", "/schemas"),
        ("GET", "/no/such/route"),
        ("GET", "/users/current-user"),
        ("GET", f"/repositories/{repo}/accessions?page=1"),
        ("POST", f"/repositories/{repo}/accessions"),
        ("DELETE", "/users/1"),
        ("POST", "/logout"),
    ]
    for header in ("X-ArchivesSpace-Session", "X-Service-Session"):
        for method, path in requests:
            response = client.request(method, path, headers={header: bad}, json=accession())
            assert response.status_code == 412, (method, path, response.status_code)
            assert response.json()["code"] in ("SESSION_GONE", "SESSION_EXPIRED")
            assert bad not in response.text
    # Logging in still works whatever stale token a client sends.
    relogin = client.post("/users/admin/login", data={"password": ADMIN_PASSWORD}, headers={"X-ArchivesSpace-Session": bad})
    assert relogin.status_code == 200
    assert page(api, f"/repositories/{repo}/accessions").status_code == (412 if kind == "expired" else 200)


# -- injection -------------------------------------------------------------------------------


INJECTED_USERNAMES = [
    "admin' OR '1'='1",
    'admin"--',
    "admin'--",
    "admin; DROP TABLE user",
    "admin%",
    "admin_",
    "*",
    "%",
    "admin\\",
    '{"$ne": null}',
]
INJECTED_PASSWORDS = [
    "' OR '1'='1",
    '" OR ""="',
    "admin' --",
    "'; DROP TABLE user; --",
    "\\",
    '{"$ne": null}',
    "%s%s%n",
    "😀\u202eﷺ",
    " " + ADMIN_PASSWORD,
    ADMIN_PASSWORD.upper(),
]


def _users_table_intact(app, api, expected: list[str]) -> None:
    db = app.state.fonds.db
    with db.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(db.tables["user"])).scalar_one() == len(expected)
    assert sorted(u["username"] for u in api.get("/users", params={"page": 1}).json()["results"]) == sorted(expected)
    assert login(app, "admin", ADMIN_PASSWORD).status_code == 200


@pytest.mark.parametrize("settings_overrides", [{"login_failures_per_user": 1000, "login_failures_per_address": 1000}])
def test_injection_in_login_is_harmless(app, api):
    client = new_client(app)
    for username in INJECTED_USERNAMES:
        for password in ("x", ADMIN_PASSWORD):
            response = client.post(f"/users/{username}/login", data={"password": password})
            # Refused as a malformed name (400) or as a failed login (403, e.g. "admin_": no LIKE matching).
            assert (response.status_code, response.json()) in ((400, {"error": "Invalid username"}), (403, LOGIN_FAILED)), (
                username,
                response.text,
            )
    for password in INJECTED_PASSWORDS:
        for form in (True, False):
            response = client.post(
                "/users/admin/login", **({"data": {"password": password}} if form else {"params": {"password": password}})
            )
            assert response.status_code == 403, (password, response.text)
            assert response.json() == LOGIN_FAILED
    _users_table_intact(app, api, ["admin"])


WEIRD_PASSWORDS = ["p'\"; DROP TABLE user; --", "\\'\\\"%_*?", "Grüße, Ωμέγα ✓", "😀\u202eﷺ\u200b𝔭𝔞𝔰𝔰", '{"$gt": ""}']


@pytest.mark.parametrize("password", WEIRD_PASSWORDS)
def test_weird_passwords_are_just_passwords(app, api, password):
    api.create_user("jdoe", password=password)
    assert login(app, "jdoe", password).status_code == 200
    assert login(app, "jdoe", password + " ").json() == LOGIN_FAILED
    assert login(app, "jdoe", password[:-1]).json() == LOGIN_FAILED
    _users_table_intact(app, api, ["admin", "jdoe"])


@pytest.mark.parametrize("username", INJECTED_USERNAMES[:5])
def test_injection_in_new_usernames_is_refused(app, api, username):
    response = api.post("/users", params={"password": USER_PASSWORD}, json={"jsonmodel_type": "user", "username": username, "name": "x"})
    assert response.status_code == 400
    _users_table_intact(app, api, ["admin"])


@pytest.mark.parametrize("value", [{"$ne": None}, ["admin"], 1, True])
def test_a_username_must_be_a_string(app, api, value):
    response = api.post("/users", params={"password": USER_PASSWORD}, json={"jsonmodel_type": "user", "username": value, "name": "x"})
    assert response.status_code == 400
    assert "username" in response.json()["error"]
    _users_table_intact(app, api, ["admin"])


def test_duplicate_json_keys_do_not_smuggle_a_username(app, api):
    raw = b'{"jsonmodel_type": "user", "username": "fresh", "username": "admin", "name": "x"}'
    response = api.post("/users", params={"password": USER_PASSWORD}, content=raw, headers={"Content-Type": "application/json"})
    # One reading of the body only (the last value wins): the name taken is refused.
    assert response.status_code == 400
    assert response.json()["error"] == {"username": ["Username 'admin' is already in use"]}
    _users_table_intact(app, api, ["admin"])


# -- secrets in responses and logs -----------------------------------------------------------


def _assert_secret_free(text: str, *secrets_: str) -> None:
    for secret in ("$argon2", "argon2", "password_hash", "token_hash", *secrets_):
        assert secret not in text, secret


def test_no_response_carries_a_token_or_a_hash(app, api, repo):
    viewers = api.group_uri(repo, "repository-viewers")
    user_id = api.create_user("jdoe", groups=[viewers])
    logged_in = login(app, "jdoe", USER_PASSWORD)
    token = logged_in.json()["session"]
    jdoe = new_client(app)
    jdoe.headers["X-ArchivesSpace-Session"] = token
    # The login response carries its own token once, as `session`, and nothing else secret.
    assert logged_in.text.count(token) == 1
    _assert_secret_free(logged_in.text.replace(token, ""), USER_PASSWORD, api.token)
    responses = [
        api.get(f"/users/{user_id}"),
        api.get("/users", params={"page": 1}),
        api.get("/users", params={"id_set": f"1,{user_id}"}),
        api.get("/users/current-user"),
        jdoe.get("/users/current-user"),
        jdoe.get(f"/users/{user_id}"),
        api.get(f"/repositories/{repo}/users/{user_id}"),
        api.get(f"/repositories/{repo}/groups"),
        api.get("/repositories/1/groups/1"),
        api.get(f"/users/{user_id}/deactivate"),
        api.get(f"/users/{user_id}/activate"),
    ]
    for response in responses:
        assert response.status_code == 200, response.request.url
        _assert_secret_free(response.text, token, api.token, USER_PASSWORD, ADMIN_PASSWORD, "password")


def test_no_log_line_carries_a_token_a_password_or_a_hash(app, api, caplog):
    caplog.set_level(logging.DEBUG)
    user_id = api.create_user("jdoe", password="first-secret-pw")
    failed = login(app, "jdoe", "wrong-secret-pw")
    assert failed.status_code == 403
    jdoe = Api.login(new_client(app), "jdoe", "first-secret-pw")
    assert jdoe.post(f"/users/{user_id}/password", params={"password": "second-secret-pw"}).status_code == 200
    too_short = api.post(f"/users/{user_id}", params={"password": "tiny"}, json=api.user(user_id))
    assert too_short.status_code == 400
    assert api.post(f"/users/{user_id}", params={"password": "third-secret-pw"}, json=api.user(user_id)).status_code == 200
    assert new_client(app).get("/", headers={"X-Service-Session": jdoe.token}).status_code == 412
    # httpx, the test client, logs the URLs it requests (query strings included): that is the
    # client's log, not the server's, so it is left out.
    server_lines = "\n".join(record.getMessage() for record in caplog.records if not record.name.startswith(("httpx", "httpcore")))
    server_lines += "\n".join(str(record.args) for record in caplog.records if not record.name.startswith(("httpx", "httpcore")))
    for secret in (
        jdoe.token,
        api.token,
        "first-secret-pw",
        "wrong-secret-pw",
        "second-secret-pw",
        "third-secret-pw",
        "tiny",
        ADMIN_PASSWORD,
        "$argon2",
        "argon2id",
    ):
        assert secret not in server_lines, secret


# -- login timing and throttling -------------------------------------------------------------


@pytest.mark.parametrize("settings_overrides", [{"login_failures_per_user": 1000, "login_failures_per_address": 1000}])
def test_unknown_user_and_wrong_password_fail_alike(app, api, monkeypatch):
    # Real work for argon2 (the test suite otherwise hashes at the cheapest parameters): if
    # unknown users skipped the password check, they would fail several times faster.
    hasher = PasswordHasher(time_cost=2, memory_cost=32 * 1024, parallelism=1)
    monkeypatch.setattr(passwords, "_hasher", hasher)
    monkeypatch.setattr(passwords, "_DUMMY_HASH", hasher.hash("dummy"))
    api.create_user("jdoe")
    client = new_client(app)
    timings: dict[str, list[float]] = {"unknown": [], "wrong": []}
    bodies = set()
    for attempt in range(6):
        for kind, username in (("unknown", f"nobody{attempt}"), ("wrong", "jdoe")):
            started = time.perf_counter()
            response = client.post(f"/users/{username}/login", data={"password": f"wrong-{attempt}"})
            timings[kind].append(time.perf_counter() - started)
            assert response.status_code == 403
            bodies.add(response.text)
    assert bodies == {'{"error":"Login failed"}'}
    unknown, wrong = (statistics.median(timings[kind][1:]) for kind in ("unknown", "wrong"))
    assert max(unknown, wrong) / min(unknown, wrong) < 3, timings


def _set_locks(app, seconds: int | None) -> None:
    """Set every current lock to end in `seconds` (None: now), instead of waiting; the failure
    counts stay."""
    db = app.state.fonds.db
    table = db.tables["login_throttle"]
    until = (
        None
        if seconds is None
        else datetime.datetime.now(datetime.UTC).replace(microsecond=0, tzinfo=None) + datetime.timedelta(seconds=seconds)
    )
    with db.engine.begin() as conn:
        conn.execute(update(table).where(table.c.locked_until.is_not(None)).values(locked_until=until))


def _fail_until_locked(client, username: str) -> list[int]:
    """Once the allowance is used up, every failure locks the name for a second or more, and the
    next for twice that: of two attempts in a row, one is refused (429) — unless the machine
    stalls for a second."""
    statuses = []
    for n in range(2):
        statuses.append(client.post(f"/users/{username}/login", data={"password": f"wrong-again-{n}"}).status_code)
        if statuses[-1] == 429:
            break
    return statuses


def test_failed_logins_lock_the_username(app, api):
    api.create_user("jdoe")
    client = new_client(app)
    statuses = [client.post("/users/jdoe/login", data={"password": f"wrong-{n}"}).status_code for n in range(5)]
    assert statuses == [403] * 5
    assert _fail_until_locked(client, "jdoe")[-1] == 429
    _set_locks(app, 60)
    locked = client.post("/users/jdoe/login", data={"password": "wrong-again"})
    assert locked.status_code == 429
    assert "error" in locked.json()
    assert locked.headers["Retry-After"].isdigit()
    assert 55 <= int(locked.headers["Retry-After"]) <= 60
    # Even the right password is refused while locked; other users are not affected.
    assert client.post("/users/jdoe/login", data={"password": USER_PASSWORD}).status_code == 429
    assert login(app, "admin", ADMIN_PASSWORD).status_code == 200
    _set_locks(app, None)
    assert client.post("/users/jdoe/login", data={"password": USER_PASSWORD}).status_code == 200
    # A success clears the count: four more failures are just failures.
    assert [client.post("/users/jdoe/login", data={"password": f"wrong-{n}"}).status_code for n in range(4)] == [403] * 4


def test_a_lock_applies_to_the_username_however_it_is_written(app, api):
    api.create_user("jdoe")
    client = new_client(app)
    statuses = [
        client.post(f"/users/{name}/login", data={"password": f"wrong-{n}"}).status_code
        for n, name in enumerate(["jdoe", "JDOE", "JDoe", " jdoe", "jDoe"])
    ]
    assert statuses == [403] * 5
    assert _fail_until_locked(client, "Jdoe")[-1] == 429


@pytest.mark.parametrize("settings_overrides", [{"login_failures_per_user": 2, "login_lockout_max_seconds": 20}])
def test_the_lock_doubles_up_to_the_maximum(app, api):
    api.create_user("jdoe")
    client = new_client(app)
    assert [client.post("/users/jdoe/login", data={"password": "wrong"}).status_code for _ in range(2)] == [403, 403]
    waits = []
    for attempt in range(5):
        if attempt:
            _set_locks(app, None)
            assert client.post("/users/jdoe/login", data={"password": "wrong"}).status_code == 403
        locked = client.post("/users/jdoe/login", data={"password": "wrong"})
        assert locked.status_code == 429, waits
        waits.append(int(locked.headers["Retry-After"]))
    assert waits[0] >= 1
    # Each further failure doubles the lock (a second may be lost to the clock), up to the maximum.
    for previous, wait in zip(waits, waits[1:]):
        full = min(2 * previous, 20)
        assert full - 1 <= wait <= full, waits
    assert waits[-1] == 20, waits


@pytest.mark.parametrize("settings_overrides", [{"login_failures_per_user": 1000, "login_failures_per_address": 3}])
def test_failed_logins_lock_the_client_address(app, api):
    api.create_user("jdoe")
    client = new_client(app)
    statuses = [client.post(f"/users/guess{n}/login", data={"password": "wrong"}).status_code for n in range(3)]
    assert statuses == [403] * 3
    assert _fail_until_locked(client, "guess9")[-1] == 429
    _set_locks(app, 60)
    # The address is locked: another name, even with its right password, is refused too.
    locked = client.post("/users/jdoe/login", data={"password": USER_PASSWORD})
    assert locked.status_code == 429
    assert locked.headers["Retry-After"].isdigit()
    _set_locks(app, None)
    # A success does not clear an address's count (one valid account must not buy more guesses).
    assert client.post("/users/jdoe/login", data={"password": USER_PASSWORD}).status_code == 200
    assert _fail_until_locked(client, "guess10")[-1] == 429


def test_throttling_never_reveals_whether_a_user_exists(app, api):
    api.create_user("jdoe")
    client = new_client(app)
    for username in ("jdoe", "nobody"):
        statuses = [client.post(f"/users/{username}/login", data={"password": "wrong"}).status_code for _ in range(5)]
        assert statuses == [403] * 5, username
        assert _fail_until_locked(client, username)[-1] == 429, username
