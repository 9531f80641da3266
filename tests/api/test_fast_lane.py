"""The fast lane (fonds.api.fastlane) answers hot GETs ahead of FastAPI; it must answer exactly as
the ordinary path does, and leave every other answer (errors, stale sessions) to it."""

from __future__ import annotations

import logging

import orjson
import pytest

from fonds.api import fastlane
from fonds.api.fastlane import FastLane
from fonds.model import REGISTRY
from tests.factories import Api, make_user, new_client, running_app
from tests.records.helpers import make_ao, update
from tests.records.test_agents import PEOPLE, person
from tests.records.test_events import event_body, events_path
from tests.records.tree_helpers import add_children

HEADERS = ("content-type", "content-length", "cache-control")


@pytest.fixture
def ordinary(settings):
    """An app on the same database without the lane: the reference answers."""
    with running_app(settings) as app:
        app.fast_lane = None
        yield Api.login(new_client(app))


@pytest.fixture
def lane_answers(app, monkeypatch) -> list[str]:
    """The paths of the requests the lane answered itself."""
    answered, lane = [], app.fast_lane

    async def noting(scope, receive, send) -> bool:
        done = await FastLane.answered(lane, scope, receive, send)
        if done:
            answered.append(scope["path"])
        return done

    monkeypatch.setattr(lane, "answered", noting)
    return answered


@pytest.fixture
def accessions(api, repo) -> list[str]:
    path = f"/repositories/{repo}/accessions"
    return [api.create(path, {"jsonmodel_type": "accession", "title": f"Ünïcode {n}", "id_0": f"L{n}"})["uri"] for n in range(12)]


def same_answer(api: Api, ordinary: Api, path: str, **params) -> bytes:
    fast, slow = api.get(path, params=params), ordinary.get(path, params=params)
    assert (fast.status_code, fast.content) == (slow.status_code, slow.content)
    assert [fast.headers.get(h) for h in HEADERS] == [slow.headers.get(h) for h in HEADERS]
    return fast.content


def test_a_record_is_answered_as_the_ordinary_path_answers(api, ordinary, accessions):
    for uri in accessions[:3]:
        assert same_answer(api, ordinary, uri).startswith(b"{")
    assert api.get(accessions[0]).headers["cache-control"] == "private, must-revalidate, max-age=0"


@pytest.mark.parametrize(
    "params", [{"page": 1}, {"page": 2, "page_size": 5}, {"page": 3, "page_size": 5}, {"page": 9}, {"page": 1, "page_size": 250}]
)
def test_a_page_is_answered_as_the_ordinary_path_answers(api, ordinary, repo, accessions, params):
    same_answer(api, ordinary, f"/repositories/{repo}/accessions", **params)


def test_global_types_too(api, ordinary):
    uri = api.create("/subjects", {"jsonmodel_type": "subject", "title": "Topic", "source": "local", "terms": []})["uri"]
    same_answer(api, ordinary, uri)
    same_answer(api, ordinary, "/subjects", page=1)


@pytest.mark.parametrize(
    "path",
    [
        "/repositories/{repo}/accessions/99999",
        "/repositories/99999/accessions/1",
        "/repositories/99999/accessions?page=1",
        "/repositories/{repo}/accessions?page=0",
        "/repositories/{repo}/accessions?page=1&page_size=x",
        "/repositories/{repo}/accessions?page=1%00",
        "/repositories/{repo}/accessions/99999999999999999999999",
    ],
)
def test_errors_are_the_ordinary_paths(api, ordinary, repo, accessions, path):
    path = path.format(repo=repo)
    fast, slow = api.get(path), ordinary.get(path)
    assert fast.status_code >= 400
    assert (fast.status_code, fast.json()) == (slow.status_code, slow.json())


