"""The index is derived data: deleted, unreadable or built for other fields, it is rebuilt at
start-up; `fonds search-status` reports it."""

from __future__ import annotations

import logging
import shutil
import threading
import time
import warnings
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fonds.app import create_app
from fonds.cli import cli
from tests.factories import Api
from tests.search.helpers import accession, hits, wait_for_index_writer

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


def _restart(settings) -> TestClient:
    return TestClient(create_app(settings), raise_server_exceptions=False)


def _index_dir(settings):
    return settings.effective_index_dir


def _first_run(settings, title: str) -> tuple[int, str]:
    """Start, write a record, find it, stop; returns (repository id, record URI)."""
    with _restart(settings) as client:
        api = Api.login(client)
        repo = api.create_repository("MSS")
        uri = accession(api, repo, title)["uri"]
        assert hits(api, f"/repositories/{repo}/search", q=title.split()[0]) == [uri]
    return repo, uri


def test_a_deleted_index_directory_is_rebuilt_at_start(settings):
    repo, uri = _first_run(settings, "Survivor of the deletion")
    shutil.rmtree(_index_dir(settings))
    with _restart(settings) as client:
        assert hits(Api.login(client), f"/repositories/{repo}/search", q="survivor") == [uri]


def test_an_unreadable_index_is_rebuilt_at_start(settings):
    repo, uri = _first_run(settings, "Damaged but surviving")
    live = _index_dir(settings) / (_index_dir(settings) / "CURRENT").read_text()
    (live / "meta.json").write_text("not json")
    with _restart(settings) as client:
        assert hits(Api.login(client), f"/repositories/{repo}/search", q="damaged") == [uri]


def _delete_while_in_use(directory) -> None:
    """As an operator's `rm -rf` would: the indexer may be writing a file in it meanwhile
    ("Directory not empty"), so go on until it is gone."""
    for _ in range(100):
        shutil.rmtree(directory, ignore_errors=True)
        if not Path(directory).exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"{directory} could not be deleted")


def test_an_index_deleted_while_serving_is_rebuilt(api, repo, settings):
    uri = accession(api, repo, "Present before")["uri"]
    assert hits(api, f"/repositories/{repo}/search", q="present") == [uri]
    _delete_while_in_use(_index_dir(settings))
    later = accession(api, repo, "Present after")["uri"]
    assert set(hits(api, f"/repositories/{repo}/search", q="present")) == {uri, later}


def test_search_status_on_the_command_line(app, api, repo, settings, monkeypatch):
    accession(api, repo, "Counted")
    hits(api, f"/repositories/{repo}/search", q="counted")  # waits until it is indexed
    for name, value in (
        ("FONDS_DATA_DIR", settings.data_dir),
        ("FONDS_DATABASE_URL", settings.database_url),
        ("FONDS_ADMIN_PASSWORD", "x" * 12),
    ):
        if value:
            monkeypatch.setenv(name, str(value))
    result = CliRunner().invoke(cli, ["search-status"])
    assert result.exit_code == 0, result.output
    assert "Lag:               0 change(s)" in result.output
    assert "Applied sequence:" in result.output and "gen-" in result.output


def _cli(settings, monkeypatch, *args) -> str:
    for name, value in (
        ("FONDS_DATA_DIR", settings.data_dir),
        ("FONDS_DATABASE_URL", settings.database_url),
        ("FONDS_ADMIN_PASSWORD", "x" * 12),
    ):
        if value:
            monkeypatch.setenv(name, str(value))
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_an_index_restored_from_before_a_prune_is_rebuilt(settings, monkeypatch):
    repo, first = _first_run(settings, "Before the backup")
    backup = settings.data_dir / "index-backup"
    shutil.copytree(_index_dir(settings), backup)
    with _restart(settings) as client:
        api = Api.login(client)
        later = [accession(api, repo, f"After the backup {n}")["uri"] for n in (1, 2)]
        assert set(hits(api, f"/repositories/{repo}/search", q="backup")) == {first, *later}
    assert "Removed" in _cli(settings, monkeypatch, "search-prune")
    shutil.rmtree(_index_dir(settings))
    shutil.copytree(backup, _index_dir(settings))
    # The backup has not seen the later record and the log no longer holds it: it is rebuilt.
    with _restart(settings) as client:
        assert set(hits(Api.login(client), f"/repositories/{repo}/search", q="backup")) == {first, *later}


def _load_subjects(api, repo, word: str, count: int) -> set[str]:
    subjects = [
        {"jsonmodel_type": "subject", "uri": f"/subjects/import_{n}", "title": f"Loaded {word} {n}", "source": "local", "terms": []}
        for n in range(count)
    ]
    response = api.post(f"/repositories/{repo}/batch_imports", json=subjects)
    assert response.status_code == 200, response.text
    return {value[0] for value in response.json()[-1]["saved"].values()}


