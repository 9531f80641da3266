"""ArchivesSnake, the Python client archives script ArchivesSpace with, against a real `fonds
serve`: it logs in as it does with ArchivesSpace, pages through listings, reads records by URI,
creates and updates through `client.post`, finds by id, walks a resource's tree, iterates agents,
locations, container profiles, digital objects and top containers and reads with `resolve[]`. One
server serves the whole module."""

from __future__ import annotations

import subprocess
import sys

import pytest
from asnake import aspace as asnake_aspace
from asnake import client as asnake_client
from asnake import utils as asnake_utils

from tests.conftest import PG_URL, SCHEMA, _drop_schema, _empty_schema
from tests.test_cli import SERVE_PASSWORD, free_port, serve_env, stop, wait_until_up


class _Settings:
    """What `serve_env` reads: the database the server is to use (None: SQLite in its data dir)."""

    def __init__(self, database_url):
        self.database_url = database_url


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    schema = f"{SCHEMA}_asnake"
    url = _empty_schema(schema) if PG_URL else None
    tmp_path = tmp_path_factory.mktemp("asnake")
    port, log_path = free_port(), tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "fonds", "serve", "--port", str(port)],
            env=serve_env(_Settings(url), tmp_path / "data"),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_up(process, base, log_path)
        yield base
    finally:
        stop(process)
        if PG_URL:
            _drop_schema(schema)


@pytest.fixture(scope="module")
def client(server):
    snake = asnake_client.ASnakeClient(baseurl=server, username="admin", password=SERVE_PASSWORD)
    snake.authorize()
    return snake


@pytest.fixture(scope="module")
def holdings(client) -> dict:
    """A repository with a subject, a location profile, a top container, an accession and a
    resource holding two levels of archival objects, all created through `client.post`."""

    def post(path: str, record: dict) -> str:
        response = client.post(path, json=record)
        assert response.status_code == 200, response.text
        return response.json()["uri"]

    repo = post("/repositories", {"jsonmodel_type": "repository", "repo_code": "SNAKE", "name": "Snake archives"})
    found = {"repo": repo, "repo_id": int(repo.rsplit("/", 1)[1])}
    found["subject"] = post(
        "/subjects", {"jsonmodel_type": "subject", "source": "local", "terms": [{"term": "Rivers", "term_type": "topical"}]}
    )
    found["profile"] = post("/location_profiles", {"jsonmodel_type": "location_profile", "name": "Shelf", "dimension_units": "inches"})
    found["box"] = post(f"{repo}/top_containers", {"jsonmodel_type": "top_container", "indicator": "1", "type": "box", "barcode": "SN-1"})
    found["accession"] = post(f"{repo}/accessions", {"jsonmodel_type": "accession", "title": "Gift", "id_0": "2024", "id_1": "7"})
    found["resource"] = post(
        f"{repo}/resources",
        {
            "jsonmodel_type": "resource",
            "title": "River survey",
            "id_0": "MS",
            "id_1": "42",
            "level": "collection",
            "subjects": [{"ref": found["subject"]}],
        },
    )
    series = post(
        f"{repo}/archival_objects",
        {"jsonmodel_type": "archival_object", "title": "Maps", "level": "series", "resource": {"ref": found["resource"]}},
    )
    found["series"] = series
    found["file"] = post(
        f"{repo}/archival_objects",
        {
            "jsonmodel_type": "archival_object",
            "title": "Map 1",
            "level": "file",
            "resource": {"ref": found["resource"]},
            "parent": {"ref": series},
        },
    )
    return found


def test_aspace_iterates_global_listings(server, holdings):
    aspace = asnake_aspace.ASpace(baseurl=server, username="admin", password=SERVE_PASSWORD)
    assert [subject.uri for subject in aspace.subjects] == [holdings["subject"]]
    assert [subject.title for subject in aspace.subjects] == ["Rivers"]
    assert [profile.name for profile in aspace.location_profiles] == ["Shelf"]
    assert holdings["repo"] in [repository.uri for repository in aspace.repositories]