def test_sessions_and_permissions_are_checked_before_anything(app, api, repo, accessions):
    client = new_client(app)
    for path in (accessions[0], f"/repositories/{repo}/accessions?page=1"):
        assert client.get(path).status_code == 403
        gone = client.get(path, headers={"X-ArchivesSpace-Session": "no-such-token"})
        assert (gone.status_code, gone.json()["code"]) == (412, "SESSION_GONE")
    outsider = make_user(api, "outsider")
    assert outsider.get(accessions[0]).status_code == 403
    assert outsider.get(f"/repositories/{repo}/accessions", params={"page": 1}).status_code == 403


def test_a_read_sees_the_latest_write(api, accessions):
    record = api.get(accessions[0]).json()
    record["title"] = "Changed"
    assert api.post(accessions[0], json=record).status_code == 200
    assert api.get(accessions[0]).json()["title"] == "Changed"
    assert api.delete(accessions[0]).status_code == 200
    assert api.get(accessions[0]).status_code == 404


@pytest.mark.parametrize("type_name", ["accession", "resource"])
def test_linked_events_are_read_by_the_lane_as_the_ordinary_path_reads_them(api, ordinary, repo, lane_answers, type_name):
    agent = api.create(PEOPLE, person(primary_name="Processor"))["uri"]
    unlinked, once, often, other = (api.create_minimal(REGISTRY[type_name], repo)["uri"] for _ in range(4))
    stamp = {"timestamp": "2024-01-01T00:00:00Z"}
    first = api.create(events_path(repo), event_body(agent, often, **stamp))["uri"]
    second = api.create(events_path(repo), event_body(agent, once, often, **stamp))["uri"]
    # Linking one record twice lists the event once.
    twice = event_body(agent, often, **stamp)
    twice["linked_records"].append({"ref": often, "role": "outcome"})
    third = api.create(events_path(repo), twice)["uri"]
    gone = api.create(events_path(repo), event_body(agent, often, other, **stamp))["uri"]
    assert api.delete(gone).status_code == 200
    # The first event links `once` after the second did: events are listed oldest first all the same.
    assert update(api, first, linked_records=[{"ref": often, "role": "source"}, {"ref": once, "role": "source"}]).status_code == 200
    expected = {unlinked: [], once: [first, second], often: [first, second, third], other: []}
    lane_answers.clear()
    for uri, events in expected.items():
        answer = orjson.loads(same_answer(api, ordinary, uri))
        assert [event["ref"] for event in answer["linked_events"]] == events
    listing = f"/repositories/{repo}/{REGISTRY[type_name].path}"
    page = orjson.loads(same_answer(api, ordinary, listing, page=1, page_size=3))
    assert [record["linked_events"] for record in page["results"]] == [
        [],
        [{"ref": first}, {"ref": second}],
        [{"ref": u} for u in expected[often]],
    ]
    same_answer(api, ordinary, listing, page=2, page_size=3)
    assert lane_answers == [*expected, listing, listing]


