"""Agents through HTTP: names (sort, authorized and display names as ArchivesSpace computes them),
uniqueness, contacts and notes, the fields computed from the records linking an agent, and
linked_agents on archival records (src/fonds/records/types/agents.py)."""

from __future__ import annotations

import pytest

from tests.records.helpers import make_ao, make_resource, read, update

PEOPLE = "/agents/people"


def person(**name) -> dict:
    return {"jsonmodel_type": "agent_person", "names": [{"name_order": "inverted", **name}]}


def create(api, path: str, body: dict) -> dict:
    created = api.create(path, body)
    return read(api, created["uri"])


def existence(**single) -> dict:
    return {"date_label": "existence", "date_type_structured": "single", "structured_date_single": {"date_role": "begin", **single}}


@pytest.mark.parametrize(
    ("name", "sort_name"),
    [
        ({"primary_name": "Smith", "rest_of_name": "John"}, "Smith, John"),
        ({"primary_name": "Smith", "rest_of_name": "John", "name_order": "direct"}, "John Smith"),
        (
            {"primary_name": "Smith", "rest_of_name": "John", "prefix": "Dr.", "suffix": "Jr.", "title": "Sir", "number": "III"},
            "Smith, John, Dr., Jr., Sir, III",
        ),
        ({"primary_name": "Smith", "rest_of_name": "J.", "fuller_form": "John", "dates": "1900-1980"}, "Smith, J. (John), 1900-1980"),
        ({"primary_name": "Smith", "qualifier": "whaler"}, "Smith (whaler)"),
        (
            {"primary_name": "Ng", "rest_of_name": "Ana", "name_order": "direct", "dates": "b. 1950", "qualifier": "poet"},
            "Ana Ng, b. 1950 (poet)",
        ),
    ],
)
def test_person_sort_names_follow_archivesspace(api, name, sort_name):
    agent = create(api, PEOPLE, person(**name))
    assert agent["names"][0]["sort_name"] == sort_name
    assert agent["title"] == sort_name
    assert agent["display_name"]["sort_name"] == sort_name
    assert agent["names"][0]["sort_name_auto_generate"] is True


def test_a_persons_display_name_shows_the_first_date_of_existence(api):
    body = person(primary_name="Ames", rest_of_name="Ruth")
    body["dates_of_existence"] = [existence(date_expression="1890-1960")]
    assert create(api, PEOPLE, body)["title"] == "Ames, Ruth (1890-1960)"
    body = person(primary_name="Ames", rest_of_name="Ruth", dates="1890-")
    body["dates_of_existence"] = [existence(date_standardized="1890-03-01", date_standardized_type="not_before")]
    assert create(api, PEOPLE, body)["title"] == "Ames, Ruth, 1890-"


@pytest.mark.parametrize(
    ("path", "jsonmodel_type", "name", "sort_name"),
    [
        (
            "/agents/corporate_entities",
            "agent_corporate_entity",
            {"primary_name": "Acme", "subordinate_name_1": "Archives", "subordinate_name_2": "Reading Room", "number": "2"},
            "Acme. Archives. Reading Room, 2",
        ),
        (
            "/agents/corporate_entities",
            "agent_corporate_entity",
            {"primary_name": "Congress", "qualifier": "US", "dates": "1990", "location": "Boston"},
            "Congress (US) (1990) (Boston)",
        ),
        (
            "/agents/families",
            "agent_family",
            {"family_name": "Adams", "prefix": "House of", "qualifier": "Mass.", "dates": "1700-1900"},
            "Adams, House of (Mass.) (1700-1900)",
        ),
        (
            "/agents/software",
            "agent_software",
            {"software_name": "Archivematica", "manufacturer": "Artefactual", "version": "1.13"},
            "Artefactual Archivematica 1.13",
        ),
    ],
)
def test_other_name_types_sort_names(api, path, jsonmodel_type, name, sort_name):
    agent = create(api, path, {"jsonmodel_type": jsonmodel_type, "names": [name]})
    assert (agent["title"], agent["agent_type"], agent["display_name"]["sort_name"]) == (sort_name, jsonmodel_type, sort_name)


def test_a_sort_name_the_client_keeps_is_kept_and_required(api):
    agent = create(api, PEOPLE, person(primary_name="Doe", sort_name="Doe, J. (house style)", sort_name_auto_generate=False))
    assert agent["title"] == "Doe, J. (house style)"
    response = api.post(PEOPLE, json=person(primary_name="Doe", sort_name_auto_generate=False))
    assert response.status_code == 400
    assert response.json()["error"] == {"names/0/sort_name": ["Property is required but was missing"]}


