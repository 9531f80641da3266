"""The database handle (fonds.storage.db): what the pool hands out."""

from __future__ import annotations

import fcntl
import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import psycopg
import pytest
from sqlalchemy.exc import IntegrityError

from fonds.storage.db import BULK_CACHE_KIB, BULK_IDLE_SECONDS, sqlite_file

PG_URL = os.environ.get("FONDS_TEST_DATABASE_URL")


def backend_pids(db, count: int) -> list[int]:
    """The server processes of `count` pooled connections (checked out at once, then returned)."""
    with ExitStack() as stack:
        connections = [stack.enter_context(db.engine.connect()) for _ in range(count)]
        return [conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one() for conn in connections]


def terminate(url: str, pids: list[int]) -> None:
    """End these server processes, as a restart or an idle-session timeout would, and wait until they are gone."""
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (pids,))
        deadline = time.monotonic() + 10
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)).fetchone()[0]:
            assert time.monotonic() < deadline, "the terminated connections did not go"
            time.sleep(0.05)


@pytest.mark.skipif(not PG_URL, reason="PostgreSQL: a connection the server closed")
def test_connections_the_server_closed_are_replaced_before_use(app, api, repo):
    db = app.state.fonds.db
    for n in range(3):
        pids = backend_pids(db, 3)
        terminate(db.url, pids)
        # Each request checks a connection out of the pool, whose idle ones are all gone.
        status = api.get("/search/status")
        assert status.status_code == 200, status.text
        created = api.post(f"/repositories/{repo}/accessions", json={"jsonmodel_type": "accession", "title": f"After {n}", "id_0": str(n)})
        assert created.status_code == 200, created.text
        record = api.get(created.json()["uri"]).json()
        terminate(db.url, backend_pids(db, 3))
        updated = api.post(record["uri"], json={**record, "title": f"Changed {n}"})
        assert updated.status_code == 200, updated.text
        assert api.get(record["uri"]).json()["title"] == f"Changed {n}"
        assert set(backend_pids(db, 3)).isdisjoint(pids)


def sqlite_db(app):
    db = app.state.fonds.db
    if db.kind != "sqlite":
        pytest.skip("SQLite: bulk writes have a connection of their own")
    return db


def test_bulk_writes_share_one_connection_with_a_large_cache_until_it_is_idle(app):
    db = sqlite_db(app)
    db.close_idle_bulk(idle_seconds=0)
    with db.bulk_write() as conn:
        first = conn.connection.dbapi_connection
        assert conn.exec_driver_sql("PRAGMA cache_size").scalar() == -BULK_CACHE_KIB
    with db.bulk_write() as conn:
        assert conn.connection.dbapi_connection is first
    assert not db.close_idle_bulk(idle_seconds=60)  # just used
    assert db.bulk_connection_open
    assert db.close_idle_bulk(idle_seconds=0)
    assert not db.bulk_connection_open
    with db.bulk_write() as conn:
        assert conn.connection.dbapi_connection is not first


def test_a_failed_bulk_write_is_rolled_back_and_its_connection_let_go(app):
    db = sqlite_db(app)
    with db.bulk_write() as conn:
        before = conn.exec_driver_sql("SELECT count(*) FROM change_log").scalar()
    with pytest.raises(RuntimeError), db.bulk_write() as conn:
        conn.exec_driver_sql(
            "INSERT INTO change_log (record_type, record_id, uri, op, at) VALUES ('x', 1, '/x/1', 'created', '2026-01-01')"
        )
        raise RuntimeError("refused midway")
    assert not db.bulk_connection_open
    with db.bulk_write() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM change_log").scalar() == before


def test_writes_take_turns_on_one_connection_kept_through_refusals(app):
    db = sqlite_db(app)
    with db.write() as conn:
        first = conn.connection.dbapi_connection
        before = conn.exec_driver_sql("SELECT count(*) FROM change_log").scalar()
    with pytest.raises(RuntimeError), db.write() as conn:
        assert conn.connection.dbapi_connection is first
        conn.exec_driver_sql(
            "INSERT INTO change_log (record_type, record_id, uri, op, at) VALUES ('x', 1, '/x/1', 'created', '2026-01-01')"
        )
        raise RuntimeError("refused midway")
    with db.write() as conn:
        assert conn.connection.dbapi_connection is first  # rolled back cleanly: kept
        assert conn.exec_driver_sql("SELECT count(*) FROM change_log").scalar() == before


def test_a_write_whose_commit_fails_leaves_nothing_to_the_next(app):
    db = sqlite_db(app)
    orphan = (
        "INSERT INTO enumeration_value (enumeration_id, value, position, suppressed, readonly, lock_version, create_time,"
        " system_mtime, user_mtime) VALUES (999999, 'orphan', 0, 0, 0, 0, '2026-01-01', '2026-01-01', '2026-01-01')"
    )
    with pytest.raises(IntegrityError), db.write() as conn:
        conn.exec_driver_sql("PRAGMA defer_foreign_keys=ON")  # the foreign key is checked by COMMIT
        conn.exec_driver_sql(orphan)
    with db.write() as conn:
        assert not conn.connection.dbapi_connection.in_transaction or conn.in_transaction()
        assert conn.exec_driver_sql("SELECT count(*) FROM enumeration_value WHERE value = 'orphan'").scalar() == 0
        conn.exec_driver_sql(
            "INSERT INTO change_log (record_type, record_id, uri, op, at) VALUES ('x', 2, '/x/2', 'created', '2026-01-01')"
        )
    with db.write() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM change_log WHERE uri = '/x/2'").scalar() == 1


def test_the_bulk_connection_is_closed_once_imports_stop(app, api, repo):
    db = sqlite_db(app)
    records = [
        {"jsonmodel_type": "subject", "uri": f"/subjects/import_{n}", "title": f"T{n}", "source": "local", "terms": []} for n in range(3)
    ]
    response = api.post(f"/repositories/{repo}/batch_imports", json=records)
    assert response.status_code == 200, response.text
    assert db.bulk_connection_open
    deadline = time.monotonic() + BULK_IDLE_SECONDS + 5
    while db.bulk_connection_open:
        assert time.monotonic() < deadline, "the bulk connection stayed open after the imports stopped"
        time.sleep(0.05)


def test_writers_to_a_sqlite_file_take_turns_by_a_lock_beside_it(app, api, repo):
    """Another process holding the turn (here: the lock file taken through another open file)
    makes a write wait until it lets go, and a session's touch (`write_if_free`) skip at once."""
    db = app.state.fonds.db
    path = sqlite_file(db.url)
    if path is None:
        pytest.skip("SQLite on a file")
    other = os.open(f"{path}-write.lock", os.O_RDWR)
    fcntl.flock(other, fcntl.LOCK_EX)
    try:
        with ThreadPoolExecutor(1) as pool:
            created = pool.submit(api.create, "/subjects", {"jsonmodel_type": "subject", "title": "Waited", "source": "local", "terms": []})
            time.sleep(0.5)
            assert not created.done()
            with db.write_if_free() as conn:
                assert conn is None
            fcntl.flock(other, fcntl.LOCK_UN)
            uri = created.result(timeout=10)["uri"]
    finally:
        os.close(other)
    assert api.get(uri).json()["title"] == "Waited"
    with db.write_if_free() as conn:
        assert conn is not None
