"""The link table (src/fonds/storage/links.py): on SQLite, the links batch imports write wait in
`record_link_recent` until they are merged in bulk, and every read of links, through HTTP,
sees them meanwhile as it sees them merged."""

from __future__ import annotations

import pytest

from fonds.storage import links as link_table
from fonds.storage import statistics
from tests.records.helpers import instance, make_resource, make_top_container, read, update

PEOPLE = "/agents/people"


@pytest.fixture
def unmerged(app, monkeypatch):
    """The links of imports stay apart until the test merges them (`merge`)."""
    db = app.state.fonds.db
    if db.kind != "sqlite":
        pytest.skip("only SQLite keeps a bulk write's links apart")
    monkeypatch.setattr(statistics, "after_bulk_load", lambda *args, **kwargs: None)
    monkeypatch.setattr(link_table, "merge_recent_of", lambda db: 0)
    return db


def held(db) -> tuple[int, int]:
    """(links merged, links waiting)."""
    with db.read() as conn:
        return tuple(conn.exec_driver_sql(f"SELECT count(*) FROM {name}").scalar_one() for name in ("record_link", link_table.RECENT))


def merge(db) -> int:
    with db.write() as conn:
        return link_table.merge_recent(conn)


def link_ids(db) -> list[tuple]:
    with db.read() as conn:
        return [tuple(row) for row in conn.exec_driver_sql(f"SELECT id, source_type, source_id, path FROM {link_table.VIEW} ORDER BY id")]


def imported(api, repo: int, records: list[dict]) -> dict[str, str]:
    response = api.post(f"/repositories/{repo}/batch_imports", json=records)
    assert response.status_code == 200, response.text
    return {temporary: real for temporary, (real, *_rest) in response.json()[-1]["saved"].items()}


def collection(repo: int, agent: str, subject: str, container: str, digital_object: str) -> list[dict]:
    """A resource, its two archival objects and an accession, linking one agent, subject,
    container and digital object."""
    base = f"/repositories/{repo}"
    agent_link = {"ref": agent, "role": "creator"}
    return [
        {"jsonmodel_type": "resource", "uri": f"{base}/resources/import_r", "title": "Whaling logs", "id_0": "W1", "level": "collection"}
        | {"linked_agents": [agent_link], "subjects": [{"ref": subject}], "publish": True}
        | {"dates": [{"jsonmodel_type": "date", "date_type": "single", "label": "creation", "expression": "1851"}]}
        | {"extents": [{"jsonmodel_type": "extent", "portion": "whole", "number": "1", "extent_type": "linear_feet"}]},
        {
            "jsonmodel_type": "archival_object",
            "uri": f"{base}/archival_objects/import_1",
            "title": "Log 1",
            "level": "file",
            "publish": True,
        }
        | {"resource": {"ref": f"{base}/resources/import_r"}, "subjects": [{"ref": subject}], "linked_agents": [agent_link]}
        | {
            "instances": [
                instance(container),
                {"jsonmodel_type": "instance", "instance_type": "digital_object", "digital_object": {"ref": digital_object}},
            ]
        },
        {"jsonmodel_type": "archival_object", "uri": f"{base}/archival_objects/import_2", "title": "Log 2", "level": "file"}
        | {"resource": {"ref": f"{base}/resources/import_r"}, "instances": [instance(container)]},
        {"jsonmodel_type": "accession", "uri": f"{base}/accessions/import_a", "title": "Gift", "id_0": "A1", "accession_date": "2020-01-01"}
        | {"subjects": [{"ref": subject}], "linked_agents": [{"ref": agent, "role": "source"}]},
    ]


def reads_by_target(api, agent: str, subject: str, container: str, digital_object: str) -> dict:
    """What the records linked to show of the records linking them."""
    agent_fields = read(api, agent)
    return {
        "agent": {key: agent_fields[key] for key in ("linked_agent_roles", "used_within_repositories", "is_linked_to_published_record")},
        "container": read(api, container)["collection"],
        "digital_object": {key: read(api, digital_object)[key] for key in ("linked_instances", "collection")},
        "subject_search": sorted(
            r["uri"]
            for r in api.get("/search", params={"page": 1, "q": "whaling", "type[]": ["resource", "archival_object"]}).json()["results"]
        ),
    }


@pytest.fixture
def targets(api, repo) -> tuple[str, str, str, str]:
    agent = api.create(PEOPLE, {"jsonmodel_type": "agent_person", "names": [{"primary_name": "Ahab", "name_order": "inverted"}]})["uri"]
    subject = api.create(
        "/subjects", {"jsonmodel_type": "subject", "source": "local", "terms": [{"term": "Whaling", "term_type": "topical"}]}
    )["uri"]
    body = {"jsonmodel_type": "digital_object", "title": "Scans", "digital_object_id": "DO-1"}
    return agent, subject, make_top_container(api, repo, "B1"), api.create(f"/repositories/{repo}/digital_objects", body)["uri"]


