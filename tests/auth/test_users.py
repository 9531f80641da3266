"""User accounts: create, read, update, delete, current user, own password, activation, group
membership and the login response's permissions (aspace-api.md §1 and §6, decisions.md)."""

from __future__ import annotations

import pytest

from tests.factories import ADMIN_PASSWORD, USER_PASSWORD, Api, make_user, new_client

LOGIN_FAILED = {"error": "Login failed"}
ACCESS_DENIED = {"error": "Access denied"}


def login(app, username: str, password: str):
    return new_client(app).post(f"/users/{username}/login", data={"password": password})


def user_body(username: str, **fields) -> dict:
    return {"jsonmodel_type": "user", "username": username, "name": f"{username} name", **fields}


def create(api, username: str, password: str | None = USER_PASSWORD, groups=(), **fields):
    params = {"groups[]": list(groups)}
    if password is not None:
        params["password"] = password
    return api.post("/users", params=params, json=user_body(username, **fields))


def usernames(api) -> list[str]:
    response = api.get("/users", params={"page": 1, "page_size": 250})
    assert response.status_code == 200, response.text
    return sorted(user["username"] for user in response.json()["results"])


def global_group(api, code: str, grants: list[str], members: list[str] = ()) -> str:
    """A group of the global repository (/repositories/1); returns its URI."""
    body = {
        "jsonmodel_type": "group",
        "group_code": code,
        "description": code,
        "grants_permissions": grants,
        "member_usernames": list(members),
    }
    return api.create("/repositories/1/groups", body)["uri"]


def assert_no_secrets(text: str) -> None:
    assert "argon2" not in text
    assert "password" not in text
    assert USER_PASSWORD not in text
    assert ADMIN_PASSWORD not in text


@pytest.fixture
def repo_b(api, repo) -> int:
    return api.create_repository("OTHER")


# -- creating --------------------------------------------------------------------------------


def test_create_a_user_who_can_then_log_in(app, api):
    response = create(api, "jdoe")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "Created"
    assert body["uri"] == f"/users/{body['id']}"
    user = api.user(body["id"])
    assert user["username"] == "jdoe"
    assert user["name"] == "jdoe name"
    assert user["is_admin"] is False
    assert user["is_active_user"] is True
    assert user["groups"] == []
    assert user["permissions"] == {"_archivesspace": ["edit_user_self"]}
    logged_in = login(app, "jdoe", USER_PASSWORD)
    assert logged_in.status_code == 200, logged_in.text
    assert logged_in.json()["user"]["uri"] == body["uri"]
    assert login(app, "jdoe", "not-the-password").json() == LOGIN_FAILED


def test_usernames_are_trimmed_and_lower_cased(app, api):
    response = create(api, "  Jane.Doe@Example-Org_1 ")
    assert response.status_code == 200, response.text
    assert api.user(response.json()["id"])["username"] == "jane.doe@example-org_1"
    assert login(app, "JANE.DOE@example-org_1", USER_PASSWORD).status_code == 200


def test_a_username_may_hold_single_spaces(api):
    response = create(api, "Jane Doe")
    assert response.status_code == 200, response.text
    assert api.user(response.json()["id"])["username"] == "jane doe"


@pytest.mark.parametrize("username", ["bad!name", "two  spaces", "semi;colon", "quote'd", "slash/y", "tab\tname", "ünïcode", "   "])
def test_invalid_usernames_are_refused(api, username):
    response = create(api, username)
    assert response.status_code == 400, response.text
    assert "username" in response.json()["error"]
    assert usernames(api) == ["admin"]


@pytest.mark.parametrize("second", ["jdoe", "JDoe", " jdoe "])
def test_usernames_are_unique_whatever_the_case(api, second):
    assert create(api, "jdoe").status_code == 200
    response = create(api, second)
    assert response.status_code == 400
    assert response.json()["error"] == {"username": ["Username 'jdoe' is already in use"]}
    assert usernames(api) == ["admin", "jdoe"]


@pytest.mark.parametrize("password", [None, ""])
def test_a_password_is_required(api, password):
    response = create(api, "jdoe", password=password)
    assert response.status_code == 400
    assert response.json()["error"] == {"password": ["Parameter required but no value provided"]}
    assert usernames(api) == ["admin"]


