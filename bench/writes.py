"""The write path alone: creates with concurrent clients and a bulk load through batch_imports.

`python -m bench.writes [--database-url URL] [--clients 8] [--duration 5] [--records 20000]`
starts `fonds serve` on a fresh data directory, measures creates of an accession (req/s and the
server's CPU ms per create) and a bulk load of a resource with its archival objects, subjects
and accessions through `POST /repositories/:id/batch_imports` (records/s, CPU ms per record),
prints the figures and stops the server. Faster to run than the whole bench when working on
writes; the whole bench (`python -m bench`) publishes the figures."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

from bench import environment, processes
from bench.http import Connection

HOST = "127.0.0.1"


SOURCE = Path(__file__).resolve().parent.parent / "src"


def start_server(data_dir: Path, database_url: str | None, password: str, source: Path = SOURCE) -> tuple[object, int]:
    port = processes.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FONDS_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(source), env.get("PYTHONPATH")) if p)
    env.update(FONDS_DATA_DIR=str(data_dir), FONDS_ADMIN_PASSWORD=password)
    if database_url:
        env["FONDS_DATABASE_URL"] = database_url
    command = [sys.executable, "-m", "fonds", "serve", "--host", HOST, "--port", str(port)]
    server = processes.start(command, env=env, log_path=data_dir.parent / "server.log", probe_url=f"http://{HOST}:{port}/version")
    return server, port


def bulk_records(count: int, prefix: str) -> list[dict]:
    """A resource holding archival objects three levels deep, subjects they link to, accessions."""
    resource = f"/repositories/R/resources/{prefix}r"
    records = [{"jsonmodel_type": "resource", "uri": resource, "title": f"{prefix} fonds", "id_0": prefix}]
    subjects = [f"/subjects/{prefix}s{i}" for i in range(max(1, count // 50))]
    records += [
        {"jsonmodel_type": "subject", "uri": uri, "source": "local", "terms": [{"term": f"{prefix} topic {i}", "term_type": "topical"}]}
        for i, uri in enumerate(subjects)
    ]
    nodes = (count - len(records)) * 3 // 4
    for i in range(nodes):
        parent = f"/repositories/R/archival_objects/{prefix}a{(i - 1) // 10}" if i >= 10 else None
        record = {
            "jsonmodel_type": "archival_object",
            "uri": f"/repositories/R/archival_objects/{prefix}a{i}",
            "title": f"Item {i}",
            "level": "file",
            "resource": {"ref": resource},
            "dates": [{"date_type": "single", "label": "creation", "begin": str(1900 + i % 100)}],
            "subjects": [{"ref": subjects[i % len(subjects)]}],
        }
        if parent:
            record["parent"] = {"ref": parent}
        records.append(record)
    while len(records) < count:
        records.append({"jsonmodel_type": "accession", "title": f"Accession {len(records)}", "id_0": f"{prefix}-{len(records)}"})
    return records


def repo_scoped(records: list[dict], repo_id: int) -> list[dict]:
    return orjson.loads(orjson.dumps(records).replace(b"/repositories/R/", f"/repositories/{repo_id}/".encode()))


async def drive_creates(port: int, token: str, repo_id: int, clients: int, duration: float) -> int:
    deadline, done, errors = time.monotonic() + duration, 0, 0

    async def worker(n: int) -> None:
        nonlocal done, errors
        conn = Connection(HOST, port, {"X-ArchivesSpace-Session": token})
        i = 0
        while time.monotonic() < deadline:
            body = orjson.dumps({"jsonmodel_type": "accession", "title": f"Created {n}-{i}", "id_0": f"c{n}-{i}-{secrets.token_hex(3)}"})
            status, _ = await conn.request("POST", f"/repositories/{repo_id}/accessions", body)
            done, errors, i = done + (status == 200), errors + (status != 200), i + 1
        await conn.close()

    await asyncio.gather(*(worker(n) for n in range(clients)))
    if errors:
        print(f"  {errors} creates failed", file=sys.stderr)
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=5)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=5_000, help="records per batch_imports request")
    parser.add_argument("--source", type=Path, default=SOURCE, help="the fonds source tree the server runs (to compare commits)")
    options = parser.parse_args()
    processes.install_cleanup()
    password = secrets.token_urlsafe(16)
    # PostgreSQL: a fresh database for the run (environment.database), dropped afterwards.
    with tempfile.TemporaryDirectory(prefix="fonds-writes-") as tmp, environment.database(options.database_url, Path(tmp)) as database_url:
        server, port = start_server(Path(tmp) / "data", database_url, password, options.source)
        base = f"http://{HOST}:{port}"
        token = httpx.post(f"{base}/users/admin/login", data={"password": password}).json()["session"]
        headers = {"X-ArchivesSpace-Session": token}
        repo = httpx.post(f"{base}/repositories", headers=headers, json={"jsonmodel_type": "repository", "repo_code": "W", "name": "W"})
        repo_id = repo.json()["id"]
        cpu = processes.cpu_seconds(server.pid)
        started = time.monotonic()
        created = asyncio.run(drive_creates(port, token, repo_id, options.clients, options.duration))
        elapsed, cpu = time.monotonic() - started, processes.cpu_seconds(server.pid) - cpu
        print(
            f"creates: {created / elapsed:,.0f}/s with {options.clients} clients, server CPU {cpu * 1000 / max(created, 1):.2f} ms/create"
        )
        time.sleep(2)  # let the indexer catch up before the bulk load is timed
        loaded, cpu, started = 0, processes.cpu_seconds(server.pid), time.monotonic()
        client = httpx.Client(base_url=base, headers=headers, timeout=600)
        for n in range(0, options.records, options.batch):
            batch = repo_scoped(bulk_records(min(options.batch, options.records - n), f"b{n}"), repo_id)
            response = client.post(f"/repositories/{repo_id}/batch_imports", content=orjson.dumps(batch))
            response.raise_for_status()
            loaded += len(batch)
        elapsed, cpu = time.monotonic() - started, processes.cpu_seconds(server.pid) - cpu
        print(
            f"bulk load: {loaded:,} records in {elapsed:.1f} s = {loaded / elapsed:,.0f} records/s, server CPU {cpu * 1e6 / loaded:.0f} µs/record"
        )
        processes.stop(server)


if __name__ == "__main__":
    main()