def test_tree_nodes_are_answered_as_the_ordinary_path_answers(api, ordinary, repo, lane_answers):
    agent = api.create(PEOPLE, person(primary_name="Processor"))["uri"]
    resource = api.create_minimal(REGISTRY["resource"], repo)["uri"]
    series = make_ao(api, repo, "Series", resource=resource, level="series")["uri"]
    files = [make_ao(api, repo, f"File {n}", resource=resource, parent=series, level="file")["uri"] for n in range(4)]
    # Placed between two siblings: its logical position is not its order of creation.
    between = make_ao(api, repo, "Between", resource=resource, parent=series, position=1)["uri"]
    item = make_ao(api, repo, "Item", resource=resource, parent=files[2], level="otherlevel", other_level="piece")["uri"]
    unlevelled = make_ao(api, repo, "No level", resource=resource, parent=item)["uri"]
    api.create(events_path(repo), event_body(agent, files[1], **{"timestamp": "2024-01-01T00:00:00Z"}))
    digital = api.create_minimal(REGISTRY["digital_object"], repo)["uri"]
    components = f"/repositories/{repo}/digital_object_components"
    body = {"jsonmodel_type": "digital_object_component", "digital_object": {"ref": digital}}
    top = api.create(components, {**body, "label": "Side A"})["uri"]
    below = [api.create(components, {**body, "label": f"Track {n}", "parent": {"ref": top}})["uri"] for n in range(3)]
    lane_answers.clear()
    nodes = [series, *files, between, item, unlevelled, top, *below]
    for uri in nodes:
        same_answer(api, ordinary, uri)
    answer = orjson.loads(same_answer(api, ordinary, unlevelled))
    assert [a["ref"] for a in answer["ancestors"]] == [item, files[2], series, resource]
    assert orjson.loads(same_answer(api, ordinary, between))["position"] == 1
    listings = [f"/repositories/{repo}/archival_objects", components]
    for listing in listings:
        for params in ({"page": 1}, {"page": 2, "page_size": 3}):
            same_answer(api, ordinary, listing, **params)
    assert lane_answers == [*nodes, unlevelled, between, *(listing for listing in listings for _ in range(2))]


def test_a_level_json_would_escape_is_left_to_the_ordinary_path(api, ordinary, repo, lane_answers):
    resource = api.create_minimal(REGISTRY["resource"], repo)["uri"]
    parent = make_ao(api, repo, "Parent", resource=resource, level="series")
    child = make_ao(api, repo, "Child", resource=resource, parent=parent["uri"])["uri"]
    db = api.client.app.state.fonds.db
    table = db.tables["archival_object"]
    with db.write() as conn:  # enumerations hold no such value; a hand-edited database might
        conn.execute(table.update().where(table.c.id == parent["id"]).values(level='a "quoted"\n level'))
    lane_answers.clear()
    assert orjson.loads(same_answer(api, ordinary, child))["ancestors"][0]["level"] == 'a "quoted"\n level'
    assert lane_answers == []


def test_resolve_is_answered_as_the_ordinary_path_answers(api, ordinary, repo, lane_answers):
    agent = api.create(PEOPLE, person(primary_name="Creator"))["uri"]
    subject = api.create("/subjects", {"jsonmodel_type": "subject", "title": "Topic", "source": "local", "terms": []})["uri"]
    resource = api.create_minimal(REGISTRY["resource"], repo)["uri"]
    assert update(api, resource, subjects=[{"ref": subject}]).status_code == 200
    series = make_ao(api, repo, "Series", resource=resource, level="series", subjects=[{"ref": subject}, {"ref": subject}])["uri"]
    item = make_ao(api, repo, "Item", resource=resource, parent=series)["uri"]
    credited = make_ao(api, repo, "Credited", resource=resource, linked_agents=[{"ref": agent, "role": "creator"}])["uri"]
    listing = f"/repositories/{repo}/archival_objects"
    lane_answers.clear()
    for wanted in (["resource"], ["resource", "parent"], ["parent::resource::subjects"], ["subjects"], [""], ["nothing"]):
        answer = orjson.loads(same_answer(api, ordinary, item, **{"resolve[]": wanted}))
        same_answer(api, ordinary, series, **{"resolve[]": wanted})
        same_answer(api, ordinary, listing, page=1, **{"resolve[]": wanted})
    assert answer["resource"].keys() == {"ref"}
    resolved = orjson.loads(same_answer(api, ordinary, item, **{"resolve[]": ["parent::resource::subjects"]}))
    assert resolved["parent"]["_resolved"]["resource"]["_resolved"]["subjects"][0]["_resolved"]["title"] == "Topic"
    assert lane_answers == [item, series, listing] * 6 + [item]
    # Agents' read fields are computed in Python: resolving one is left to the ordinary path.
    lane_answers.clear()
    credits = orjson.loads(same_answer(api, ordinary, credited, **{"resolve[]": "linked_agents"}))
    assert credits["linked_agents"][0]["_resolved"]["uri"] == agent
    same_answer(api, ordinary, listing, page=1, **{"resolve[]": "linked_agents"})
    # Other parameters, and nesting too deep (400), are the ordinary path's.
    same_answer(api, ordinary, item, **{"resolve[]": "resource", "other": "1"})
    same_answer(api, ordinary, item, **{"resolve[]": "a::b::c::d::e::f"})
    assert lane_answers == []


