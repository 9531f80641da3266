"""Groups: the standard groups of a repository, the global administrators group, and the group
routes with ArchivesSpace's `group_code` and `with_members` (aspace-api.md §6)."""

from __future__ import annotations

import pytest

from tests.factories import USER_PASSWORD, make_user, new_client

ACCESS_DENIED = {"error": "Access denied"}
BASIC = ["update_accession_record", "update_container_record", "update_digital_object_record", "update_resource_record", "view_repository"]


def group_body(code: str, grants=(), members=(), **fields) -> dict:
    return {
        "jsonmodel_type": "group",
        "group_code": code,
        "description": f"The {code} group",
        "grants_permissions": list(grants),
        "member_usernames": list(members),
        **fields,
    }


def groups_of(api, repo_id: int) -> dict[str, dict]:
    response = api.get(f"/repositories/{repo_id}/groups")
    assert response.status_code == 200, response.text
    return {group["group_code"]: group for group in response.json()}


def codes(api, level: str) -> set[str]:
    return {p["permission_code"] for p in api.get("/permissions", params={"level": level}).json()}


def permissions(api, user_id: int, repo_id: int) -> list[str]:
    return api.user(user_id)["permissions"][f"/repositories/{repo_id}"]


@pytest.fixture
def repo_b(api, repo) -> int:
    return api.create_repository("OTHER")


# -- standard groups -------------------------------------------------------------------------


def test_a_new_repository_has_the_six_standard_groups(api, repo):
    groups = groups_of(api, repo)
    assert set(groups) == {
        "repository-managers",
        "repository-archivists",
        "repository-project-managers",
        "repository-advanced-data-entry",
        "repository-basic-data-entry",
        "repository-viewers",
    }
    assert set(groups["repository-managers"]["grants_permissions"]) == codes(api, "repository")
    assert sorted(groups["repository-basic-data-entry"]["grants_permissions"]) == BASIC
    assert groups["repository-viewers"]["grants_permissions"] == ["view_repository"]
    assert "delete_archival_record" in groups["repository-project-managers"]["grants_permissions"]
    assert "manage_subject_record" in groups["repository-archivists"]["grants_permissions"]
    for group in groups.values():
        assert group["jsonmodel_type"] == "group"
        assert group["uri"].startswith(f"/repositories/{repo}/groups/")
        assert group["member_usernames"] == []
        assert set(group["grants_permissions"]) <= codes(api, "repository")


def test_each_repository_gets_its_own_standard_groups(api, repo, repo_b):
    uris = {group["uri"] for group in groups_of(api, repo).values()}
    others = {group["uri"] for group in groups_of(api, repo_b).values()}
    assert len(uris) == len(others) == 6
    assert not uris & others
    assert all(uri.startswith(f"/repositories/{repo_b}/") for uri in others)


def test_the_global_repository_has_the_administrators_group(api, repo):
    groups = groups_of(api, 1)
    assert set(groups) == {"administrators"}
    administrators = groups["administrators"]
    assert administrators["uri"] == "/repositories/1/groups/1"
    assert set(administrators["grants_permissions"]) == codes(api, "all")
    assert administrators["member_usernames"] == ["admin"]


# -- listing and reading ---------------------------------------------------------------------


@pytest.mark.parametrize("code", ["repository-viewers", "Repository-Viewers"])
def test_list_by_group_code(api, repo, code):
    response = api.get(f"/repositories/{repo}/groups", params={"group_code": code})
    assert response.status_code == 200
    found = response.json()
    assert [group["group_code"] for group in found] == ["repository-viewers"]


def test_list_by_an_unknown_group_code_is_empty(api, repo):
    response = api.get(f"/repositories/{repo}/groups", params={"group_code": "nobody-here"})
    assert response.status_code == 200
    assert response.json() == []


def test_read_with_and_without_members(api, repo):
    uri = api.group_uri(repo, "repository-viewers")
    api.create_user("jdoe", groups=[uri])
    with_members = api.get(uri)
    assert with_members.status_code == 200
    assert with_members.json()["member_usernames"] == ["jdoe"]
    assert api.get(uri, params={"with_members": "true"}).json()["member_usernames"] == ["jdoe"]
    without = api.get(uri, params={"with_members": "false"})
    assert without.status_code == 200
    assert "member_usernames" not in without.json()
    assert without.json()["grants_permissions"] == ["view_repository"]
    assert api.get(uri, params={"with_members": "moo"}).status_code == 400