def test_first_name_becomes_authorized_and_display_name(api):
    body = person(primary_name="Clemens", rest_of_name="Samuel")
    body["names"].append({"primary_name": "Twain", "rest_of_name": "Mark", "name_order": "inverted"})
    agent = create(api, PEOPLE, body)
    assert [(n["authorized"], n["is_display_name"]) for n in agent["names"]] == [(True, True), (False, False)]
    assert agent["title"] == "Clemens, Samuel"


def test_display_name_chosen_by_the_client_wins_and_duplicates_merge(api):
    body = person(primary_name="Clemens", rest_of_name="Samuel", authorized=True)
    body["names"] += [
        {"primary_name": "Twain", "rest_of_name": "Mark", "name_order": "inverted", "is_display_name": True},
        {"primary_name": "Clemens", "rest_of_name": "Samuel", "name_order": "inverted"},
    ]
    agent = create(api, PEOPLE, body)
    assert [n["sort_name"] for n in agent["names"]] == ["Clemens, Samuel", "Twain, Mark"]
    assert agent["title"] == "Twain, Mark"
    assert agent["display_name"]["primary_name"] == "Twain"


def test_names_are_required_with_their_type_specific_fields(api):
    response = api.post(PEOPLE, json={"jsonmodel_type": "agent_person"})
    assert (response.status_code, response.json()["error"]) == (400, {"names": ["Property is required but was missing"]})
    response = api.post(PEOPLE, json={"jsonmodel_type": "agent_person", "names": [{"rest_of_name": "John"}]})
    assert response.json()["error"] == {
        "names/0/primary_name": ["Property is required but was missing"],
        "names/0/name_order": ["Property is required but was missing"],
    }
    response = api.post("/agents/families", json={"jsonmodel_type": "agent_family", "names": [{"prefix": "x"}]})
    assert response.json()["error"] == {"names/0/family_name": ["Property is required but was missing"]}


def test_a_duplicate_agent_is_refused_naming_the_existing_one(api):
    first = api.create(PEOPLE, person(primary_name="Smith", rest_of_name="Jane"))
    response = api.post(PEOPLE, json=person(primary_name="Smith", rest_of_name="Jane"))
    assert response.status_code == 400
    assert response.json()["error"] == {"names": ["Agent must be unique"], "conflicting_record": [first["uri"]]}
    # Another agent type may have the same name; another date of existence makes another person.
    assert api.post("/agents/families", json={"jsonmodel_type": "agent_family", "names": [{"family_name": "Smith"}]}).status_code == 200
    other = person(primary_name="Smith", rest_of_name="Jane")
    other["dates_of_existence"] = [existence(date_expression="1901")]
    assert api.post(PEOPLE, json=other).status_code == 200


def test_an_authority_id_names_one_agent(api):
    api.create(PEOPLE, person(primary_name="Smith", authority_id="n79021164", source="naf"))
    response = api.post(PEOPLE, json=person(primary_name="Smyth", authority_id="n79021164", source="naf"))
    assert (response.status_code, response.json()["error"]["authority_id"]) == (400, ["Authority ID must be unique"])


def test_dates_of_existence_must_be_labelled_existence_and_well_formed(api):
    body = person(primary_name="Ames")
    body["dates_of_existence"] = [{**existence(date_expression="1900"), "date_label": "creation"}]
    assert api.post(PEOPLE, json=body).json()["error"] == {"dates_of_existence": ["Label must be 'existence' in this context"]}
    body["dates_of_existence"] = [
        {
            "date_label": "existence",
            "date_type_structured": "range",
            "structured_date_single": {"date_role": "begin", "date_expression": "1900"},
        }
    ]
    assert api.post(PEOPLE, json=body).json()["error"] == {
        "dates_of_existence/0/structured_date_single": ["Must specify range date for date type of range"]
    }