def test_tree_views_are_answered_as_the_ordinary_path_answers(api, ordinary, repo, lane_answers, caplog):
    resource = api.create_minimal(REGISTRY["resource"], repo)["uri"]
    add_children(api, resource, [f"Box {n}" for n in range(205)])  # two waypoints at the top
    series = make_ao(api, repo, "Series", resource=resource, level="series", publish=True)["uri"]
    for n in range(3):
        make_ao(api, repo, f"File {n}", resource=resource, parent=series, publish=n != 1)
    digital = api.create_minimal(REGISTRY["digital_object"], repo)["uri"]
    components = f"/repositories/{repo}/digital_object_components"
    top = api.create(components, {"jsonmodel_type": "digital_object_component", "digital_object": {"ref": digital}, "label": "A"})["uri"]
    answered = [
        (f"{resource}/tree/root", {}),
        (f"{resource}/tree/root", {"published_only": "true"}),
        (f"{resource}/tree/waypoint", {"offset": "1"}),
        (f"{resource}/tree/waypoint", {"offset": "0", "parent_node": series, "published_only": "1"}),
        (f"{resource}/tree/waypoint", {"offset": "0", "parent_node": ""}),
        (f"{resource}/tree/node", {"node_uri": series}),
        (f"{resource}/tree/node", {"node_uri": series, "published_only": "false"}),
        (f"{digital}/tree/root", {}),
        (f"{digital}/tree/node", {"node_uri": top}),
    ]
    lane_answers.clear()
    for path, params in answered:
        assert same_answer(api, ordinary, path, **params).startswith((b"{", b"["))
    assert lane_answers == [path for path, _ in answered]
    # Refusals, parameters the routes do not read and repeated ones are the ordinary path's.
    lane_answers.clear()
    for path, params in [
        (f"{resource}/tree/waypoint", {}),
        (f"{resource}/tree/waypoint", {"offset": "x"}),
        (f"{resource}/tree/waypoint", {"offset": str(2**40)}),
        (f"{resource}/tree/waypoint", {"offset": "0", "published_only": "maybe"}),
        (f"{resource}/tree/waypoint", {"offset": "0", "parent_node": f"/repositories/{repo}/archival_objects/999999"}),
        (f"{resource}/tree/node", {}),
        (f"{resource}/tree/node", {"node_uri": top}),
        (f"{resource}/tree/root", {"other": "1"}),
        (f"{resource}/tree/root", {"published_only": ["true", "false"]}),
        (f"/repositories/{repo}/resources/999999/tree/root", {}),
    ]:
        same_answer(api, ordinary, path, **params)
    assert lane_answers == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # declined, not failed


def test_tree_views_check_the_session_and_permission_first(app, api, repo):
    resource = api.create_minimal(REGISTRY["resource"], repo)["uri"]
    path = f"{resource}/tree/root"
    assert new_client(app).get(path).status_code == 403
    gone = new_client(app).get(path, headers={"X-ArchivesSpace-Session": "no-such-token"})
    assert (gone.status_code, gone.json()["code"]) == (412, "SESSION_GONE")
    assert make_user(api, "outsider").get(path).status_code == 403
    viewer = make_user(api, "viewer", groups=[(repo, "repository-viewers")])
    assert viewer.get(path).status_code == 200
    assert viewer.post("/logout").status_code == 200
    logged_out = viewer.get(path)
    assert (logged_out.status_code, logged_out.json()["code"]) == (412, "SESSION_GONE")