def test_a_group_is_only_found_in_its_own_repository(api, repo, repo_b):
    uri = api.group_uri(repo_b, "repository-managers")
    group_id = uri.rsplit("/", 1)[1]
    wrong = f"/repositories/{repo}/groups/{group_id}"
    assert api.get(wrong).status_code == 404
    group = api.get(uri).json()
    group["member_usernames"] = ["admin"]
    assert api.post(wrong, json=group).status_code == 404
    assert api.delete(wrong).status_code == 404
    assert api.get(uri).json()["member_usernames"] == []


def test_missing_group(api, repo):
    assert api.get(f"/repositories/{repo}/groups/999").status_code == 404


# -- creating --------------------------------------------------------------------------------


def test_create_a_group_with_members_and_grants(app, api, repo):
    jdoe = make_user(api, "jdoe")
    assert jdoe.get(f"/repositories/{repo}/accessions", params={"page": 1}).status_code == 403
    response = api.post(f"/repositories/{repo}/groups", json=group_body("readers", ["view_repository"], ["JDoe"]))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "Created"
    assert body["uri"] == f"/repositories/{repo}/groups/{body['id']}"
    group = api.get(body["uri"]).json()
    assert group["group_code"] == "readers"
    assert group["member_usernames"] == ["jdoe"]
    assert group["grants_permissions"] == ["view_repository"]
    assert group["repository"] == {"ref": f"/repositories/{repo}"}
    assert api.user(jdoe.user_id)["groups"] == [body["uri"]]
    # The existing session holds the new permission at once.
    assert jdoe.get(f"/repositories/{repo}/accessions", params={"page": 1}).status_code == 200


def test_the_repository_of_a_group_is_the_one_in_the_url(api, repo, repo_b):
    body = group_body("readers", ["view_repository"], repository={"ref": f"/repositories/{repo_b}"})
    response = api.post(f"/repositories/{repo}/groups", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["uri"].startswith(f"/repositories/{repo}/")
    assert api.get(response.json()["uri"]).json()["repository"] == {"ref": f"/repositories/{repo}"}
    assert "readers" in groups_of(api, repo)
    assert "readers" not in groups_of(api, repo_b)


@pytest.mark.parametrize("code", ["repository-viewers", "REPOSITORY-VIEWERS", " repository-viewers "])
def test_group_codes_are_unique_within_a_repository(api, repo, code):
    response = api.post(f"/repositories/{repo}/groups", json=group_body(code, ["view_repository"]))
    assert response.status_code == 400
    assert response.json()["error"] == {"group_code": ["Group code must be unique within a repository"]}
    assert len(groups_of(api, repo)) == 6


def test_the_same_group_code_in_another_repository(api, repo, repo_b):
    assert api.post(f"/repositories/{repo}/groups", json=group_body("team")).status_code == 200
    assert api.post(f"/repositories/{repo_b}/groups", json=group_body("team")).status_code == 200


def test_an_unknown_member_is_refused(api, repo):
    response = api.post(f"/repositories/{repo}/groups", json=group_body("team", members=["bob"]))
    assert response.status_code == 400
    assert response.json()["error"] == {"member_usernames": ["User bob does not exist"]}
    assert "team" not in groups_of(api, repo)


def test_an_unknown_permission_is_refused(api, repo):
    response = api.post(f"/repositories/{repo}/groups", json=group_body("team", ["view_repository", "fly_to_the_moon"]))
    assert response.status_code == 400
    assert "grants_permissions" in response.json()["error"]
    assert "team" not in groups_of(api, repo)


@pytest.mark.parametrize("code", ["manage_users", "administer_system", "create_repository", "update_subject_record", "view_all_records"])
def test_a_repository_group_cannot_grant_a_global_permission(api, repo, code):
    response = api.post(f"/repositories/{repo}/groups", json=group_body("team", ["view_repository", code], ["admin"]))
    assert response.status_code == 403
    assert response.json() == ACCESS_DENIED
    assert "team" not in groups_of(api, repo)


def test_a_group_of_the_global_repository_may_grant_global_permissions(api, repo):
    jdoe = make_user(api, "jdoe")
    response = api.post("/repositories/1/groups", json=group_body("user-managers", ["manage_users"], ["jdoe"]))
    assert response.status_code == 200, response.text
    assert "manage_users" in api.user(jdoe.user_id)["permissions"]["_archivesspace"]
    assert jdoe.get("/users", params={"page": 1}).status_code == 200


def test_a_global_group_grants_its_repository_permissions_in_every_repository(api, repo, repo_b):
    jdoe = make_user(api, "jdoe")
    assert api.post("/repositories/1/groups", json=group_body("readers", ["view_repository"], ["jdoe"])).status_code == 200
    for repo_id in (repo, repo_b):
        assert permissions(api, jdoe.user_id, repo_id) == ["view_repository"]
        assert jdoe.get(f"/repositories/{repo_id}/accessions", params={"page": 1}).status_code == 200
    later = api.create_repository("LATER")
    assert jdoe.get(f"/repositories/{later}/accessions", params={"page": 1}).status_code == 200


def test_only_administrators_create_groups_in_the_global_repository(api, repo):
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    response = manager.post("/repositories/1/groups", json=group_body("sneaky", ["view_repository"], ["manager"]))
    assert response.status_code == 403
    assert response.json() == ACCESS_DENIED
    assert set(groups_of(api, 1)) == {"administrators"}


# -- updating --------------------------------------------------------------------------------


def test_update_replaces_members_and_grants(api, repo):
    jdoe, rdoe = make_user(api, "jdoe"), make_user(api, "rdoe")
    uri = api.create(f"/repositories/{repo}/groups", group_body("team", ["view_repository"], ["jdoe"]))["uri"]
    group = api.get(uri).json()
    group["member_usernames"] = ["rdoe"]
    group["grants_permissions"] = BASIC
    group["description"] = "Renamed team"
    response = api.post(uri, json=group)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "Updated"
    updated = api.get(uri).json()
    assert updated["member_usernames"] == ["rdoe"]
    assert sorted(updated["grants_permissions"]) == BASIC
    assert updated["description"] == "Renamed team"
    assert permissions(api, jdoe.user_id, repo) == []
    assert permissions(api, rdoe.user_id, repo) == BASIC
    assert jdoe.get(f"/repositories/{repo}/accessions", params={"page": 1}).status_code == 403
    assert rdoe.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "New"})["status"] == "Created"


