"""Read-backs shaped as ArchivesSpace's: every array property present (empty when there is none),
schema defaults filled, at every depth; service-set fields ignored at every depth without a
warning. Parametrised over the registry, so a new type is covered by its schema alone."""

from __future__ import annotations

import pytest

from fonds.model import REGISTRY
from fonds.records.schemas import SchemaSet, load_schema_files
from tests.factories import CRUD_TYPES, collection_path
from tests.records.helpers import read

SCHEMAS = SchemaSet(load_schema_files(), {t.name for t in REGISTRY})
AUDIT = {"lock_version": 0, "created_by": "admin", "last_modified_by": "admin", "create_time": "2021-03-04T05:06:07Z"}
AUDIT |= {"system_mtime": "2021-03-04T05:06:07Z", "user_mtime": "2021-03-04T05:06:07Z"}


def expected_defaults(name: str) -> dict:
    """What the schema says a record holding none of its optional fields shows."""
    record_type = REGISTRY[name]
    found = {}
    for key, definition in SCHEMAS[name]["properties"].items():
        if definition.get("readOnly") or key in record_type.read_fields:
            continue
        if "default" in definition:
            found[key] = definition["default"]
        elif definition.get("type") == "array":
            found[key] = []
    return found


@pytest.mark.parametrize("record_type", CRUD_TYPES, ids=lambda t: t.name)
def test_a_minimal_record_reads_back_with_every_array_and_default(api, repo, record_type):
    record = api.minimal(record_type, repo)
    uri = api.create(collection_path(record_type, repo), record)["uri"]
    stored = read(api, uri)
    for key, value in expected_defaults(record_type.name).items():
        assert key in stored, key
        if key not in record:
            # A hook may fill an array itself (a group's grants); a default value is the schema's.
            assert stored[key] == value or (value == [] and isinstance(stored[key], list)), (key, stored[key])


def test_resource_with_a_title_alone_has_archivesspace_keys(api, repo):
    uri = api.create(f"/repositories/{repo}/resources", {"jsonmodel_type": "resource", "title": "Papers"})["uri"]
    record = read(api, uri)
    for key in ("subjects", "notes", "instances", "dates", "extents", "external_ids", "external_documents", "rights_statements"):
        assert record[key] == [], key
    assert record["lang_materials"] == [] and record["revision_statements"] == [] and record["deaccessions"] == []
    assert (record["publish"], record["suppressed"], record["restrictions"], record["is_finding_aid_status_published"]) == (
        False,
        False,
        False,
        True,
    )


def test_subrecords_get_their_defaults(api, repo):
    box = api.create(f"/repositories/{repo}/top_containers", {"jsonmodel_type": "top_container", "indicator": "1"})["uri"]
    body = {
        "jsonmodel_type": "accession",
        "title": "Gift",
        "id_0": "A1",
        "instances": [{"instance_type": "mixed_materials", "sub_container": {"top_container": {"ref": box}}}],
        "lang_materials": [{"language_and_script": {"language": "eng"}}],
        "rights_statements": [{"rights_type": "copyright", "status": "copyrighted", "jurisdiction": "US", "start_date": "2000-01-01"}],
        "user_defined": {"string_1": "x"},
        "collection_management": {"processing_status": "completed"},
    }
    record = read(api, api.create(f"/repositories/{repo}/accessions", body)["uri"])
    assert record["instances"][0]["is_representative"] is False
    assert record["lang_materials"][0]["notes"] == []
    statement = record["rights_statements"][0]
    assert (statement["external_documents"], statement["acts"], statement["notes"]) == ([], [], [])
    assert (record["user_defined"]["boolean_1"], record["collection_management"]["rights_determined"]) == (False, False)
    assert (record["restrictions_apply"], record["access_restrictions"], record["use_restrictions"]) == (False, False, False)


def test_given_values_are_kept_over_defaults(api, repo):
    body = {"jsonmodel_type": "resource", "title": "P", "publish": True, "restrictions": True, "is_finding_aid_status_published": False}
    record = read(api, api.create(f"/repositories/{repo}/resources", body)["uri"])
    assert (record["publish"], record["restrictions"], record["is_finding_aid_status_published"]) == (True, True, False)


