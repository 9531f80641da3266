"""Rows written many at a time (`insert_values`): on SQLite several rows go in one INSERT, in
statements of 2^k rows, as many as the connection's limit on parameters allows. A record's own
rows (`fetch`, `fetch_many`, `links_to`), read and written through the driver, hold what
SQLAlchemy's statements hold."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import select

from fonds.storage import links as link_table
from fonds.storage import records as store


@pytest.mark.parametrize("count", [1, 255, 256, 257, 615])
def test_an_import_of_any_size_stores_every_record_once_in_its_order(api, repo, count):
    body = [
        {"jsonmodel_type": "subject", "title": f"Subject {n}", "source": "local", "terms": [], "vocabulary": "/vocabularies/1"}
        for n in range(count)
    ]
    for n, record in enumerate(body):
        record["uri"] = f"/subjects/import_{n}"
    imported = api.post(f"/repositories/{repo}/batch_imports", json=body)
    assert imported.status_code == 200, imported.text
    saved = imported.json()[-1]["saved"]
    ids = [saved[f"/subjects/import_{n}"][1] for n in range(count)]
    assert ids == list(range(ids[0], ids[0] + count))
    sample = sorted({*ids[:: max(1, count // 25)], ids[-1]})
    stored = [
        s
        for start in range(0, len(sample), 9)
        for s in api.get("/subjects", params={"id_set": ",".join(map(str, sample[start : start + 9]))}).json()
    ]
    assert {(s["uri"], s["title"]) for s in stored} == {(f"/subjects/{i}", f"Subject {ids.index(i)}") for i in sample}
    assert api.get("/subjects", params={"page": 1, "page_size": 1}).json()["total"] == count


def test_rows_past_the_connections_parameter_limit_go_in_smaller_statements(app):
    db = app.state.fonds.db
    if db.kind != "sqlite":
        pytest.skip("SQLite's limit on parameters a statement")
    links = [("accession", 900 + n, ("subjects/*", f"subjects/{n}", "subject", n + 1)) for n in range(101)]
    with db.write() as conn:
        conn.connection.dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 50)  # 8 rows of 6 columns
        link_table.insert_links(conn, conn.info["fonds_tables"], links)
        found = conn.exec_driver_sql("SELECT source_id, path, target_id FROM record_link WHERE source_type = 'accession' ORDER BY id").all()
    assert [tuple(row) for row in found] == [(900 + n, f"subjects/{n}", n + 1) for n in range(101)]


def test_rows_read_through_the_driver_hold_what_sqlalchemy_reads(app, api, repo):
    subject = api.post(
        "/subjects", json={"jsonmodel_type": "subject", "title": "Ships", "source": "local", "terms": [], "vocabulary": "/vocabularies/1"}
    )
    body = {"jsonmodel_type": "accession", "title": "Logs", "id_0": "L1", "accession_date": "2020-01-01", "publish": True}
    accession = api.post(f"/repositories/{repo}/accessions", json={**body, "subjects": [{"ref": subject.json()["uri"]}]}).json()
    db = app.state.fonds.db
    with db.read() as conn:
        tables = conn.info["fonds_tables"]
        table, links = tables["accession"], tables["record_link"]
        expected = conn.execute(select(table).where(table.c.id == accession["id"])).one()
        found = store.fetch(conn, table, accession["id"], repo_id=repo)
        assert tuple(found) == tuple(expected)
        assert found._mapping == dict(expected._mapping)
        assert (found.create_time, found.lock_version, found.json) == (expected.create_time, 0, expected.json)
        assert isinstance(found.create_time, type(expected.create_time)) and isinstance(found.json, bytes)
        assert store.fetch(conn, table, accession["id"], repo_id=repo + 1) is None
        [many] = store.fetch_many(conn, table, [accession["id"], accession["id"] + 1000])
        assert tuple(many) == tuple(expected)
        assert [tuple(row) for row in store.fetch_many(conn, table, [accession["id"]], columns=("json", "id"))] == [
            (expected.json, expected.id)
        ]
        subject_id = subject.json()["id"]
        linked = link_table.links_to(conn, [("subject", subject_id), ("accession", accession["id"])])
        assert [tuple(row) for row in linked] == [
            tuple(row) for row in conn.execute(select(links).where(links.c.target_type == "subject", links.c.target_id == subject_id))
        ]
        assert (linked[0].source_type, linked[0].source_id) == ("accession", accession["id"])
