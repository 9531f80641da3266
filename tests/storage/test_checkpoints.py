"""Bulk writes' checkpoints, run beside them (fonds.storage.checkpoints), on a SQLite file."""

from __future__ import annotations

import pytest

from fonds.storage import checkpoints
from fonds.storage.db import SQLITE_WAL_CHECKPOINT_PAGES

# A log this short is copied back every few imports below.
PAGES = 40


def sqlite_file_db(app):
    db = app.state.fonds.db
    if db.checkpoints is None:
        pytest.skip("SQLite on a file: the checkpoints of its bulk writes")
    db.close_idle_bulk(idle_seconds=0)  # the next bulk write opens its connection
    return db


def accessions(start: int, count: int) -> list[dict]:
    # Long enough that each import fills a few dozen pages of the log.
    return [
        {
            "jsonmodel_type": "accession",
            "uri": f"/repositories/import/accessions/import_{n}",
            "title": f"Accession {n}",
            "id_0": f"CK{n}",
            "content_description": "A long description of what came in. " * 20,
            "accession_date": "2026-12-07",
        }
        for n in range(start, start + count)
    ]


def imported(api, repo: int, records: list[dict]) -> list[str]:
    response = api.post(f"/repositories/{repo}/batch_imports", json=records)
    assert response.status_code == 200, response.text
    return [uri for uri, _ in response.json()[-1]["saved"].values()]


def test_bulk_writes_leave_checkpoints_to_a_thread_and_the_log_starts_again(app, api, repo):
    db = sqlite_file_db(app)
    db.checkpoints.pages = PAGES
    # A read under way as a write begins keeps the log from starting again, whoever copied it back:
    # the search indexer, which reads each import as it is written, is stopped here.
    app.state.fonds.search.stop()
    # The log may hold what start-up wrote (bootstrap, migration): the first import's copy takes it.
    uris = imported(api, repo, accessions(1000, 20))
    db.checkpoints.wait()
    most_pages, copied_back = 0, 0
    for round_ in range(12):
        uris += imported(api, repo, accessions(round_ * 20, 20))
        with db.bulk_write() as conn:
            # The import's own connection copies nothing back itself.
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
        db.checkpoints.wait()
        pages, copied = db.checkpoints.log_pages()
        most_pages, copied_back = max(most_pages, pages), max(copied_back, copied)
    # Each import fills about half the mark: the log would hold every page written (~260) had
    # nothing copied it back, and it started again from its beginning instead.
    assert copied_back >= PAGES
    assert most_pages < 4 * PAGES
    assert [api.get(uri).json()["title"] for uri in uris] == [f"Accession {n}" for n in [*range(1000, 1020), *range(240)]]


def test_a_bulk_connection_checkpoints_itself_where_the_log_cannot_be_read(app, api, repo, monkeypatch):
    db = sqlite_file_db(app)
    assert db.checkpoints.log_pages() is not None
    monkeypatch.setattr(checkpoints, "WAL_INDEX_VERSION", 0)  # a log index of another format
    assert db.checkpoints.log_pages() is None
    db.checkpoints.pages = PAGES
    uri = imported(api, repo, accessions(0, 20))[0]
    with db.bulk_write() as conn:
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == SQLITE_WAL_CHECKPOINT_PAGES
    assert api.get(uri).json()["title"] == "Accession 0"