def test_contacts_notes_and_subrecords_round_trip(api):
    body = person(primary_name="Archivist", rest_of_name="Alex")
    body.update(
        publish=True,
        agent_contacts=[
            {
                "name": "Reading room",
                "salutation": "mr",
                "address_1": "1 Main St",
                "city": "Salem",
                "email": "a@example.org",
                "telephones": [{"number": "555-0100", "ext": "12", "number_type": "business"}],
            }
        ],
        notes=[
            {
                "jsonmodel_type": "note_bioghist",
                "label": "Biography",
                "publish": True,
                "subnotes": [
                    {"jsonmodel_type": "note_text", "content": "Born in Salem."},
                    {"jsonmodel_type": "note_chronology", "items": [{"event_date": "1900", "events": ["born"]}]},
                ],
            },
            {"jsonmodel_type": "note_general_context", "subnotes": [{"jsonmodel_type": "note_text", "content": "Context."}]},
        ],
        agent_record_identifiers=[{"record_identifier": "abc-1", "primary_identifier": True, "source": "naf"}],
        agent_genders=[{"gender": "not_specified"}],
        used_languages=[{"language": "eng"}],
        external_documents=[{"title": "Obituary", "location": "https://example.org/obit"}],
    )
    response = api.post(PEOPLE, json=body)
    assert response.status_code == 200, response.text
    assert response.json()["warnings"] == []
    agent = read(api, response.json()["uri"])
    assert agent["agent_contacts"][0]["telephones"][0] == {
        "jsonmodel_type": "telephone",
        "number": "555-0100",
        "ext": "12",
        "number_type": "business",
    }
    assert [n["jsonmodel_type"] for n in agent["notes"]] == ["note_bioghist", "note_general_context"]
    assert agent["notes"][0]["subnotes"][1]["items"] == [{"event_date": "1900", "events": ["born"]}]
    assert agent["agent_record_identifiers"][0]["record_identifier"] == "abc-1"
    again = api.post(agent["uri"], json=agent)
    assert (again.status_code, again.json()["warnings"]) == (200, [])


def test_software_agents_take_no_record_control_subrecords(api):
    body = {"jsonmodel_type": "agent_software", "names": [{"software_name": "Tool"}], "agent_sources": [{"source_entry": "x"}]}
    response = api.post("/agents/software", json=body)
    assert response.json()["error"] == {"agent_sources": ["subrecord not allowed for agent software"]}


def link(agent_uri: str, role: str = "creator", **extra) -> dict:
    return {"ref": agent_uri, "role": role, **extra}


def test_linked_agents_on_archival_records_with_role_relator_terms_and_resolve(api, repo):
    agent = api.create(PEOPLE, person(primary_name="Melville", rest_of_name="Herman"))["uri"]
    terms = [{"term": "Correspondence", "term_type": "genre_form", "vocabulary": "/vocabularies/1"}]
    resource = make_resource(api, repo, "Melville papers", linked_agents=[link(agent, relator="aut", terms=terms, title="letters")])
    accession = api.create(
        f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "Gift", "linked_agents": [link(agent, "source")]}
    )["uri"]
    component = make_ao(api, repo, "Letter", resource=resource, linked_agents=[link(agent, "subject", is_primary=True)])["uri"]
    record = read(api, resource, **{"resolve[]": "linked_agents"})
    [linked] = record["linked_agents"]
    # is_primary's default (false) is filled by the read-back of schema defaults.
    assert {k: linked.get(k, False) for k in ("ref", "role", "relator", "title", "is_primary")} == {
        "ref": agent,
        "role": "creator",
        "relator": "aut",
        "title": "letters",
        "is_primary": False,
    }
    assert linked["terms"][0]["term"] == "Correspondence"
    assert linked["_resolved"]["title"] == "Melville, Herman"
    assert read(api, accession)["linked_agents"][0]["role"] == "source"
    assert read(api, component)["linked_agents"][0]["is_primary"] is True
    assert "_resolved" not in read(api, component)["linked_agents"][0]
    fields = read(api, agent)
    assert fields["linked_agent_roles"] == ["creator", "source", "subject"]
    assert fields["used_within_repositories"] == [f"/repositories/{repo}"]
    assert fields["is_linked_to_published_record"] is False


def test_an_agent_linked_to_a_published_record_says_so(api, repo):
    agent = api.create(PEOPLE, person(primary_name="Published"))["uri"]
    assert read(api, agent)["linked_agent_roles"] == []
    make_resource(api, repo, "Out there", publish=True, linked_agents=[link(agent)])
    assert read(api, agent)["is_linked_to_published_record"] is True


