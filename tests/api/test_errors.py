"""Every error path of the HTTP layer, with its exact body; and a fuzz pass that never sees a 5xx."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fonds.records.schemas import load_schema_files
from tests.factories import CRUD_TYPES, collection_path

CACHE_CONTROL = "private, must-revalidate, max-age=0"
PARSE = "Had some trouble parsing your request: "
UNSTORABLE = {"error": "A value in the request is out of range or cannot be stored"}
BIG = "99999999999999999999"


def error(response, status: int) -> dict:
    """The JSON body of an error response, after checking its status and headers."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == CACHE_CONTROL
    return response.json()


@pytest.fixture
def accessions(repo) -> str:
    return f"/repositories/{repo}/accessions"


@pytest.fixture
def accession(api, accessions) -> dict:
    created = api.create(accessions, {"jsonmodel_type": "accession", "title": "Letters", "id_0": "E1"})
    return api.get(created["uri"]).json()


# -- bodies that are not a JSON object ---------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"{bad", None),
        (b'{"title": "x",}', None),
        (b"", "the body is empty (expected a JSON object)"),
        (b"   \n", "the body is empty (expected a JSON object)"),
        (b"[1, 2]", "expected a JSON object, got list"),
        (b'"a string"', "expected a JSON object, got str"),
        (b"42", "expected a JSON object, got int"),
        (b"null", "expected a JSON object, got NoneType"),
        (b"\xff\xfe{}", None),
        (b'{"title": 1e400}', None),
    ],
)
@pytest.mark.parametrize("target", ["create", "update"])
def test_unparseable_bodies(api, accessions, accession, body, detail, target):
    path = accessions if target == "create" else accession["uri"]
    found = error(api.post(path, content=body), 400)
    assert list(found) == ["error"]
    assert found["error"].startswith(PARSE)
    if detail:
        assert found["error"] == PARSE + detail
    assert api.get(accession["uri"]).json() == accession


# -- validation errors keyed by path -----------------------------------------------------------


def invalid(api, path: str, **fields) -> dict:
    body = error(api.post(path, json={"jsonmodel_type": "accession", "title": "t", "id_0": "V1", **fields}), 400)
    assert set(body) == {"error", "warning"}
    assert body["warning"] == {}
    return body["error"]


def test_wrong_type_names_the_field(api, accessions):
    assert invalid(api, accessions, title=12) == {"title": ["Must be a string (you provided a integer)"]}
    assert invalid(api, accessions, publish="yes") == {"publish": ["Must be a boolean (you provided a string)"]}
    assert invalid(api, accessions, dates="1900") == {"dates": ["Must be a array (you provided a string)"]}
    assert invalid(api, accessions, dates=[7]) == {"dates/0": ["Must be a object (you provided a integer)"]}


def test_nested_errors_carry_their_path(api, accessions):
    creation = {"label": "creation", "date_type": "single", "begin": "1901"}
    assert invalid(api, accessions, dates=[creation, {"label": "creation"}]) == {
        "dates/1/date_type": ["Property is required but was missing"]
    }
    kinds = invalid(api, accessions, dates=[{**creation, "date_type": "zzz"}])
    assert list(kinds) == ["dates/0/date_type"]
    assert kinds["dates/0/date_type"][0] == "Invalid value 'zzz'.  Must be one of: bulk, inclusive, range, single"
    assert invalid(api, accessions, subjects=[{"ref": 5}]) == {"subjects/0/ref": ["Must be a string (you provided a integer)"]}


def test_bad_enum_value_at_the_top_level(api, repo):
    body = error(api.post(f"/repositories/{repo}/resources", json={"jsonmodel_type": "resource", "title": "t", "level": "heap"}), 400)
    assert body["error"] == {
        "level": [
            "Invalid value 'heap'.  Must be one of: class, collection, file, fonds, item, otherlevel, recordgrp, series, subfonds, subgrp, subseries"
        ]
    }


def test_ref_to_a_missing_record(api, accessions):
    body = error(api.post(accessions, json={"jsonmodel_type": "accession", "title": "t", "subjects": [{"ref": "/subjects/404"}]}), 400)
    assert body["error"] == {"subjects/0": ["Can't relate to non-existent record: /subjects/404"]}