def test_the_links_of_an_import_wait_apart_and_every_record_shows_them_before_and_after_the_merge(unmerged, api, repo, targets):
    uris = imported(api, repo, collection(repo, *targets))
    merged_before, waiting = held(unmerged)
    assert waiting == 9  # 2 on the resource, 4 and 1 on the archival objects, 2 on the accession
    shown = reads_by_target(api, *targets)
    assert shown["agent"] == {
        "linked_agent_roles": ["creator", "source"],
        "used_within_repositories": [f"/repositories/{repo}"],
        "is_linked_to_published_record": True,
    }
    assert shown["digital_object"]["linked_instances"] == [{"ref": uris[f"/repositories/{repo}/archival_objects/import_1"]}]
    assert shown["digital_object"]["collection"] == [{"ref": uris[f"/repositories/{repo}/resources/import_r"]}]
    assert [c["ref"] for c in shown["container"]] == [uris[f"/repositories/{repo}/resources/import_r"]]
    ids = link_ids(unmerged)
    assert merge(unmerged) == 9
    assert held(unmerged) == (merged_before + 9, 0)
    assert link_ids(unmerged) == ids  # the same ids, the same order
    assert reads_by_target(api, *targets) == shown


def test_deleting_a_record_unlinks_the_records_whose_links_wait_apart(unmerged, api, repo, targets):
    agent, subject, *_ = targets
    uris = imported(api, repo, collection(repo, *targets))
    accession = uris[f"/repositories/{repo}/accessions/import_a"]
    assert api.delete(subject).status_code == 200
    assert read(api, accession)["subjects"] == []
    assert api.delete(agent).status_code == 200
    assert read(api, accession)["linked_agents"] == []
    with unmerged.read() as conn:
        left = conn.exec_driver_sql(f"SELECT count(*) FROM {link_table.VIEW} WHERE target_type IN ('subject', 'agent_person')").scalar_one()
    assert left == 0


def test_an_update_replaces_the_links_that_wait_apart(unmerged, api, repo, targets):
    agent, *_ = targets
    uris = imported(api, repo, collection(repo, *targets))
    accession = uris[f"/repositories/{repo}/accessions/import_a"]
    assert update(api, accession, subjects=[], linked_agents=[{"ref": agent, "role": "subject"}]).status_code == 200
    with unmerged.read() as conn:
        rows = conn.exec_driver_sql(
            f"SELECT path, target_type FROM {link_table.VIEW} WHERE source_type = 'accession' AND source_id = ?",
            (int(accession.rsplit("/", 1)[1]),),
        ).all()
    assert [tuple(row) for row in rows] == [("linked_agents/0", "agent_person")]
    assert read(api, agent)["linked_agent_roles"] == ["creator", "subject"]


def test_links_written_while_others_wait_come_after_them_merged_or_not(unmerged, api, repo, targets):
    """A link's id tells the order links were written in: a digital object lists the instances
    pointing at it in that order."""
    *_, digital_object = targets
    uris = imported(api, repo, collection(repo, *targets))
    resource = make_resource(api, repo, "Later papers")
    do_instance = {"jsonmodel_type": "instance", "instance_type": "digital_object", "digital_object": {"ref": digital_object}}
    later = api.create(
        f"/repositories/{repo}/archival_objects",
        {"jsonmodel_type": "archival_object", "title": "Later", "level": "file"}
        | {"resource": {"ref": resource}, "instances": [do_instance]},
    )["uri"]
    first = uris[f"/repositories/{repo}/archival_objects/import_1"]
    assert held(unmerged)[1] == 10  # written after links waiting: waits with them
    assert read(api, digital_object)["linked_instances"] == [{"ref": first}, {"ref": later}]
    ids = link_ids(unmerged)
    assert [i for i, *_ in ids] == sorted({i for i, *_ in ids})  # distinct
    merge(unmerged)
    assert link_ids(unmerged) == ids
    assert read(api, digital_object)["linked_instances"] == [{"ref": first}, {"ref": later}]
    another = api.create(
        f"/repositories/{repo}/archival_objects",
        {"jsonmodel_type": "archival_object", "title": "Last", "level": "file"}
        | {"resource": {"ref": resource}, "instances": [do_instance]},
    )["uri"]
    assert held(unmerged)[1] == 0  # none waiting: written merged
    assert read(api, digital_object)["linked_instances"] == [{"ref": first}, {"ref": later}, {"ref": another}]


def test_an_import_leaving_enough_links_apart_merges_them(unmerged, api, repo, targets, monkeypatch):
    monkeypatch.setattr(link_table, "RECENT_MERGE_AT", 12)
    imported(api, repo, collection(repo, *targets))
    assert held(unmerged)[1] == 9
    records = collection(repo, *targets)
    for record in records:
        record["uri"] = record["uri"].replace("import_", "second_")
        for key in ("id_0",):
            if key in record:
                record[key] += "-2"
    records[1]["resource"]["ref"] = records[2]["resource"]["ref"] = records[0]["uri"]
    imported(api, repo, records)
    assert held(unmerged)[1] == 0
    assert len(link_ids(unmerged)) == len(set(link_ids(unmerged)))


def test_the_links_of_imports_are_merged_once_the_imports_stop(app, api, repo, targets):
    db = app.state.fonds.db
    imported(api, repo, collection(repo, *targets))
    assert statistics.wait_until_analysed(db, timeout=30)
    with db.read() as conn:
        assert conn.exec_driver_sql(f"SELECT count(*) FROM {link_table.RECENT}").scalar_one() == 0
    agent, *_ = targets
    assert read(api, agent)["linked_agent_roles"] == ["creator", "source"]