def test_bad_links_are_refused_naming_the_field(api, repo):
    agent = api.create(PEOPLE, person(primary_name="Real"))["uri"]
    path = f"/repositories/{repo}/accessions"
    missing = api.post(path, json={"jsonmodel_type": "accession", "title": "x", "linked_agents": [link("/agents/people/999")]})
    assert (missing.status_code, missing.json()["error"]) == (
        400,
        {"linked_agents/0": ["Can't relate to non-existent record: /agents/people/999"]},
    )
    bad_role = api.post(path, json={"jsonmodel_type": "accession", "title": "x", "linked_agents": [link(agent, "author")]})
    assert bad_role.status_code == 400
    assert list(bad_role.json()["error"]) == ["linked_agents/0/role"]
    no_role = api.post(path, json={"jsonmodel_type": "accession", "title": "x", "linked_agents": [{"ref": agent}]})
    assert no_role.json()["error"] == {"linked_agents/0/role": ["Property is required but was missing"]}
    not_agent = api.post(path, json={"jsonmodel_type": "accession", "title": "x", "linked_agents": [link("/subjects/1")]})
    assert list(not_agent.json()["error"]) == ["linked_agents/0/ref"]


def test_deleting_an_agent_unlinks_it_from_records(api, repo):
    agent = api.create(PEOPLE, person(primary_name="Gone"))["uri"]
    other = api.create(PEOPLE, person(primary_name="Stays"))["uri"]
    resource = make_resource(api, repo, "Papers", linked_agents=[link(agent), link(other, "subject")])
    before = read(api, resource)["lock_version"]
    assert api.delete(agent).status_code == 200
    assert api.get(agent).status_code == 404
    record = read(api, resource)
    assert [a["ref"] for a in record["linked_agents"]] == [other]
    assert record["lock_version"] == before + 1


def test_renaming_an_agent_changes_its_title_and_the_linked_records_search(api, repo):
    agent = api.create(PEOPLE, person(primary_name="Queequeg"))["uri"]
    resource = make_resource(api, repo, "Harpoons", linked_agents=[link(agent)])
    found = api.get("/search", params={"page": 1, "q": "queequeg", "type[]": "resource"}).json()["results"]
    assert [r["uri"] for r in found] == [resource]
    assert found[0]["creators"] == ["Queequeg"]
    assert update(api, agent, names=[{"primary_name": "Tashtego", "name_order": "inverted"}]).status_code == 200
    assert read(api, agent)["title"] == "Tashtego"
    assert [r["uri"] for r in api.get("/search", params={"page": 1, "q": "tashtego", "type[]": "resource"}).json()["results"]] == [resource]
    assert api.get("/search", params={"page": 1, "q": "queequeg", "type[]": "resource"}).json()["results"] == []


def test_agents_are_searchable_by_name_and_type(api):
    agent = api.create(PEOPLE, person(primary_name="Starbuck", authority_id="n123", source="naf"))["uri"]
    family = api.create("/agents/families", {"jsonmodel_type": "agent_family", "names": [{"family_name": "Starbuck"}]})["uri"]
    found = api.get("/search", params={"page": 1, "q": "starbuck", "type[]": "agent_person"}).json()["results"]
    assert [(r["uri"], r["primary_type"], r["title"]) for r in found] == [(agent, "agent_person", "Starbuck")]
    everyone = api.get("/search", params={"page": 1, "q": "starbuck"}).json()["results"]
    assert {r["uri"] for r in everyone} == {agent, family}
    assert [r["uri"] for r in api.get("/search", params={"page": 1, "q": "authority_id:n123"}).json()["results"]] == [agent]


def test_related_agents_link_agents_and_go_with_them(api):
    parent = api.create(PEOPLE, person(primary_name="Elder"))["uri"]
    relation = {"jsonmodel_type": "agent_relationship_parentchild", "relator": "is_child_of", "ref": parent, "description": "son"}
    child = api.create(PEOPLE, {**person(primary_name="Younger"), "related_agents": [relation]})["uri"]
    resolved = read(api, child, **{"resolve[]": "related_agents"})["related_agents"][0]
    assert (resolved["relator"], resolved["_resolved"]["title"]) == ("is_child_of", "Elder")
    assert api.delete(parent).status_code == 200
    assert read(api, child).get("related_agents", []) == []


def test_rights_statements_link_agents(api, repo):
    agent = api.create(PEOPLE, person(primary_name="Holder"))["uri"]
    statement = {"rights_type": "copyright", "status": "copyrighted", "jurisdiction": "US", "linked_agents": [{"ref": agent}]}
    body = {"jsonmodel_type": "accession", "title": "Rights", "rights_statements": [statement]}
    accession = api.create(f"/repositories/{repo}/accessions", body)["uri"]
    linked = read(api, accession, **{"resolve[]": "linked_agents"})["rights_statements"][0]["linked_agents"][0]
    assert linked["_resolved"]["title"] == "Holder"
    assert read(api, agent)["linked_agent_roles"] == []
    assert api.delete(agent).status_code == 200
    assert read(api, accession)["rights_statements"][0].get("linked_agents", []) == []