def test_aspace_iterates_a_repositorys_records(server, holdings):
    aspace = asnake_aspace.ASpace(baseurl=server, username="admin", password=SERVE_PASSWORD)
    repository = aspace.repositories(holdings["repo_id"])
    assert repository.repo_code == "SNAKE"
    [resource] = list(repository.resources)
    assert (resource.uri, resource.title) == (holdings["resource"], "River survey")
    # ArchivesSnake follows refs as ArchivesSpace's read-backs carry them.
    assert [subject.title for subject in resource.subjects] == ["Rivers"]
    assert (resource.json()["notes"], resource.json()["instances"], resource.json()["publish"]) == ([], [], False)
    assert [accession.title for accession in repository.accessions] == ["Gift"]


def test_client_reads_by_uri_and_updates(client, holdings):
    record = client.get(holdings["accession"]).json()
    assert (record["title"], record["publish"], record["subjects"], record["instances"]) == ("Gift", False, [], [])
    record["title"] = "Gift of maps"
    record["instances"] = [{"instance_type": "maps", "sub_container": {"top_container": {"ref": holdings["box"]}}}]
    updated = client.post(holdings["accession"], json=record)
    assert updated.status_code == 200, updated.text
    assert updated.json()["warnings"] == []
    again = client.get(holdings["accession"]).json()
    assert again["title"] == "Gift of maps" and again["lock_version"] == record["lock_version"] + 1
    assert again["instances"][0]["is_representative"] is False


def test_find_by_id_as_scripts_call_it(client, holdings):
    repo = holdings["repo"]
    found = client.get(f"{repo}/find_by_id/resources", params={"identifier[]": ['["MS","42"]'], "resolve[]": "resources"}).json()
    assert [hit["ref"] for hit in found["resources"]] == [holdings["resource"]]
    assert found["resources"][0]["_resolved"]["title"] == "River survey"
    boxes = client.get(f"{repo}/find_by_id/top_containers", params={"barcode[]": "SN-1"}).json()
    assert boxes == {"top_containers": [{"ref": holdings["box"]}]}


def test_walk_tree_yields_the_resource_then_its_components_in_order(client, holdings):
    walked = list(asnake_utils.walk_tree(holdings["resource"], client))
    assert [node["uri"] for node in walked] == [holdings["resource"], holdings["series"], holdings["file"]]


@pytest.fixture(scope="module")
def linked(client, holdings) -> dict:
    """Agents of every kind, a container profile, a location holding a top container, and a
    digital object with a component, linked to the agents and an accession's instance."""

    def post(path: str, record: dict) -> str:
        response = client.post(path, json=record)
        assert response.status_code == 200, response.text
        return response.json()["uri"]

    repo = holdings["repo"]
    found = {
        "person": post(
            "/agents/people", _agent("agent_person", {"primary_name": "Burden", "rest_of_name": "Henry", "name_order": "inverted"})
        ),
        "corporate": post("/agents/corporate_entities", _agent("agent_corporate_entity", {"primary_name": "Harmony Mills"})),
        "family": post("/agents/families", _agent("agent_family", {"family_name": "Smith"})),
        "software": post("/agents/software", _agent("agent_software", {"software_name": "Ingest"})),
        "profile": post(
            "/container_profiles",
            {
                "jsonmodel_type": "container_profile",
                "name": "Document box",
                "dimension_units": "inches",
                "extent_dimension": "width",
                "height": "10",
                "width": "5",
                "depth": "12",
            },
        ),
        "location": post(
            "/locations",
            {"jsonmodel_type": "location", "building": "Main", "floor": "2", "coordinate_1_label": "Shelf", "coordinate_1_indicator": "4"},
        ),
    }
    found["shelved"] = post(
        f"{repo}/top_containers",
        {
            "jsonmodel_type": "top_container",
            "indicator": "2",
            "type": "box",
            "container_profile": {"ref": found["profile"]},
            "container_locations": [
                {"jsonmodel_type": "container_location", "status": "current", "start_date": "2024-01-02", "ref": found["location"]}
            ],
        },
    )
    found["digital"] = post(
        f"{repo}/digital_objects",
        {
            "jsonmodel_type": "digital_object",
            "title": "Survey map scan",
            "digital_object_id": "SN-DO-1",
            "publish": True,
            "file_versions": [
                {"jsonmodel_type": "file_version", "file_uri": "https://example.org/map.jpg", "publish": True, "is_representative": True}
            ],
            "linked_agents": [{"role": "creator", "relator": "pht", "ref": found["person"]}],
        },
    )
    found["component"] = post(
        f"{repo}/digital_object_components",
        {
            "jsonmodel_type": "digital_object_component",
            "title": "Verso",
            "component_id": "SN-DO-1-v",
            "digital_object": {"ref": found["digital"]},
        },
    )
    return found


