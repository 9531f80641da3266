"""Concurrent creates written in one transaction (group commit) each get the answer they would
have had alone: their own record, their own refusal, their own session check.

On SQLite the test holds the database's write lock while the creates queue, so that they are
written as one group once it is released; on PostgreSQL it holds the change log, at which a first
create's group waits while the others queue."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import delete

from fonds.api.crud import LOOP_CREATE_MAX_BYTES
from fonds.auth import generation
from fonds.auth.sessions import token_hash
from fonds.records import grouped_creates
from tests.factories import Api, make_user, new_client

GROUP = 6


def _accession(n: int, **extra) -> dict:
    return {"jsonmodel_type": "accession", "title": f"Grouped {n}", "id_0": f"G{n}", **extra}


def _queued_together(api: Api, posts: list[tuple[Api, str, dict]], in_held_transaction=None) -> list:
    """Send the creates at once; on SQLite they queue behind a write held here (in which
    `in_held_transaction(conn)` runs) and are written together when it ends."""
    services = api.client.app.state.fonds
    grouped = services.records.grouped_creates
    clients = [Api(new_client(api.client.app), who.token) for who, _, _ in posts]
    for client in clients:
        client.client.headers["X-ArchivesSpace-Session"] = client.token
    queued = threading.Event()
    with ThreadPoolExecutor(len(posts) + 1) as pool:
        if services.db.kind != "sqlite":
            if in_held_transaction is not None:
                with services.db.write() as conn:
                    in_held_transaction(conn)
            # A first create's group is held at its last statement (its change-log row) while
            # the others queue: they are written as one group once it is let go.
            with services.db.write() as conn:
                conn.exec_driver_sql("LOCK TABLE change_log IN SHARE ROW EXCLUSIVE MODE")
                blocker = pool.submit(api.post, "/subjects", json=_subject(-1))
                while (not grouped._leading or grouped.waiting) and not blocker.done():
                    queued.wait(0.01)
                futures = [pool.submit(clients[i].post, path, json=body) for i, (_, path, body) in enumerate(posts)]
                # Bounded: in a run's first test not every create was seen queued here (the group
                # then holds fewer), and the test must not wait for ever.
                deadline = time.monotonic() + 5
                while grouped.waiting < len(posts) and not any(f.done() for f in futures) and time.monotonic() < deadline:
                    queued.wait(0.01)
            assert blocker.result().status_code == 200, blocker.result().text
            return [future.result() for future in futures]
        with services.db.write() as conn:
            futures = [pool.submit(clients[i].post, path, json=body) for i, (_, path, body) in enumerate(posts)]
            # The first to queue leads and waits for this transaction; the others wait for it.
            while grouped.waiting < len(posts) and not any(f.done() for f in futures):
                queued.wait(0.01)
            if in_held_transaction is not None:
                in_held_transaction(conn)
        return [future.result() for future in futures]


def test_creates_queued_together_each_get_their_own_record(api, repo):
    path = f"/repositories/{repo}/accessions"
    responses = _queued_together(api, [(api, path, _accession(n)) for n in range(GROUP)])
    assert [r.status_code for r in responses] == [200] * GROUP, [r.text for r in responses]
    ids = [r.json()["id"] for r in responses]
    assert len(set(ids)) == GROUP
    for n, response in enumerate(responses):
        body = response.json()
        assert body["status"] == "Created" and body["uri"] == f"{path}/{body['id']}" and body["lock_version"] == 0
        record = api.get(body["uri"]).json()
        assert (record["title"], record["id_0"], record["created_by"]) == (f"Grouped {n}", f"G{n}", "admin")


def test_creates_of_two_types_in_one_group_each_get_an_id_of_their_own_type(api, repo):
    """A group allocates the ids of each of its types, each from its own sequence."""
    accessions = f"/repositories/{repo}/accessions"
    posts = [(api, accessions, _accession(n)) if n % 2 else (api, "/subjects", _subject(n)) for n in range(GROUP)]
    responses = _queued_together(api, posts)
    assert [r.status_code for r in responses] == [200] * GROUP, [r.text for r in responses]
    created = [r.json() for r in responses]
    records = [api.get(body["uri"]).json() for body in created]
    for n, (body, record) in enumerate(zip(created, records)):
        assert body["uri"] == record["uri"] == (f"{accessions}/{body['id']}" if n % 2 else f"/subjects/{body['id']}")
    # One batch wrote them all (one writer): a group that failed would have written each alone.
    assert len({record["create_time"] for record in records}) == 1
    # Each type's ids came from its own sequence: the next create of each is given a later one.
    after = [api.post("/subjects", json=_subject(GROUP)), api.post(accessions, json=_accession(GROUP))]
    for kind, response in enumerate(after):
        assert response.status_code == 200, response.text
        ids = [body["id"] for n, body in enumerate(created) if n % 2 == kind]
        assert len(set(ids)) == len(ids) and response.json()["id"] > max(ids)


def test_a_create_refused_by_a_changed_auth_generation_takes_no_id(api, repo):
    """The create of a session cached before the auth generation moved is refused in the write
    and retried: it takes the next id, none is skipped."""
    path = f"/repositories/{repo}/accessions"
    first = api.create(path, _accession(0))["id"]
    services = api.client.app.state.fonds
    with services.db.write() as conn:
        generation.bump(conn)  # as a permission change does, after the session was cached
    second = api.create(path, _accession(1))["id"]
    assert second == first + 1


def _subject(n: int) -> dict:
    term = {"jsonmodel_type": "term", "term": f"Grouped term {n}", "term_type": "topical", "vocabulary": "/vocabularies/1"}
    return {"jsonmodel_type": "subject", "source": "local", "vocabulary": "/vocabularies/1", "terms": [term]}


def test_a_clash_inside_a_group_refuses_one_create_only(api, repo):
    path = f"/repositories/{repo}/accessions"
    bodies = [_accession(n) for n in range(GROUP)]
    bodies[GROUP - 1] = {**bodies[GROUP - 1], "id_0": bodies[0]["id_0"]}
    responses = _queued_together(api, [(api, path, body) for body in bodies])
    clashing = [responses[0], responses[GROUP - 1]]
    assert sorted(r.status_code for r in clashing) == [200, 400]
    refused = next(r for r in clashing if r.status_code == 400)
    assert "id_0" in refused.json()["error"]
    assert [r.status_code for r in responses[1 : GROUP - 1]] == [200] * (GROUP - 2)
    listed = api.get(path, params={"all_ids": "true"}).json()
    assert len(listed) == GROUP - 1


def test_a_bad_ref_inside_a_group_refuses_its_create_only(api, repo):
    path = f"/repositories/{repo}/accessions"
    bodies = [_accession(n) for n in range(GROUP)]
    bodies[2] = {**bodies[2], "subjects": [{"ref": "/subjects/999999"}]}
    responses = _queued_together(api, [(api, path, body) for body in bodies])
    assert responses[2].status_code == 400
    assert responses[2].json() == {"error": {"subjects/0": ["Can't relate to non-existent record: /subjects/999999"]}}
    assert [r.status_code for n, r in enumerate(responses) if n != 2] == [200] * (GROUP - 1)


def test_creates_of_several_users_in_one_group_are_stamped_with_their_own(api, repo):
    other = make_user(api, "archivist", groups=[(repo, "repository-archivists")])
    path = f"/repositories/{repo}/accessions"
    posts = [(api if n % 2 else other, path, _accession(n)) for n in range(GROUP)]
    responses = _queued_together(api, posts)
    assert [r.status_code for r in responses] == [200] * GROUP, [r.text for r in responses]
    for n, response in enumerate(responses):
        record = api.get(response.json()["uri"]).json()
        assert record["created_by"] == record["last_modified_by"] == ("admin" if n % 2 else "archivist")


def test_a_create_waiting_while_its_session_ends_is_not_written(api, repo):
    """The session ends (a logout committed) after the create was checked against the session
    cache but before it is written: 412, and nothing written."""
    writer = make_user(api, "archivist", groups=[(repo, "repository-archivists")])
    path = f"/repositories/{repo}/accessions"
    assert writer.post(path, json=_accession(100)).status_code == 200  # the session is now cached

    def log_out(conn):
        sessions = conn.info["fonds_tables"]["session"]
        conn.execute(delete(sessions).where(sessions.c.token_hash == token_hash(writer.token)))
        generation.bump(conn)

    before = len(api.get(path, params={"all_ids": "true"}).json())
    responses = _queued_together(api, [(writer, path, _accession(n)) for n in range(2)] + [(api, path, _accession(2))], log_out)
    statuses = [r.status_code for r in responses]
    if api.client.app.state.fonds.db.kind == "sqlite":
        assert statuses == [412, 412, 200], [r.text for r in responses]
    assert all(status in (200, 412) for status in statuses) and statuses[2] == 200
    assert len(api.get(path, params={"all_ids": "true"}).json()) == before + statuses.count(200)


def test_creates_validated_on_the_event_loop_and_in_threads_share_a_group(api, repo):
    """Small creates are validated on the event loop and written by the creates' writer thread;
    one past LOOP_CREATE_MAX_BYTES is validated in a request thread, which waits for its group
    (or leads it). Queued together, each gets its own record, with the text it was sent."""
    path = f"/repositories/{repo}/accessions"
    long_text = "Described at length. " * (LOOP_CREATE_MAX_BYTES // 20)
    bodies = [_accession(n, content_description=long_text if n % 3 == 0 else f"Short {n}") for n in range(GROUP)]
    assert len(json.dumps(bodies[0])) > LOOP_CREATE_MAX_BYTES >= len(json.dumps(bodies[1]))
    responses = _queued_together(api, [(api, path, body) for body in bodies])
    assert [r.status_code for r in responses] == [200] * GROUP, [r.text for r in responses]
    assert len({r.json()["id"] for r in responses}) == GROUP
    for body, response in zip(bodies, responses):
        record = api.get(response.json()["uri"]).json()
        assert (record["id_0"], record["content_description"]) == (body["id_0"], body["content_description"])


def test_creates_after_the_writer_thread_ended_idle_are_written(api, repo, monkeypatch):
    """The thread writing creates from the event loop ends once idle; the next create starts
    it again, whether it comes alone or with others."""
    monkeypatch.setattr(grouped_creates, "WRITER_IDLE_SECONDS", 0.01)
    path = f"/repositories/{repo}/accessions"
    with ThreadPoolExecutor(3) as pool:
        for round_ in range(4):
            time.sleep(0.05)  # the writer thread ends meanwhile
            futures = [pool.submit(api.post, path, json=_accession(10 * round_ + n)) for n in range(1 + round_ % 3)]
            assert [f.result(timeout=60).status_code for f in futures] == [200] * len(futures)
    assert len(api.get(path, params={"all_ids": "true"}).json()) == 1 + 2 + 3 + 1


def test_creates_into_a_repository_gone_while_they_wait_are_refused_and_the_others_written(api, repo):
    """The group's repositories are read with the generations: one gone meanwhile is found
    missing, and its creates get the refusal each would have had alone."""
    other = api.create_repository("GONE")

    def remove_other(conn):
        repositories = conn.info["fonds_tables"]["repository"]
        conn.execute(delete(repositories).where(repositories.c.id == other))

    posts = [(api, f"/repositories/{target}/accessions", _accession(n)) for n, target in enumerate([repo, other, repo, other])]
    responses = _queued_together(api, posts, remove_other)
    assert [r.status_code for r in responses][0::2] == [200, 200]
    for refused in responses[1::2]:
        assert 400 <= refused.status_code < 500, refused.text
    if api.client.app.state.fonds.db.kind == "sqlite":
        assert all("The Repository must exist" in r.text for r in responses[1::2]), [r.text for r in responses[1::2]]
    assert len(api.get(f"/repositories/{repo}/accessions", params={"all_ids": "true"}).json()) == 2