def test_an_agents_search_document_follows_the_records_linking_it(api, repo):
    agent = api.create(PEOPLE, person(primary_name="Ahab"))["uri"]
    software = api.create("/agents/software", {"jsonmodel_type": "agent_software", "names": [{"software_name": "Ahab"}]})["uri"]

    def document() -> dict:
        [found] = api.get("/search", params={"page": 1, "q": "ahab", "type[]": "agent_person"}).json()["results"]
        return found

    assert document().get("linked_agent_roles", []) == []
    resource = make_resource(api, repo, "Logs", linked_agents=[link(agent)])
    assert document()["linked_agent_roles"] == ["creator"]
    assert update(api, resource, linked_agents=[link(agent, "subject")]).status_code == 200
    assert document()["linked_agent_roles"] == ["subject"]
    everyone = api.get("/search", params={"page": 1, "q": "ahab", "type[]": "agent"}).json()["results"]
    assert {r["uri"] for r in everyone} == {agent, software}
    assert all(r["types"][1:] == ["agent"] for r in everyone)


def test_a_batch_import_creates_agents_and_the_records_linking_them(api, repo):
    batch = [
        {
            "jsonmodel_type": "resource",
            "uri": f"/repositories/{repo}/resources/import_2",
            "title": "Imported papers",
            "linked_agents": [link("/agents/people/import_1")],
        },
        {**person(primary_name="Imported", rest_of_name="Ida"), "uri": "/agents/people/import_1"},
    ]
    response = api.post(f"/repositories/{repo}/batch_imports", json=batch)
    assert response.status_code == 200, response.text
    resource = next(r for r in api.get(f"/repositories/{repo}/resources", params={"page": 1}).json()["results"])
    [linked] = read(api, resource["uri"], **{"resolve[]": "linked_agents"})["linked_agents"]
    assert linked["_resolved"]["title"] == "Imported, Ida"


def test_an_agent_exported_from_archivesspace_posts_without_unknown_properties(api):
    """Shaped like ArchivesSpace's GET of a corporate entity: computed and service-set fields included."""
    name = {
        "jsonmodel_type": "name_corporate_entity",
        "primary_name": "Whaling Museum",
        "subordinate_name_1": "Library",
        "sort_name": "Whaling Museum. Library",
        "sort_name_auto_generate": True,
        "authorized": True,
        "is_display_name": True,
        "conference_meeting": False,
        "jurisdiction": False,
        "use_dates": [],
        "parallel_names": [],
        "source": "local",
        "rules": "dacs",
    }
    export = {
        "jsonmodel_type": "agent_corporate_entity",
        "uri": "/agents/corporate_entities/77",
        "lock_version": 3,
        "title": "Whaling Museum. Library",
        "agent_type": "agent_corporate_entity",
        "is_slug_auto": True,
        "publish": True,
        "is_linked_to_published_record": True,
        "linked_agent_roles": ["creator"],
        "used_within_repositories": ["/repositories/2"],
        "used_within_published_repositories": ["/repositories/2"],
        "system_generated": False,
        "is_repo_agent": "Whaling Museum",
        "names": [name],
        "display_name": name,
        "dates_of_existence": [
            {
                "jsonmodel_type": "structured_date_label",
                "date_label": "existence",
                "date_type_structured": "range",
                "structured_date_range": {
                    "jsonmodel_type": "structured_date_range",
                    "begin_date_standardized": "1903",
                    "begin_date_standardized_type": "standard",
                },
            }
        ],
        "agent_record_controls": [{"jsonmodel_type": "agent_record_control", "maintenance_status": "new", "language": "eng"}],
        "agent_conventions_declarations": [{"jsonmodel_type": "agent_conventions_declaration", "name_rule": "dacs"}],
        "agent_maintenance_histories": [
            {
                "jsonmodel_type": "agent_maintenance_history",
                "maintenance_event_type": "created",
                "maintenance_agent_type": "human",
                "event_date": "2020-01-01",
                "agent": "admin",
            }
        ],
        "agent_places": [],
        "agent_contacts": [],
        "related_agents": [],
        "external_documents": [],
        "notes": [],
    }
    response = api.post("/agents/corporate_entities", json=export)
    assert response.status_code == 200, response.text
    assert response.json()["warnings"] == []
    agent = read(api, response.json()["uri"])
    assert (agent["title"], agent["uri"], agent["lock_version"]) == ("Whaling Museum. Library", response.json()["uri"], 0)
    assert agent["linked_agent_roles"] == [] and agent["used_within_repositories"] == []
