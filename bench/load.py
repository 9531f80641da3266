"""Loading the generated archive through the fastest route the server offers.

1. `POST /repositories/<id>/batch_imports` (ArchivesSpace's format: a JSON array of records
   referring to each other by temporary URIs); each unit goes in chunks, and refs to records
   of earlier chunks are rewritten to the URIs the server reported for them.
2. Else, the batch children routes (`POST …/resources/<id>/children`,
   `…/archival_objects/<id>/children`) for the leaves of each tree, which need no URI back,
   and concurrent plain creates for everything else, depth by depth.
3. Else, concurrent plain creates only."""

from __future__ import annotations

import asyncio
import pickle
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from bench.http import Connection

CHUNK = 2_000
CHILDREN_CHUNK = 1_000
# batch_imports requests in flight at once: the client builds the next while the server works,
# and the server validates the next ones (in a process of their own) while it writes one. With
# 2, its writes waited between two requests for the next one's validation, which begins only
# once the request before is answered (60,000 records on SQLite: 9,060/9,384 records/s with 2,
# 9,867/9,283 with 3; a server validating in its own process, 7,700-8,350 with 2, 7,866 with 3).
IN_FLIGHT = 3
# Chunks read ahead of those sent, at most: a chunk waiting for an earlier one's answer lets the
# ones after it go.
LOOKAHEAD = 16


class LoadError(RuntimeError):
    pass


def rewrite(value, mapping: dict[str, str]):
    """The record with every temporary URI it refers to replaced by the real one, where known."""
    if isinstance(value, dict):
        return {key: rewrite(item, mapping) for key, item in value.items()}
    if isinstance(value, list):
        return [rewrite(item, mapping) for item in value]
    if isinstance(value, str):
        return mapping.get(value, value)
    return value


# A ref in records serialised by orjson: `"ref":"<uri>"` (a quote inside a JSON string is escaped).
_REF = re.compile(rb'"ref":"((?:[^"\\]|\\.)*)"')


def refs_replaced(serialised: bytes, mapping: dict[str, str]) -> bytes:
    """Records serialised by orjson with every temporary URI of `mapping` they refer to replaced
    by the real one: on the bytes, as walking every value of a million records made the client,
    not the server, a good part of a bulk load's time (and each ref is looked up as it is
    serialised: decoding each cost the client ~3 µs a record). Split at each ref rather than
    matched (`_REF`, a call a match): 2.0 µs a record against 7.6, on the client sharing the server's cores."""
    replacements = {orjson.dumps(temporary)[1:-1]: orjson.dumps(real)[1:-1] for temporary, real in mapping.items()}
    parts = serialised.split(_REF_START)
    found = replacements.get
    for index in range(1, len(parts)):
        part = parts[index]
        end = part.index(b'"')
        if part[end - 1] == _BACKSLASH:  # a quote or backslash escaped in a URI: matched, not split
            return _REF.sub(lambda match: _ref(replacements.get(match.group(1), match.group(1))), serialised)
        real = found(part[:end])
        if real is not None:
            parts[index] = real + part[end:]
    return _REF_START.join(parts)


_REF_START = b'"ref":"'
_BACKSLASH = ord("\\")


def _ref(uri: bytes) -> bytes:
    return _REF_START + uri + b'"'


def saved_uris(body) -> dict[str, str]:
    """The temporary-to-real URI map of a batch import response, wherever it sits in it
    (ArchivesSpace streams status messages ending in {"saved": {temp: [uri, id]}})."""
    found: dict[str, str] = {}
    if isinstance(body, list):
        for item in body:
            found.update(saved_uris(item))
    elif isinstance(body, dict):
        for key, value in body.items():
            if key == "saved" and isinstance(value, dict):
                found.update({temp: (real[0] if isinstance(real, list) else real) for temp, real in value.items()})
            elif isinstance(value, list | dict):
                found.update(saved_uris(value))
    return found


def plain(record: dict, mapping: dict[str, str]) -> dict:
    return {key: value for key, value in rewrite(record, mapping).items() if key != "uri"}


def collection_of(temp_uri: str) -> str:
    return temp_uri.rsplit("/", 1)[0]