def test_password_length_limits(app, api):
    short = create(api, "short", password="x" * 7)
    assert short.status_code == 400
    assert "password" in short.json()["error"]
    long = create(api, "long", password="x" * 1025)
    assert long.status_code == 400
    assert "password" in long.json()["error"]
    assert usernames(api) == ["admin"]
    assert create(api, "eight", password="x" * 8).status_code == 200
    assert create(api, "longest", password="y" * 1024).status_code == 200
    assert login(app, "longest", "y" * 1024).status_code == 200


@pytest.mark.parametrize("settings_overrides", [{"password_min_length": 12}])
def test_the_minimum_password_length_is_a_setting(api):
    response = create(api, "jdoe", password="x" * 11)
    assert response.status_code == 400
    assert "12" in response.json()["error"]["password"][0]
    assert create(api, "jdoe", password="x" * 12).status_code == 200


def test_creating_users_needs_manage_users(api, repo):
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    response = create(manager, "jdoe")
    assert response.status_code == 403
    assert response.json() == ACCESS_DENIED
    assert usernames(api) == ["admin", "manager"]


def test_an_admin_makes_an_administrator(app, api, repo):
    response = create(api, "boss", is_admin=True)
    assert response.status_code == 200, response.text
    user = api.user(response.json()["id"])
    assert user["is_admin"] is True
    assert user["groups"] == ["/repositories/1/groups/1"]
    assert "administer_system" in user["permissions"]["_archivesspace"]
    assert "delete_archival_record" in user["permissions"][f"/repositories/{repo}"]
    administrators = api.get("/repositories/1/groups/1").json()
    assert administrators["member_usernames"] == ["admin", "boss"]


def test_making_an_administrator_needs_administer_system(api):
    user_managers = global_group(api, "user-managers", ["manage_users"])
    user_manager = make_user(api, "usermgr", groups=[user_managers])
    assert create(user_manager, "plain").status_code == 200
    response = create(user_manager, "boss", is_admin=True)
    assert response.status_code == 403
    assert response.json() == ACCESS_DENIED
    assert "boss" not in usernames(api)


def test_create_in_groups(api, repo, repo_b):
    viewers = api.group_uri(repo, "repository-viewers")
    archivists = api.group_uri(repo_b, "repository-archivists")
    response = create(api, "jdoe", groups=[viewers, archivists])
    assert response.status_code == 200, response.text
    user = api.user(response.json()["id"])
    assert sorted(user["groups"]) == sorted([viewers, archivists])
    assert user["permissions"][f"/repositories/{repo}"] == ["view_repository"]
    assert "manage_subject_record" in user["permissions"][f"/repositories/{repo_b}"]
    assert api.get(viewers).json()["member_usernames"] == ["jdoe"]


def test_adding_a_new_user_to_a_group_needs_manage_repository_in_its_repository(api, repo, repo_b):
    # Holds manage_users (global group) and manages `repo`, but not `repo_b`.
    user_managers = global_group(api, "user-managers", ["manage_users"])
    user_manager = make_user(api, "usermgr", groups=[user_managers, (repo, "repository-managers")])
    assert create(user_manager, "mine", groups=[api.group_uri(repo, "repository-viewers")]).status_code == 200
    response = create(
        user_manager, "theirs", groups=[api.group_uri(repo, "repository-viewers"), api.group_uri(repo_b, "repository-viewers")]
    )
    assert response.status_code == 403
    assert response.json() == ACCESS_DENIED
    assert "theirs" not in usernames(api)
    assert api.get(api.group_uri(repo, "repository-viewers")).json()["member_usernames"] == ["mine"]


@pytest.mark.parametrize("uri", ["/repositories/2/accessions/1", "not a uri", "/repositories/2/groups/999"])
def test_groups_must_name_existing_groups(api, repo, uri):
    response = create(api, "jdoe", groups=[uri])
    assert response.status_code == 400, response.text
    assert "groups" in response.json()["error"]
    assert usernames(api) == ["admin"]


