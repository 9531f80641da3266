"""Listings read their totals and page starts from per-block record counts kept by triggers:
the counts follow every create, delete, batch import and cascade, and pages stay right across
blocks and after deletes. Blocks of 4 ids here (the fixture `small_blocks`), so that a few dozen
records span many blocks."""

from __future__ import annotations

import pytest

from fonds.storage import counts
from tests.api.test_batch_imports import archive
from tests.factories import Api, new_client, running_app

ACCESSIONS = "/repositories/{repo}/accessions"


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    # A new trigger version: the app replaces the triggers any earlier test installed (and
    # recounts), and the next test's app puts the real ones back the same way.
    monkeypatch.setattr(counts, "BLOCK", 4)
    monkeypatch.setattr(counts, "VERSION", 900 + counts.VERSION)


def listing(api, path: str, **params) -> dict:
    response = api.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def every_page(api, path: str, size: int) -> tuple[int, list[int]]:
    first = listing(api, path, page=1, page_size=size)
    ids = []
    for number in range(1, first["last_page"] + 1):
        page = listing(api, path, page=number, page_size=size)
        assert (page["this_page"], page["total"], page["last_page"]) == (number, first["total"], first["last_page"])
        ids += [int(record["uri"].rsplit("/", 1)[1]) for record in page["results"]]
    return first["total"], ids


def add(api, path: str, count: int) -> list[int]:
    return [api.create(path, {"jsonmodel_type": "accession", "title": f"A {n}"})["id"] for n in range(count)]


def test_pages_across_blocks_and_after_deletes(api, repo):
    path = ACCESSIONS.format(repo=repo)
    ids = add(api, path, 23)
    assert every_page(api, path, 5) == (23, ids)
    gone = ids[0:3] + ids[9:14] + ids[-1:]
    for record_id in gone:
        assert api.delete(f"{path}/{record_id}").status_code == 200
    kept = [i for i in ids if i not in gone]
    for size in (1, 3, 4, 10, 250):
        assert every_page(api, path, size) == (len(kept), kept)
    assert listing(api, path, all_ids="true") == kept
    beyond = listing(api, path, page=20, page_size=5)
    assert (beyond["total"], beyond["results"]) == (len(kept), [])


def test_each_repository_counts_its_own(api, repo):
    other = api.create_repository("OTHER")
    mine = add(api, ACCESSIONS.format(repo=repo), 6)
    theirs = add(api, ACCESSIONS.format(repo=other), 5)
    mine += add(api, ACCESSIONS.format(repo=repo), 2)
    assert every_page(api, ACCESSIONS.format(repo=repo), 3) == (8, mine)
    assert every_page(api, ACCESSIONS.format(repo=other), 3) == (5, theirs)
    assert listing(api, ACCESSIONS.format(repo=other), all_ids="1") == theirs


@pytest.mark.parametrize("lane", [True, False], ids=["fast lane", "ordinary path"])
def test_pages_of_repositories_whose_records_interleave(app, api, repo, lane):
    """A page reads ids from its first block to the block where it ends: with another
    repository's records between and after a repository's own, every page (the last included,
    which runs out of records) still holds exactly the records due, in order."""
    if not lane:
        app.fast_lane = None
    other = api.create_repository("OTHER")
    mine, theirs = [], []
    for n in range(9):
        mine += add(api, ACCESSIONS.format(repo=repo), 1 + n % 3)
        theirs += add(api, ACCESSIONS.format(repo=other), 2 + n % 4)
    theirs += add(api, ACCESSIONS.format(repo=other), 9)
    for record_id in mine[4:9]:
        assert api.delete(f"{ACCESSIONS.format(repo=repo)}/{record_id}").status_code == 200
    mine = mine[:4] + mine[9:]
    for size in (1, 2, 3, 5, 7, 250):
        assert every_page(api, ACCESSIONS.format(repo=repo), size) == (len(mine), mine)
        assert every_page(api, ACCESSIONS.format(repo=other), size) == (len(theirs), theirs)


def test_counts_follow_batch_imports_and_cascades(api, repo):
    response = api.post(f"/repositories/{repo}/batch_imports", json=archive(repo))
    assert response.status_code == 200, response.text
    objects = f"/repositories/{repo}/archival_objects"
    total, ids = every_page(api, objects, 1)
    assert total == len(ids) == 2
    assert listing(api, "/subjects", page=1)["total"] == 1
    resource = listing(api, f"/repositories/{repo}/resources", page=1)["results"][0]["uri"]
    assert api.delete(resource).status_code == 200
    assert every_page(api, objects, 1) == (0, [])
    assert listing(api, objects, all_ids="true") == []


def test_a_refused_batch_counts_nothing(api, repo):
    records = archive(repo)
    records[0]["level"] = "not-a-level"
    assert api.post(f"/repositories/{repo}/batch_imports", json=records).status_code == 400
    assert listing(api, f"/repositories/{repo}/resources", page=1)["total"] == 0
    assert listing(api, "/subjects", page=1)["total"] == 0


def test_records_written_before_the_triggers_are_counted_at_start(api, repo, settings, monkeypatch):
    path = ACCESSIONS.format(repo=repo)
    ids = add(api, path, 7)
    # Another version of the triggers (as after an upgrade): the next start recounts every table.
    monkeypatch.setattr(counts, "VERSION", counts.VERSION + 1)
    with running_app(settings) as restarted:
        admin = Api.login(new_client(restarted))
        assert every_page(admin, path, 2) == (7, ids)
        ids += add(admin, path, 2)
        assert every_page(admin, path, 4) == (9, ids)


def test_a_batch_counts_its_records_and_later_writes_count_again(api, repo):
    records = [{"jsonmodel_type": "accession", "title": f"Bulk {n}", "id_0": f"BULK-{n}"} for n in range(12)]
    response = api.post(f"/repositories/{repo}/batch_imports", json=records)
    assert response.status_code == 200, response.text
    path = ACCESSIONS.format(repo=repo)
    total, ids = every_page(api, path, 5)
    assert total == len(ids) == 12
    ids += add(api, path, 1)
    assert every_page(api, path, 5) == (13, ids)
    assert api.delete(f"{path}/{ids[0]}").status_code == 200
    assert every_page(api, path, 5) == (12, ids[1:])


def test_records_moved_to_another_repository_by_sql_are_counted_there(api, repo):
    """The counts follow any write, a hand-made one included: records whose repository an
    UPDATE changes leave their old repository's total and blocks for the new one's."""
    other = api.create_repository("OTHER")
    mine = add(api, ACCESSIONS.format(repo=repo), 9)
    theirs = add(api, ACCESSIONS.format(repo=other), 2)
    moved = mine[2:7]
    db = api.client.app.state.fonds.db
    table = db.tables["accession"]
    with db.write() as conn:
        conn.execute(table.update().where(table.c.id.in_(moved)).values(repo_id=other))
    kept = [i for i in mine if i not in moved]
    for size in (1, 2, 4, 250):
        assert every_page(api, ACCESSIONS.format(repo=repo), size) == (len(kept), kept)
        assert every_page(api, ACCESSIONS.format(repo=other), size) == (7, sorted(theirs + moved))