class Loader:
    def __init__(self, host: str, port: int, token: str, routes: set[str], clients: int):
        self.host, self.port, self.token, self.routes, self.clients = host, port, token, routes, clients
        self.mapping: dict[str, str] = {}
        self.loaded = 0

    @property
    def path(self) -> str:
        if "POST /repositories/{repo_id}/batch_imports" in self.routes:
            return "batch_imports"
        if "POST /repositories/{repo_id}/archival_objects/{id}/children" in self.routes:
            return "children"
        return "creates"

    def connection(self) -> Connection:
        return Connection(self.host, self.port, {"X-ArchivesSpace-Session": self.token})

    async def tree_aware(self, unit: list[dict]) -> None:
        """Roots and inner nodes by plain creates, depth by depth; leaves by the children route."""
        parents = {r["parent"]["ref"] for r in unit if "parent" in r}
        use_children = self.path == "children"
        depth: dict[str, int] = {}
        waves: dict[int, list[dict]] = defaultdict(list)
        leaves: dict[str, list[dict]] = defaultdict(list)
        for record in unit:
            above = record.get("parent", record.get("resource", {})).get("ref")
            depth[record["uri"]] = depth.get(above, -1) + 1 if above else 0
            if use_children and record["jsonmodel_type"] == "archival_object" and record["uri"] not in parents:
                leaves[above].append(record)
            else:
                waves[depth[record["uri"]]].append(record)
        for level in sorted(waves):
            await self._creates(waves[level])
        await self._children(leaves)

    async def _creates(self, records: list[dict]) -> None:
        queue = list(reversed(records))

        async def worker():
            connection = self.connection()
            try:
                while queue:
                    record = queue.pop()
                    status, body = await connection.request("POST", collection_of(record["uri"]), orjson.dumps(plain(record, self.mapping)))
                    if status != 200:
                        raise LoadError(f"create {collection_of(record['uri'])} answered {status}: {body[:500].decode(errors='replace')}")
                    self.mapping[record["uri"]] = orjson.loads(body)["uri"]
            finally:
                await connection.close()

        await asyncio.gather(*(worker() for _ in range(self.clients)))

    async def _children(self, leaves: dict[str, list[dict]]) -> None:
        jobs = []
        for parent, records in leaves.items():
            target = self.mapping[parent]
            for start in range(0, len(records), CHILDREN_CHUNK):
                children = [
                    {k: v for k, v in plain(r, self.mapping).items() if k not in ("parent", "resource")}
                    for r in records[start : start + CHILDREN_CHUNK]
                ]
                jobs.append((f"{target}/children", {"jsonmodel_type": "archival_record_children", "children": children}))
        jobs.reverse()

        async def worker():
            connection = self.connection()
            try:
                while jobs:
                    path, body = jobs.pop()
                    status, answer = await connection.request("POST", path, orjson.dumps(body))
                    if status != 200:
                        raise LoadError(f"POST {path} answered {status}: {answer[:500].decode(errors='replace')}")
            finally:
                await connection.close()

        await asyncio.gather(*(worker() for _ in range(min(self.clients, 4))))


@dataclass(frozen=True)
class Chunk:
    """One batch_imports request: records of one repository, serialised, with their temporary
    URIs and those of the records of earlier chunks they refer to."""

    repo: str
    body: bytes
    uris: frozenset[str]
    refs: frozenset[str]


def chunked(repositories: list[tuple[str, object]]) -> Iterator[Chunk]:
    """Units packed into chunks of at most CHUNK records (a collection of 150 components is one
    unit: sent alone, a request's fixed costs would weigh on each record). A unit that fits a
    chunk is never split over two, so requests of whole collections do not wait for each other
    (the chunk holding its second half would refer to the one in flight with its first); a larger
    one (a list of subjects, the big tree) fills its chunks."""
    for repo, archive in repositories:
        pending: list[dict] = []
        for unit in archive.units():
            if len(unit) <= CHUNK < len(pending) + len(unit):
                yield _chunk(repo, pending)
                pending = []
            for record in unit:
                pending.append(record)
                if len(pending) == CHUNK:
                    yield _chunk(repo, pending)
                    pending = []
        if pending:
            yield _chunk(repo, pending)


def _chunk(repo: str, records: list[dict]) -> Chunk:
    body = orjson.dumps(records)
    uris = frozenset(record["uri"] for record in records)
    refs = frozenset(orjson.loads(b'"' + found + b'"') for found in _REF.findall(body)) - uris
    return Chunk(repo, body, uris, refs)


