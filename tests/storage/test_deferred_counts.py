"""On SQLite, the rows of a bulk write are counted grouped once they are in (storage/
deferred_counts.py), not one at a time by the insert triggers: the record counts and sibling
bands stay equal to a recount, through imports written, refused and followed by single writes."""

from __future__ import annotations

from sqlalchemy import text

from fonds.storage import counts, deferred_counts
from tests.api.test_batch_imports import collection
from tests.records.test_tree_sibling_bands import check_bands

# Fewer than LEAST_ROWS components, then many, so both the triggers and the grouped counts run.
FEW, MANY = deferred_counts.LEAST_ROWS - 4, 3 * deferred_counts.LEAST_ROWS


def check_counts(app) -> None:
    recount = """SELECT '{table}', COALESCE(repo_id, 0), id / {block}, count(*) FROM "{table}" GROUP BY 2, 3
        UNION ALL SELECT '{table}', COALESCE(repo_id, 0), {total}, count(*) FROM "{table}" GROUP BY 2"""
    with app.state.fonds.db.engine.connect() as conn:
        kept = {tuple(row[:3]): row[3] for row in conn.execute(text("SELECT * FROM record_bucket WHERE n != 0"))}
        counted = {}
        for table in ("accession", "subject", "resource", "archival_object"):
            rows = conn.execute(text(recount.format(table=table, block=counts.BLOCK, total=counts.TOTAL)))
            counted.update((tuple(row[:3]), row[3]) for row in rows)
        assert conn.execute(text("SELECT count(*) FROM counting_deferred")).scalar_one() == 0
    assert {key: n for key, n in kept.items() if key[0] in ("accession", "subject", "resource", "archival_object")} == counted


def accessions(repo: int, tag: str, n: int) -> list[dict]:
    return [
        {"jsonmodel_type": "accession", "uri": f"/repositories/{repo}/accessions/{tag}{i}", "title": f"{tag} {i}", "id_0": f"{tag}-{i}"}
        for i in range(n)
    ]


def total(api, path: str) -> int:
    return api.get(path, params={"page": 1, "page_size": 10}).json()["total"]


def test_imports_large_and_small_keep_the_counts_and_bands_equal_to_a_recount(app, api, repo):
    for tag, n in (("few", FEW), ("many", MANY)):
        response = api.post(f"/repositories/{repo}/batch_imports", json=collection(repo, tag, n) + accessions(repo, tag, n))
        assert response.status_code == 200, response.text
    check_counts(app)
    check_bands(app)
    assert total(api, f"/repositories/{repo}/accessions") == FEW + MANY
    assert total(api, f"/repositories/{repo}/archival_objects") == FEW + MANY
    assert total(api, "/subjects") == 2


def test_an_import_refused_as_its_rows_go_in_leaves_the_counts_as_they_were_and_the_next_writes_counted(app, api, repo):
    assert api.post(f"/repositories/{repo}/batch_imports", json=accessions(repo, "a", MANY)).status_code == 200
    # The last accession takes the identifier of one stored: refused by the unique constraint as
    # the rows are inserted, after the rows before it went in.
    clash = accessions(repo, "b", MANY)
    clash[-1]["id_0"] = "a-0"
    response = api.post(f"/repositories/{repo}/batch_imports", json=clash)
    assert response.status_code == 400, response.text
    assert "id_0" in response.text
    check_counts(app)
    assert total(api, f"/repositories/{repo}/accessions") == MANY
    one = {"jsonmodel_type": "accession", "title": "One more", "id_0": "c-0"}
    assert api.post(f"/repositories/{repo}/accessions", json=one).status_code == 200
    check_counts(app)
    assert total(api, f"/repositories/{repo}/accessions") == MANY + 1
