"""Events through HTTP: date XOR timestamp, linked agents and records, `linked_events` on the
records, and an event's life tied to its linked records (src/fonds/records/types/events.py)."""

from __future__ import annotations

import orjson
import pytest

from tests.records.helpers import make_ao, make_resource, read
from tests.records.test_agents import PEOPLE, person


@pytest.fixture
def agent(api) -> str:
    return api.create(PEOPLE, person(primary_name="Processor"))["uri"]


def event_body(agent: str, *records: str, **fields) -> dict:
    return {
        "jsonmodel_type": "event",
        "event_type": "processed",
        "linked_agents": [{"ref": agent, "role": "implementer"}],
        "linked_records": [{"ref": uri, "role": "source"} for uri in records],
        **fields,
    }


def events_path(repo: int) -> str:
    return f"/repositories/{repo}/events"


def test_event_crud_with_a_date_or_a_timestamp(api, repo, agent):
    resource = make_resource(api, repo, "Processed papers")
    date = {"date_type": "single", "label": "event", "begin": "2024-03-01"}
    created = api.create(events_path(repo), event_body(agent, resource, date=date, outcome="pass", outcome_note="All good", refid="ev-1"))
    event = read(api, created["uri"], **{"resolve[]": ["linked_agents", "linked_records"]})
    assert (event["event_type"], event["outcome"], event["date"]["begin"], event["refid"]) == ("processed", "pass", "2024-03-01", "ev-1")
    assert event["linked_agents"][0]["_resolved"]["title"] == "Processor"
    assert event["linked_records"][0]["_resolved"]["title"] == "Processed papers"
    event.pop("date")
    event["timestamp"] = "2024-03-01T10:15:00Z"
    assert api.post(event["uri"], json=event).status_code == 200
    assert "date" not in read(api, event["uri"]) and read(api, event["uri"])["timestamp"] == "2024-03-01T10:15:00Z"
    listed = api.get(events_path(repo), params={"page": 1}).json()
    assert [e["uri"] for e in listed["results"]] == [event["uri"]]
    assert api.delete(event["uri"]).status_code == 200
    assert api.get(event["uri"]).status_code == 404


@pytest.mark.parametrize(
    ("fields", "errors"),
    [
        ({}, {"date": ["Must specify either a date or a timestamp"], "timestamp": ["Must specify either a date or a timestamp"]}),
        (
            {"timestamp": "2024-01-01T00:00:00Z", "date": {"date_type": "single", "label": "event", "begin": "2024"}},
            {"date": ["Can't specify both a date and a timestamp"], "timestamp": ["Can't specify both a date and a timestamp"]},
        ),
        ({"timestamp": "last Tuesday"}, {"timestamp": ["Must be an ISO8601-formatted string"]}),
    ],
)
def test_exactly_one_of_date_and_timestamp(api, repo, agent, fields, errors):
    resource = make_resource(api, repo)
    response = api.post(events_path(repo), json=event_body(agent, resource, **fields))
    assert (response.status_code, response.json()["error"]) == (400, errors)


def test_links_are_required_and_checked(api, repo, agent):
    resource = make_resource(api, repo)
    stamp = {"timestamp": "2024-01-01T00:00:00Z"}
    no_records = api.post(events_path(repo), json=event_body(agent, **stamp))
    assert no_records.json()["error"] == {"linked_records": ["At least 1 item(s) is required"]}
    body = event_body(agent, resource, **stamp)
    body["linked_agents"][0]["role"] = "cataloguer"
    # linked_agent_event_roles is an editable list: another value is kept and named in warnings.
    assert list(api.create(events_path(repo), body)["warnings"]) == ["linked_agents/0/role"]
    body["linked_records"][0]["role"] = "owner"
    assert list(api.post(events_path(repo), json=body).json()["error"]) == ["linked_records/0/role"]
    # A record of a type events may link, which does not exist, is refused as ArchivesSpace does.
    absent = f"/repositories/{repo}/digital_objects/999"
    later = api.post(events_path(repo), json=event_body(agent, absent, **stamp))
    assert (later.status_code, later.json()["error"]) == (400, {"linked_records/0": [f"Can't relate to non-existent record: {absent}"]})
    missing = api.post(events_path(repo), json=event_body("/agents/people/999", resource, **stamp))
    assert missing.json()["error"] == {"linked_agents/0": ["Can't relate to non-existent record: /agents/people/999"]}