def test_an_update_keeps_the_suppressed_flag_the_client_cannot_set(api, repo):
    uri = api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "Secret"})["uri"]
    assert api.post(f"{uri}/suppressed", params={"suppressed": "true"}).status_code == 200
    record = read(api, uri)
    response = api.post(uri, json={**record, "title": "Still secret", "suppressed": False})
    assert response.status_code == 200, response.text
    assert "suppressed" not in response.json()["warnings"]
    assert read(api, uri)["suppressed"] is True


def test_service_set_fields_at_every_depth_are_ignored_without_warnings(api, repo):
    box = api.create(f"/repositories/{repo}/top_containers", {"jsonmodel_type": "top_container", "indicator": "7"})["uri"]
    subject = api.create("/subjects", {"jsonmodel_type": "subject", "title": "Maps", "source": "local"})["uri"]
    body = {
        "jsonmodel_type": "resource",
        "title": "Papers",
        "uri": "/repositories/9/resources/77",
        "display_string": "Papers",
        "extents": [{**AUDIT, "jsonmodel_type": "extent", "portion": "whole", "number": "2", "extent_type": "cubic_feet"}],
        "dates": [{**AUDIT, "date_type": "inclusive", "label": "creation", "begin": "1900", "end": "1950"}],
        "subjects": [{"ref": subject, "_resolved": {"title": "Maps", "uri": subject}}],
        "notes": [
            {
                "jsonmodel_type": "note_multipart",
                "type": "bioghist",
                "persistent_id": "aspace_0123abcd",
                "subnotes": [{**AUDIT, "jsonmodel_type": "note_text", "content": "Born."}],
            }
        ],
        "instances": [
            {
                **AUDIT,
                "instance_type": "mixed_materials",
                "sub_container": {
                    **AUDIT,
                    "display_string": "Box 7",
                    "repository": {"ref": f"/repositories/{repo}"},
                    "top_container": {"ref": box, "_resolved": {"indicator": "7", "lock_version": 4}},
                },
            }
        ],
        "user_defined": {**AUDIT, "repository": {"ref": f"/repositories/{repo}"}, "boolean_1": True},
        "linked_events": [],
        "classifications": [],
    }
    response = api.post(f"/repositories/{repo}/resources", json=body)
    assert response.status_code == 200, response.text
    warnings = response.json()["warnings"]
    assert not [path for path in warnings if "/" in path or path in ("uri", "display_string", "linked_events", "classifications")], warnings
    record = read(api, response.json()["uri"])
    assert "lock_version" not in record["extents"][0] and "created_by" not in record["dates"][0]
    assert record["notes"][0]["persistent_id"] == "aspace_0123abcd"  # the client's, not service-set
    assert record["instances"][0]["sub_container"]["top_container"] == {"ref": box}
    assert record["subjects"] == [{"ref": subject}]


def test_unknown_properties_holding_data_still_warn(api, repo):
    body = {
        "jsonmodel_type": "accession",
        "title": "Gift",
        "dates": [{"date_type": "single", "label": "creation", "begin": "1900", "colour": "red"}],
    }
    body["classifications"] = [{"ref": "/repositories/2/classifications/1"}]
    response = api.post(f"/repositories/{repo}/accessions", json=body)
    assert response.status_code == 200, response.text
    assert set(response.json()["warnings"]) >= {"dates/0/colour", "classifications"}


def test_a_computed_field_the_type_did_not_declare_is_merged_not_repeated(api, monkeypatch):
    """`read_extras` returning a field the stored JSON also holds: one key, the computed value."""
    hooks = REGISTRY["location_profile"].hooks
    uri = api.create("/location_profiles", {"jsonmodel_type": "location_profile", "name": "Shelf"})["uri"]
    monkeypatch.setattr(hooks, "read_extras", lambda conn, rows: [{"display_string": "computed"} for _ in rows])
    # The ordinary read path (the fast lane, built at start, reads the type's fields in SQL).
    monkeypatch.setattr(api.client.app, "fast_lane", None)
    response = api.get(uri, params={"resolve[]": "vocabulary"})
    assert response.text.count('"display_string"') == 1
    assert response.json()["display_string"] == "computed" and response.json()["name"] == "Shelf"