# -- reading and listing ---------------------------------------------------------------------


def test_read_a_user(api, repo):
    user_id = api.create_user("jdoe", groups=[api.group_uri(repo, "repository-viewers")])
    response = api.get(f"/users/{user_id}")
    assert response.status_code == 200
    user = response.json()
    assert user["jsonmodel_type"] == "user"
    assert user["uri"] == f"/users/{user_id}"
    assert user["permissions"] == {f"/repositories/{repo}": ["view_repository"], "_archivesspace": ["edit_user_self"]}
    assert_no_secrets(response.text)


def test_read_a_missing_user(api):
    response = api.get("/users/999")
    assert response.status_code == 404
    assert "error" in response.json()


def test_users_read_themselves_but_not_others(api, repo):
    other = api.create_user("other")
    me = make_user(api, "me", groups=[(repo, "repository-managers")])
    mine = me.get(f"/users/{me.user_id}")
    assert mine.status_code == 200
    assert mine.json()["username"] == "me"
    for path in (f"/users/{other}", "/users/1"):
        response = me.get(path)
        assert response.status_code == 403, path
        assert response.json() == ACCESS_DENIED


def test_the_admin_reads_itself_as_system_user_and_admin(api, repo):
    admin = api.user(1)
    assert admin["username"] == "admin"
    assert admin["is_system_user"] is True
    assert admin["is_admin"] is True
    assert admin["groups"] == ["/repositories/1/groups/1"]
    assert set(admin["permissions"]) == {f"/repositories/{repo}", "_archivesspace"}


def test_list_users(api):
    ids = [api.create_user(name) for name in ("carol", "bob", "alice")]
    page = api.get("/users", params={"page": 1, "page_size": 2})
    assert page.status_code == 200
    body = page.json()
    assert body["total"] == 4
    assert body["last_page"] == 2
    assert len(body["results"]) == 2
    all_ids = api.get("/users", params={"all_ids": "true"})
    assert sorted(all_ids.json()) == sorted([1, *ids])
    by_id = api.get("/users", params={"id_set": ",".join(map(str, ids))})
    assert sorted(user["username"] for user in by_id.json()) == ["alice", "bob", "carol"]
    for response in (page, all_ids, by_id):
        assert_no_secrets(response.text)


def test_listing_users_needs_manage_users(api, repo):
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    for params in ({"page": 1}, {"all_ids": "true"}, {"id_set": "1"}):
        response = manager.get("/users", params=params)
        assert response.status_code == 403, params
        assert response.json() == ACCESS_DENIED


def test_current_user(client, api, repo):
    me = make_user(api, "me", groups=[(repo, "repository-basic-data-entry")])
    response = me.get("/users/current-user")
    assert response.status_code == 200
    user = response.json()
    assert user["username"] == "me"
    assert user["uri"] == f"/users/{me.user_id}"
    assert user["permissions"][f"/repositories/{repo}"] == [
        "update_accession_record",
        "update_container_record",
        "update_digital_object_record",
        "update_resource_record",
        "view_repository",
    ]
    assert_no_secrets(response.text)
    anonymous = client.get("/users/current-user")
    assert anonymous.status_code == 403
    assert anonymous.json() == ACCESS_DENIED


def test_a_repository_view_of_a_user_lists_only_that_repositorys_groups(api, repo, repo_b):
    viewers, archivists = api.group_uri(repo, "repository-viewers"), api.group_uri(repo_b, "repository-archivists")
    user_id = api.create_user("jdoe", groups=[viewers, archivists])
    response = api.get(f"/repositories/{repo}/users/{user_id}")
    assert response.status_code == 200, response.text
    assert response.json()["groups"] == [viewers]
    assert api.get(f"/repositories/{repo_b}/users/{user_id}").json()["groups"] == [archivists]
    assert sorted(api.user(user_id)["groups"]) == sorted([viewers, archivists])


def test_a_repository_view_of_a_user_needs_manage_repository(api, repo, repo_b):
    user_id = api.create_user("jdoe")
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    assert manager.get(f"/repositories/{repo}/users/{user_id}").status_code == 200
    response = manager.get(f"/repositories/{repo_b}/users/{user_id}")
    assert response.status_code == 403
    assert response.json() == ACCESS_DENIED


