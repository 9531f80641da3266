"""The index with a real `fonds serve`: several workers with one writer, `fonds reindex` while
serving, a crash between the database commit and the index commit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx

from tests.search.helpers import wait_for_index_writer
from tests.test_cli import SERVE_PASSWORD, free_port, serve_env, stop, wait_until_up


class Server:
    def __init__(self, tmp_path, settings, *, workers: int = 1, **env):
        self.data_dir = tmp_path / "serve-data"
        self.env = {**serve_env(settings, self.data_dir), **env}
        self.port, self.log_path = free_port(), tmp_path / f"serve-{len(list(tmp_path.glob('serve-*.log')))}.log"
        self.base = f"http://127.0.0.1:{self.port}"
        with open(self.log_path, "wb") as log:
            command = [sys.executable, "-m", "fonds", "serve", "--port", str(self.port), "--workers", str(workers)]
            self.process = subprocess.Popen(command, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_until_up(self.process, self.base, self.log_path)
        self.http = httpx.Client(base_url=self.base, timeout=30)
        token = self.http.post("/users/admin/login", data={"password": SERVE_PASSWORD}).json()["session"]
        self.http.headers["X-ArchivesSpace-Session"] = token

    def kill(self) -> None:
        """SIGKILL the whole process group (uvicorn and its workers): no shutdown code runs."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=15)
        self.http.close()

    def stop(self) -> None:
        self.http.close()
        stop(self.process)

    def repository(self, code: str) -> int:
        return self.http.post("/repositories", json={"jsonmodel_type": "repository", "repo_code": code, "name": code}).json()["id"]

    def accession(self, repo: int, title: str) -> str:
        response = self.http.post(f"/repositories/{repo}/accessions", json={"jsonmodel_type": "accession", "title": title})
        assert response.status_code == 200, response.text
        return response.json()["uri"]

    def search(self, repo: int, q: str) -> httpx.Response:
        response = self.http.get(f"/repositories/{repo}/search", params={"q": q, "page": 1})
        assert response.status_code == 200, response.text
        return response

    def found(self, repo: int, q: str) -> list[str]:
        return [doc["uri"] for doc in self.search(repo, q).json()["results"]]


def test_workers_share_one_writer_and_reindex_runs_while_serving(tmp_path, settings):
    server = Server(tmp_path, settings, workers=2)
    try:
        repo = server.repository("MSS")
        # Each request may land on either worker: every write is found by the next search anyway.
        for n in range(3):
            uri = server.accession(repo, f"Worker test {n} alpha{n}")
            assert server.found(repo, f"alpha{n}") == [uri]
        before = server.http.get("/search/status").json()
        reindex = subprocess.Popen(
            [sys.executable, "-m", "fonds", "reindex"], env=server.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        # Searches keep answering while the new generation is built.
        while reindex.poll() is None:
            assert server.search(repo, "worker").json()["total_hits"] == 3
        output = reindex.stdout.read().decode()
        assert reindex.returncode == 0, output
        assert "Search index rebuilt" in output
        after_uri = server.accession(repo, "Written after the rebuild omega")
        assert server.found(repo, "omega") == [after_uri]
        assert server.search(repo, "worker").json()["total_hits"] == 3
        status = server.http.get("/search/status").json()
        assert status["generation"] != before["generation"] and status["lag"] == 0
        generations = [p.name for p in (server.data_dir / "index").glob("gen-*")]
        assert generations == [status["generation"]]  # the old one was removed
    finally:
        server.stop()


def test_a_crash_before_the_index_commit_heals_at_start(tmp_path, settings):
    # The first server's indexer applies nothing: each write is committed to the database and
    # acknowledged, but never reaches the index before the process is killed.
    server = Server(tmp_path, settings, FONDS_FAULT="index-stalled", FONDS_SEARCH_WAIT_SECONDS="0.2")
    try:
        repo = server.repository("MSS")
        wait_for_index_writer(server.http.get)
        uri = server.accession(repo, "Acknowledged before the crash")
        behind = server.search(repo, "acknowledged")
        assert behind.json()["total_hits"] == 0 and "X-Fonds-Index-Behind" in behind.headers
    finally:
        server.kill()
    server = Server(tmp_path, settings)
    try:
        assert server.found(repo, "acknowledged") == [uri]
    finally:
        server.stop()
