"""`find_by_id` for every type declaring lookups (ArchivesSpace's IDLookup): resources by their
four-part identifier in its JSON-array form, top containers by indicator or barcode, archival
objects by ref_id or component_id (tests/records/test_archival_objects.py)."""

from __future__ import annotations

import dataclasses

import pytest

from fonds.auth.permissions import PERMISSION_CODES
from fonds.model import REGISTRY
from fonds.records.registry import Lookup, RegistryError, build_registry

LOOKUP_TYPES = [t for t in REGISTRY if t.lookups]


def resource(api, repo, *parts: str, title: str = "Papers") -> str:
    body = {"jsonmodel_type": "resource", "title": title, **{f"id_{i}": part for i, part in enumerate(parts)}}
    return api.create(f"/repositories/{repo}/resources", body)["uri"]


def container(api, repo, indicator: str, barcode: str | None = None) -> str:
    body = {"jsonmodel_type": "top_container", "indicator": indicator, **({"barcode": barcode} if barcode else {})}
    return api.create(f"/repositories/{repo}/top_containers", body)["uri"]


def find(api, repo, path: str, params) -> dict:
    response = api.get(f"/repositories/{repo}/find_by_id/{path}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("record_type", LOOKUP_TYPES, ids=lambda t: t.name)
def test_every_declared_lookup_has_a_route_answering_in_archivesspace_shape(api, repo, record_type):
    assert find(api, repo, record_type.path, {}) == {record_type.path: []}
    for lookup in record_type.lookups:
        assert find(api, repo, record_type.path, {f"{lookup.param}[]": '["nothing"]'}) == {record_type.path: []}


def test_resources_by_identifier_as_a_json_array(api, repo):
    ms1 = resource(api, repo, "MS", "1")
    ms12 = resource(api, repo, "MS", "1", "2")
    full = resource(api, repo, "A", "B", "C", "D")
    assert find(api, repo, "resources", {"identifier[]": '["MS","1"]'}) == {"resources": [{"ref": ms1}]}
    # ArchivesSpace's clients send the padded form too, nulls or empty strings for the missing parts.
    assert find(api, repo, "resources", {"identifier[]": '["MS","1",null,null]'}) == {"resources": [{"ref": ms1}]}
    assert find(api, repo, "resources", {"identifier[]": '["MS", "1", "", ""]'}) == {"resources": [{"ref": ms1}]}
    both = find(api, repo, "resources", [("identifier[]", '["MS","1","2"]'), ("identifier[]", '["A","B","C","D"]')])
    assert both == {"resources": [{"ref": ms12}, {"ref": full}]}
    for unusable in ('"MS"', "MS", "[]", '["a","b","c","d","e"]', "{"):
        assert find(api, repo, "resources", {"identifier[]": unusable}) == {"resources": []}, unusable


def test_resolve_attaches_the_records(api, repo):
    uri = resource(api, repo, "MS", "9", title="Letters")
    [hit] = find(api, repo, "resources", {"identifier[]": '["MS","9"]', "resolve[]": "resources"})["resources"]
    assert hit["ref"] == uri and hit["_resolved"]["title"] == "Letters" and hit["_resolved"]["uri"] == uri


def test_lookups_stay_in_their_repository(api, repo):
    other = api.create_repository("OTHER")
    resource(api, other, "MS", "1")
    container(api, other, "1", "B-OTHER")
    assert find(api, repo, "resources", {"identifier[]": '["MS","1"]'}) == {"resources": []}
    assert find(api, repo, "top_containers", {"barcode[]": "B-OTHER"}) == {"top_containers": []}
    assert api.get("/repositories/99/find_by_id/resources", params={"identifier[]": '["MS"]'}).status_code == 400


def test_top_containers_by_indicator_or_barcode(api, repo):
    one = container(api, repo, "1", "B1")
    two = container(api, repo, "2", "B2")
    loose = container(api, repo, "1")
    assert find(api, repo, "top_containers", {"indicator[]": "1"}) == {"top_containers": [{"ref": one}, {"ref": loose}]}
    assert find(api, repo, "top_containers", [("barcode[]", "B1"), ("barcode[]", "B2")]) == {"top_containers": [{"ref": one}, {"ref": two}]}
    # Several parameters must all match (ArchivesSpace AND-s them).
    assert find(api, repo, "top_containers", {"indicator[]": "1", "barcode[]": "B1"}) == {"top_containers": [{"ref": one}]}
    assert find(api, repo, "top_containers", {"indicator[]": "2", "barcode[]": "B1"}) == {"top_containers": []}
    # A bare `barcode=` (ArchivesSpace's Ruby client with a plain value) is taken as well.
    assert find(api, repo, "top_containers", {"barcode": "B2"}) == {"top_containers": [{"ref": two}]}
    resolved = find(api, repo, "top_containers", {"barcode[]": "B2", "resolve[]": "top_containers"})
    assert resolved["top_containers"][0]["_resolved"]["barcode"] == "B2"


def test_a_lookup_needs_a_column_of_its_type():
    broken = dataclasses.replace(REGISTRY["top_container"], lookups=(Lookup("shelf", "shelf"),))
    with pytest.raises(RegistryError, match="looks up 'shelf' in 'shelf', which is not one of its columns"):
        build_registry([REGISTRY["repository"], broken], permission_codes=PERMISSION_CODES)
    global_type = dataclasses.replace(REGISTRY["location_profile"], lookups=(Lookup("name", "name"),))
    with pytest.raises(RegistryError, match="declares lookups but is not repository-scoped"):
        build_registry([REGISTRY["repository"], global_type], permission_codes=PERMISSION_CODES)