def _agent(agent_type: str, name: dict) -> dict:
    name_type = agent_type.replace("agent_", "name_")
    return {"jsonmodel_type": agent_type, "names": [{"jsonmodel_type": name_type, "source": "local", **name}]}


def test_aspace_iterates_agents_of_every_kind(server, linked):
    aspace = asnake_aspace.ASpace(baseurl=server, username="admin", password=SERVE_PASSWORD)
    every = [agent.uri for agent in aspace.agents]
    assert {linked[kind] for kind in ("person", "corporate", "family", "software")} <= set(every)
    assert len(every) == len(set(every))
    assert linked["person"] in [agent.uri for agent in aspace.agents.people]
    assert [agent.title for agent in aspace.agents.people if agent.uri == linked["person"]] == ["Burden, Henry"]
    assert [agent.uri for agent in aspace.agents.families] == [linked["family"]]
    assert [agent.uri for agent in aspace.agents["software"] if agent.uri == linked["software"]] == [linked["software"]]
    corporate = [agent for agent in aspace.agents.corporate_entities if agent.uri == linked["corporate"]]
    assert [agent.names[0].primary_name for agent in corporate] == ["Harmony Mills"]


def test_aspace_iterates_locations_and_container_profiles(server, linked):
    aspace = asnake_aspace.ASpace(baseurl=server, username="admin", password=SERVE_PASSWORD)
    assert [location.title for location in aspace.locations] == ["Main, 2 [Shelf: 4]"]
    assert [profile.uri for profile in aspace.container_profiles] == [linked["profile"]]


def test_aspace_iterates_a_repositorys_digital_objects_and_top_containers(server, holdings, linked):
    aspace = asnake_aspace.ASpace(baseurl=server, username="admin", password=SERVE_PASSWORD)
    repository = aspace.repositories(holdings["repo_id"])
    [digital] = list(repository.digital_objects)
    assert (digital.uri, digital.digital_object_id) == (linked["digital"], "SN-DO-1")
    # ArchivesSnake follows the linked agent's ref to the agent record.
    assert [agent.title for agent in digital.linked_agents] == ["Burden, Henry"]
    assert {box.uri for box in repository.top_containers} == {holdings["box"], linked["shelved"]}
    [shelved] = [box for box in repository.top_containers if box.uri == linked["shelved"]]
    assert shelved.container_locations[0].title == "Main, 2 [Shelf: 4]"
    assert shelved.container_profile.name == "Document box"


def test_client_reads_with_resolve(client, linked):
    params = {"resolve[]": ["linked_agents"]}
    digital = client.get(linked["digital"], params=params).json()
    assert digital["linked_agents"][0]["_resolved"]["title"] == "Burden, Henry"
    assert digital["representative_file_version"]["file_uri"] == "https://example.org/map.jpg"
    component = client.get(linked["component"], params={"resolve[]": "digital_object"}).json()
    assert component["digital_object"]["_resolved"]["digital_object_id"] == "SN-DO-1"
    box = client.get(linked["shelved"], params={"resolve[]": ["container_locations", "container_profile"]}).json()
    assert box["container_locations"][0]["_resolved"]["building"] == "Main"
    assert box["container_profile"]["_resolved"]["name"] == "Document box"
