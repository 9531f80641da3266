from tests.factories import CRUD_TYPES


def test_create_then_read_returns_the_record(api, repo):
    created = api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "Smith papers"})
    record = api.get(created["uri"]).json()
    assert record["title"] == "Smith papers"
    assert record["uri"] == created["uri"]
    assert record["lock_version"] == 0


def test_all_crud_types_are_covered():
    assert {t.name for t in CRUD_TYPES} >= {
        "repository",
        "accession",
        "resource",
        "archival_object",
        "subject",
        "top_container",
        "location_profile",
    }
