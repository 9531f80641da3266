"""The database handle (fonds.storage.db): what the pool hands out."""

from __future__ import annotations

import os
import time
from contextlib import ExitStack

import psycopg
import pytest

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
