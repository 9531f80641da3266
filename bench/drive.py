"""The load driver: runs in a separate client process and hammers one scenario.

A scenario is plain data (so it crosses the process boundary): a `kind` naming a request
maker below, its parameters, the number of concurrent connections, a duration and a request
cap. Every run stops by itself at whichever bound comes first."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from urllib.parse import urlencode

import orjson

from bench.http import Connection
from bench.stats import summarise

SESSION_HEADER = "X-ArchivesSpace-Session"


class Requests:
    """Cycles through fixed (method, path, body) requests."""

    ok = (200,)

    def __init__(self, spec: dict, clients: int):
        self.items = [
            (r.get("method", "GET"), r["path"], r.get("body", "").encode(), r.get("content_type", "application/json"))
            for r in spec["requests"]
        ]
        self.cycle = itertools.cycle(self.items)

    def next(self, worker: int):
        return next(self.cycle)

    def after(self, worker: int, request, status: int, body: bytes) -> None:
        pass

    def result(self) -> dict:
        return {}


class Creates(Requests):
    """Creates records of one type, each unique, and remembers their URIs."""

    def __init__(self, spec: dict, clients: int):
        self.path, self.template = spec["path"], spec["record"]
        self.counter = itertools.count(1)
        self.tag = f"{os.getpid()}-{time.monotonic_ns() % 10**9}"
        self.created: list[str] = []

    def next(self, worker: int):
        n = next(self.counter)
        record = {key: (value.format(n=n, tag=self.tag) if isinstance(value, str) else value) for key, value in self.template.items()}
        return "POST", self.path, orjson.dumps(record), "application/json"

    def after(self, worker, request, status, body):
        if status == 200:
            self.created.append(orjson.loads(body)["uri"])

    def result(self) -> dict:
        return {"created": self.created}


class Updates(Requests):
    """Each connection updates its own records in turn, carrying lock_version forward."""

    def __init__(self, spec: dict, clients: int):
        records = spec["records"]
        self.owned = [records[i::clients] for i in range(clients)]
        self.position = [0] * clients

    def next(self, worker: int):
        mine = self.owned[worker]
        if not mine:  # more connections than records to update
            return None
        record = mine[self.position[worker] % len(mine)]
        record["title"] = f"{record['title'].split(' (rev')[0]} (rev {record['lock_version'] + 1})"
        return "POST", record["uri"], orjson.dumps(record), "application/json"

    def after(self, worker, request, status, body):
        mine = self.owned[worker]
        record = mine[self.position[worker] % len(mine)]
        if status == 200:
            record["lock_version"] = orjson.loads(body)["lock_version"]
        self.position[worker] += 1


class Deletes(Requests):
    """Deletes the given URIs once each; workers stop when none are left."""

    def __init__(self, spec: dict, clients: int):
        self.uris = list(reversed(spec["uris"]))

    def next(self, worker: int):
        return ("DELETE", self.uris.pop(), b"", "application/json") if self.uris else None


class Logins(Requests):
    def __init__(self, spec: dict, clients: int):
        body = urlencode({"password": spec["password"]}).encode()
        self.request = ("POST", f"/users/{spec['username']}/login", body, "application/x-www-form-urlencoded")

    def next(self, worker: int):
        return self.request


MAKERS = {"requests": Requests, "create": Creates, "update": Updates, "delete": Deletes, "login": Logins}


async def _worker(index: int, spec: dict, maker, deadline: float, budget: list[int], latencies: list[float], errors: list[int]):
    headers = {SESSION_HEADER: spec["token"]} if spec.get("token") else {}
    connection = Connection(spec["host"], spec["port"], headers)
    ok = set(spec.get("ok", (200,)))
    try:
        while time.perf_counter() < deadline and budget[0] > 0:
            request = maker.next(index)
            if request is None:
                return
            budget[0] -= 1
            start = time.perf_counter()
            try:
                status, body = await connection.request(*request)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                errors[0] += 1
                await asyncio.sleep(0.01)
                continue
            latencies.append(time.perf_counter() - start)
            if status not in ok:
                errors[0] += 1
                if len(spec.setdefault("error_samples", [])) < 3:
                    spec["error_samples"].append(f"{status} {body[:200].decode(errors='replace')}")
            maker.after(index, request, status, body)
    finally:
        await connection.close()


async def _run(spec: dict) -> dict:
    clients = spec["clients"]
    maker = MAKERS[spec["kind"]](spec, clients)
    latencies: list[float] = []
    errors, budget = [0], [spec.get("max_requests", 1_000_000)]
    start = time.perf_counter()
    deadline = start + spec["duration"]
    await asyncio.gather(*(_worker(i, spec, maker, deadline, budget, latencies, errors) for i in range(clients)))
    elapsed = time.perf_counter() - start
    return {**summarise(latencies, elapsed, errors[0]), **maker.result(), "error_samples": spec.get("error_samples", [])}


def run(spec: dict) -> dict:
    """Entry point in the client process."""
    return asyncio.run(_run(spec))
