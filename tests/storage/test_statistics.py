"""Planner statistics after a bulk load: the tables a load wrote are analysed, so plans are sane
whatever the operator's autovacuum settings (PostgreSQL) and on SQLite, which never gathers them
by itself."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import text

from fonds.records.imports import BULK_IMPORTS
from fonds.storage.statistics import BULK_LOAD_RECORDS, wait_until_analysed
from tests.factories import Api, new_client


def analysed_tables(app) -> set[str]:
    db = app.state.fonds.db
    assert wait_until_analysed(db, 60)  # a request's load is analysed in the background
    with db.engine.connect() as conn:
        if db.kind == "postgresql":
            query = "SELECT relname FROM pg_stat_user_tables WHERE schemaname = current_schema() AND (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)"
        elif conn.execute(text("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")).first() is None:
            return set()  # the first ANALYZE creates it
        else:
            query = "SELECT DISTINCT tbl FROM sqlite_stat1"
        return set(conn.execute(text(query)).scalars())


def import_accessions(api, repo: int, count: int, prefix: str) -> None:
    records = [{"jsonmodel_type": "accession", "title": f"{prefix} {n}", "id_0": f"{prefix}-{n}"} for n in range(count)]
    response = api.post(f"/repositories/{repo}/batch_imports", json=records)
    assert response.status_code == 200, response.text


def test_a_bulk_load_leaves_the_tables_it_wrote_analysed(app, api, repo):
    import_accessions(api, repo, BULK_LOAD_RECORDS - 1, "small")
    assert "accession" not in analysed_tables(app)  # a small load leaves statistics as they were
    import_accessions(api, repo, BULK_LOAD_RECORDS, "bulk")
    assert {"accession", "change_log"} <= analysed_tables(app)


def vacuumed_tables(app) -> set[str]:
    db = app.state.fonds.db
    assert wait_until_analysed(db, 60)
    with db.engine.connect() as conn:
        query = "SELECT relname FROM pg_stat_user_tables WHERE schemaname = current_schema() AND last_vacuum IS NOT NULL"
        return set(conn.execute(text(query)).scalars())


def test_a_bulk_load_leaves_the_tables_it_wrote_vacuumed_on_postgresql(app, api, repo):
    # Their pages marked all-visible: an index-only scan (`all_ids`) then reads no table row.
    if app.state.fonds.db.kind != "postgresql":
        pytest.skip("SQLite keeps no visibility map")
    import_accessions(api, repo, BULK_LOAD_RECORDS - 1, "small")
    assert "accession" not in vacuumed_tables(app)
    import_accessions(api, repo, BULK_LOAD_RECORDS, "bulk")
    assert {"accession", "change_log"} <= vacuumed_tables(app)
    response = api.get(f"/repositories/{repo}/accessions", params={"all_ids": "true"})
    assert len(response.json()) == 2 * BULK_LOAD_RECORDS - 1


def accession_statistics(app):
    assert wait_until_analysed(app.state.fonds.db, 60)
    with app.state.fonds.db.engine.connect() as conn:
        return sorted(conn.execute(text("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'accession'")).all())


def test_a_table_is_analysed_again_once_a_tenth_of_it_and_a_bulk_load_more_changed(app, api, repo):
    if app.state.fonds.db.kind == "postgresql":
        pytest.skip("PostgreSQL's own change counts decide, and reach pg_stat_user_tables up to seconds late")
    import_accessions(api, repo, BULK_LOAD_RECORDS, "first")
    analysed = accession_statistics(app)
    import_accessions(api, repo, BULK_LOAD_RECORDS, "second")  # fewer than a tenth of the table and a load more
    assert accession_statistics(app) == analysed
    import_accessions(api, repo, BULK_LOAD_RECORDS, "third")
    assert accession_statistics(app) != analysed


def test_concurrent_bulk_loads_all_succeed_while_they_analyse(api, repo):
    # Each load analyses the tables it wrote after committing, while the others keep writing.
    clients = [Api(new_client(api.client.app), api.token) for _ in range(3)]
    for client in clients:
        client.client.headers["X-ArchivesSpace-Session"] = api.token

    def load(writer: int) -> list[int]:
        statuses = []
        for n in range(3):
            records = [{"jsonmodel_type": "accession", "title": "t", "id_0": f"cc-{writer}-{n}-{i}"} for i in range(BULK_LOAD_RECORDS)]
            statuses.append(clients[writer].post(f"/repositories/{repo}/batch_imports", json=records).status_code)
        return statuses

    with ThreadPoolExecutor(len(clients)) as pool:
        results = list(pool.map(load, range(len(clients))))
    assert results == [[200] * 3] * len(clients)
    found = api.get(f"/repositories/{repo}/accessions", params={"page": 1, "page_size": 1}).json()["total"]
    assert found == 9 * BULK_LOAD_RECORDS


def test_a_bulk_load_is_analysed_once_the_imports_stop(app, api, repo):
    # Analysing after every request of a stream of imports spends the database's CPU on
    # statistics the next analysis replaces: they wait until no import has run for a moment.
    with BULK_IMPORTS.one():  # another import, still running
        import_accessions(api, repo, BULK_LOAD_RECORDS, "streamed")
        assert not wait_until_analysed(app.state.fonds.db, BULK_IMPORTS.QUIET_SECONDS + 1)
    assert "accession" in analysed_tables(app)