def test_errors_and_warnings_come_together(api, accessions):
    body = error(api.post(accessions, json={"jsonmodel_type": "accession", "title": 3}), 400)
    assert body == {"error": {"title": ["Must be a string (you provided a integer)"]}, "warning": {"id_0": ["Property was missing"]}}


@pytest.mark.parametrize("lock_version", ["abc", [0], True])
def test_lock_version_must_be_an_integer(api, accession, lock_version):
    body = error(api.post(accession["uri"], json={**accession, "lock_version": lock_version}), 400)
    assert list(body["error"]) == ["lock_version"]


# -- size, routing, path parameters ------------------------------------------------------------


@pytest.mark.parametrize("settings_overrides", [{"max_body_bytes": 1000}])
def test_oversized_bodies_are_413(api, accessions, accession):
    too_large = {"error": "Request body too large: the limit is 1000 bytes"}
    padded = {"jsonmodel_type": "accession", "title": "x" * 1200}
    assert error(api.post(accessions, json=padded), 413) == too_large
    assert error(api.post(accession["uri"], json={**accession, "title": "y" * 1200}), 413) == too_large
    streamed = api.post(accessions, content=(b"x" * 100 for _ in range(15)))
    assert error(streamed, 413) == too_large
    assert api.post(accessions, json={"jsonmodel_type": "accession", "title": "x" * 800}).status_code == 200
    assert api.get(accession["uri"]).json() == accession


@pytest.mark.parametrize("path", ["/nope", "/repositories/2/widgets", "/repositories/2/accessions/1/nope"])
def test_unknown_route(api, client, path):
    for caller in (api, client):
        assert error(caller.get(path), 404) == {"error": f"No route matches GET {path}"}


@pytest.mark.parametrize(
    ("method", "suffix", "allowed"), [("PUT", "", "GET, POST"), ("PATCH", "/1", "GET, POST, DELETE"), ("DELETE", "", "GET, POST")]
)
def test_wrong_method(api, accessions, accession, method, suffix, allowed):
    response = api.client.request(method, accessions + suffix, json={})
    assert error(response, 405) == {"error": f"Method {method} is not allowed on {accessions + suffix}"}
    assert set(response.headers["allow"].split(", ")) == set(allowed.split(", "))


def test_non_integer_ids_in_the_path(api, accessions):
    assert error(api.get(f"{accessions}/abc"), 400) == {"error": {"id": ["Wanted type Integer but got 'abc'"]}}
    assert error(api.delete("/subjects/1.5"), 400) == {"error": {"id": ["Wanted type Integer but got '1.5'"]}}
    for response in (api.get("/repositories/abc/accessions", params={"page": 1}), api.post("/repositories/x/accessions", json={})):
        assert error(response, 400) == {"error": {"repo_id": [f"Wanted type Integer but got '{response.url.path.split('/')[2]}'"]}}


def test_integers_beyond_the_database_range(api, accessions, accession):
    attempts = [
        api.get(f"{accessions}/{BIG}"),
        api.delete(f"{accessions}/{BIG}"),
        api.post(f"{accessions}/{BIG}", json={"jsonmodel_type": "accession", "title": "T", "id_0": "B", "lock_version": 0}),
        api.get(f"/repositories/{BIG}/accessions", params={"page": 1}),
        api.get(accessions, params={"id_set": BIG}),
        api.get(accessions, params={"page": BIG}),
    ]
    assert [(r.status_code, r.json()) for r in attempts] == [(400, UNSTORABLE)] * len(attempts)
    clamped = api.get(accessions, params={"page": 1, "page_size": BIG})
    assert clamped.status_code == 200 and clamped.json()["results"] == [accession]


def test_nul_characters_are_refused_alike_on_every_database(api, repo):
    # PostgreSQL cannot store them; SQLite could, but must answer the same (tests/api/test_input_limits.py).
    response = api.post(
        f"/repositories/{repo}/top_containers", json={"jsonmodel_type": "top_container", "indicator": "1", "barcode": "B\u00001"}
    )
    assert error(response, 400) == {"error": {"barcode": ["Must not contain a NUL character"]}, "warning": {}}


