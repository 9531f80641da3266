"""Validation of incoming records: normalisation (unknown and read-only properties), warnings
versus strict mode, identifiers, patterns, enumerations, dates and polymorphic notes."""

from __future__ import annotations

import pytest

from tests.records.helpers import read

STRICT = pytest.mark.parametrize("settings_overrides", [{"strict_validation": True}])


def accessions(repo: int) -> str:
    return f"/repositories/{repo}/accessions"


def accession(**fields) -> dict:
    return {"jsonmodel_type": "accession", "title": "Gift", "id_0": "2024", **fields}


def refused(api, path: str, body: dict) -> dict:
    response = api.post(path, json=body)
    assert response.status_code == 400, response.text
    return response.json()["error"]


def accepted(api, path: str, body: dict) -> dict:
    response = api.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


# -- normalisation ---------------------------------------------------------------------------


def test_unknown_properties_are_dropped_and_named_in_warnings(api, repo):
    date = {"jsonmodel_type": "date", "date_type": "single", "label": "creation", "begin": "2020", "colour": "red"}
    created = accepted(api, accessions(repo), accession(frobnicate=1, dates=[date]))
    assert created["warnings"] == {"frobnicate": ["Unknown property, ignored"], "dates/0/colour": ["Unknown property, ignored"]}
    record = read(api, created["uri"])
    assert "frobnicate" not in record
    assert "colour" not in record["dates"][0]
    assert record["dates"][0]["begin"] == "2020"


def test_no_warnings_gives_an_empty_list(api, repo):
    created = accepted(api, accessions(repo), accession())
    assert created["warnings"] == []


def test_read_only_fields_are_silently_ignored(api, repo):
    created = accepted(api, accessions(repo), accession(display_string="Forged", uri="/repositories/9/accessions/77", created_by="mallory"))
    assert created["warnings"] == []
    record = read(api, created["uri"])
    assert record["display_string"] == "Gift"
    assert record["uri"] == created["uri"] != "/repositories/9/accessions/77"
    assert record["created_by"] == "admin"


def test_empty_strings_and_nulls_count_as_missing(api, repo):
    created = accepted(api, accessions(repo), accession(id_0="", content_description=None, provenance=""))
    assert "id_0" in created["warnings"]
    record = read(api, created["uri"])
    assert not {"id_0", "content_description", "provenance"} & record.keys()


def test_jsonmodel_type_must_match_the_endpoint(api, repo):
    error = refused(api, accessions(repo), {"jsonmodel_type": "resource", "title": "x"})
    assert list(error) == ["jsonmodel_type"]
    error = refused(api, accessions(repo), {"title": "x"})
    assert list(error) == ["jsonmodel_type"]


# -- ArchivesSpace-only requirements: warnings, or errors when strict ------------------------


def test_archivesspace_requirements_are_warnings(api, repo):
    created = accepted(api, accessions(repo), {"jsonmodel_type": "accession", "title": "No id"})
    assert created["warnings"] == {"id_0": ["Property was missing"]}
    assert read(api, created["uri"])["title"] == "No id"


@STRICT
def test_strict_validation_turns_the_warnings_into_errors(api, repo):
    error = refused(api, accessions(repo), {"jsonmodel_type": "accession", "title": "No id"})
    assert error == {"id_0": ["Property is required but was missing"]}
    assert api.get(accessions(repo), params={"all_ids": "true"}).json() == []
    accepted(api, accessions(repo), accession())


@STRICT
def test_strict_validation_reports_every_resource_requirement(api, repo):
    error = refused(api, f"/repositories/{repo}/resources", {"jsonmodel_type": "resource", "title": "Papers"})
    assert {"id_0", "level", "dates", "extents"} <= error.keys()


def test_the_fonds_minimum_is_an_error_even_when_not_strict(api, repo):
    error = refused(api, accessions(repo), {"jsonmodel_type": "accession", "id_0": "1"})
    assert "title" in error


# -- identifiers -----------------------------------------------------------------------------


def test_identifier_with_a_gap_is_refused(api, repo):
    error = refused(api, accessions(repo), accession(id_0="2024", id_2="003"))
    assert "identifier" in error
    accepted(api, accessions(repo), accession(id_0="2024", id_1="002", id_2="003"))