def test_linked_events_on_the_linked_records(api, repo, agent):
    resource = make_resource(api, repo)
    component = make_ao(api, repo, "Box 1", resource=resource, level="file")["uri"]
    stamp = {"timestamp": "2024-01-01T00:00:00Z"}
    first = api.create(events_path(repo), event_body(agent, resource, component, **stamp))["uri"]
    second = api.create(events_path(repo), event_body(agent, resource, **stamp))["uri"]
    assert read(api, resource)["linked_events"] == [{"ref": first}, {"ref": second}]
    assert read(api, component)["linked_events"] == [{"ref": first}]
    assert read(api, resource, **{"resolve[]": "linked_events"})["linked_events"][0]["_resolved"]["event_type"] == "processed"
    accession = api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "New"})["uri"]
    assert read(api, accession)["linked_events"] == []
    # linked_events is computed: a client posting it back changes nothing and hears no warning.
    record = read(api, component)
    response = api.post(component, json=record)
    assert (response.status_code, response.json()["warnings"]) == (200, [])


def test_an_event_goes_with_its_last_linked_record(api, repo, agent):
    kept, gone = make_resource(api, repo, "Kept"), make_resource(api, repo, "Gone")
    stamp = {"timestamp": "2024-01-01T00:00:00Z"}
    shared = api.create(events_path(repo), event_body(agent, kept, gone, **stamp))["uri"]
    only = api.create(events_path(repo), event_body(agent, gone, **stamp))["uri"]
    assert api.delete(gone).status_code == 200
    assert api.get(only).status_code == 404
    survivor = read(api, shared)
    assert [r["ref"] for r in survivor["linked_records"]] == [kept]
    assert survivor["lock_version"] == 1
    changes = api.get("/search", params={"page": 1, "q": "*", "type[]": "event"}).json()["results"]
    assert [e["uri"] for e in changes] == [shared]


def test_an_event_goes_when_a_cascade_takes_all_its_records(api, repo, agent):
    resource = make_resource(api, repo)
    component = make_ao(api, repo, "Box 1", resource=resource)["uri"]
    event = api.create(events_path(repo), event_body(agent, component, resource, timestamp="2024-01-01T00:00:00Z"))["uri"]
    assert api.delete(resource).status_code == 200
    assert api.get(event).status_code == 404


def test_events_are_searchable_by_type(api, repo, agent):
    resource = make_resource(api, repo)
    event = api.create(events_path(repo), event_body(agent, resource, timestamp="2024-01-01T00:00:00Z"))["uri"]
    found = api.get(f"/repositories/{repo}/search", params={"page": 1, "type[]": "event", "q": "event_type:processed"}).json()
    assert [(r["uri"], r["primary_type"]) for r in found["results"]] == [(event, "event")]
    assert found["results"][0]["agents"] == ["Processor"]


def test_a_records_search_document_lists_the_events_linking_it(api, repo, agent):
    resource = make_resource(api, repo, "Indexed")

    def indexed_events() -> list:
        [found] = api.get("/search", params={"page": 1, "q": "indexed", "type[]": "resource"}).json()["results"]
        return orjson.loads(found["json"])["linked_events"]

    assert indexed_events() == []
    event = api.create(events_path(repo), event_body(agent, resource, timestamp="2024-01-01T00:00:00Z"))["uri"]
    assert indexed_events() == [{"ref": event}]
    assert api.delete(event).status_code == 200
    assert indexed_events() == []