# -- login response --------------------------------------------------------------------------


def test_login_permissions_cover_every_repository(app, api, repo, repo_b):
    api.create_user("jdoe", groups=[api.group_uri(repo, "repository-viewers")])
    response = login(app, "jdoe", USER_PASSWORD)
    assert response.status_code == 200
    user = response.json()["user"]
    assert user["is_admin"] is False
    assert user["permissions"] == {
        f"/repositories/{repo}": ["view_repository"],
        f"/repositories/{repo_b}": [],
        "_archivesspace": ["edit_user_self"],
    }
    assert_no_secrets(response.text.replace(response.json()["session"], ""))


def test_login_permissions_include_implied_codes(app, api, repo):
    api.create_user("jdoe", groups=[api.group_uri(repo, "repository-archivists")])
    permissions = login(app, "jdoe", USER_PASSWORD).json()["user"]["permissions"]
    assert "manage_subject_record" in permissions[f"/repositories/{repo}"]
    assert {
        "update_subject_record",
        "delete_subject_record",
        "update_location_profile_record",
        "update_vocabulary_record",
        "edit_user_self",
    } <= set(permissions["_archivesspace"])
    assert "manage_users" not in permissions["_archivesspace"]


# -- updating --------------------------------------------------------------------------------


def test_update_a_user(api):
    user_id = api.create_user("jdoe")
    user = api.user(user_id)
    user["name"] = "Jane Doe"
    user["email"] = "jane@example.org"
    response = api.post(f"/users/{user_id}", json=user)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "Updated"
    updated = api.user(user_id)
    assert updated["name"] == "Jane Doe"
    assert updated["email"] == "jane@example.org"
    assert updated["lock_version"] == user["lock_version"] + 1


def test_updating_needs_the_current_lock_version(api):
    user_id = api.create_user("jdoe")
    user = api.user(user_id)
    del user["lock_version"]
    assert api.post(f"/users/{user_id}", json=user).status_code == 409
    user["lock_version"] = api.user(user_id)["lock_version"] - 1
    assert api.post(f"/users/{user_id}", json=user).status_code == 409


def test_users_update_themselves(api):
    me = make_user(api, "me")
    user = me.user(me.user_id)
    user["name"] = "Renamed"
    response = me.post(f"/users/{me.user_id}", json=user)
    assert response.status_code == 200, response.text
    assert me.user(me.user_id)["name"] == "Renamed"


def test_users_cannot_update_others(api):
    other = api.create_user("other")
    me = make_user(api, "me")
    for user_id in (other, 1):
        record = api.user(user_id)
        record["name"] = "Hijacked"
        response = me.post(f"/users/{user_id}", json=record)
        assert response.status_code == 403
        assert response.json() == ACCESS_DENIED
        assert api.user(user_id)["name"] != "Hijacked"


def test_leaving_is_admin_out_keeps_the_status(api):
    user_id = api.create_user("boss", is_admin=True)
    user = api.user(user_id)
    del user["is_admin"]
    user["name"] = "Still the boss"
    assert api.post(f"/users/{user_id}", json=user).status_code == 200
    assert api.user(user_id)["is_admin"] is True
    user = api.user(user_id)
    user["is_admin"] = False
    assert api.post(f"/users/{user_id}", json=user).status_code == 200
    demoted = api.user(user_id)
    assert demoted["is_admin"] is False
    assert demoted["groups"] == []
    assert "administer_system" not in demoted["permissions"]["_archivesspace"]


def test_groups_in_an_update_body_are_ignored(api, repo):
    viewers = api.group_uri(repo, "repository-viewers")
    user_id = api.create_user("jdoe", groups=[viewers])
    user = api.user(user_id)
    user["groups"] = [api.group_uri(repo, "repository-managers")]
    assert api.post(f"/users/{user_id}", json=user).status_code == 200
    assert api.user(user_id)["groups"] == [viewers]
    user = api.user(user_id)
    user["groups"] = []
    assert api.post(f"/users/{user_id}", json=user).status_code == 200
    assert api.user(user_id)["groups"] == [viewers]


