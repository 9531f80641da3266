"""`fonds enumerations list | add | import`: what an operator sees, and what it changes over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli import run_cli

EXPORT = Path(__file__).parent / "data" / "aspace-enumerations.json"


def names(api) -> dict[str, dict]:
    return {enum["name"]: enum for enum in api.get("/config/enumerations").json()}


def test_list_shows_every_list_then_one_lists_values(app, settings):
    every = run_cli(settings, "enumerations", "list")
    assert every.exit_code == 0, every.output
    assert "101 value lists" in every.output and "extent_extent_type" in every.output
    one = run_cli(settings, "enumerations", "list", "event_event_type")
    assert one.exit_code == 0, one.output
    assert "/config/enumerations/15" in one.output and "read-only" in one.output and "request" in one.output
    missing = run_cli(settings, "enumerations", "list", "no_such_list")
    assert missing.exit_code == 1 and "no_such_list" in missing.output


def test_add_a_value_then_records_use_it_without_warning(app, api, repo, settings):
    result = run_cli(settings, "enumerations", "add", "extent_extent_type", "Cubic Feet")
    assert result.exit_code == 0, result.output
    assert "Added Cubic Feet to extent_extent_type" in result.output
    assert names(api)["extent_extent_type"]["values"][-1] == "Cubic Feet"
    extent = {"jsonmodel_type": "extent", "portion": "whole", "number": "2", "extent_type": "Cubic Feet"}
    created = api.post(
        f"/repositories/{repo}/accessions", json={"jsonmodel_type": "accession", "title": "t", "id_0": "C1", "extents": [extent]}
    )
    assert created.json()["warnings"] == []
    again = run_cli(settings, "enumerations", "add", "extent_extent_type", "Cubic Feet")
    assert again.exit_code == 0 and "nothing changed" in again.output
    unknown = run_cli(settings, "enumerations", "add", "no_such_list", "x")
    assert unknown.exit_code == 1 and "Refused" in unknown.output


def test_import_merges_an_archivesspace_export_and_is_idempotent(app, api, repo, settings):
    before = names(api)
    result = run_cli(settings, "enumerations", "import", str(EXPORT))
    assert result.exit_code == 0, result.output
    assert "8 lists read: 1 created" in result.output
    assert "Cubic Feet" in result.output and "local_processing_status" in result.output
    after = names(api)
    extents = after["extent_extent_type"]
    assert extents["values"][-4:] == ["Cubic Feet", "linear feet", "volume", "mixed materials"]
    assert extents["default_value"] == "linear_feet"
    assert "terabytes" not in extents["values"]  # suppressed there, so suppressed here
    assert after["resource_finding_aid_description_rules"]["values"][-1] == "Describing Archives: A Content Standard"
    assert after["user_defined_enum_1"]["values"] == ["novalue", "Gift of the Smith family", "Purchased at auction"]
    assert after["container_type"]["values"][-2:] == ["Flat file", "Oversize folder"] and "case" not in after["container_type"]["values"]
    new = after["local_processing_status"]
    assert (new["uri"], new["values"], new["default_value"]) == ("/config/enumerations/120", ["new", "in progress", "done"], "new")
    assert after["date_type"] == before["date_type"] and after["event_event_type"] == before["event_event_type"]
    assert set(after) - set(before) == {"local_processing_status"}
    # records from that instance now come in without warnings
    extent = {"jsonmodel_type": "extent", "portion": "whole", "number": "1", "extent_type": "volume"}
    body = {
        "jsonmodel_type": "accession",
        "title": "t",
        "id_0": "I1",
        "extents": [extent],
        "user_defined": {"enum_1": "Purchased at auction"},
    }
    assert api.post(f"/repositories/{repo}/accessions", json=body).json()["warnings"] == []
    again = run_cli(settings, "enumerations", "import", str(EXPORT))
    assert again.exit_code == 0, again.output
    assert "8 lists read: 0 created, 0 values added to existing lists, 8 unchanged" in again.output
    assert names(api) == after


def test_import_refuses_what_is_not_an_export(app, settings, tmp_path):
    for content, code in (("not json", 2), (json.dumps({"enumerations": 1}), 1), (json.dumps([{"values": ["a"]}]), 1)):
        path = tmp_path / "bad.json"
        path.write_text(content)
        result = run_cli(settings, "enumerations", "import", str(path))
        assert result.exit_code == code, result.output
