"""The change log's order: an indexer that has read past sequence n never looks at an earlier
one again, so a change must not become visible after a later one. On PostgreSQL a transaction
appending changes keeps every other append waiting until it ends (SQLite has one writer)."""

from __future__ import annotations

import threading

import pytest

from fonds.storage import change_log
from fonds.storage.records import utcnow


def _change(repo: int, record_id: int) -> dict:
    uri = f"/repositories/{repo}/accessions/{record_id}"
    return {"record_type": "accession", "record_id": record_id, "repo_id": repo, "uri": uri, "op": "created", "at": utcnow()}


@pytest.mark.parametrize("rows", [1, 20], ids=["a few rows", "many rows"])
def test_a_write_appending_changes_waits_for_the_transaction_that_appended_before_it(app, api, repo, rows):
    db = app.state.fonds.db
    if db.kind != "postgresql":
        pytest.skip("SQLite writes one transaction at a time")
    answers = []
    writer = threading.Thread(
        target=lambda: answers.append(api.post(f"/repositories/{repo}/accessions", json={"jsonmodel_type": "accession", "title": "Later"}))
    )
    with db.write() as conn:
        change_log.append(conn, [_change(repo, 1000 + n) for n in range(rows)])
        writer.start()
        writer.join(1.0)
        assert writer.is_alive() and not answers  # its change would be visible before this one's
    writer.join(30)
    assert answers[0].status_code == 200, answers[0].text
    with db.read() as conn:
        assert [c.uri for c in change_log.read_after(conn, 0, 100)][-1] == answers[0].json()["uri"]