def test_a_new_password_in_an_update_ends_the_users_sessions(app, api):
    jdoe = make_user(api, "jdoe")
    bystander = make_user(api, "bystander")
    user = api.user(jdoe.user_id)
    response = api.post(f"/users/{jdoe.user_id}", params={"password": "brand-new-password"}, json=user)
    assert response.status_code == 200, response.text
    gone = jdoe.get("/users/current-user")
    assert gone.status_code == 412
    assert gone.json()["code"] == "SESSION_GONE"
    assert bystander.get("/users/current-user").status_code == 200
    assert api.get("/users/current-user").status_code == 200
    assert login(app, "jdoe", USER_PASSWORD).json() == LOGIN_FAILED
    assert login(app, "jdoe", "brand-new-password").status_code == 200


def test_an_update_without_a_password_keeps_sessions_and_password(app, api):
    jdoe = make_user(api, "jdoe")
    assert api.post(f"/users/{jdoe.user_id}", json=api.user(jdoe.user_id)).status_code == 200
    assert jdoe.get("/users/current-user").status_code == 200
    assert login(app, "jdoe", USER_PASSWORD).status_code == 200


def test_a_too_short_password_in_an_update_changes_nothing(app, api):
    jdoe = make_user(api, "jdoe")
    user = api.user(jdoe.user_id)
    user["name"] = "Changed"
    response = api.post(f"/users/{jdoe.user_id}", params={"password": "short"}, json=user)
    assert response.status_code == 400
    assert "password" in response.json()["error"]
    assert api.user(jdoe.user_id)["name"] != "Changed"
    assert jdoe.get("/users/current-user").status_code == 200


def test_renaming_to_a_taken_username_is_refused(api):
    user_id = api.create_user("jdoe")
    user = api.user(user_id)
    user["username"] = "ADMIN"
    response = api.post(f"/users/{user_id}", json=user)
    assert response.status_code == 400
    assert response.json()["error"] == {"username": ["Username 'admin' is already in use"]}


def test_the_system_admin_cannot_be_deactivated_through_an_update(app, api):
    api.create_user("boss", is_admin=True)  # another active administrator: only the system-user rule applies
    admin = api.user(1)
    admin["is_active_user"] = False
    response = api.post("/users/1", json=admin)
    assert response.status_code == 409
    assert api.user(1)["is_active_user"] is True
    assert login(app, "admin", ADMIN_PASSWORD).status_code == 200


def test_deactivating_through_an_update_ends_the_users_sessions(app, api):
    jdoe = make_user(api, "jdoe")
    user = api.user(jdoe.user_id)
    assert api.post(f"/users/{jdoe.user_id}", json={**user, "is_active_user": False}).status_code == 200
    assert jdoe.get("/users/current-user").status_code == 412
    assert login(app, "jdoe", USER_PASSWORD).json() == LOGIN_FAILED
    # Reactivated, the user logs in again; the session from before stays ended.
    assert api.get(f"/users/{jdoe.user_id}/activate").status_code == 200
    gone = jdoe.get("/users/current-user")
    assert gone.status_code == 412
    assert gone.json()["code"] == "SESSION_GONE"
    assert login(app, "jdoe", USER_PASSWORD).status_code == 200


# -- own password ----------------------------------------------------------------------------


def test_change_own_password(app, api):
    jdoe = make_user(api, "jdoe")
    other_session = Api.login(new_client(app), "jdoe", USER_PASSWORD)
    response = jdoe.post(f"/users/{jdoe.user_id}/password", params={"password": "another-password"})
    assert response.status_code == 200, response.text
    assert response.json() == {"success": "password updated"}
    for session in (jdoe, other_session):
        gone = session.get("/users/current-user")
        assert gone.status_code == 412
        assert gone.json()["code"] == "SESSION_GONE"
    assert api.get("/users/current-user").status_code == 200
    assert login(app, "jdoe", USER_PASSWORD).json() == LOGIN_FAILED
    assert login(app, "jdoe", "another-password").status_code == 200


