"""The in-process session cache: a cached session never outlives a logout, a password change, a
deactivation or a removed membership or permission, on the worker where the change happened nor
on another worker sharing the database (a second app on the same database stands for it)."""

from __future__ import annotations

import time

import pytest

from fonds.auth.sessions import SessionCache, SessionUser, _Cached
from fonds.storage.records import utcnow
from tests.factories import USER_PASSWORD, Api, make_user, new_client, running_app


@pytest.fixture
def other_worker(settings):
    with running_app(settings) as app:
        yield app


@pytest.fixture(params=["same worker", "other worker"])
def where(request, app, other_worker):
    """The app on which the change is made: the one serving the user, or another."""
    return app if request.param == "same worker" else other_worker


def as_admin(app) -> Api:
    return Api.login(new_client(app))


@pytest.fixture
def viewer(api, repo) -> Api:
    return make_user(api, "jdoe", groups=[(repo, "repository-viewers")])


@pytest.fixture
def accession(api, repo) -> str:
    return api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "A", "id_0": "1"})["uri"]


def reads(user: Api, uri: str) -> int:
    """Read twice (the second is served from a warm cache) and return the status."""
    first = user.get(uri).status_code
    second = user.get(uri).status_code
    assert first == second
    return second


def test_logout_ends_a_cached_session(viewer, accession, where):
    assert reads(viewer, accession) == 200
    response = new_client(where).post("/logout", headers={"X-ArchivesSpace-Session": viewer.token})
    assert response.json() == {"status": "session_logged_out"}
    gone = viewer.get(accession)
    assert gone.status_code == 412
    assert gone.json()["code"] == "SESSION_GONE"


def test_a_password_change_ends_a_cached_session(viewer, accession, where):
    assert reads(viewer, accession) == 200
    client = new_client(where)
    response = client.post(
        f"/users/{viewer.user_id}/password", params={"password": "another-password-1"}, headers={"X-ArchivesSpace-Session": viewer.token}
    )
    assert response.status_code == 200, response.text
    assert viewer.get(accession).status_code == 412
    assert viewer.get("/users/current-user").status_code == 412


def test_deactivation_ends_a_cached_session(viewer, accession, where):
    assert reads(viewer, accession) == 200
    assert as_admin(where).get(f"/users/{viewer.user_id}/deactivate").status_code == 200
    assert viewer.get(accession).status_code == 412


def test_a_removed_membership_takes_effect_at_once(api, repo, viewer, accession, where):
    assert reads(viewer, accession) == 200
    admin = as_admin(where)
    response = admin.post(f"/users/{viewer.user_id}/groups", params={"groups[]": [], "remove_groups": "true", "repo_id": repo})
    assert response.status_code == 200, response.text
    assert viewer.get(accession).status_code == 403
    # The session itself lives on: only the rights went.
    assert viewer.get("/users/current-user").status_code == 200


def test_a_removed_permission_takes_effect_at_once(api, repo, accession, where):
    group = api.create(
        f"/repositories/{repo}/groups",
        {"jsonmodel_type": "group", "group_code": "readers", "description": "Readers", "grants_permissions": ["view_repository"]},
    )
    reader = make_user(api, "reader", groups=[group["uri"]])
    assert reads(reader, accession) == 200
    admin = as_admin(where)
    body = admin.get(group["uri"]).json()
    body["grants_permissions"] = []
    assert admin.post(group["uri"], json=body).status_code == 200
    assert reader.get(accession).status_code == 403


def test_an_added_membership_takes_effect_at_once(api, repo, accession, where):
    outsider = make_user(api, "outsider")
    assert reads(outsider, accession) == 403
    viewers = api.group_uri(repo, "repository-viewers")
    admin = as_admin(where)
    response = admin.post(f"/users/{outsider.user_id}/groups", params={"groups[]": [viewers], "remove_groups": "false", "repo_id": repo})
    assert response.status_code == 200, response.text
    assert outsider.get(accession).status_code == 200


def test_other_sessions_survive_a_logout(api, viewer, accession, other_worker):
    second = Api.login(new_client(viewer.client.app), "jdoe", USER_PASSWORD)
    assert reads(viewer, accession) == 200
    assert reads(second, accession) == 200
    new_client(other_worker).post("/logout", headers={"X-ArchivesSpace-Session": second.token})
    assert viewer.get(accession).status_code == 200
    assert second.get(accession).status_code == 412


def cached(user_id: int, generation: int = 0, age: float = 0.0) -> _Cached:
    user = SessionUser(user_id, user_id, f"user{user_id}", frozenset())
    return _Cached(user, generation, True, utcnow(), time.monotonic() - age)


def test_the_cache_is_bounded_and_drops_the_least_recently_used():
    cache = SessionCache(max_entries=2)
    cache.put("a", cached(1))
    cache.put("b", cached(2))
    assert cache.get("a", 0) is not None  # "b" is now the least recently used
    cache.put("c", cached(3))
    assert len(cache) == 2
    assert cache.get("b", 0) is None
    assert cache.get("a", 0).user.user_id == 1
    assert cache.get("c", 0).user.user_id == 3


def test_cache_entries_expire_and_die_with_their_generation():
    cache = SessionCache(ttl=10.0)
    cache.put("old", cached(1, age=11.0))
    cache.put("fresh", cached(2, generation=5))
    assert cache.get("old", 0) is None
    assert cache.get("fresh", 6) is None
    assert cache.get("fresh", 5) is None  # dropped when seen at a newer generation
