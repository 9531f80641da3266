"""The controlled value lists over HTTP: ArchivesSpace's shapes and ids, adding, using, renaming,
merging, removing, suppressing and moving values, the rules of editable and non-editable lists
and read-only values, permissions, strict validation, and every worker seeing a change."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.factories import make_user, running_app

EXTENTS = 14  # extent_extent_type: ArchivesSpace's id
SALUTATIONS = 17  # agent_contact_salutation (ArchivesSpace's own example uses /config/enumerations/17)


def enumeration(api, enum_id: int) -> dict:
    response = api.get(f"/config/enumerations/{enum_id}")
    assert response.status_code == 200, response.text
    return response.json()


def post_list(api, enum: dict, **changes):
    return api.post(enum["uri"], json={**enum, **changes})


def value_of(enum: dict, value: str) -> dict:
    return next(v for v in enum["enumeration_values"] if v["value"] == value)


def add_values(api, enum_id: int, *values: str) -> dict:
    enum = enumeration(api, enum_id)
    response = post_list(api, enum, values=[*enum["values"], *values])
    assert response.status_code == 200, response.text
    return enumeration(api, enum_id)


def accession_with_extent(api, repo: int, extent_type: str, title: str = "Smith papers") -> dict:
    extent = {"jsonmodel_type": "extent", "portion": "whole", "number": "3", "extent_type": extent_type}
    response = api.post(
        f"/repositories/{repo}/accessions", json={"jsonmodel_type": "accession", "title": title, "id_0": title, "extents": [extent]}
    )
    assert response.status_code == 200, response.text
    return response.json()


# -- reading ---------------------------------------------------------------------------------


def test_lists_have_archivesspace_ids_and_shapes(client):
    listing = client.get("/config/enumerations").json()
    by_name = {enum["name"]: enum for enum in listing}
    assert by_name["agent_contact_salutation"]["uri"] == f"/config/enumerations/{SALUTATIONS}"
    assert by_name["extent_extent_type"]["uri"] == f"/config/enumerations/{EXTENTS}"
    assert [enum["uri"] for enum in listing] == sorted((enum["uri"] for enum in listing), key=lambda uri: int(uri.rsplit("/", 1)[1]))
    extents = by_name["extent_extent_type"]
    assert extents["editable"] is True and extents["jsonmodel_type"] == "enumeration"
    assert extents["relationships"] == ["extent_type", "processing_total_extent_type"]
    assert "cubic_feet" in extents["values"] and "default_value" not in extents
    first = extents["enumeration_values"][0]
    assert {"id", "enumeration_id", "value", "position", "suppressed", "readonly", "lock_version", "uri"} <= set(first)
    assert first["enumeration_id"] == EXTENTS and first["position"] == 0 and first["readonly"] == 0 and first["suppressed"] is False
    assert by_name["extent_portion"]["default_value"] == "whole"
    events = by_name["event_event_type"]
    assert events["readonly_values"] == ["request"] and value_of(events, "request")["readonly"] == 1
    assert by_name["date_type"]["editable"] is False


def test_one_list_by_id_and_by_name_and_one_value(client):
    by_id = client.get(f"/config/enumerations/{SALUTATIONS}").json()
    assert by_id == client.get("/config/enumerations/names/agent_contact_salutation").json()
    mr = value_of(by_id, "mr")
    alone = client.get(mr["uri"]).json()
    assert alone["value"] == "mr" and alone["position"] == mr["position"] and alone["jsonmodel_type"] == "enumeration_value"
    assert alone["uri"] == mr["uri"]


@pytest.mark.parametrize(
    "path", ["/config/enumerations/9999", "/config/enumerations/names/no_such_list", "/config/enumeration_values/99999"]
)
def test_unknown_lists_and_values_are_404(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert "not found" in response.json()["error"]


def test_csv_lists_every_unsuppressed_value(client):
    response = client.get("/config/enumerations/csv")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    lines = response.text.splitlines()
    assert lines[0] == "Enumeration code,Enumeration,Value code,Value,Position,Read-only"
    position = value_of(client.get("/config/enumerations/names/event_event_type").json(), "request")["position"]
    assert f"event_event_type,event_event_type,request,request,{position},1" in lines


# -- adding, using, renaming -----------------------------------------------------------------


def test_add_a_value_then_records_use_it_without_a_warning(api, repo):
    before = accession_with_extent(api, repo, "Cubic Feet", "A1")
    assert before["warnings"] == {"extents/0/extent_type": ["Value 'Cubic Feet' is not in the editable list extent_extent_type"]}
    enum = add_values(api, EXTENTS, "Cubic Feet")
    assert enum["values"][-1] == "Cubic Feet" and enum["lock_version"] == 1
    assert value_of(enum, "Cubic Feet")["position"] == len(enum["values"]) - 1
    assert accession_with_extent(api, repo, "Cubic Feet", "A2")["warnings"] == []


def test_renaming_a_value_carries_its_records_along(api, repo):
    enum = add_values(api, EXTENTS, "Cubic Feet")
    record = accession_with_extent(api, repo, "Cubic Feet")
    untouched = accession_with_extent(api, repo, "linear_feet", "Other papers")
    renamed = [{**v, "value": "cubic feet (boxes)"} if v["value"] == "Cubic Feet" else v for v in enum["enumeration_values"]]
    response = post_list(api, enum, enumeration_values=renamed)
    assert response.status_code == 200, response.text
    enum = enumeration(api, EXTENTS)
    assert "cubic feet (boxes)" in enum["values"] and "Cubic Feet" not in enum["values"]
    moved = api.get(record["uri"]).json()
    assert moved["extents"][0]["extent_type"] == "cubic feet (boxes)"
    assert moved["lock_version"] == 1  # a client holding the old version gets 409, not a silent revert
    assert api.get(untouched["uri"]).json()["lock_version"] == 0
    assert api.post(record["uri"], json={**moved, "title": "Edited"}).json()["warnings"] == []


def test_renaming_through_the_value_route(api, repo):
    enum = add_values(api, EXTENTS, "linear ft.")
    record = accession_with_extent(api, repo, "linear ft.")
    value = api.get(value_of(enum, "linear ft.")["uri"]).json()
    response = api.post(value["uri"], json={**value, "value": "linear feet"})
    assert response.status_code == 200, response.text
    assert response.json()["lock_version"] == value["lock_version"] + 1
    assert api.get(record["uri"]).json()["extents"][0]["extent_type"] == "linear feet"
    clash = api.post(value["uri"], json={**api.get(value["uri"]).json(), "value": "cubic_feet"})
    assert clash.status_code == 400 and "already a value" in clash.json()["error"]["value"][0]


# -- removing and merging --------------------------------------------------------------------


def test_removing_an_unused_value(api):
    enum = add_values(api, EXTENTS, "scrolls")
    response = post_list(api, enum, values=[v for v in enum["values"] if v != "scrolls"])
    assert response.status_code == 200, response.text
    assert "scrolls" not in [v["value"] for v in enumeration(api, EXTENTS)["enumeration_values"]]
    assert [v["position"] for v in enumeration(api, EXTENTS)["enumeration_values"]] == list(range(len(enum["values"]) - 1))


def test_a_value_removed_after_records_were_checked_against_it_is_outside_the_list(api, repo):
    """The compiled schemas hold the lists of their time: compiled again once a list changes."""
    add_values(api, EXTENTS, "scrolls")
    first = accession_with_extent(api, repo, "scrolls", "S1")
    # Compiled again now (as after a quiet minute), with the lists that hold "scrolls".
    api.client.app.state.fonds.records.validator.drop_unused(0)
    second = accession_with_extent(api, repo, "scrolls", "S2")
    assert first["warnings"] == second["warnings"] == []
    for record in (first, second):
        assert api.delete(record["uri"]).status_code == 200
    enum = enumeration(api, EXTENTS)
    assert post_list(api, enum, values=[v for v in enum["values"] if v != "scrolls"]).status_code == 200
    again = accession_with_extent(api, repo, "scrolls", "S3")
    assert again["warnings"] == {"extents/0/extent_type": ["Value 'scrolls' is not in the editable list extent_extent_type"]}


def test_removing_a_used_value_is_409_naming_how_many_until_they_are_merged(api, repo):
    enum = add_values(api, EXTENTS, "volume")
    records = [accession_with_extent(api, repo, "volume", f"V{n}") for n in range(2)]
    response = post_list(api, enum, values=[v for v in enum["values"] if v != "volume"])
    assert response.status_code == 409
    assert "used by 2 records" in response.json()["error"] and response.json()["records"] == 2
    assert "volume" in enumeration(api, EXTENTS)["values"]  # nothing changed
    merged = api.post("/config/enumerations/migration", json={"enum_uri": enum["uri"], "from": "volume", "to": "volumes"})
    assert merged.status_code == 200, merged.text
    assert "volume" not in merged.json()["values"] and merged.json()["jsonmodel_type"] == "enumeration"
    for record in records:
        assert api.get(record["uri"]).json()["extents"][0]["extent_type"] == "volumes"


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"from": "volume", "to": "volumes"}, 400, "enum_uri"),
        ({"enum_uri": "/repositories/2", "from": "volume", "to": "volumes"}, 400, "enum_uri"),
        ({"enum_uri": f"/config/enumerations/{EXTENTS}", "from": "nothing", "to": "volumes"}, 404, None),
        ({"enum_uri": "/config/enumerations/9999", "from": "volume", "to": "volumes"}, 404, None),
        ({"enum_uri": "/config/enumerations/34", "from": "bulk", "to": "single"}, 400, "enum_uri"),  # date_type: not editable
    ],
)
def test_migration_refusals(api, body, status, field):
    response = api.post("/config/enumerations/migration", json=body)
    assert response.status_code == status, response.text
    if field:
        assert field in response.json()["error"]


def test_read_only_values_cannot_be_removed_renamed_or_merged(api):
    events = api.get("/config/enumerations/names/event_event_type").json()
    removal = post_list(api, events, values=[v for v in events["values"] if v != "request"])
    assert removal.status_code == 400 and "read-only" in removal.json()["error"]["values"][0]
    value = api.get(value_of(events, "request")["uri"]).json()
    rename = api.post(value["uri"], json={**value, "value": "requested"})
    assert rename.status_code == 400 and "read-only" in rename.json()["error"]["value"][0]
    merge = api.post("/config/enumerations/migration", json={"enum_uri": events["uri"], "from": "request", "to": "processed"})
    assert merge.status_code == 400 and "read-only" in merge.json()["error"]["from"][0]
    assert "request" in api.get(events["uri"]).json()["values"]


def test_non_editable_lists_refuse_new_removed_and_renamed_values(api):
    dates = api.get("/config/enumerations/names/date_type").json()
    for values in ([*dates["values"], "sometimes"], dates["values"][1:]):
        response = post_list(api, dates, values=values)
        assert response.status_code == 400 and "not editable" in response.json()["error"]["values"][0]
    value = api.get(dates["enumeration_values"][0]["uri"]).json()
    response = api.post(value["uri"], json={**value, "value": "once"})
    assert response.status_code == 400
    assert api.get(dates["uri"]).json()["values"] == dates["values"]
    # its default may still be set, as in ArchivesSpace
    assert post_list(api, dates, default_value="single").status_code == 200
    assert api.get(dates["uri"]).json()["default_value"] == "single"


# -- default, suppression, position ----------------------------------------------------------


def test_default_value_is_set_cleared_and_checked(api):
    enum = enumeration(api, EXTENTS)
    assert post_list(api, enum, default_value="linear_feet").status_code == 200
    enum = enumeration(api, EXTENTS)
    assert enum["default_value"] == "linear_feet"
    bad = post_list(api, enum, default_value="bananas")
    assert bad.status_code == 400 and "default_value" in bad.json()["error"]
    cleared = {k: v for k, v in enum.items() if k != "default_value"}
    assert api.post(enum["uri"], json=cleared).status_code == 200
    assert "default_value" not in enumeration(api, EXTENTS)


def test_suppressed_values_leave_values_but_stay_valid_and_are_kept_on_update(api, repo):
    enum = enumeration(api, EXTENTS)
    reels = value_of(enum, "reels")
    response = api.post(f"{reels['uri']}/suppressed", params={"suppressed": "true"})
    assert response.status_code == 200 and response.json() == {"status": "Suppressed", "id": reels["id"], "suppressed_state": True}
    enum = enumeration(api, EXTENTS)
    assert "reels" not in enum["values"] and value_of(enum, "reels")["suppressed"] is True
    assert accession_with_extent(api, repo, "reels")["warnings"] == []
    assert add_values(api, EXTENTS, "spools")["enumeration_values"]  # posting `values` without it keeps it
    assert value_of(enumeration(api, EXTENTS), "reels")["suppressed"] is True
    assert api.post(f"{reels['uri']}/suppressed", params={"suppressed": "false"}).json()["suppressed_state"] is False
    assert "reels" in enumeration(api, EXTENTS)["values"]


def test_moving_a_value(api):
    enum = enumeration(api, SALUTATIONS)
    sir = value_of(enum, "sir")
    response = api.post(f"{sir['uri']}/position", params={"position": 0})
    assert response.status_code == 200 and response.json()["status"] == "Updated"
    moved = enumeration(api, SALUTATIONS)
    assert moved["values"][0] == "sir" and [v["position"] for v in moved["enumeration_values"]] == list(range(len(moved["values"])))
    assert [v for v in moved["values"] if v != "sir"] == [v for v in enum["values"] if v != "sir"]
    api.post(f"{sir['uri']}/position", data={"position": "99"})  # as a form field, as ArchivesSpace's client sends it
    assert enumeration(api, SALUTATIONS)["values"][-1] == "sir"
    for bad in ("-1", "x", ""):
        response = api.post(f"{sir['uri']}/position", params={"position": bad})
        assert response.status_code == 400 and "position" in response.json()["error"]


# -- creating lists, lock versions ----------------------------------------------------------


def test_create_a_list(api):
    body = {
        "jsonmodel_type": "enumeration",
        "name": "local_shelving",
        "values": ["cold store", " annexe ", "cold store"],
        "default_value": "annexe",
    }
    created = api.post("/config/enumerations", json=body)
    assert created.status_code == 200, created.text
    assert created.json()["status"] == "Created" and created.json()["uri"] == f"/config/enumerations/{created.json()['id']}"
    assert created.json()["id"] > 102  # after ArchivesSpace's own ids
    enum = api.get("/config/enumerations/names/local_shelving").json()
    assert (enum["values"], enum["default_value"], enum["editable"], enum["relationships"]) == (
        ["cold store", "annexe"],
        "annexe",
        True,
        [],
    )
    again = api.post("/config/enumerations", json=body)
    assert again.status_code == 400 and "name" in again.json()["error"]
    for bad in ({"name": "x"}, {"values": ["a"]}, {"name": "y", "values": "a"}, {"name": "z", "values": [""]}):
        assert api.post("/config/enumerations", json=bad).status_code == 400


def test_updates_need_the_current_lock_version(api):
    enum = enumeration(api, EXTENTS)
    missing = api.post(enum["uri"], json={k: v for k, v in enum.items() if k != "lock_version"})
    assert missing.status_code == 409 and "lock_version" in missing.json()["error"]
    assert post_list(api, enum, values=[*enum["values"], "a"]).status_code == 200
    stale = post_list(api, enum, values=[*enum["values"], "b"])
    assert stale.status_code == 409
    assert "b" not in enumeration(api, EXTENTS)["values"]
    renamed = post_list(api, enumeration(api, EXTENTS), name="other_name")
    assert renamed.status_code == 400 and "name" in renamed.json()["error"]


def test_every_change_is_in_the_change_log(app, api):
    db = app.state.fonds.db
    log = db.tables["change_log"]
    with db.engine.connect() as conn:
        start = conn.execute(select(log.c.seq).order_by(log.c.seq.desc()).limit(1)).scalar() or 0
    enum = add_values(api, EXTENTS, "folios")
    folios = value_of(enum, "folios")
    api.post(f"{folios['uri']}/suppressed", params={"suppressed": "true"})
    with db.engine.connect() as conn:
        rows = conn.execute(select(log.c.record_type, log.c.uri, log.c.op).where(log.c.seq > start).order_by(log.c.seq)).all()
    assert [tuple(row) for row in rows] == [
        ("enumeration_value", folios["uri"], "created"),
        ("enumeration", enum["uri"], "updated"),
        ("enumeration_value", folios["uri"], "updated"),
    ]


# -- who may -------------------------------------------------------------------------------


def test_editing_needs_update_enumeration_record(api, client, repo):
    viewer = make_user(api, "viewer", groups=[(repo, "repository-viewers")])
    enum = enumeration(api, EXTENTS)
    value = value_of(enum, "reels")
    attempts = [
        ("/config/enumerations", {"jsonmodel_type": "enumeration", "name": "mine", "values": ["a"]}, {}),
        (enum["uri"], {**enum, "values": [*enum["values"], "mine"]}, {}),
        ("/config/enumerations/migration", {"enum_uri": enum["uri"], "from": "reels", "to": "sheets"}, {}),
        (value["uri"], {**value, "value": "mine"}, {}),
        (f"{value['uri']}/position", None, {"position": 0}),
        (f"{value['uri']}/suppressed", None, {"suppressed": "true"}),
    ]
    for who in (viewer.client, client):
        for path, body, params in attempts:
            response = who.post(path, json=body, params=params)
            assert (response.status_code, response.json()) == (403, {"error": "Access denied"}), path
    assert enumeration(api, EXTENTS) == enum
    archivist = make_user(api, "archivist", groups=[(repo, "repository-archivists")])  # as in ArchivesSpace
    assert post_list(archivist, enum, values=[*enum["values"], "mine"]).status_code == 200


# -- validation ------------------------------------------------------------------------------


class TestStrict:
    @pytest.fixture
    def settings_overrides(self):
        return {"strict_validation": True}

    def test_a_value_outside_an_editable_list_is_400_under_strict_validation(self, api, repo):
        extent = {"jsonmodel_type": "extent", "portion": "whole", "number": "1", "extent_type": "Cubic Feet"}
        body = {"jsonmodel_type": "accession", "title": "t", "id_0": "S1", "extents": [extent]}
        response = api.post(f"/repositories/{repo}/accessions", json=body)
        assert response.status_code == 400
        assert response.json()["error"] == {"extents/0/extent_type": ["Value 'Cubic Feet' is not in the editable list extent_extent_type"]}
        add_values(api, EXTENTS, "Cubic Feet")
        assert api.post(f"/repositories/{repo}/accessions", json=body).status_code == 200


def test_another_worker_sees_a_change_at_once(settings, api, repo):
    """Two apps on one database stand for two workers: each validates with its own cached lists."""
    from tests.factories import Api, new_client

    with running_app(settings) as other_app:
        other = Api.login(new_client(other_app))
        assert accession_with_extent(other, repo, "rolls", "W1")["warnings"]  # its cache now holds the lists
        add_values(api, EXTENTS, "rolls")
        assert accession_with_extent(other, repo, "rolls", "W2")["warnings"] == []