def test_identifier_parts_longer_than_50_characters_are_refused(api, repo):
    error = refused(api, accessions(repo), accession(id_1="x" * 51))
    assert "id_1" in error
    created = accepted(api, accessions(repo), accession(id_1="x" * 50))
    assert read(api, created["uri"])["id_1"] == "x" * 50


def test_identifier_must_be_unique_in_the_repository(api, repo):
    accepted(api, accessions(repo), accession(id_0="A", id_1="1"))
    error = refused(api, accessions(repo), accession(id_0="A", id_1="1"))
    assert "id_0" in error
    other = api.create_repository("OTHER")
    accepted(api, accessions(other), accession(id_0="A", id_1="1"))


# -- patterns, enumerations, formats ---------------------------------------------------------


@pytest.mark.parametrize("url", ["ftp://example.org", "example.org", "http://has space.org"])
def test_repository_url_must_be_http(api, url):
    error = refused(api, "/repositories", {"jsonmodel_type": "repository", "repo_code": "X", "name": "X", "url": url})
    assert list(error) == ["url"]


def test_repository_http_urls_are_accepted(api):
    for code, url in (("A", "http://example.org"), ("B", "https://example.org/archive")):
        created = accepted(api, "/repositories", {"jsonmodel_type": "repository", "repo_code": code, "name": code, "url": url})
        assert read(api, created["uri"])["url"] == url


def test_a_value_outside_a_non_editable_list_is_refused(api, repo):
    error = refused(api, accessions(repo), accession(language="klingon"))
    assert list(error) == ["language"]
    assert "klingon" in error["language"][0] and "eng" in error["language"][0]
    created = accepted(api, accessions(repo), accession(language="eng", id_0="2"))
    assert read(api, created["uri"])["language"] == "eng"


def test_a_value_outside_an_editable_list_is_kept_with_a_warning(api, repo):
    created = accepted(api, accessions(repo), accession(acquisition_type="bequest"))
    assert created["warnings"] == {"acquisition_type": ["Value 'bequest' is not in the editable list accession_acquisition_type"]}
    assert read(api, created["uri"])["acquisition_type"] == "bequest"


def test_nested_enumeration_values_are_checked(api, repo):
    date = {"jsonmodel_type": "date", "date_type": "sometimes", "label": "creation", "begin": "2020"}
    error = refused(api, accessions(repo), accession(dates=[date]))
    assert list(error) == ["dates/0/date_type"]


@pytest.mark.parametrize("value", ["2024-13-45", "2023-02-29", "24-01-01", "yesterday"])
def test_date_format_is_checked(api, repo, value):
    error = refused(api, accessions(repo), accession(accession_date=value))
    assert list(error) == ["accession_date"]


def test_valid_dates_are_accepted(api, repo):
    created = accepted(api, accessions(repo), accession(accession_date="2024-02-29"))
    assert read(api, created["uri"])["accession_date"] == "2024-02-29"


def test_wrong_json_types_are_refused(api, repo):
    error = refused(api, accessions(repo), accession(title=5, publish="yes"))
    assert {"title", "publish"} == error.keys()


# -- polymorphic notes -----------------------------------------------------------------------


def resources(repo: int) -> str:
    return f"/repositories/{repo}/resources"


def test_note_without_jsonmodel_type_is_refused(api, repo):
    note = {"type": "abstract", "content": ["Summary"]}
    error = refused(api, resources(repo), {"jsonmodel_type": "resource", "title": "Papers", "notes": [note]})
    assert list(error) == ["notes/0/jsonmodel_type"]


def test_note_of_an_unknown_jsonmodel_type_is_refused(api, repo):
    note = {"jsonmodel_type": "note_bogus", "type": "abstract", "content": ["Summary"]}
    error = refused(api, resources(repo), {"jsonmodel_type": "resource", "title": "Papers", "notes": [note]})
    assert list(error) == ["notes/0/jsonmodel_type"]


def test_errors_inside_a_note_name_the_note_path(api, repo):
    note = {"jsonmodel_type": "note_multipart", "type": "not-a-type", "subnotes": [{"jsonmodel_type": "note_text"}]}
    error = refused(api, resources(repo), {"jsonmodel_type": "resource", "title": "Papers", "notes": [note]})
    assert {"notes/0/type", "notes/0/subnotes/0/content"} == error.keys()


