"""An agent's search document shows what the records linking it say (`linked_agent_roles`,
`is_linked_to_published_record`, `used_within_repositories` …) and stays equal to GET as links
come and go, although the indexer skips agents whose documents a new link can't change."""

from __future__ import annotations

from fonds.records.types.agents import LINK_SAMPLE
from tests.records.helpers import make_ao, make_resource, read, update
from tests.search.helpers import accession, search

PERSON = {"jsonmodel_type": "agent_person", "names": [{"primary_name": "Melville", "rest_of_name": "Herman", "name_order": "inverted"}]}


def _agent(api) -> str:
    return api.create("/agents/people", PERSON)["uri"]


def _link(agent: str, role: str = "creator") -> dict:
    return {"ref": agent, "role": role}


def _indexed(api, uri: str) -> dict:
    [doc] = search(api, "/search", **{"filter_query[]": [f'id:"{uri}"']}).json()["results"]
    return doc


def _assert_document_is_get(api, agent: str) -> dict:
    doc = _indexed(api, agent)
    assert doc["json"] == api.get(agent).text
    return read(api, agent)


def test_a_new_role_reaches_the_agents_document(api, repo):
    agent = _agent(api)
    accession(api, repo, "Logbooks", linked_agents=[_link(agent)])
    accession(api, repo, "More logbooks", linked_agents=[_link(agent)])
    assert _assert_document_is_get(api, agent)["linked_agent_roles"] == ["creator"]
    accession(api, repo, "Letters about him", linked_agents=[_link(agent, "subject")])
    assert _assert_document_is_get(api, agent)["linked_agent_roles"] == ["creator", "subject"]


def test_a_new_repository_reaches_the_agents_document(api, repo):
    agent = _agent(api)
    other = api.create_repository("OTHER")
    accession(api, repo, "Logbooks", linked_agents=[_link(agent)])
    assert _assert_document_is_get(api, agent)["used_within_repositories"] == [f"/repositories/{repo}"]
    accession(api, other, "Logbooks elsewhere", linked_agents=[_link(agent)])
    assert _assert_document_is_get(api, agent)["used_within_repositories"] == [f"/repositories/{repo}", f"/repositories/{other}"]


def test_a_published_linking_record_reaches_the_agents_document(api, repo):
    agent = _agent(api)
    accession(api, repo, "Unpublished logbooks", linked_agents=[_link(agent)], publish=False)
    assert _assert_document_is_get(api, agent)["is_linked_to_published_record"] is False
    accession(api, repo, "Published logbooks", linked_agents=[_link(agent)], publish=True)
    assert _assert_document_is_get(api, agent)["is_linked_to_published_record"] is True


def test_publishing_or_suppressing_a_linking_record_reaches_the_agents_document(api, repo):
    agent = _agent(api)
    linking = accession(api, repo, "Logbooks", linked_agents=[_link(agent)], publish=False)["uri"]
    assert _assert_document_is_get(api, agent)["is_linked_to_published_record"] is False
    assert update(api, linking, publish=True).status_code == 200
    assert _assert_document_is_get(api, agent)["is_linked_to_published_record"] is True
    assert api.post(f"{linking}/suppressed", params={"suppressed": "true"}).status_code == 200
    assert _assert_document_is_get(api, agent)["is_linked_to_published_record"] is False


def test_a_removed_link_or_changed_role_reaches_the_agents_document(api, repo):
    agent = _agent(api)
    first = accession(api, repo, "Logbooks", linked_agents=[_link(agent)])["uri"]
    second = accession(api, repo, "Letters about him", linked_agents=[_link(agent, "subject")])["uri"]
    assert update(api, second, linked_agents=[_link(agent, "source")]).status_code == 200
    assert _assert_document_is_get(api, agent)["linked_agent_roles"] == ["creator", "source"]
    assert update(api, second, linked_agents=[]).status_code == 200
    assert _assert_document_is_get(api, agent)["linked_agent_roles"] == ["creator"]
    assert api.delete(first).status_code == 200
    assert _assert_document_is_get(api, agent)["used_within_repositories"] == []


def test_links_that_show_nothing_new_leave_the_document_equal_to_get(api, repo):
    agent = _agent(api)
    resource = make_resource(api, repo, "Papers", linked_agents=[_link(agent)])
    for n in range(3):
        make_ao(api, repo, f"Item {n}", resource=resource, linked_agents=[_link(agent)])
    assert _assert_document_is_get(api, agent)["linked_agent_roles"] == ["creator"]


def _import_linking_objects(api, repo: int, links: list[tuple[str, str]], title: str = "Many") -> None:
    """Archival objects of one new resource, each linking one (agent, role), in this order of ids (one import)."""
    resource = f"/repositories/{repo}/resources/import_r"
    batch = [{"jsonmodel_type": "resource", "uri": resource, "title": title, "id_0": title.lower(), "level": "collection"}]
    batch += [
        {
            "jsonmodel_type": "archival_object",
            "uri": f"/repositories/{repo}/archival_objects/import_{n}",
            "title": f"Item {n}",
            "level": "file",
            "resource": {"ref": resource},
            "linked_agents": [_link(agent, role)],
        }
        for n, (agent, role) in enumerate(links)
    ]
    response = api.post(f"/repositories/{repo}/batch_imports", json=batch)
    assert response.status_code == 200, response.text


def _many_linking_objects(api, repo: int, agent: str, roles: list[str]) -> None:
    _import_linking_objects(api, repo, [(agent, role) for role in roles])


def test_a_link_entering_a_full_sample_pushes_the_last_one_out_of_the_document(api, repo):
    """Roles come from the first LINK_SAMPLE links by (type, id): an accession sorts before every
    archival object, so its link (with a role already shown) drops the last object's role."""
    agent = _agent(api)
    _many_linking_objects(api, repo, agent, ["creator"] * (LINK_SAMPLE - 1) + ["source"])
    assert _assert_document_is_get(api, agent)["linked_agent_roles"] == ["creator", "source"]
    accession(api, repo, "Logbooks", linked_agents=[_link(agent)])
    assert _assert_document_is_get(api, agent)["linked_agent_roles"] == ["creator"]


def test_a_link_after_a_full_sample_leaves_the_document_equal_to_get(api, repo):
    agent = _agent(api)
    _many_linking_objects(api, repo, agent, ["creator"] * LINK_SAMPLE)
    assert _assert_document_is_get(api, agent)["linked_agent_roles"] == ["creator"]
    resource = make_resource(api, repo, "Later papers")
    make_ao(api, repo, "Later item", resource=resource, linked_agents=[_link(agent, "subject")], publish=True)
    assert _assert_document_is_get(api, agent)["linked_agent_roles"] == ["creator"]


def test_records_indexed_early_as_siblings_still_update_their_agents(api, repo, monkeypatch):
    """A node's later siblings are indexed with it (their positions shift); when their own changes
    come in a later batch the index already holds them, yet the agents they link must still be
    re-rendered."""
    from fonds.search import indexer

    agents = [
        api.create("/agents/people", {**PERSON, "names": [{**PERSON["names"][0], "primary_name": f"Name {n}"}]})["uri"] for n in range(4)
    ]
    for agent in agents:
        _assert_document_is_get(api, agent)
    monkeypatch.setattr(indexer, "BATCH", 2)
    _import_linking_objects(api, repo, [(agent, "creator") for agent in agents], title="Flat")
    for agent in agents:
        assert _assert_document_is_get(api, agent)["used_within_repositories"] == [f"/repositories/{repo}"]
