"""Hostile input gets a clear 400 naming the field, never a 500 or a hang: `resolve[]` depth,
JSON nesting depth, refs and members per record, NUL characters, lock_version's type and
non-canonical refs. And every statement binding a list of ids does so in bounded chunks."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import event
from sqlalchemy.exc import ProgrammingError

from fonds.records import refs
from fonds.records.validation import MAX_DEPTH
from fonds.storage import chunks
from fonds.storage import records as store
from tests.records.helpers import make_subject, read, update


def accession(**fields) -> dict:
    return {"jsonmodel_type": "accession", "title": "Letters", **fields}


def bad(response) -> dict:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()["error"]


# -- resolve[] depth -------------------------------------------------------------------------


def test_resolve_depth_is_limited(api, repo):
    subject = make_subject(api, "Deep")
    created = api.create(f"/repositories/{repo}/accessions", accession(subjects=[{"ref": subject}]))
    assert bad(api.get(created["uri"], params={"resolve[]": "::".join(["subjects", *["a"] * 253])})) == {
        "resolve[]": [f"Nested 254 levels deep (the limit is {refs.MAX_RESOLVE_DEPTH})"]
    }
    deepest = "::".join(["subjects", *["vocabulary"] * (refs.MAX_RESOLVE_DEPTH - 1)])
    resolved = read(api, created["uri"], **{"resolve[]": deepest})
    assert resolved["subjects"][0]["_resolved"]["title"] == "Deep"


# -- JSON nesting depth ----------------------------------------------------------------------


def nested(depth: int):
    value = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000])
def test_json_nesting_depth_is_limited(api, repo, depth):
    # Written by hand: the client's own JSON encoder would not go 1,000 levels deep.
    body = '{"jsonmodel_type": "accession", "title": "Letters", "extents": ' + "[" * depth + '"x"' + "]" * depth + "}"
    errors = bad(api.post(f"/repositories/{repo}/accessions", content=body, headers={"content-type": "application/json"}))
    [(path, messages)] = errors.items()
    assert path.startswith("extents/0/0/")
    assert messages == [f"Nested more than {MAX_DEPTH} levels deep"]


@pytest.mark.parametrize("field", ["extents", "instances", "linked_agents", "title"])
def test_a_batch_import_refuses_a_record_nested_too_deep(api, repo, field):
    # Every record of a batch is checked as a single create's body is (these were 500s).
    deep = "[" * 1000 + '"x"' + "]" * 1000
    subject = '{"jsonmodel_type": "subject", "source": "local", "terms": [{"term": "Deep", "term_type": "topical"}]}'
    body = f'[{subject}, {{"jsonmodel_type": "accession", "title": "L", "{field}": {deep}}}]'
    errors = bad(api.post(f"/repositories/{repo}/batch_imports", content=body, headers={"content-type": "application/json"}))
    [(path, messages)] = errors.items()
    assert path.startswith(f"batch_import/1/{field}/0/0/")
    assert messages == [f"Nested more than {MAX_DEPTH} levels deep"]
    assert api.get(f"/repositories/{repo}/accessions", params={"all_ids": "true"}).json() == []


def test_nesting_within_the_limit_is_judged_on_its_merits(api, repo):
    errors = bad(api.post(f"/repositories/{repo}/accessions", json=accession(extents=nested(MAX_DEPTH - 2))))
    assert "extents/0" in errors


def test_an_unknown_property_named_with_a_slash_is_measured_by_its_levels(api, repo):
    # Dropped with a warning, its value as deep as the limit allows: its name's "/" is no level.
    response = api.post(f"/repositories/{repo}/accessions", json=accession(**{"odd/name": nested(MAX_DEPTH - 1)}))
    assert response.status_code == 200, response.text
    assert "odd/name" not in read(api, response.json()["uri"])
    too_deep = bad(api.post(f"/repositories/{repo}/accessions", json=accession(**{"odd/name": nested(MAX_DEPTH)})))
    assert list(too_deep.values()) == [[f"Nested more than {MAX_DEPTH} levels deep"]]


# -- refs and members per record -------------------------------------------------------------


def test_a_record_with_70000_refs_is_refused(api, repo):
    subject = make_subject(api, "Many")
    body = accession(subjects=[{"ref": subject}] * 70_000)
    assert bad(api.post(f"/repositories/{repo}/accessions", json=body)) == {
        "subjects": [f"Too many references in one record: 70000 (the limit is {refs.MAX_REFS})"]
    }


def test_a_record_with_many_refs_within_the_limit_is_stored(api, repo):
    subject = make_subject(api, "Many")
    created = api.create(f"/repositories/{repo}/accessions", accession(subjects=[{"ref": subject}] * refs.MAX_REFS))
    assert len(read(api, created["uri"])["subjects"]) == refs.MAX_REFS
    assert api.delete(subject).status_code == 200
    assert read(api, created["uri"]).get("subjects", []) == []


def test_a_group_with_70000_members_is_refused(api, repo):
    body = {"jsonmodel_type": "group", "group_code": "crowd", "description": "Crowd", "member_usernames": [f"u{n}" for n in range(70_000)]}
    assert bad(api.post(f"/repositories/{repo}/groups", json=body)) == {
        "member_usernames": ["At most 10000 item(s) are allowed (you provided 70000)"]
    }


# -- NUL characters --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/repositories", {"jsonmodel_type": "repository", "repo_code": "A\x00B", "name": "Nul"}, "repo_code"),
        ("{repo}/top_containers", {"jsonmodel_type": "top_container", "indicator": "1", "barcode": "12\x0034"}, "barcode"),
        ("{repo}/accessions", accession(extents=[{"number": "1\x00"}]), "extents/0/number"),
    ],
)
def test_nul_is_refused_in_bodies(api, repo, path, body, field):
    url = path.format(repo=f"/repositories/{repo}")
    assert bad(api.post(url, json=body)) == {field: ["Must not contain a NUL character"]}


@pytest.mark.parametrize(("value", "field"), [("A\x00B", "title"), ({"number\x00": "1"}, "extents/0/number\\u0000")])
def test_nul_is_refused_in_a_batch_import(api, repo, value, field):
    record = accession(id_0="N1", extents=[value]) if field.startswith("extents") else accession(id_0="N1", title=value)
    body = [accession(id_0="N0", uri=f"/repositories/{repo}/accessions/import_0"), record]
    assert bad(api.post(f"/repositories/{repo}/batch_imports", json=body)) == {
        f"batch_import/1/{field}": ["Must not contain a NUL character"]
    }
    assert api.get(f"/repositories/{repo}/accessions", params={"all_ids": "true"}).json() == []


@pytest.mark.parametrize(
    "url", ["/repositories/{repo}/groups?group_code=%00", "/repositories/{repo}/find_by_id/archival_objects?ref_id[]=a%00"]
)
def test_nul_is_refused_in_parameters(api, repo, url):
    response = api.get(url.format(repo=repo))
    assert bad(response) == "The request's path or parameters contain a NUL character, which is not allowed"


# -- lock_version ----------------------------------------------------------------------------


@pytest.mark.parametrize("lock_version", [1.5, 0.0, "0", "2", True])
def test_lock_version_must_be_an_integer(api, repo, lock_version):
    created = api.create(f"/repositories/{repo}/accessions", accession())
    record = read(api, created["uri"])
    assert bad(api.post(created["uri"], json={**record, "lock_version": lock_version})) == {
        "lock_version": [f"Must be an integer (you provided '{lock_version}')"]
    }
    assert update(api, created["uri"], title="Changed").status_code == 200


# -- canonical refs --------------------------------------------------------------------------


@pytest.mark.parametrize("written", ["/subjects/0{id}", "/subjects/00{id}", "/subjects/+{id}"])
def test_refs_must_be_canonical(api, repo, written):
    subject = make_subject(api, "Canon")
    ref = written.format(id=subject.rsplit("/", 1)[1])
    errors = bad(api.post(f"/repositories/{repo}/accessions", json=accession(subjects=[{"ref": ref}])))
    assert list(errors) == ["subjects/0/ref"]
    created = api.create(f"/repositories/{repo}/accessions", accession(subjects=[{"ref": subject}]))
    assert read(api, created["uri"], **{"resolve[]": "subjects"})["subjects"][0]["_resolved"]["uri"] == subject


# -- database errors are logged without their SQL -----------------------------------------


def test_a_database_error_is_logged_once_without_its_sql(api, repo, monkeypatch, caplog):
    statement = " ".join(["SELECT", "secret_column", "FROM", "hidden_table"])  # not spelled out: the traceback shows this line

    def failing(*args, **kwargs):
        raise ProgrammingError(statement, {}, Exception("too many parameters"))

    monkeypatch.setattr(store, "fetch", failing)
    with caplog.at_level(logging.INFO):
        response = api.get(f"/repositories/{repo}")
    assert (response.status_code, response.json()) == (500, {"error": "Internal server error"})
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    text = caplog.text
    assert "too many parameters" in text
    assert "secret_column" not in text and "SELECT" not in text


# -- bounded chunks --------------------------------------------------------------------------


@pytest.fixture
def in_list_sizes(app, monkeypatch) -> list[int]:
    """The number of bound parameters of every statement with an IN list, with chunks of 4."""
    monkeypatch.setattr(chunks, "CHUNK", 4)
    sizes: list[int] = []
    engine = app.state.fonds.db.engine

    def count(conn, cursor, statement, parameters, context, executemany):
        if " IN (" in statement.upper() and not executemany:
            sizes.append(len(parameters))

    event.listen(engine, "before_cursor_execute", count)
    yield sizes
    event.remove(engine, "before_cursor_execute", count)


def test_lists_of_ids_are_bound_in_bounded_chunks(api, repo, in_list_sizes):
    subjects = [make_subject(api, f"Term {n}") for n in range(12)]
    users = [api.create_user(f"member{n}") for n in range(12)]
    group = api.create(
        f"/repositories/{repo}/groups",
        {"jsonmodel_type": "group", "group_code": "many", "description": "Many", "member_usernames": [f"member{n}" for n in range(12)]},
    )
    assert len(read(api, group["uri"])["member_usernames"]) == 12
    created = api.create(f"/repositories/{repo}/accessions", accession(subjects=[{"ref": s} for s in subjects]))
    resolved = read(api, created["uri"], **{"resolve[]": "subjects"})
    assert [s["_resolved"]["uri"] for s in resolved["subjects"]] == subjects
    assert api.delete(subjects[0]).status_code == 200
    assert len(read(api, created["uri"])["subjects"]) == 11
    for user_id in users:
        assert api.delete(f"/users/{user_id}").status_code == 200
    assert read(api, group["uri"])["member_usernames"] == []
    assert in_list_sizes, "no statement with an IN list was seen"
    # A chunk of 4 ids plus the few other parameters of such a statement (never the list of 11 or 12).
    assert max(in_list_sizes) <= 4 + 3, sorted(in_list_sizes)