# -- sessions and headers ----------------------------------------------------------------------


@pytest.mark.parametrize("header", ["X-ArchivesSpace-Session", "X-Service-Session"])
def test_unknown_session_token_is_412(client, accessions, header):
    for response in (
        client.get(accessions, params={"page": 1}, headers={header: "f" * 64}),
        client.post(accessions, json={"jsonmodel_type": "accession", "title": "t"}, headers={header: "nope"}),
    ):
        body = error(response, 412)
        assert body["code"] == "SESSION_GONE"
        assert isinstance(body["error"], str) and body["error"]


def test_successful_responses_are_marked_private(api, accessions, accession):
    created = api.post(accessions, json={"jsonmodel_type": "accession", "title": "Cached?"})
    for response in (
        api.get("/"),
        api.get(accession["uri"]),
        api.get(accessions, params={"page": 1}),
        created,
        api.delete(created.json()["uri"]),
    ):
        assert response.status_code == 200
        assert response.headers["cache-control"] == CACHE_CONTROL
        assert response.headers["content-type"] == "application/json"


def test_access_denied_is_json(client, accessions):
    assert error(client.get(accessions, params={"page": 1}), 403) == {"error": "Access denied"}


# -- fuzzing: no input reaches a 5xx -----------------------------------------------------------

# Every type with generated routes and a paged listing (the test reads the listing's total).
FUZZ_TYPES = {t.name: t for t in CRUD_TYPES if not t.list_is_plain_array}
SCHEMAS = load_schema_files()
SPICY = st.sampled_from(
    [
        "",
        " ",
        "creation",
        "single",
        "local",
        "box",
        "/subjects/1",
        "/repositories/2/top_containers/1",
        "/repositories/1",
        "\u0000",
        "x" * 300,
        "2020-13-45",
        "1999-01-01",
    ]
)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20) | SPICY
JSON = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8) | SPICY, inner, max_size=3), max_leaves=10
)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def record_like(name: str):
    """Dicts using the type's own property names (and some nested ones) with arbitrary values."""
    keys = list(SCHEMAS[name]["properties"]) + ["lock_version", "ref", "label", "date_type", "begin", "sub_container", "top_container"]
    nested = st.lists(st.dictionaries(st.sampled_from(keys), JSON, max_size=4), max_size=2)
    values = JSON | nested | st.fixed_dictionaries({"ref": JSON})
    base = st.fixed_dictionaries({"jsonmodel_type": st.just(name)})
    return st.builds(lambda fixed, extra: {**extra, **fixed}, base, st.dictionaries(st.sampled_from(keys), values, max_size=6)) | JSON


def collection(name: str, repo: int) -> str:
    return collection_path(FUZZ_TYPES[name], repo)


def assert_sound(api, response) -> None:
    assert response.status_code < 500, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    if response.status_code == 200 and "uri" in body:
        reread = api.get(body["uri"])
        assert reread.status_code == 200 and reread.json()["uri"] == body["uri"]


@pytest.mark.parametrize("name", FUZZ_TYPES)
def test_fuzzed_records_never_cause_a_server_error(api, repo, name):
    path = collection(name, repo)
    target = api.create(path, api.minimal(FUZZ_TYPES[name], repo))["uri"]

    @FUZZ
    @given(body=record_like(name), update=st.booleans())
    def run(body, update):
        assert_sound(api, api.post(target if update else path, json=body))

    run()
    listing = api.get(path, params={"page": 1, "page_size": 250})
    assert listing.status_code == 200 and listing.json()["total"] >= 1


def test_fuzzed_bytes_never_cause_a_server_error(api, repo):
    target = api.create(collection("accession", repo), {"jsonmodel_type": "accession", "title": "Fuzz target"})["uri"]
    paths = [collection(name, repo) for name in FUZZ_TYPES] + [target]

    @FUZZ
    @given(body=st.binary(max_size=120) | JSON.map(lambda v: repr(v).encode()), index=st.integers(0, len(paths) - 1))
    def run(body, index):
        assert_sound(api, api.post(paths[index], content=body))

    run()