# -- creates ---------------------------------------------------------------------------------------


def test_a_create_is_answered_as_the_ordinary_path_answers(api, ordinary, repo):
    path = f"/repositories/{repo}/accessions"
    api.get(path, params={"page": 1})  # the session is now cached: the lane writes
    fast = api.post(path, json={"jsonmodel_type": "accession", "title": "Fast", "id_0": "F1"})
    slow = ordinary.post(path, json={"jsonmodel_type": "accession", "title": "Slow", "id_0": "S1"})
    assert fast.status_code == slow.status_code == 200
    assert [fast.headers.get(h) for h in HEADERS[:1] + HEADERS[2:]] == [slow.headers.get(h) for h in HEADERS[:1] + HEADERS[2:]]
    assert fast.json() | {"id": 0, "uri": ""} == slow.json() | {"id": 0, "uri": ""}
    assert fast.json()["uri"] == f"{path}/{fast.json()['id']}"
    record = api.get(fast.json()["uri"]).json()
    assert (record["title"], record["created_by"]) == ("Fast", "admin")


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"[]",
        b'{"jsonmodel_type": "resource", "title": "Wrong type"}',
        b'{"jsonmodel_type": "accession", "title": "Taken", "id_0": "L0"}',
        b'{"jsonmodel_type": "accession", "title": "Bad ref", "id_0": "R1", "subjects": [{"ref": "/subjects/99999"}]}',
        b'{"jsonmodel_type": "accession", "title": "Bad dates", "id_0": "R2", "dates": "not a list"}',
    ],
    ids=["empty", "broken", "array", "wrong-type", "taken-identifier", "missing-ref", "bad-dates"],
)
def test_a_refused_create_is_the_ordinary_paths_refusal(api, ordinary, repo, accessions, body):
    path = f"/repositories/{repo}/accessions"
    fast, slow = api.post(path, content=body), ordinary.post(path, content=body)
    assert fast.status_code >= 400
    assert (fast.status_code, fast.json()) == (slow.status_code, slow.json())
    assert len(api.get(path, params={"all_ids": "true"}).json()) == len(accessions)


def test_a_create_with_parameters_or_too_large_goes_the_ordinary_path(app, api, repo):
    path = f"/repositories/{repo}/accessions"
    with_params = api.post(path, params={"extra": "1"}, json={"jsonmodel_type": "accession", "title": "Q", "id_0": "Q1"})
    assert with_params.status_code == 200
    limit = app.state.fonds.settings.max_body_bytes
    too_large = api.post(path, content=b'{"title": "' + b"x" * limit + b'"}')
    assert too_large.status_code == 413


def test_creates_check_the_session_and_permission_first(app, api, repo):
    path, body = f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "No"}
    client = new_client(app)
    assert client.post(path, json=body).status_code == 403
    gone = client.post(path, json=body, headers={"X-ArchivesSpace-Session": "no-such-token"})
    assert (gone.status_code, gone.json()["code"]) == (412, "SESSION_GONE")
    viewer = make_user(api, "viewer", groups=[(repo, "repository-viewers")])
    viewer.get(f"/repositories/{repo}/accessions", params={"page": 1})
    assert viewer.post(path, json={**body, "id_0": "V1"}).status_code == 403
    assert api.post("/logout").status_code == 200
    logged_out = api.post(path, json={**body, "id_0": "V2"})
    assert (logged_out.status_code, logged_out.json()["code"]) == (412, "SESSION_GONE")


# -- updates and deletes ---------------------------------------------------------------------------


@pytest.fixture
def lane_writes(monkeypatch) -> list[tuple[str, str]]:
    """(action, type) of the writes the lane answered itself."""
    written, write = [], fastlane.write_as_cached_user

    def noting(services, record_type, action, *args):
        answer = write(services, record_type, action, *args)
        if answer is not None:
            written.append((action, record_type.name))
        return answer

    monkeypatch.setattr(fastlane, "write_as_cached_user", noting)
    return written