def test_update_without_members_keeps_the_members(api, repo):
    api.create_user("jdoe")
    api.create_user("rdoe")
    uri = api.create(f"/repositories/{repo}/groups", group_body("team", ["view_repository"], ["jdoe"]))["uri"]
    group = api.get(uri, params={"with_members": "false"}).json()
    group["grants_permissions"] = BASIC
    assert api.post(uri, params={"with_members": "false"}, json=group).status_code == 200
    assert api.get(uri).json()["member_usernames"] == ["jdoe"]
    group = api.get(uri).json()
    group["member_usernames"] = ["rdoe"]
    assert api.post(uri, params={"with_members": "false"}, json=group).status_code == 200
    assert api.get(uri).json()["member_usernames"] == ["jdoe"]
    # The default (with_members=true) replaces them, with an empty list if none are sent.
    group = api.get(uri).json()
    del group["member_usernames"]
    assert api.post(uri, json=group).status_code == 200
    assert api.get(uri).json()["member_usernames"] == []


def test_update_needs_the_current_lock_version(api, repo):
    uri = api.group_uri(repo, "repository-viewers")
    group = api.get(uri).json()
    stale = dict(group)
    assert api.post(uri, json=group).status_code == 200
    assert api.post(uri, json=stale).status_code == 409
    del group["lock_version"]
    assert api.post(uri, json=group).status_code == 409


def test_update_cannot_add_a_global_permission(api, repo):
    uri = api.group_uri(repo, "repository-managers")
    group = api.get(uri).json()
    group["grants_permissions"].append("manage_users")
    response = api.post(uri, json=group)
    assert response.status_code == 403
    assert "manage_users" not in api.get(uri).json()["grants_permissions"]


def test_update_to_a_taken_group_code_is_refused(api, repo):
    uri = api.group_uri(repo, "repository-viewers")
    group = api.get(uri).json()
    group["group_code"] = "Repository-Managers"
    response = api.post(uri, json=group)
    assert response.status_code == 400
    assert response.json()["error"] == {"group_code": ["Group code must be unique within a repository"]}


def test_membership_changes_bump_the_lock_version_of_users_and_groups(api, repo):
    jdoe = api.create_user("jdoe")
    admin_version = api.user(1)["lock_version"]
    uri = api.group_uri(repo, "repository-viewers")
    before = api.user(jdoe)["lock_version"]
    group = api.get(uri).json()
    group["member_usernames"] = ["jdoe"]
    assert api.post(uri, json=group).status_code == 200
    after = api.user(jdoe)["lock_version"]
    assert after > before
    assert api.get(uri).json()["lock_version"] > group["lock_version"]
    # A user whose membership did not change keeps their lock_version.
    assert api.user(1)["lock_version"] == admin_version
    # A grant change alone changes no membership: members keep their lock_version.
    group = api.get(uri).json()
    group["grants_permissions"] = BASIC
    assert api.post(uri, json=group).status_code == 200
    assert api.user(jdoe)["lock_version"] == after


