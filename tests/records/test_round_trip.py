"""The round-trip corpus: records shaped like ArchivesSpace exports (tests/records/corpus/, one
JSON file per record, created in file-name order). Each is POSTed as exported, read back and
compared field by field (only service-set and derived fields may differ), then POSTed back
unchanged: nothing changes, and the only warnings ever given are about values outside editable
lists (an archive's own "Cubic Feet", "mixed materials"...).

A corpus file: `{"key": name, "type": record type, "about": optional text, "record": {...}}`.
In the record, `"{ref:<key>}"` stands for the URI of the corpus record created under that key,
`{repo}` for the test repository's id. Add a file to add a record; no code changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fonds.model import REGISTRY
from fonds.records.schemas import SERVICE_SET_PROPERTIES
from tests.factories import collection_path
from tests.records.helpers import read

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.json"))
# What the server sets or computes: a client's value for these is ignored, so they may differ.
SERVICE_SET = {*SERVICE_SET_PROPERTIES, "jsonmodel_type", "_resolved", "tree", "position", "ancestors", "has_unpublished_ancestor"}
SERVICE_SET |= {"long_display_string", "subcontainer_barcodes", "restricted", "is_linked_to_published_record", "series", "collection"}
SERVICE_SET |= {"used_within_repositories", "used_within_published_repositories", "suppressed"}
# Fields that change with every write, by design.
MOVING = {"lock_version", "modified", "system_mtime", "user_mtime", "last_modified_by"}
# Computed at read time from other records, which later corpus records may link.
MOVING |= {name for record_type in REGISTRY for name in record_type.read_fields}
ENUM_WARNING = "is not in the editable list"


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def substitute(node, uris: dict[str, str], repo: int):
    if isinstance(node, dict):
        return {key: substitute(value, uris, repo) for key, value in node.items()}
    if isinstance(node, list):
        return [substitute(value, uris, repo) for value in node]
    if isinstance(node, str) and node.startswith("{ref:"):
        return uris[node[len("{ref:") : -1]]
    return node.replace("{repo}", str(repo)) if isinstance(node, str) else node


def differences(sent, got, path: str = "") -> list[str]:
    """Where the read-back differs from what was sent, service-set and derived fields aside.
    Keys only the read-back has must hold schema defaults (empty arrays, flags)."""
    if isinstance(sent, dict) and isinstance(got, dict):
        found = []
        for key, value in sent.items():
            if key in SERVICE_SET:
                continue
            if key not in got:
                # An empty list of a property Fonds does not have yet holds nothing to keep
                # (every array it has is read back: tests/records/test_readback.py).
                if value != []:
                    found.append(f"{path}/{key}: sent {value!r}, missing from the read-back")
            else:
                found += differences(value, got[key], f"{path}/{key}")
        for key in got.keys() - sent.keys() - SERVICE_SET:
            if got[key] not in ([], False, True, "whole", "9999-12-31"):
                found.append(f"{path}/{key}: not sent, read back as {got[key]!r}")
        return found
    if isinstance(sent, list) and isinstance(got, list):
        if len(sent) != len(got):
            return [f"{path}: {len(sent)} items sent, {len(got)} read back"]
        return [d for index, (a, b) in enumerate(zip(sent, got)) for d in differences(a, b, f"{path}/{index}")]
    return [] if sent == got else [f"{path}: sent {sent!r}, read back {got!r}"]


def only_enum_warnings(warnings) -> list[str]:
    """The warnings that are not about a value outside an editable list (there must be none)."""
    if warnings == []:
        return []
    return [f"{path}: {message}" for path, messages in warnings.items() for message in messages if ENUM_WARNING not in message]


@pytest.fixture
def corpus_records(api, repo) -> list[tuple[str, dict, dict, dict]]:
    """Every corpus record created: (file name, record as sent, first response, read-back)."""
    uris: dict[str, str] = {}
    created = []
    for path in CORPUS:
        entry = load(path)
        record = substitute(entry["record"], uris, repo)
        response = api.post(collection_path(REGISTRY[entry["type"]], repo), json=record)
        assert response.status_code == 200, f"{path.name}: {response.text}"
        uris[entry["key"]] = response.json()["uri"]
        created.append((path.name, record, response.json(), read(api, response.json()["uri"])))
    return created


def test_the_corpus_covers_every_kind_it_promises():
    types = {load(path)["type"] for path in CORPUS}
    assert {"accession", "resource", "archival_object", "subject", "top_container", "location_profile"} <= types
    agents = {"agent_person", "agent_corporate_entity", "agent_family", "agent_software"}
    assert agents | {"container_profile", "location", "digital_object", "digital_object_component", "event"} <= types
    text = " ".join(path.read_text() for path in CORPUS)
    for kind in ("note_singlepart", "note_multipart", "note_bibliography", "note_index", "note_chronology", "note_orderedlist"):
        assert kind in text
    for kind in ("note_bioghist", "note_digital_object", "structured_date_label", "agent_contact", "agent_record_identifier"):
        assert kind in text
    for kind in ("agent_record_control", "container_location", "location_function", "file_version", "telephone"):
        assert kind in text
    for value in ("Cubic Feet", "linear feet", "mixed materials", "volume", "Describing Archives: A Content Standard"):
        assert f'"{value}"' in text


def test_records_read_back_as_sent(corpus_records):
    for name, sent, response, stored in corpus_records:
        assert only_enum_warnings(response["warnings"]) == [], name
        assert differences(sent, stored) == [], name


def test_a_read_back_posted_again_changes_nothing_and_warns_only_of_list_values(api, corpus_records):
    for name, _, first, stored in corpus_records:
        response = api.post(stored["uri"], json=stored)
        assert response.status_code == 200, f"{name}: {response.text}"
        assert only_enum_warnings(response.json()["warnings"]) == [], name
        # The same values outside the lists as the first time, nothing else.
        assert (response.json()["warnings"] or {}) == (first["warnings"] or {}), name
        again = read(api, stored["uri"])
        assert {k: v for k, v in again.items() if k not in MOVING} == {k: v for k, v in stored.items() if k not in MOVING}, name
        assert again["lock_version"] == stored["lock_version"] + 1


def test_institution_values_are_named_in_warnings(corpus_records):
    warned = {name: response["warnings"] for name, _, response, _ in corpus_records}
    assert "extents/0/extent_type" in warned["07_resource.json"]
    assert "finding_aid_description_rules" in warned["07_resource.json"]
    assert "instances/0/instance_type" in warned["06_accession.json"]
    assert "type" in warned["05_top_container_volume.json"]


def test_links_between_corpus_records_read_back_from_both_ends(api, corpus_records):
    """The newer records link each other: what the linked record reads back (computed at read
    time, as ArchivesSpace does) names the records that link it."""
    uris = {name: stored["uri"] for name, _, _, stored in corpus_records}
    portrait = read(api, uris["17_digital_object.json"])
    assert [link["ref"] for link in portrait["linked_instances"]] == [uris["19_accession_with_agents.json"]]
    assert [link["ref"] for link in portrait["linked_events"]] == [uris["20_event_ingestion.json"]]
    assert portrait["representative_file_version"]["file_uri"].endswith("/default.jpg")
    accession = read(api, uris["19_accession_with_agents.json"])
    assert [link["ref"] for link in accession["linked_events"]] == [uris["20_event_ingestion.json"]]
    box = read(api, uris["16_top_container_located.json"])
    assert box["container_locations"][0]["ref"] == uris["15_location.json"]
    assert box["container_profile"]["ref"] == uris["14_container_profile.json"]
    person = read(api, uris["10_agent_person.json"])
    assert person["title"] == "Burden, Henry, 1791-1871"
    assert person["is_linked_to_published_record"] is True