def accession_pair(api: Api, ordinary: Api, repo: int) -> tuple[str, str]:
    path = f"/repositories/{repo}/accessions"
    return (
        api.create(path, {"jsonmodel_type": "accession", "title": "Fast", "id_0": "UF"})["uri"],
        ordinary.create(path, {"jsonmodel_type": "accession", "title": "Slow", "id_0": "US"})["uri"],
    )


def comparable(answer) -> tuple:
    """An answer's status and JSON, less what names the record (its id and URI)."""
    body = answer.json()
    return answer.status_code, body | {"id": 0, "uri": ""} if isinstance(body, dict) and "id" in body else body


def test_an_update_is_answered_as_the_ordinary_path_answers(api, ordinary, repo, lane_writes):
    fast_uri, slow_uri = accession_pair(api, ordinary, repo)
    fast_record, slow_record = api.get(fast_uri).json(), ordinary.get(slow_uri).json()
    fast = api.post(fast_uri, json={**fast_record, "title": "Changed", "unknown_field": 1})
    slow = ordinary.post(slow_uri, json={**slow_record, "title": "Changed", "unknown_field": 1})
    assert comparable(fast) == comparable(slow)
    assert fast.json()["status"] == "Updated" and fast.json()["lock_version"] == 1
    assert [fast.headers.get(h) for h in HEADERS[:1] + HEADERS[2:]] == [slow.headers.get(h) for h in HEADERS[:1] + HEADERS[2:]]
    assert lane_writes == [("update", "accession")]
    stored = api.get(fast_uri).json()
    assert (stored["title"], stored["lock_version"], stored["last_modified_by"]) == ("Changed", 1, "admin")


def test_a_delete_is_answered_as_the_ordinary_path_answers(api, ordinary, repo, lane_writes):
    fast_uri, slow_uri = accession_pair(api, ordinary, repo)
    fast, slow = api.delete(fast_uri), ordinary.delete(slow_uri)
    assert comparable(fast) == comparable(slow)
    assert fast.json() == {"status": "Deleted", "id": int(fast_uri.rsplit("/", 1)[1])}
    assert lane_writes == [("delete", "accession")]
    assert api.get(fast_uri).status_code == 404
    assert fast_uri not in api.get(f"/repositories/{repo}/search", params={"q": "Fast", "page": 1}).text


@pytest.mark.parametrize(
    "change",
    [
        {"lock_version": 5},
        {"title": None, "id_0": None},
        {"jsonmodel_type": "resource"},
        {"dates": "not a list"},
        {"id_0": "taken"},
        {"subjects": [{"ref": "/subjects/99999"}]},
    ],
    ids=["stale", "invalid", "wrong-type", "bad-dates", "taken-identifier", "missing-ref"],
)
def test_a_refused_update_is_the_ordinary_paths_refusal(api, ordinary, repo, change):
    fast_uri, slow_uri = accession_pair(api, ordinary, repo)
    api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "Taken", "id_0": "taken"})
    fast_record, slow_record = api.get(fast_uri).json(), ordinary.get(slow_uri).json()
    fast, slow = api.post(fast_uri, json={**fast_record, **change}), ordinary.post(slow_uri, json={**slow_record, **change})
    assert fast.status_code >= 400
    assert comparable(fast) == comparable(slow)
    assert api.get(fast_uri).json() == fast_record


@pytest.mark.parametrize("method", ["post", "delete"])
def test_writes_to_missing_records_are_the_ordinary_paths_refusal(api, ordinary, repo, method):
    for path in (f"/repositories/{repo}/accessions/99999", "/repositories/99999/accessions/1", "/subjects/99999"):
        kwargs = {"json": {"jsonmodel_type": path.split("/")[-2][:-1], "title": "X", "lock_version": 0}} if method == "post" else {}
        fast, slow = getattr(api, method)(path, **kwargs), getattr(ordinary, method)(path, **kwargs)
        assert fast.status_code in (400, 404)
        assert (fast.status_code, fast.json()) == (slow.status_code, slow.json())