# -- deleting --------------------------------------------------------------------------------


def test_delete_a_group_takes_its_permissions_away(api, repo):
    jdoe = make_user(api, "jdoe")
    uri = api.create(f"/repositories/{repo}/groups", group_body("team", ["view_repository"], ["jdoe"]))["uri"]
    assert jdoe.get(f"/repositories/{repo}/accessions", params={"page": 1}).status_code == 200
    response = api.delete(uri)
    assert response.status_code == 200, response.text
    assert api.get(uri).status_code == 404
    assert api.user(jdoe.user_id)["groups"] == []
    assert jdoe.get(f"/repositories/{repo}/accessions", params={"page": 1}).status_code == 403


def test_deleting_a_repository_takes_its_groups_and_memberships(api, repo, repo_b):
    keep = api.group_uri(repo_b, "repository-viewers")
    jdoe = make_user(api, "jdoe", groups=[(repo, "repository-managers"), keep])
    assert api.delete(f"/repositories/{repo}").status_code == 200
    user = api.user(jdoe.user_id)
    assert user["groups"] == [keep]
    assert set(user["permissions"]) == {f"/repositories/{repo_b}", "_archivesspace"}
    me = jdoe.get("/users/current-user")
    assert me.status_code == 200
    assert me.json()["groups"] == [keep]


# -- the administrators group ----------------------------------------------------------------


def test_the_administrators_group_cannot_be_deleted(api):
    response = api.delete("/repositories/1/groups/1")
    assert response.status_code == 409
    assert api.get("/repositories/1/groups/1").json()["group_code"] == "administrators"


def test_the_administrators_group_cannot_be_renamed(api):
    group = api.get("/repositories/1/groups/1").json()
    group["group_code"] = "admins"
    response = api.post("/repositories/1/groups/1", json=group)
    assert response.status_code == 400
    assert "group_code" in response.json()["error"]
    assert api.get("/repositories/1/groups/1").json()["group_code"] == "administrators"


def test_the_administrators_group_always_grants_everything(api, repo):
    group = api.get("/repositories/1/groups/1").json()
    group["grants_permissions"] = ["view_repository"]
    assert api.post("/repositories/1/groups/1", json=group).status_code == 200
    assert set(api.get("/repositories/1/groups/1").json()["grants_permissions"]) == codes(api, "all")
    assert "administer_system" in api.user(1)["permissions"]["_archivesspace"]
    assert api.delete(f"/repositories/{repo}").status_code == 200


def test_adding_a_member_to_administrators_makes_an_admin(app, api, repo):
    jdoe = make_user(api, "jdoe")
    group = api.get("/repositories/1/groups/1").json()
    group["member_usernames"] = ["admin", "jdoe"]
    assert api.post("/repositories/1/groups/1", json=group).status_code == 200
    assert api.user(jdoe.user_id)["is_admin"] is True
    assert jdoe.get("/users", params={"page": 1}).status_code == 200


def test_the_last_active_administrator_cannot_be_removed(api):
    group = api.get("/repositories/1/groups/1").json()
    group["member_usernames"] = []
    response = api.post("/repositories/1/groups/1", json=group)
    assert response.status_code == 409
    assert api.get("/repositories/1/groups/1").json()["member_usernames"] == ["admin"]
    assert api.user(1)["is_admin"] is True


def test_other_ways_of_removing_the_last_administrator_are_refused(api):
    admin = api.user(1)
    admin["is_admin"] = False
    assert api.post("/users/1", json=admin).status_code == 409
    response = api.post("/users/1/groups", params={"groups[]": [], "remove_groups": "true", "repo_id": 1})
    assert response.status_code == 409
    assert api.user(1)["is_admin"] is True
    assert api.get("/repositories/1/groups/1").json()["member_usernames"] == ["admin"]


def test_an_inactive_administrator_does_not_count(api):
    boss = api.create_user("boss", is_admin=True)
    assert api.get(f"/users/{boss}/deactivate").status_code == 200
    group = api.get("/repositories/1/groups/1").json()
    group["member_usernames"] = ["boss"]
    assert api.post("/repositories/1/groups/1", json=group).status_code == 409
    assert api.get(f"/users/{boss}/activate").status_code == 200
    group = api.get("/repositories/1/groups/1").json()
    group["member_usernames"] = ["boss"]
    assert api.post("/repositories/1/groups/1", json=group).status_code == 200
    assert api.user(1)["is_admin"] is False
    assert new_client(api.client.app).post("/users/boss/login", data={"password": USER_PASSWORD}).json()["user"]["is_admin"] is True
