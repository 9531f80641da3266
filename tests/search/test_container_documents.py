"""A top container's search document shows what the records pointing at it say (`collection`,
`series`, `is_linked_to_published_record`, `subcontainer_barcodes`, the display strings) and
stays equal to GET as folders are filed in it, although the indexer skips containers whose
documents a new folder can't change."""

from __future__ import annotations

from tests.records.helpers import make_ao, make_resource, make_top_container, read, update
from tests.search.helpers import search


def _indexed(api, uri: str) -> dict:
    [doc] = search(api, "/search", **{"filter_query[]": [f'id:"{uri}"']}).json()["results"]
    return doc


def _assert_document_is_get(api, container: str) -> dict:
    assert _indexed(api, container)["json"] == api.get(container).text
    return read(api, container)


def _in(container: str, barcode: str | None = None) -> list[dict]:
    sub = {"top_container": {"ref": container}, "type_2": "folder", "indicator_2": "1"}
    if barcode:
        sub["barcode_2"] = barcode
    return [{"jsonmodel_type": "instance", "instance_type": "mixed_materials", "sub_container": sub}]


def _folder(api, repo: int, resource: str, parent: str | None, container: str, **extra) -> str:
    return make_ao(api, repo, "Folder", resource=resource, parent=parent, instances=_in(container), **extra)["uri"]


def _series(api, repo: int, resource: str, number: str) -> str:
    return make_ao(api, repo, f"Series {number}", resource=resource, level="series", component_id=number)["uri"]


def test_folders_filed_in_one_box_keep_its_document_equal_to_get(api, repo):
    box, resource = make_top_container(api, repo, "1"), make_resource(api, repo, id_0="MS 1")
    series = _series(api, repo, resource, "1")
    first = _folder(api, repo, resource, series, box)
    shown = _assert_document_is_get(api, box)
    assert ([c["ref"] for c in shown["collection"]], [s["ref"] for s in shown["series"]]) == ([resource], [series])
    for n in range(4):
        _folder(api, repo, resource, first if n % 2 else series, box, level="file")
        assert _assert_document_is_get(api, box)["series"] == shown["series"]


def test_a_folder_of_another_collection_or_series_reaches_the_document(api, repo):
    box, resource, other = make_top_container(api, repo, "1"), make_resource(api, repo, id_0="MS 1"), make_resource(api, repo, id_0="MS 2")
    first_series = _series(api, repo, resource, "1")
    _folder(api, repo, resource, first_series, box)
    _assert_document_is_get(api, box)
    second_series = _series(api, repo, resource, "2")
    _folder(api, repo, resource, second_series, box)
    assert [s["ref"] for s in _assert_document_is_get(api, box)["series"]] == [first_series, second_series]
    _folder(api, repo, other, None, box, level="file")
    assert [c["ref"] for c in _assert_document_is_get(api, box)["collection"]] == [resource, other]


def test_a_folder_that_is_its_own_series_reaches_the_document(api, repo):
    box, resource = make_top_container(api, repo, "1"), make_resource(api, repo, id_0="MS 1")
    _folder(api, repo, resource, None, box, level="file")
    assert _assert_document_is_get(api, box)["series"] == []
    top = make_ao(api, repo, "Series 9", resource=resource, level="series", component_id="9", instances=_in(box))["uri"]
    assert [s["ref"] for s in _assert_document_is_get(api, box)["series"]] == [top]


def test_a_folders_barcode_reaches_the_document(api, repo):
    box, resource = make_top_container(api, repo, "1"), make_resource(api, repo, id_0="MS 1")
    _folder(api, repo, resource, None, box)
    assert _assert_document_is_get(api, box)["subcontainer_barcodes"] == ""
    make_ao(api, repo, "Barcoded folder", resource=resource, instances=_in(box, barcode="F-0042"))
    assert _assert_document_is_get(api, box)["subcontainer_barcodes"] == "F-0042 "


def test_a_published_folder_reaches_the_document(api, repo):
    assert update(api, f"/repositories/{repo}", publish=True).status_code == 200
    box, resource = make_top_container(api, repo, "1"), make_resource(api, repo, id_0="MS 1", publish=True)
    series = _series(api, repo, resource, "1")
    assert update(api, series, publish=True).status_code == 200
    _folder(api, repo, resource, series, box, publish=False)
    assert _assert_document_is_get(api, box)["is_linked_to_published_record"] is False
    _folder(api, repo, resource, series, box, publish=True)
    assert _assert_document_is_get(api, box)["is_linked_to_published_record"] is True


def test_in_an_unpublished_repository_a_published_folder_leaves_it_unpublished(api, repo):
    box, resource = make_top_container(api, repo, "1"), make_resource(api, repo, id_0="MS 1", publish=True)
    _folder(api, repo, resource, None, box, publish=True)
    assert _assert_document_is_get(api, box)["is_linked_to_published_record"] is False
    _folder(api, repo, resource, None, box, publish=True)
    assert _assert_document_is_get(api, box)["is_linked_to_published_record"] is False


def test_a_folder_changed_or_removed_reaches_the_document(api, repo):
    box, resource = make_top_container(api, repo, "1"), make_resource(api, repo, id_0="MS 1")
    series = _series(api, repo, resource, "1")
    folder = _folder(api, repo, resource, series, box)
    _assert_document_is_get(api, box)
    assert update(api, folder, instances=[]).status_code == 200
    assert _assert_document_is_get(api, box)["collection"] == []
    assert update(api, folder, instances=_in(box, barcode="F-1")).status_code == 200
    assert _assert_document_is_get(api, box)["subcontainer_barcodes"] == "F-1 "
    assert api.delete(folder).status_code == 200
    assert _assert_document_is_get(api, box)["series"] == []
