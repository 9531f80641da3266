"""The record service of a process writing large imports (records/import_validation.py).

A bulk load's imports are written by two such processes (on SQLite in turn, on PostgreSQL side by
side), the server passing bodies and answers. Each starts from this module, which holds the record
model and the database but no web framework: FastAPI, Starlette and Pydantic, which the server's app
imports, took each process 0.69-0.82 s of CPU to start instead of 0.40-0.41, and its RSS peaked at
173-174 MB during a 100,000-record load instead of 151-152 (import-linter keeps them out:
pyproject.toml)."""

from __future__ import annotations

from fonds.config import Settings
from fonds.model import REGISTRY, database_metadata
from fonds.records.service import RecordService
from fonds.storage.db import Database

# Where a process other than the server's finds the registry (`import_validation`).
REGISTRY_SOURCE = "fonds.model:REGISTRY"


def import_writer(settings: Settings) -> RecordService:
    """The record service of such a process. Its allocator keeps glibc's own thresholds, not the
    server's (`allocator`): their point is the RSS of a process that runs for good, and one of
    these gives all its memory back when it stops, 10-20 s after a load."""
    return RecordService(
        Database(settings.effective_database_url, database_metadata()), REGISTRY, settings, registry_source=REGISTRY_SOURCE
    )
