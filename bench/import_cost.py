"""A bulk load's work per record in each of its two processes, counted where timing misleads.

`python -m bench.import_cost [--records 20000] [--seed 1]` imports the bench's archive (its
generator, in its requests of up to 2,000 records) into a fresh embedded database, all in this
process and one request after another: each request's body read and validated by the task the
process validating large imports runs (`import_validation`), then imported as the server
imports it (`imports.import_batch`, given that answer). It prints each part's CPU time per
record. No HTTP, no client, no second process: what is left is the work either process does.

On a machine whose speed varies from run to run (seen here: 20 % between identical loads, and
the CPU probe from 156 to 233 ms within a minute), count instructions instead, which callgrind
counts the same way every time:

    valgrind --tool=callgrind --instr-atstart=no python -m bench.import_cost --count server

counts only the server's part (`--count validator`: only the validating process's); compare
two checkouts by their totals ("Collected"). `--count writer` imports as a process writing
imports does (on a SQLite file, records/import_validation.py): each body read, validated and
written in one process, with the ids its writes reserve ahead, and counts all of it. The records an import lets go of are then freed in
the importing thread, so that their freeing is counted with it; timed, they are freed on a
thread of their own, as in the server, and not counted."""

from __future__ import annotations

import argparse
import os
import pickle
import secrets
import subprocess
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from bench.generate import BIG_TREE_SHARE, Archive, plan
from bench.load import chunked, refs_replaced
from fonds.import_writer import REGISTRY_SOURCE

REPOSITORY = {"jsonmodel_type": "repository", "repo_code": "COST", "name": "Import cost"}


class InProcessValidation:
    """The record service's `import_validation`, whose task for a batch import's body (read it,
    validate its records, order them) runs in this process: what the server asks the validating
    process, answered as that process answers it."""

    def __init__(self, strict: bool, count: str | None):
        from fonds.records import import_validation

        self.task, self.strict, self.count = import_validation._read_and_validate, strict, count
        self.answer = import_validation.ReadAndValidated
        import_validation._ready(REGISTRY_SOURCE, strict)
        import_validation._IDS_AHEAD.take_all()  # reserved in another run's database
        # Each task's collection walks what its process holds: here the server's objects too,
        # which the validating process does not hold (0.03 ms a task there).
        import_validation._collect_leftovers = lambda: None
        self.seconds = 0.0

    def read_and_validate(self, body: bytes, repo_id: int, lists, leases):
        start = time.thread_time()
        _callgrind(self.count == "validator", "on")
        _callgrind(self.count == "server", "off")
        answer = self.task(REGISTRY_SOURCE, body, repo_id, lists, self.strict, leases.take_all())
        _callgrind(self.count == "server", "on")
        _callgrind(self.count == "validator", "off")
        self.seconds += time.thread_time() - start
        found = pickle.loads(answer)  # the server's part (`ImportValidation.read_and_validate`)
        leases.held_elsewhere(found["ids_left"])
        if "order" not in found:
            raise RuntimeError(f"the generated archive was refused: {found}")
        return self.answer.from_answer(found)

    def validate(self, *_args, **_kwargs) -> None:
        return None  # every body is read by the task above

    def import_body(self, *_args, **_kwargs) -> None:
        return None  # written by the server's import, in this process (as a process writing imports writes it)

    def close(self) -> None:
        pass


class WriterValidation:
    """The `import_validation` of a process writing imports (`import_validation.InProcessValidation`),
    timing its reading and validating apart from the rest."""

    def __init__(self, strict: bool):
        from fonds.records import import_validation

        self.inner = import_validation.InProcessValidation(SimpleNamespace(registry_source=REGISTRY_SOURCE, strict=strict))
        self.seconds = 0.0

    def read_and_validate(self, body: bytes, repo_id: int, lists, leases):
        start = time.thread_time()
        try:
            return self.inner.read_and_validate(body, repo_id, lists, leases)
        finally:
            self.seconds += time.thread_time() - start

    def validate(self, *_args, **_kwargs) -> None:
        return None

    def import_body(self, *_args, **_kwargs) -> None:
        return None

    def close(self) -> None:
        pass


def _free_at_once(garbage) -> None:
    """`Disposal.free` in the importing thread: what an import lets go of is freed as this returns
    (counted with the import), and what is to follow it (`Disposal.then`) runs now."""
    action = getattr(garbage, "action", None)
    if action is not None:
        action()


def _callgrind(wanted: bool, state: str) -> None:
    """Callgrind counts instructions from `on` to `off` (run with --instr-atstart=no)."""
    if wanted:
        subprocess.run(["callgrind_control", "-i", state, str(os.getpid())], check=True, capture_output=True)


def run(records: int, seed: int, count: str | None) -> dict:
    from fonds.app import open_services
    from fonds.config import load_settings
    from fonds.records import imports
    from fonds.records.service import Actor
    from fonds.records.writes import Batch, NewRecord

    with tempfile.TemporaryDirectory() as directory:
        settings = load_settings({}, data_dir=Path(directory), admin_password=secrets.token_urlsafe(16))
        services = open_services(settings)
        service = services.records
        actor = Actor(1, "admin")
        with service.db.write() as conn:
            repository = service.registry["repository"]
            doc, warnings, _ = service.prepare_doc(repository, REPOSITORY, creating=True)
            repo_uri = Batch(service, conn, actor).create([NewRecord(repository, doc, warnings, None)])[0]["uri"]
        repo_id = int(repo_uri.rsplit("/", 1)[1])
        archive = Archive(seed, repo_id, plan(records, agents=True, big_tree=int(records * BIG_TREE_SHARE)), global_prefix="c_")
        if count == "writer":
            validation = service.import_validation = WriterValidation(settings.strict_validation)
        else:
            validation = service.import_validation = InProcessValidation(settings.strict_validation, count)
        if count is not None:
            imports.DISPOSAL.free = _free_at_once
            # Under callgrind an import's validation outlasts BULK_IDLE_SECONDS: the bulk
            # connection, kept through a load's stream of imports, would be closed after each.
            imports._close_bulk_connection_when_idle = lambda db: None
        mapping: dict[str, str] = {}
        imported, server_seconds = 0, 0.0
        for chunk in chunked([(repo_uri, archive)]):
            refs = {uri: mapping[uri] for uri in chunk.refs if uri in mapping}
            body = refs_replaced(chunk.body, refs) if refs else chunk.body
            before, validating_before = time.thread_time(), validation.seconds
            _callgrind(count in ("server", "writer"), "on")
            done = imports.import_batch(service, body, repo_id=repo_id, actor=actor, may_create=lambda record_type: True)
            _callgrind(count in ("server", "writer"), "off")
            server_seconds += time.thread_time() - before - (validation.seconds - validating_before)
            mapping.update((temporary, created[0]) for temporary, created in done.saved.items())
            imported += done.count
        services.db.dispose()
    return {
        "records": imported,
        "server_us_per_record": round(server_seconds / imported * 1e6, 1),
        "validator_us_per_record": round(validation.seconds / imported * 1e6, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.import_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000, help="records in the archive (default 20,000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generated archive (default 1)")
    parser.add_argument(
        "--count",
        choices=("server", "validator", "writer"),
        help="under callgrind (--instr-atstart=no): count the instructions of this part only",
    )
    args = parser.parse_args(argv)
    figures = run(args.records, args.seed, args.count)
    print(
        f"{figures['records']:,} records imported: server {figures['server_us_per_record']} µs a record, "
        f"validating process {figures['validator_us_per_record']} µs a record (CPU time of the thread doing each)"
    )


if __name__ == "__main__":
    main()