def test_the_password_route_is_for_yourself_only(app, api):
    jdoe = make_user(api, "jdoe")
    for actor, target in ((jdoe, 1), (api, jdoe.user_id)):
        response = actor.post(f"/users/{target}/password", params={"password": "hijacked-password"})
        assert response.status_code == 403
        assert response.json() == ACCESS_DENIED
    assert login(app, "jdoe", USER_PASSWORD).status_code == 200
    assert login(app, "admin", ADMIN_PASSWORD).status_code == 200


@pytest.mark.parametrize("params", [{}, {"password": ""}, {"password": "short"}])
def test_a_bad_new_password_changes_nothing(app, api, params):
    jdoe = make_user(api, "jdoe")
    response = jdoe.post(f"/users/{jdoe.user_id}/password", params=params)
    assert response.status_code == 400
    assert "password" in response.json()["error"]
    assert jdoe.get("/users/current-user").status_code == 200
    assert login(app, "jdoe", USER_PASSWORD).status_code == 200


# -- deleting --------------------------------------------------------------------------------


def test_delete_a_user(app, api, repo):
    viewers = api.group_uri(repo, "repository-viewers")
    jdoe = make_user(api, "jdoe", groups=[viewers])
    response = api.delete(f"/users/{jdoe.user_id}")
    assert response.status_code == 200, response.text
    assert api.get(f"/users/{jdoe.user_id}").status_code == 404
    gone = jdoe.get("/users/current-user")
    assert gone.status_code == 412
    assert gone.json()["code"] == "SESSION_GONE"
    assert login(app, "jdoe", USER_PASSWORD).json() == LOGIN_FAILED
    assert api.get(viewers).json()["member_usernames"] == []
    assert usernames(api) == ["admin"]


def test_the_system_admin_cannot_be_deleted(api):
    response = api.delete("/users/1")
    assert response.status_code == 409
    assert api.user(1)["username"] == "admin"


def test_deleting_users_needs_manage_users(api, repo):
    other = api.create_user("other")
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    for user_id in (other, manager.user_id):
        response = manager.delete(f"/users/{user_id}")
        assert response.status_code == 403
        assert response.json() == ACCESS_DENIED
    assert usernames(api) == ["admin", "manager", "other"]


def test_deleting_the_last_other_administrator_is_allowed_while_admin_remains(api):
    boss = api.create_user("boss", is_admin=True)
    assert api.delete(f"/users/{boss}").status_code == 200
    assert api.get("/repositories/1/groups/1").json()["member_usernames"] == ["admin"]


# -- activation ------------------------------------------------------------------------------


def test_deactivate_and_activate(app, api):
    jdoe = make_user(api, "jdoe")
    response = api.get(f"/users/{jdoe.user_id}/deactivate")
    assert response.status_code == 200, response.text
    assert response.json()["username"] == "jdoe"
    assert response.json()["is_active_user"] is False
    assert_no_secrets(response.text)
    gone = jdoe.get("/users/current-user")
    assert gone.status_code == 412
    assert login(app, "jdoe", USER_PASSWORD).json() == LOGIN_FAILED
    assert api.user(jdoe.user_id)["is_active_user"] is False
    response = api.get(f"/users/{jdoe.user_id}/activate")
    assert response.status_code == 200
    assert response.json()["is_active_user"] is True
    assert login(app, "jdoe", USER_PASSWORD).status_code == 200


@pytest.mark.parametrize("action", ["activate", "deactivate"])
def test_activation_of_the_system_admin_is_refused(app, api, action):
    response = api.get(f"/users/1/{action}")
    assert response.status_code == 409
    assert login(app, "admin", ADMIN_PASSWORD).status_code == 200


@pytest.mark.parametrize("action", ["activate", "deactivate"])
def test_activation_needs_manage_users(app, api, repo, action):
    other = make_user(api, "other")
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    for user_id in (other.user_id, manager.user_id):
        response = manager.get(f"/users/{user_id}/{action}")
        assert response.status_code == 403
        assert response.json() == ACCESS_DENIED
    assert other.get("/users/current-user").status_code == 200


def test_activation_of_a_missing_user(api):
    assert api.get("/users/999/deactivate").status_code == 404