class Spool:
    """A load's chunks, made before the load is timed and kept in a temporary file: an import
    reads records someone already has, and generating a million of them (and serialising them)
    during the load took the server ~15 % of this 2-core machine's CPU."""

    def __init__(self, repositories: list[tuple[str, object]]):
        self.file = tempfile.TemporaryFile()
        for chunk in chunked(repositories):
            pickle.dump(chunk, self.file, protocol=pickle.HIGHEST_PROTOCOL)

    def __iter__(self) -> Iterator[Chunk]:
        self.file.seek(0)
        while True:
            try:
                yield pickle.load(self.file)
            except EOFError:
                return

    def close(self) -> None:
        self.file.close()


class Chunks:
    """Chunks sent IN_FLIGHT at once. One that refers to a record of a chunk not yet answered
    waits for that one (its temporary URI is rewritten to the one the server reports), and the
    chunks after it that do not go meanwhile, up to LOOKAHEAD waiting: sent strictly in order,
    the big tree's chunks (each refers to the one before) went one at a time, and one of the
    server's two processes writing imports stood idle for a tenth of a load."""

    def __init__(self, loader: Loader):
        self.loader = loader
        self.in_flight: dict[asyncio.Task, frozenset[str]] = {}  # each request's temporary URIs
        self.waiting: list[Chunk] = []
        self.idle = [loader.connection() for _ in range(IN_FLIGHT)]

    async def send(self, chunk: Chunk) -> None:
        self.waiting.append(chunk)
        self._start_ready()
        while len(self.waiting) >= LOOKAHEAD:
            await self._wait(all_of_them=False)
            self._start_ready()

    async def finish(self) -> None:
        while self.waiting:
            await self._wait(all_of_them=False)
            self._start_ready()
        await self._wait(all_of_them=True)
        for connection in self.idle:
            await connection.close()

    def _start_ready(self) -> None:
        """Send, in order, each waiting chunk that refers to no record of a chunk in flight or
        waiting before it, while a connection is free."""
        unanswered = list(self.in_flight.values())
        still = []
        for chunk in self.waiting:
            if self.idle and all(chunk.refs.isdisjoint(uris) for uris in unanswered):
                task = asyncio.create_task(self._import(chunk, self.idle.pop()))
                self.in_flight[task] = chunk.uris
            else:
                still.append(chunk)
            unanswered.append(chunk.uris)
        self.waiting = still

    async def _wait(self, *, all_of_them: bool) -> None:
        if self.in_flight:
            done, _ = await asyncio.wait(self.in_flight, return_when=asyncio.ALL_COMPLETED if all_of_them else asyncio.FIRST_COMPLETED)
            for task in done:
                del self.in_flight[task]
            for task in done:
                task.result()  # a failed chunk fails the load

    async def _import(self, chunk: Chunk, connection: Connection) -> None:
        try:
            mapping = self.loader.mapping
            body = refs_replaced(chunk.body, {uri: mapping[uri] for uri in chunk.refs if uri in mapping}) if chunk.refs else chunk.body
            status, answer = await connection.request("POST", f"{chunk.repo}/batch_imports", body)
            if status != 200:
                raise LoadError(f"batch_imports answered {status}: {answer[:500].decode(errors='replace')}")
            saved = saved_uris(orjson.loads(answer))
            missing = sorted(chunk.uris - saved.keys())
            if missing:
                raise LoadError(f"batch_imports did not report the URIs created for {missing[:3]}")
            self.loader.mapping.update(saved)
            self.loader.loaded += len(chunk.uris)
        finally:
            self.idle.append(connection)


async def load_archive(loader: Loader, repositories: list[tuple[str, object]], progress) -> dict:
    """Loads every repository's archive; returns the path used, count, seconds and rate. By
    batch_imports, the records are generated and serialised before the clock starts (Spool)."""
    if loader.path == "batch_imports":
        spool = Spool(repositories)
        try:
            start = time.perf_counter()
            chunks = Chunks(loader)
            for chunk in spool:
                await chunks.send(chunk)
                progress(loader.loaded)
            await chunks.finish()
        finally:
            spool.close()
    else:
        start = time.perf_counter()
        for _, archive in repositories:
            for unit in archive.units():
                await loader.tree_aware(unit)
                loader.loaded += len(unit)
                progress(loader.loaded)
    seconds = time.perf_counter() - start
    result = {
        "path": loader.path,
        "records": loader.loaded,
        "seconds": round(seconds, 2),
        "records_per_s": round(loader.loaded / seconds, 1),
    }
    return result | ({"generated_beforehand": True} if loader.path == "batch_imports" else {})
