"""Every test gets its own app on a clean database: a temporary SQLite file by default, or a
schema of the PostgreSQL database named by FONDS_TEST_DATABASE_URL.

The migrations run once per session (per xdist worker), not per test:

- SQLite: into a template file; each test gets a copy of it.
- PostgreSQL: into a schema of this run and worker, put back before each test as the migrations
  left it (tables emptied, sequences reset: ids start from 1 again).

Each test still goes through the whole of `create_app`: it finds the database at the head
revision and bootstraps the global repository, vocabulary and admin user itself. Tests marked
`fresh_database` (every test under tests/storage/, where the migrations are tested) instead get
a database nothing has touched, which `create_app` migrates from scratch.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import uuid
import warnings
from pathlib import Path

import pytest
from argon2 import PasswordHasher, profiles
from sqlalchemy import create_engine, text

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from fonds.app import create_app
from fonds.auth import passwords
from fonds.config import load_settings
from fonds.model import database_metadata
from fonds.storage import migrate
from fonds.storage.db import Database, normalise_url
from tests.factories import ADMIN_PASSWORD, Api

PG_URL = os.environ.get("FONDS_TEST_DATABASE_URL")
# Schemas unique to this run and worker, dropped at the end: runs sharing the database can't collide.
SCHEMA = f"fonds_test_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{uuid.uuid4().hex[:8]}"
FRESH_DATABASE_DIRS = (Path(__file__).parent / "storage",)
TEST_SEARCH_WAIT_SECONDS = 30.0
LOCK_TIMEOUT = "10s"  # emptying or dropping a schema waits at most this long for a connection a test left open


def pytest_configure(config):
    config.addinivalue_line("markers", "fresh_database: give the test an empty, unmigrated database (migration tests)")


def pytest_collection_modifyitems(items):
    for item in items:
        if any(item.path.is_relative_to(directory) for directory in FRESH_DATABASE_DIRS):
            item.add_marker(pytest.mark.fresh_database)


@pytest.fixture(scope="session", autouse=True)
def _cheap_password_hashing():
    """Argon2id at the cheapest parameters (argon2-cffi's profile for tests) rather than RFC 9106's:
    those cost ~0.15 s of CPU for each hash and check, two per test (bootstrap hashes the admin
    password, the `api` fixture logs in), the biggest part of a test's set-up. Hashes are still
    argon2id, made and checked by the same code; a `fonds serve` subprocess uses the real ones."""
    hasher = PasswordHasher.from_parameters(profiles.CHEAPEST)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(passwords, "_hasher", hasher)
        patch.setattr(passwords, "_DUMMY_HASH", hasher.hash("fonds-timing-equaliser"))
        yield


# -- PostgreSQL ------------------------------------------------------------------------------


def _schema_url(schema: str) -> str:
    base = normalise_url(PG_URL)
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}options=-csearch_path%3D{schema}"


def _drop_schema(schema: str, recreate: bool = False) -> None:
    """Drop the schema with everything in it (if it exists), and create it again empty if asked."""
    engine = create_engine(normalise_url(PG_URL))
    try:
        with engine.begin() as conn:
            conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
            conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
            if recreate:
                conn.execute(text(f"CREATE SCHEMA {schema}"))
    finally:
        engine.dispose()


def _empty_schema(schema: str) -> str:
    """The schema, dropped with everything in it and created again; returns its URL."""
    _drop_schema(schema, recreate=True)
    return _schema_url(schema)


class MigratedSchema:
    """The worker's schema, migrated once. `reset()` puts it back as the migrations left it: every
    table emptied, except for rows a migration inserted (kept aside in a `_seed` schema and put
    back), and every sequence back where the migrations left it, so ids start from 1 again."""

    def __init__(self, schema: str):
        self.schema, self.seed_schema = schema, f"{schema}_seed"
        self.url = _empty_schema(schema)
        db = Database(self.url, database_metadata())
        try:
            migrate.upgrade(db)
        finally:
            db.dispose()
        self.engine = create_engine(normalise_url(self.url), pool_size=1)
        with self.engine.begin() as conn:
            present = set(conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")).scalars())
            # Parents before children. A table the metadata does not know (there should be none:
            # see test_migrated_database_matches_the_metadata) comes last and is truncated first.
            known = [table.name for table in database_metadata().sorted_tables if table.name in present]
            unknown = sorted(present - set(known) - {"alembic_version"})
            seeded = [name for name in known + unknown if conn.execute(text(f"SELECT EXISTS (SELECT FROM {_quote(name)})")).scalar()]
            if seeded:
                conn.execute(text(f"CREATE SCHEMA {self.seed_schema}"))
            for name in seeded:
                conn.execute(text(f"CREATE TABLE {self.seed_schema}.{_quote(name)} AS TABLE {_quote(name)}"))
            used_sequences = conn.execute(
                text(
                    "SELECT format('%I', sequencename), last_value FROM pg_sequences WHERE schemaname = current_schema() AND last_value IS NOT NULL"
                )
            ).all()
        statements = [f"TRUNCATE {', '.join(map(_quote, unknown))} CASCADE"] if unknown else []
        # DELETE rather than TRUNCATE: on tables this small it is ~50x faster (TRUNCATE gives every
        # table and index new files). Children first, so no foreign key is ever in the way.
        statements += [f"DELETE FROM {_quote(name)}" for name in reversed(known)]
        statements += [f"INSERT INTO {_quote(name)} OVERRIDING SYSTEM VALUE TABLE {self.seed_schema}.{_quote(name)}" for name in seeded]
        # Every sequence of the schema (serial and identity columns' included) back to its start,
        # then those the migrations used back to where they left them.
        statements.append(
            "SELECT setval(format('%I', sequencename), start_value, false) FROM pg_sequences WHERE schemaname = current_schema()"
        )
        statements += [f"SELECT setval('{name}', {value}, true)" for name, value in used_sequences]
        self.statements = [text(statement) for statement in statements]

    def reset(self) -> str:
        with self.engine.begin() as conn:
            conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
            conn.execute(text("SET LOCAL synchronous_commit = off"))  # a test database: no need to wait for the disk
            for statement in self.statements:
                conn.execute(statement)
        return self.url

    def drop(self) -> None:
        self.engine.dispose()
        _drop_schema(self.seed_schema)
        _drop_schema(self.schema)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@pytest.fixture(scope="session")
def _migrated_schema():
    schema = MigratedSchema(SCHEMA)
    yield schema
    schema.drop()


@pytest.fixture(scope="session")
def _fresh_schema():
    """The name of the schema for `fresh_database` tests, recreated for each."""
    yield f"{SCHEMA}_fresh"
    _drop_schema(f"{SCHEMA}_fresh")


# -- SQLite ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory) -> Path:
    """A migrated database file, closed and out of WAL mode so that copying the file copies all of it."""
    path = tmp_path_factory.mktemp("template") / "fonds.sqlite3"
    db = Database(f"sqlite:///{path}", database_metadata())
    try:
        migrate.upgrade(db)
    finally:
        db.dispose()
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")  # checkpoints and removes the -wal file
    finally:
        conn.close()
    assert not path.with_name(path.name + "-wal").exists()
    return path


# -- the fixtures tests use ------------------------------------------------------------------


@pytest.fixture
def database_url(request, tmp_path) -> str | None:
    """The URL of the test's clean database; None means Fonds' default file in the data dir."""
    fresh = request.node.get_closest_marker("fresh_database") is not None
    if PG_URL:
        if fresh:
            return _empty_schema(request.getfixturevalue("_fresh_schema"))
        return request.getfixturevalue("_migrated_schema").reset()
    if fresh:
        return None
    # Beside the data dir, not in it: a test may check what create_app puts in a new data dir.
    path = tmp_path / "fonds.sqlite3"
    shutil.copyfile(request.getfixturevalue("_sqlite_template"), path)
    return f"sqlite:///{path}"


@pytest.fixture
def settings_overrides() -> dict:
    """Override in a test module to change settings."""
    return {}


@pytest.fixture
def settings(tmp_path, database_url, settings_overrides):
    values = {
        "data_dir": tmp_path / "data",
        "database_url": database_url,
        "admin_password": ADMIN_PASSWORD,
        # A search waits for the index to apply every change committed before it (2 s at most by
        # default, then answers from the index as it is): tests of what the index holds must not
        # depend on how loaded the host is (a CI run on PostgreSQL saw 101 changes, applied in
        # ~0.1 s here, take over 2 s). Tests of the cut-off set their own.
        "search_wait_seconds": TEST_SEARCH_WAIT_SECONDS,
        **settings_overrides,
    }
    return load_settings(env={}, **values)


@pytest.fixture
def app(settings):
    """The application, started (its lifespan: migration check, bootstrap, search indexer) and
    stopped at the end of the test."""
    application = create_app(settings)
    with TestClient(application):
        yield application


@pytest.fixture
def client(app) -> TestClient:
    """An anonymous client."""
    return TestClient(app, raise_server_exceptions=False)


@pytest.fixture
def api(app) -> Api:
    """A client logged in as the admin user, with record factories."""
    return Api.login(TestClient(app, raise_server_exceptions=False))


@pytest.fixture
def repo(api) -> int:
    return api.create_repository("MSS")