def test_updates_and_deletes_check_the_session_and_permission_first(app, api, repo, accessions, lane_writes):
    record = api.get(accessions[0]).json()
    client = new_client(app)
    assert client.post(accessions[0], json=record).status_code == 403
    assert client.delete(accessions[0]).status_code == 403
    for write in (lambda h: client.post(accessions[0], json=record, headers=h), lambda h: client.delete(accessions[0], headers=h)):
        gone = write({"X-ArchivesSpace-Session": "no-such-token"})
        assert (gone.status_code, gone.json()["code"]) == (412, "SESSION_GONE")
    viewer = make_user(api, "viewer", groups=[(repo, "repository-viewers")])
    viewer.get(accessions[0])  # cached now
    assert viewer.post(accessions[0], json=record).status_code == 403
    assert viewer.delete(accessions[0]).status_code == 403
    assert lane_writes == []
    assert api.get(accessions[0]).json() == record
    assert api.post("/logout").status_code == 200
    assert api.post(accessions[0], json=record).json()["code"] == "SESSION_GONE"
    assert api.delete(accessions[0]).json()["code"] == "SESSION_GONE"


@pytest.mark.parametrize("method", ["post", "delete"])
def test_a_cached_session_writes_nothing_once_its_rights_are_gone(api, repo, accessions, lane_writes, method):
    archivist = make_user(api, "archivist", groups=[(repo, "repository-managers")])
    before = archivist.get(accessions[1]).json()
    allowed = archivist.post(accessions[1], json=before) if method == "post" else archivist.delete(accessions[1])
    assert allowed.status_code == 200  # by the lane: the session is cached with the manager's rights
    assert lane_writes == [("update" if method == "post" else "delete", "accession")]
    lane_writes.clear()
    record = archivist.get(accessions[0]).json()
    response = api.post(f"/users/{archivist.user_id}/groups", params={"groups[]": [], "remove_groups": "true", "repo_id": repo})
    assert response.status_code == 200, response.text
    answer = archivist.post(accessions[0], json=record) if method == "post" else archivist.delete(accessions[0])
    assert answer.status_code == 403
    assert lane_writes == []
    assert api.get(accessions[0]).json() == record


def test_a_write_the_lane_fails_is_answered_by_the_ordinary_path(api, repo, accessions, monkeypatch, caplog):
    def failing(*args):
        raise RuntimeError("a bug in the lane")

    monkeypatch.setattr(fastlane, "write_as_cached_user", failing)
    record = api.get(accessions[0]).json()
    updated = api.post(accessions[0], json={**record, "title": "Still written"})
    assert (updated.status_code, updated.json()["lock_version"]) == (200, 1)
    created = api.post(f"/repositories/{repo}/accessions", json={"jsonmodel_type": "accession", "title": "New", "id_0": "N1"})
    assert created.status_code == 200
    assert api.delete(accessions[1]).status_code == 200
    assert api.get(accessions[0]).json()["title"] == "Still written"
    assert "a bug in the lane" in caplog.text


def test_the_lane_takes_only_the_generic_routes_of_each_type(app):
    lane = app.fast_lane
    taken = {(h.record_type.name, h.action) for handlers in lane.writes.values() for h in handlers.values()}
    # Users' routes (passwords, self-service) and a group's update (members) are their own.
    assert not {("user", "create"), ("user", "update"), ("user", "delete"), ("group", "update")} & taken
    assert {("group", "create"), ("group", "delete"), ("accession", "update"), ("subject", "delete")} <= taken
    assert ("users", None) not in lane.handlers and ("", "users", None) not in lane.handlers