def test_a_backlog_larger_than_the_index_is_caught_up_by_rebuilding_it(api, repo, monkeypatch):
    """A bulk load into a small archive: the index is rebuilt (a new generation) rather than the
    changes applied one batch after another; a backlog smaller than the index is applied."""
    from fonds.search import indexer

    monkeypatch.setattr(indexer, "REBUILD_BACKLOG_MINIMUM", 20)
    wait_for_index_writer(api.get)
    before = api.get("/search/status").json()["generation"]
    loaded = _load_subjects(api, repo, "topic", 30)
    assert set(hits(api, "/search/subjects", q="loaded", page_size=50)) == loaded
    rebuilt = api.get("/search/status").json()
    assert rebuilt["generation"] != before and rebuilt["lag"] == 0
    later = accession(api, repo, "Loaded later")["uri"]
    assert hits(api, f"/repositories/{repo}/search", q="later") == [later]
    assert api.get("/search/status").json()["generation"] == rebuilt["generation"]


@pytest.mark.parametrize("loaded_meanwhile", [30, 2])
def test_a_rebuild_that_waited_for_imports_scans_again_only_when_more_changed_than_it_had_scanned(
    api, repo, monkeypatch, caplog, loaded_meanwhile
):
    """A rebuild waits between its batches while imports run. Had it kept the head it began at,
    every record loaded meanwhile would be indexed by its scan and then once more from the change
    log (a second full indexing after a bulk load); it starts over instead, from the new head,
    when more changed than it had scanned, and goes on when less did."""
    from fonds.search import indexer

    monkeypatch.setattr(indexer, "REBUILD_BACKLOG_MINIMUM", 20)
    monkeypatch.setattr(indexer, "BATCH", 10)
    built: Counter[str] = Counter()
    build = indexer.DocumentBuilder.build

    def counted_build(self, conn, uris):
        built.update(uris)
        return build(self, conn, uris)

    later: set[str] = set()
    wait = indexer.IndexerThread._wait_for_imports

    def load_once_ten_subjects_are_scanned(self):
        if not later and sum("/subjects/" in uri for uri in built) >= 10:
            later.update(_load_subjects(api, repo, "meanwhile", loaded_meanwhile))
            return True
        return wait(self)

    monkeypatch.setattr(indexer.DocumentBuilder, "build", counted_build)
    monkeypatch.setattr(indexer.IndexerThread, "_wait_for_imports", load_once_ten_subjects_are_scanned)
    caplog.set_level(logging.INFO, logger="fonds.search")
    # The load must be a backlog for the index: the indexer's first build, had it not ended
    # yet, would scan the subjects itself.
    wait_for_index_writer(api.get)
    first = _load_subjects(api, repo, "first", 30)
    assert sorted(hits(api, "/search/subjects", q="loaded", page_size=100)) == sorted(first | later)  # each once
    # Every change committed so far applied (the search waits for them), none indexed twice.
    afterwards = accession(api, repo, "Afterwards")["uri"]
    assert hits(api, f"/repositories/{repo}/search", q="afterwards") == [afterwards]
    assert len(later) == loaded_meanwhile
    if loaded_meanwhile > 10:  # started over: those scanned before the wait are read again
        assert all(built[uri] == 1 for uri in later) and max(built[uri] for uri in first) <= 2
        assert "rebuilding again" in caplog.text
    else:  # went on: those loaded meanwhile are applied again from the log, fewer than a new scan
        assert all(built[uri] == 1 for uri in first) and max(built[uri] for uri in later) <= 2
        assert "rebuilding again" not in caplog.text


def test_a_server_stopped_while_it_rebuilds_the_index_abandons_the_rebuild(settings, monkeypatch):
    """Stopping must not wait until a rebuild of a large archive ends: the rebuild stops at its
    next batch, publishes nothing, and the next start builds the index again."""
    from fonds.search import indexer

    with _restart(settings) as client:
        api = Api.login(client)
        repo = api.create_repository("MSS")
        uris = [accession(api, repo, f"Rebuilt record {n}")["uri"] for n in range(5)]
    shutil.rmtree(_index_dir(settings))
    monkeypatch.setattr(indexer, "BATCH", 1)
    batches, building, release = [], threading.Event(), threading.Event()
    build = indexer.DocumentBuilder.build

    def held_build(self, conn, wanted):
        batches.append(wanted)
        building.set()
        release.wait(30)
        return build(self, conn, wanted)

    monkeypatch.setattr(indexer.DocumentBuilder, "build", held_build)
    client = _restart(settings)
    client.__enter__()
    assert building.wait(30)
    thread = client.app.state.fonds.search.thread
    stopper = threading.Thread(target=client.__exit__, args=(None, None, None))
    stopper.start()
    assert thread.stopping.wait(30)
    release.set()
    stopper.join(60)
    assert not thread.is_alive() and len(batches) == 1
    assert not (_index_dir(settings) / "CURRENT").exists()
    monkeypatch.undo()
    with _restart(settings) as client:
        assert sorted(hits(Api.login(client), f"/repositories/{repo}/search", q="rebuilt", page_size=10)) == sorted(uris)
