"""Rows written many at a time (`insert_values`): on SQLite several rows go in one INSERT, in
statements of 2^k rows, as many as the connection's limit on parameters allows."""

from __future__ import annotations

import sqlite3

import pytest

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
        store.insert_links(conn, conn.info["fonds_tables"], links)
        found = conn.exec_driver_sql("SELECT source_id, path, target_id FROM record_link WHERE source_type = 'accession' ORDER BY id").all()
    assert [tuple(row) for row in found] == [(900 + n, f"subjects/{n}", n + 1) for n in range(101)]
