"""The global repository (/repositories/1) is known by its id: never listed, read, renamed or
deleted as an ordinary repository, and put back by bootstrap if an installation lost it."""

from __future__ import annotations

from sqlalchemy import delete, select

from tests.factories import Api, new_client, running_app

GLOBAL = "/repositories/1"
UNCHANGEABLE = {"error": "/repositories/1 is maintained by the system and cannot be changed"}
UNDELETABLE = {"error": "Record deletion failed: /repositories/1 is maintained by the system"}


def test_global_repository_cannot_be_renamed_deleted_read_or_listed(api, repo):
    rename = api.post(GLOBAL, json={"jsonmodel_type": "repository", "repo_code": "RENAMED", "name": "Mine now", "lock_version": 0})
    assert (rename.status_code, rename.json()) == (409, UNCHANGEABLE)
    gone = api.delete(GLOBAL)
    assert (gone.status_code, gone.json()) == (409, UNDELETABLE)
    assert api.get(GLOBAL).status_code == 404
    assert [r["uri"] for r in api.get("/repositories").json()] == [f"/repositories/{repo}"]
    # Still an administrator everywhere: the administrators group is intact.
    assert api.get("/users/current-user").json()["is_admin"] is True
    assert api.post("/repositories", json={"jsonmodel_type": "repository", "repo_code": "AFTER", "name": "After"}).status_code == 200


def test_the_global_repository_is_recognised_by_its_id_not_its_code(api, app):
    db = app.state.fonds.db
    table = db.tables["repository"]
    with db.write() as conn:  # as an older version could leave it: renamed
        conn.execute(table.update().where(table.c.id == 1).values(repo_code="OLDNAME"))
    assert api.get("/repositories").json() == []
    assert api.delete(GLOBAL).status_code == 409
    # Its old code is an ordinary one now, free for another repository.
    created = api.post("/repositories", json={"jsonmodel_type": "repository", "repo_code": "_archivesspace", "name": "Plain"})
    assert created.status_code == 200, created.text
    assert [r["uri"] for r in api.get("/repositories").json()] == [created.json()["uri"]]


def test_bootstrap_repairs_a_lost_global_repository_and_administrators_group(settings, app, api, repo):
    db = app.state.fonds.db
    tables = db.tables
    with db.write() as conn:  # what deleting /repositories/1 used to do
        groups = tables["group"]
        doomed = list(conn.execute(select(groups.c.id).where(groups.c.repo_id == 1)).scalars())
        conn.execute(delete(tables["group_member"]).where(tables["group_member"].c.group_id.in_(doomed)))
        conn.execute(delete(tables["group_permission"]).where(tables["group_permission"].c.group_id.in_(doomed)))
        conn.execute(delete(groups).where(groups.c.repo_id == 1))
        conn.execute(delete(tables["repository"]).where(tables["repository"].c.id == 1))
    db.dispose()
    with running_app(settings) as restarted:
        admin = Api.login(new_client(restarted))
        assert admin.get("/users/current-user").json()["is_admin"] is True
        assert admin.get(f"/repositories/{repo}").status_code == 200
        assert admin.get(GLOBAL).status_code == 404
        assert [r["uri"] for r in admin.get("/repositories").json()] == [f"/repositories/{repo}"]
        # New repositories still get new ids (the id sequence was not wound back to 1).
        created = admin.create("/repositories", {"jsonmodel_type": "repository", "repo_code": "NEW", "name": "New"})
        assert created["id"] > repo
        assert admin.get("/repositories/1/groups", params={"group_code": "administrators"}).json()[0]["member_usernames"] == ["admin"]
