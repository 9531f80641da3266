"""IN lists (fonds.storage.chunks): what a bulk load and its indexing send the database. Each
length of an IN list is a statement of its own, which SQLite prepares and keeps per connection;
lists are padded to a few lengths, which must change no result."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from sqlalchemy import event

from fonds.storage.chunks import IN_LENGTHS
from tests.search.helpers import search

# SQLite: `?`; PostgreSQL (psycopg): `%(name)s`, with a cast after it.
PLACEHOLDER = r"(?:\?|%s|%\(\w+\)s)(?:::\w+)?"
IN_LIST = re.compile(rf"IN \(({PLACEHOLDER}(?:, {PLACEHOLDER})*)\)")
BATCHES = 9


def batch(repo: int, n: int) -> list[dict]:
    """Batch `n`: 7n + 3 accessions, the k-th linking k % 11 + 1 of the batch's 5n + 2 subjects."""
    subjects = [
        {
            "jsonmodel_type": "subject",
            "uri": f"/subjects/tmp_{n}_{s}",
            "source": "local",
            "terms": [{"term": f"Chunked {n}-{s}", "term_type": "topical"}],
        }
        for s in range(5 * n + 2)
    ]
    accessions = [
        {
            "jsonmodel_type": "accession",
            "title": f"Chunked accession {n}-{k}",
            "id_0": f"CH-{n}-{k}",
            "subjects": [{"ref": f"/subjects/tmp_{n}_{(k + s) % len(subjects)}"} for s in range(k % 11 + 1)],
        }
        for k in range(7 * n + 3)
    ]
    return subjects + accessions


def in_list_lengths(statements: list[str]) -> dict[str, set[int]]:
    """{statement with its IN lists elided: the lengths its lists were sent with}."""
    lengths: dict[str, set[int]] = defaultdict(set)
    for sql in statements:
        found = IN_LIST.findall(sql)
        if found:
            lengths[IN_LIST.sub("IN (…)", sql)].update(len(re.findall(PLACEHOLDER, group)) for group in found)
    return lengths


def test_a_bulk_load_and_its_indexing_send_in_lists_of_a_few_lengths(app, api, repo):
    statements: list[str] = []
    engine = app.state.fonds.db.engine
    record = lambda conn, cursor, sql, *rest: statements.append(sql)  # noqa: E731
    event.listen(engine, "before_cursor_execute", record)
    try:
        for n in range(BATCHES):
            response = api.post(f"/repositories/{repo}/batch_imports", json=batch(repo, n))
            assert response.status_code == 200, response.text
        # A search waits for the indexer to apply every change.
        found = search(api, f"/repositories/{repo}/search", q="Chunked", type=["accession"]).json()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert found["total_hits"] == sum(7 * n + 3 for n in range(BATCHES))
    # Every accession kept its subjects (found through lists padded with repeated ids).
    for accession in api.get(f"/repositories/{repo}/accessions", params={"all_ids": "true"}).json()[-40:]:
        doc = api.get(f"/repositories/{repo}/accessions/{accession}").json()
        k = int(doc["id_1"] if doc.get("id_1") else doc["title"].rsplit("-", 1)[1])
        assert len(doc["subjects"]) == k % 11 + 1 == len({s["ref"] for s in doc["subjects"]})
    lengths = in_list_lengths(statements)
    # PostgreSQL: most lists go as one array (the test below); those left are checked here.
    assert lengths or engine.dialect.name == "postgresql", "no IN list was sent"
    bad = [f"{sorted(sent)}: {sql[:200]}" for sql, sent in lengths.items() if not sent <= set(IN_LENGTHS)]
    assert not bad, "\n".join(bad)


def test_postgresql_reads_the_records_to_index_by_one_array_of_ids(app, api, repo):
    """However many: one statement (`= ANY`), not IN lists of up to 500 placeholders, which
    psycopg parsed again at each call."""
    engine = app.state.fonds.db.engine
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite takes IN lists")
    statements: list[str] = []
    record = lambda conn, cursor, sql, *rest: statements.append(sql)  # noqa: E731
    event.listen(engine, "before_cursor_execute", record)
    try:
        response = api.post(f"/repositories/{repo}/batch_imports", json=batch(repo, 80))
        assert response.status_code == 200, response.text
        found = search(api, f"/repositories/{repo}/search", q="Chunked", type=["accession"], page_size=250).json()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert found["total_hits"] == 7 * 80 + 3
    reads = [sql for sql in statements if re.match(r"SELECT accession\.id, .*\sFROM accession\s+WHERE", sql, re.S)]
    assert reads and all("accession.id = ANY (" in sql for sql in reads), reads[:3]
    assert all(len(re.findall(PLACEHOLDER, sql)) <= 3 for sql in reads)
    assert {doc["uri"] for doc in found["results"]} <= {f"/repositories/{repo}/accessions/{i}" for i in range(1, 1000)}


def test_connections_that_ran_bulk_work_are_closed_not_pooled(app, api, repo):
    """Their statement caches hold the bulk work's largest statements (SQLite; PostgreSQL keeps
    prepared statements in the server)."""
    engine = app.state.fonds.db.engine
    closed: list[object] = []
    record = lambda dbapi_connection: closed.append(dbapi_connection)  # noqa: E731
    event.listen(engine, "close_detached", record)
    try:
        response = api.post(f"/repositories/{repo}/batch_imports", json=batch(repo, 3))
        assert response.status_code == 200, response.text
        # Kept while imports keep coming, it is closed once they stop: now rather than 2 s later,
        # when the test would have stopped listening (it passed only when an index rebuild the new
        # app ran closed its connections meanwhile).
        app.state.fonds.db.close_idle_bulk(idle_seconds=0)
    finally:
        event.remove(engine, "close_detached", record)
    # SQLite: the import's connection (and those of an index rebuild the new app may be running).
    assert len(closed) >= 1 if engine.dialect.name == "sqlite" else closed == []
    assert api.get(f"/repositories/{repo}/accessions", params={"all_ids": "true"}).json()
