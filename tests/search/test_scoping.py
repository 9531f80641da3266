"""Who finds what: route permissions, repository scoping and suppressed records (aspace-api §9.4)."""

from __future__ import annotations

from tests.factories import make_user
from tests.records.helpers import make_subject, read
from tests.search.helpers import accession, hits, search


def test_a_repository_search_sees_that_repository_and_global_records_only(api, repo):
    other = api.create_repository("OTHER")
    mine = accession(api, repo, "Harbour records")["uri"]
    theirs = accession(api, other, "Harbour plans")["uri"]
    subject = make_subject(api, "Harbours")
    viewer = make_user(api, "viewer", groups=[(repo, "repository-viewers")])
    assert set(hits(viewer, f"/repositories/{repo}/search", **{"type[]": ["accession", "subject"]})) == {mine, subject}
    assert search(viewer, f"/repositories/{other}/search").status_code == 403
    # Searching everything needs view_all_records.
    assert search(viewer, "/search").status_code == 403
    assert search(viewer, "/search/records", **{"uri[]": [theirs]}).status_code == 403
    assert search(viewer, "/search/status").status_code == 403
    assert set(hits(api, "/search", **{"type[]": ["accession"]})) == {mine, theirs}


def test_anonymous_clients_are_refused(client, repo):
    for path in ("/search", f"/repositories/{repo}/search", "/search/repositories", "/search/subjects", "/search/location_profile"):
        response = client.get(path, params={"page": 1})
        assert response.status_code == 403, path
        assert response.json() == {"error": "Access denied"}


def test_suppressed_records_are_hidden_from_users_who_may_not_see_them(api, repo):
    secret = accession(api, repo, "Sealed correspondence")
    viewer = make_user(api, "viewer", groups=[(repo, "repository-viewers")])
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    path = f"/repositories/{repo}/search"
    assert hits(viewer, path, q="sealed") == [secret["uri"]]

    refused = viewer.post(f"{secret['uri']}/suppressed", params={"suppressed": "true"})
    assert refused.status_code == 403
    response = api.post(f"{secret['uri']}/suppressed", params={"suppressed": "true"})
    assert response.status_code == 200
    assert response.json() == {"status": "Suppressed", "id": secret["id"], "suppressed_state": True}
    assert read(api, secret["uri"])["suppressed"] is True

    assert hits(viewer, path, q="sealed") == []
    assert hits(manager, path, q="sealed") == [secret["uri"]]
    [doc] = search(api, path, q="sealed").json()["results"]
    assert (doc["suppressed"], doc["publish"]) == (True, False)

    assert api.post(f"{secret['uri']}/suppressed", params={"suppressed": "false"}).json()["suppressed_state"] is False
    assert hits(viewer, path, q="sealed") == [secret["uri"]]


def test_suppression_needs_a_boolean_and_an_existing_record(api, repo):
    record = accession(api, repo, "Anything")
    bad = api.post(f"{record['uri']}/suppressed", params={"suppressed": "maybe"})
    assert bad.status_code == 400 and list(bad.json()["error"]) == ["suppressed"]
    assert api.post(f"{record['uri']}/suppressed").status_code == 400
    assert api.post(f"/repositories/{repo}/accessions/999/suppressed", params={"suppressed": "true"}).status_code == 404
    # Only the types ArchivesSpace suppresses have the route.
    subject = make_subject(api, "Unsuppressible")
    assert api.post(f"{subject}/suppressed", params={"suppressed": "true"}).status_code in (404, 405)