# -- group membership through the user -------------------------------------------------------


def test_set_a_users_groups_in_one_repository(api, repo, repo_b):
    viewers, basic = api.group_uri(repo, "repository-viewers"), api.group_uri(repo, "repository-basic-data-entry")
    elsewhere = api.group_uri(repo_b, "repository-viewers")
    user_id = api.create_user("jdoe", groups=[elsewhere])

    def set_groups(groups, remove):
        response = api.post(f"/users/{user_id}/groups", params={"groups[]": groups, "remove_groups": remove, "repo_id": repo})
        assert response.status_code == 200, response.text
        assert response.json() == {"status": "OK"}
        return sorted(api.user(user_id)["groups"])

    assert set_groups([viewers], "false") == sorted([viewers, elsewhere])
    assert set_groups([basic], "false") == sorted([viewers, basic, elsewhere])
    # remove_groups=true: the repository's groups not named are left; other repositories' stay.
    assert set_groups([basic], "true") == sorted([basic, elsewhere])
    assert set_groups([], "true") == [elsewhere]


def test_groups_of_other_repositories_are_not_applied(api, repo, repo_b):
    user_id = api.create_user("jdoe")
    other = api.group_uri(repo_b, "repository-managers")
    response = api.post(
        f"/users/{user_id}/groups",
        params={"groups[]": [other, api.group_uri(repo, "repository-viewers")], "remove_groups": "false", "repo_id": repo},
    )
    assert response.status_code == 200
    assert api.user(user_id)["groups"] == [api.group_uri(repo, "repository-viewers")]
    assert api.get(other).json()["member_usernames"] == []


@pytest.mark.parametrize("params", [{"remove_groups": "true"}, {"repo_id": "2"}, {}])
def test_setting_groups_needs_repo_id_and_remove_groups(api, repo, params):
    user_id = api.create_user("jdoe")
    response = api.post(f"/users/{user_id}/groups", params={"groups[]": [api.group_uri(repo, "repository-viewers")], **params})
    assert response.status_code == 400
    missing = {"remove_groups", "repo_id"} - set(params)
    assert set(response.json()["error"]) == missing
    assert api.user(user_id)["groups"] == []


def test_a_repository_manager_sets_groups_in_their_repository_only(api, repo, repo_b):
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    user_id = api.create_user("jdoe")
    ok = manager.post(
        f"/users/{user_id}/groups",
        params={"groups[]": [api.group_uri(repo, "repository-viewers")], "remove_groups": "false", "repo_id": repo},
    )
    assert ok.status_code == 200, ok.text
    denied = manager.post(
        f"/users/{user_id}/groups",
        params={"groups[]": [api.group_uri(repo_b, "repository-viewers")], "remove_groups": "false", "repo_id": repo_b},
    )
    assert denied.status_code == 403
    assert denied.json() == ACCESS_DENIED
    assert api.user(user_id)["groups"] == [api.group_uri(repo, "repository-viewers")]


def test_membership_changes_bump_lock_versions(api, repo):
    viewers = api.group_uri(repo, "repository-viewers")
    user_id = api.create_user("jdoe")
    user_before, group_before = api.user(user_id)["lock_version"], api.get(viewers).json()["lock_version"]
    params = {"groups[]": [viewers], "remove_groups": "false", "repo_id": repo}
    assert api.post(f"/users/{user_id}/groups", params=params).status_code == 200
    assert api.user(user_id)["lock_version"] > user_before
    assert api.get(viewers).json()["lock_version"] > group_before
    # Nothing changes: nothing is bumped.
    user_now, group_now = api.user(user_id)["lock_version"], api.get(viewers).json()["lock_version"]
    assert api.post(f"/users/{user_id}/groups", params=params).status_code == 200
    assert api.user(user_id)["lock_version"] == user_now
    assert api.get(viewers).json()["lock_version"] == group_now
    # A stale copy of the user can no longer be saved over the membership change.
    stale = api.user(user_id)
    assert api.post(f"/users/{user_id}/groups", params={**params, "groups[]": [], "remove_groups": "true"}).status_code == 200
    assert api.post(f"/users/{user_id}", json=stale).status_code == 409
