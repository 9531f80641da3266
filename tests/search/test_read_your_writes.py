"""A client finds what it has just written in its very next search, also with many writers at
once; when the index cannot catch up in time the answer says so in a header."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from fonds.api.search import BEHIND_HEADER
from fonds.search.engine import FAULT_ENV
from tests.factories import Api, new_client
from tests.records.helpers import read
from tests.search.helpers import accession, hits, search, wait_for_index_writer

WRITERS = 8
RECORDS_EACH = 4


@pytest.mark.parametrize("settings_overrides", [{"search_wait_seconds": 60.0}])
def test_every_write_is_found_by_the_next_search_under_concurrent_writers(api, repo):
    # Logged in one after another: concurrent logins of one user beyond the throttle's allowance
    # are refused by design (each reserves a password check before it is made).
    writers = [Api.login(new_client(api.client.app)) for _ in range(WRITERS)]

    def writer(number: int) -> list[str]:
        me = writers[number]
        missing = []
        for n in range(RECORDS_EACH):
            word = f"writer{number}record{n}"
            created = accession(me, repo, f"Record {word}")["uri"]
            found = search(me, f"/repositories/{repo}/search", q=word)
            if [d["uri"] for d in found.json()["results"]] != [created] or BEHIND_HEADER in found.headers:
                missing.append(word)
            # An update is found at once too, and the old words are gone.
            record = read(me, created)
            record["title"] = f"Renamed {word}"
            me.post(created, json=record)
            if hits(me, f"/repositories/{repo}/search", q=f"renamed AND {word}") != [created]:
                missing.append(f"renamed {word}")
        return missing

    with ThreadPoolExecutor(WRITERS) as pool:
        missing = [word for result in pool.map(writer, range(WRITERS)) for word in result]
    assert missing == []
    assert search(api, f"/repositories/{repo}/search", **{"type[]": ["accession"]}).json()["total_hits"] == WRITERS * RECORDS_EACH


def test_a_delete_is_seen_by_the_next_search(api, repo):
    uri = accession(api, repo, "Ephemeral")["uri"]
    assert hits(api, f"/repositories/{repo}/search", q="ephemeral") == [uri]
    assert api.delete(uri).status_code == 200
    assert hits(api, f"/repositories/{repo}/search", q="ephemeral") == []


@pytest.fixture
def stalled_index(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "index-stalled")


@pytest.mark.parametrize("settings_overrides", [{"search_wait_seconds": 0.2}])
def test_a_search_past_the_wait_says_the_index_is_behind(stalled_index, api, repo):
    wait_for_index_writer(api.get)
    accession(api, repo, "Not yet indexed")
    response = search(api, f"/repositories/{repo}/search", q="indexed")
    assert response.status_code == 200
    assert response.json()["total_hits"] == 0
    assert int(response.headers[BEHIND_HEADER]) >= 1


@pytest.mark.parametrize("settings_overrides", [{"search_wait_seconds": 1.0}])
def test_a_batch_import_is_found_by_the_next_search(api, repo):
    """The indexer leaves a stream of imports a quiet period (longer than this search may wait)
    before it indexes them; a search waiting for them does not wait for it."""
    wait_for_index_writer(api.get)  # this search's short wait is for the imports, not the first build
    base = f"/repositories/{repo}"
    records = [
        {"jsonmodel_type": "accession", "title": f"Imported ledger{n}", "id_0": f"IMP-{n}", "uri": f"{base}/accessions/import_{n}"}
        for n in range(3)
    ]
    response = api.post(f"{base}/batch_imports", json=records)
    assert response.status_code == 200, response.text
    created = sorted(uri for uri, _ in response.json()[-1]["saved"].values())
    found = search(api, f"{base}/search", q="ledger0 OR ledger1 OR ledger2")
    assert BEHIND_HEADER not in found.headers
    assert sorted(d["uri"] for d in found.json()["results"]) == created
