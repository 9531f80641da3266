"""Planner statistics after a bulk load: the tables a load wrote are analysed, so plans are sane
whatever the operator's autovacuum settings (PostgreSQL) and on SQLite, which never gathers them
by itself."""

from __future__ import annotations

from sqlalchemy import text

from fonds.storage.statistics import BULK_LOAD_RECORDS


def analysed_tables(app) -> set[str]:
    db = app.state.fonds.db
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