def test_multipart_note_with_a_text_subnote_round_trips(api, repo):
    note = {
        "jsonmodel_type": "note_multipart",
        "type": "scopecontent",
        "label": "Scope",
        "publish": True,
        "subnotes": [{"jsonmodel_type": "note_text", "content": "Letters and diaries.", "publish": True}],
    }
    singlepart = {"jsonmodel_type": "note_singlepart", "type": "abstract", "content": ["Short."]}
    created = accepted(api, resources(repo), {"jsonmodel_type": "resource", "title": "Papers", "notes": [note, singlepart]})
    assert "notes" not in str(created["warnings"])
    record = read(api, created["uri"])
    assert record["notes"] == [note, singlepart]


# -- compiled schemas ------------------------------------------------------------------------


def test_a_type_whose_compiled_schema_was_dropped_as_unused_is_validated_as_before(api, repo):
    """The server drops the compiled schemas of types not written lately (their memory); the
    next write of such a type compiles it again and is checked just as strictly."""
    accepted(api, accessions(repo), accession(id_0="A1"))
    validator = api.client.app.state.fonds.records.validator
    assert "accession" in validator.drop_unused(0)
    assert validator.drop_unused(0) == []
    error = refused(api, accessions(repo), accession(id_0="A2", language="klingon", dates=[{"jsonmodel_type": "date"}]))
    assert sorted(error) == ["dates/0/date_type", "dates/0/label", "language"]
    assert accepted(api, accessions(repo), accession(id_0="A3"))["status"] == "Created"
    assert validator.drop_unused(3600) == []


# -- refs found as a record is normalised ---------------------------------------------------------


def corpus_records() -> list[tuple[str, dict]]:
    """The round-trip corpus, each record's refs to other corpus records pointing at a URI of the
    record's type (as `test_round_trip` gives them the URIs the records were created at)."""
    from fonds.model import REGISTRY
    from tests.records.test_round_trip import CORPUS, load, substitute

    files = [load(path) for path in CORPUS]
    uris = {entry["key"]: REGISTRY[entry["type"]].uri(index + 1, 2) for index, entry in enumerate(files)}
    return [(entry["type"], substitute(entry["record"], uris, 2)) for entry in files]


def test_the_refs_and_defaults_found_as_a_record_is_normalised_are_those_of_the_normalised_record(app):
    # As it normalises a record, the normaliser finds its refs and the subrecords that may lack a
    # default; `find_refs` and `Defaults.fill` find them walking the clean record again (which
    # other paths do): both must find the same refs at the same paths, and fill the same defaults.
    import copy

    import orjson

    from fonds.records.validation import find_refs

    service = app.state.fonds.records
    shapes = [
        *corpus_records(),
        # A string ref (a term's vocabulary), and an agent link whose terms (and their vocabulary) are not refs.
        (
            "subject",
            {
                "source": "local",
                "vocabulary": "/vocabularies/1",
                "terms": [{"term": "Mills", "term_type": "topical", "vocabulary": "/vocabularies/1"}],
            },
        ),
        (
            "accession",
            {
                "title": "A",
                "id_0": "X",
                "linked_agents": [
                    {
                        "ref": "/agents/people/1",
                        "role": "subject",
                        "terms": [{"term": "t", "term_type": "topical", "vocabulary": "/vocabularies/1"}],
                    }
                ],
            },
        ),
    ]
    every = []
    for name, record in shapes:
        found: list[tuple[str, str]] = []
        record_type = service.registry[name]
        doc = {"jsonmodel_type": name, **record}
        given = {key: value for key, value in copy.deepcopy(doc).items() if key != "lock_version"}  # as prepare_doc takes it
        normalised, _ = service.preparer.validator.normaliser.record(service.schemas[name], given)
        clean, _, _ = service.prepare_doc(record_type, doc, creating=True, refs=found)
        assert sorted(found) == sorted(find_refs(service.schemas, service.schemas[name], clean)), name
        normalised["jsonmodel_type"] = name
        filled = service.preparer.defaults.fill(name, normalised, skip=record_type.read_fields)
        assert orjson.dumps(clean) == orjson.dumps(filled), name
        every.append(found)
    assert sum(map(len, every)) > 20
    assert sorted(every[-2]) == [("terms/0/vocabulary", "/vocabularies/1"), ("vocabulary", "/vocabularies/1")]
    assert every[-1] == [("linked_agents/0", "/agents/people/1")]
